#!/usr/bin/env bash
# api-docs: the API reference for people — each OpenAPI document in api/
# rendered by Redocly CLI's build-docs (pinned, as scripts/api-lint.sh pins
# it) into one HTML page, api/<name>.openapi.yaml to <dir>/<name>.html, and
# <dir>/index.html linking them. Each page holds the renderer's script and
# the document: it opens from file:// with no network, and its
# Content-Security-Policy (docs/api/page.hbs) lets it load nothing else.
# make api-docs writes them to docs/api/ (not committed: they are built, 2.5
# MB each); tools/apireference's test builds them and reads every operation
# in headless Chromium. Needs node and the npm registry.
#
#	scripts/api-docs.sh [dir]	(default docs/api)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/api}

REDOCLY=@redocly/cli@2.77.0

tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
npm install --prefix "$tools" --no-save --no-audit --no-fund --ignore-scripts --prefer-offline "$REDOCLY" >/dev/null
# Nothing about this run goes to the vendor, and the pages send nothing either.
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true SCARF_ANALYTICS=false

mkdir -p "$out"
links=""
for doc in api/*.openapi.yaml; do
	name=$(basename "$doc" .openapi.yaml)
	if ! log=$("$tools/node_modules/.bin/redocly" build-docs "$doc" --inlineBundle \
		--template docs/api/page.hbs --output "$out/$name.html" 2>&1); then
		echo "$log" >&2
		exit 1
	fi
	title=$(sed -n 's/^  title: //p' "$doc" | head -n 1)
	links="$links    <li><a href=\"$name.html\">$title</a> — <code>$doc</code></li>"$'\n'
done
cat >"$out/index.html" <<HTML
<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta http-equiv="Content-Security-Policy" content="default-src 'none'">
  <title>API reference</title>
</head>
<body>
  <h1>API reference</h1>
  <p>Rendered from the OpenAPI documents in <code>api/</code> by <code>make api-docs</code>.</p>
  <ul>
$links  </ul>
</body>
</html>
HTML
echo "api-docs: $(ls "$out"/*.html | wc -l) pages in $out (open $out/index.html)"
