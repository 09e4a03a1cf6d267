#!/usr/bin/env bash
# api-lint: lint the contracts in api/ with linters that outside tools are
# built on, pinned: Redocly CLI's recommended rules on every OpenAPI document
# (api/redocly.yaml; the findings that are not faults, with their reasons, in
# api/.redocly.lint-ignore.yaml), and Spectral's oas ruleset on them and its
# asyncapi ruleset on the AsyncAPI document (api/.spectral.yaml, exceptions
# and reasons included). Any finding fails, warnings and remarks too: fix it,
# or record why it is not a fault beside the others. api's tests hold the
# documents to the code; this holds them to what the tools expect. make lint
# runs it; needs node and the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."

REDOCLY=@redocly/cli@2.77.0
SPECTRAL=@stoplight/spectral-cli@6.16.3
# The rules themselves: spectral-cli takes any version of them.
SPECTRAL_RULESETS=@stoplight/spectral-rulesets@1.23.1

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
npm install --prefix "$dir" --no-save --no-audit --no-fund --ignore-scripts --prefer-offline \
	"$REDOCLY" "$SPECTRAL" "$SPECTRAL_RULESETS" >/dev/null
# Neither linter reports anything about this run to its vendor.
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true SCARF_ANALYTICS=false

openapi=(api/*.openapi.yaml)
"$dir/node_modules/.bin/redocly" lint --config api/redocly.yaml --format stylish "${openapi[@]}"
"$dir/node_modules/.bin/spectral" lint --ruleset api/.spectral.yaml --fail-severity hint \
	"${openapi[@]}" api/events.asyncapi.yaml
