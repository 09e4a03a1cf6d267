#!/usr/bin/env bash
# client-check: the Go clients of the HTTP APIs — payments, ledger, webhooks —
# that oapi-codegen generates from api/*.openapi.yaml with the command
# docs/CONTRACTS.md gives (pinned in tools/apiclients/apiclients.go), held to
# that promise: each committed client is regenerated and compared
# (TestClientsAreGenerated), and every operation of the three documents is
# called through them on the services running as docker-compose.yml runs them,
# each answer decoded into the generated types, a problem+json answer of each
# API too (TestGeneratedClientsReadLiveAnswers, tools/walkthrough). make test
# runs the same tests with the rest; this runs them alone, through testrun, so
# that a missing server starts a container or fails, never skips. Needs the Go
# module proxy (the generator, the first time) and Postgres and SNS/SQS
# (DATABASE_URL and AWS_ENDPOINT_URL, else Docker).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off
# CI set: a test that skipped fails, as it does in CI. A check that skipped proves nothing.
CI=${CI:-true} go -C tools run ./testrun -count=1 -timeout 10m \
	-run '^(TestEveryDocumentHasItsClient|TestClientsAreGenerated|TestContractsGivesTheGenerator|TestGeneratedClientsReadLiveAnswers)$' \
	./tools/apiclients ./tools/walkthrough
