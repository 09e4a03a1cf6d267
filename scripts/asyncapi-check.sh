#!/usr/bin/env bash
# asyncapi-check: read api/events.asyncapi.yaml with the AsyncAPI project's own
# parser (pinned), which validates the document against the AsyncAPI 3.0
# specification and its SNS and SQS bindings and resolves every $ref to the
# schema files, so that the README's promise — AsyncAPI tools read the
# document — cannot rot unnoticed. api's TestAsyncAPIDocument checks the
# document against the code; this checks it against the specification. Needs
# node and the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."

PARSER=@asyncapi/parser@3.6.6

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
npm install --prefix "$dir" --no-save --no-audit --no-fund --ignore-scripts "$PARSER" >/dev/null
cat >"$dir/check.mjs" <<'JS'
import { Parser, fromFile } from '@asyncapi/parser';
const [doc] = process.argv.slice(2);
const { document, diagnostics } = await fromFile(new Parser(), doc).parse();
// Severity 0 is an error; the others are advice (a newer AsyncAPI version exists, say).
const errors = diagnostics.filter((d) => d.severity === 0);
for (const d of errors) console.error(`${doc}: ${d.path.join('.')}: ${d.message}`);
if (!document || errors.length > 0) process.exit(1);
console.log(`asyncapi-check: ${doc} is valid AsyncAPI ${document.version()}: ` +
	`${document.allMessages().length} messages, ${document.allChannels().length} channels, ${document.allOperations().length} operations`);
JS
node "$dir/check.mjs" "$PWD/api/events.asyncapi.yaml"
