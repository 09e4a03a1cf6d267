#!/usr/bin/env bash
# The testcontainers stage (make testcontainers-check; .ci/run runs it): the
# adapters' integration suite once through `make test`'s Docker path, with
# DATABASE_URL and AWS_ENDPOINT_URL unset, so that tools/testrun starts one
# Postgres and one LocalStack container through the test helpers
# (adapters/postgres/pgtest, adapters/awstest) for the whole run. CI is set: a
# test that skips fails the stage.
#
# It needs a Docker engine and starts one when none answers
# (scripts/docker-engine.sh). Where the pinned Postgres or LocalStack image
# cannot be pulled, the helpers start the local stand-in instead, through
# TESTCONTAINERS_POSTGRES_IMAGE and TESTCONTAINERS_LOCALSTACK_IMAGE
# (scripts/standins/apply.sh --test-images). testcontainers' reaper (Ryuk) is
# an image too: it is off, and the helpers remove their containers themselves.
#
#   bash scripts/testcontainers-stage.sh [PACKAGES...]   # default ./adapters/...
set -euo pipefail
cd "$(dirname "$0")/.."
began=$(date +%s)
say() { echo "testcontainers-stage: [$(($(date +%s) - began))s] $*"; }

unset PAYMENTS_OUTBOX_DOCKERD_PID
engine=$(bash scripts/docker-engine.sh start)
eval "$engine"
finish() {
	local code=$?
	set +e
	# On an engine of its own, nothing the run started may outlive it.
	if [ -n "${PAYMENTS_OUTBOX_DOCKERD_PID:-}" ]; then
		left=$(docker ps --all --quiet --filter label=org.testcontainers=true)
		# shellcheck disable=SC2086 # one argument per container id
		[ -z "$left" ] || docker rm --force --volumes $left >/dev/null
	fi
	bash scripts/docker-engine.sh stop
	say "$([ "$code" = 0 ] && echo passed || echo "FAILED (exit $code)") in $(($(date +%s) - began))s"
	exit "$code"
}
trap finish EXIT

images=$(bash scripts/standins/apply.sh --test-images)
eval "$images"
# TESTCONTAINERS_HOST_OVERRIDE came with the engine (127.0.0.1: this machine
# may have a /.dockerenv, which makes testcontainers dial the default gateway).
export TESTCONTAINERS_RYUK_DISABLED=true CI=true
unset DATABASE_URL AWS_ENDPOINT_URL
say "Postgres ${TESTCONTAINERS_POSTGRES_IMAGE:-as pinned}, LocalStack ${TESTCONTAINERS_LOCALSTACK_IMAGE:-as pinned}"
[ $# -gt 0 ] || set -- ./adapters/...
go -C tools run ./testrun -count=1 -timeout 20m "$@"
