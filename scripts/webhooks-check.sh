#!/usr/bin/env bash
# webhooks-check: verify webhook deliveries with the Standard Webhooks npm
# package (standardwebhooks, pinned with its dependencies in
# scripts/webhooks-check/package-lock.json), a second implementation of the
# specification beside the Go reference library the demo receiver uses: a
# signature both accept is one any merchant's library accepts.
#
#   bash scripts/webhooks-check.sh deliveries.jsonl
#
# Each line of the file is one delivery as a receiver saw it:
#   {"secret":"whsec_…","headers":{"webhook-id":"…","webhook-timestamp":"…","webhook-signature":"v1,…"},"body":"…"}
# It prints one line per delivery that fails and how many verified, and
# exits non-zero when any fails (or the file holds none). A delivery is
# verified as of its own webhook-timestamp: this checks signatures, also of
# deliveries recorded long ago, not their freshness, which the library
# would otherwise hold to five minutes of the clock.
#
# Needs node and the npm registry (npm ci into a temporary directory, so
# nothing is installed in the repository).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 1 ] || [ ! -f "$1" ]; then
	echo "usage: $0 DELIVERIES.jsonl" >&2
	exit 2
fi
file=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp "$here/webhooks-check/package.json" "$here/webhooks-check/package-lock.json" "$dir/"
npm ci --prefix "$dir" --no-audit --no-fund --ignore-scripts --prefer-offline >/dev/null
cat >"$dir/check.mjs" <<'JS'
import { readFile } from 'node:fs/promises';
import { Webhook } from 'standardwebhooks';

const file = process.argv[2];
const lines = (await readFile(file, 'utf8')).split('\n');
const realNow = Date.now;
let total = 0, verified = 0;
lines.forEach((line, i) => {
	if (line.trim() === '') return;
	total++;
	let id = '?';
	try {
		const d = JSON.parse(line);
		id = d.headers?.['webhook-id'] ?? '?';
		const at = Number(d.headers?.['webhook-timestamp']);
		// As of the delivery's own timestamp: see the script's comment.
		if (Number.isFinite(at)) Date.now = () => at * 1000;
		new Webhook(d.secret).verify(d.body, d.headers);
		verified++;
	} catch (e) {
		// The error names what failed, never the secret.
		console.error(`${file}:${i + 1}: webhook-id ${id}: ${e.message}`);
	} finally {
		Date.now = realNow;
	}
});
console.log(`webhooks-check: ${verified} of ${total} deliveries verified`);
if (total === 0 || verified !== total) process.exit(1);
JS
node "$dir/check.mjs" "$file"
