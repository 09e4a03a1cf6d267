#!/usr/bin/env bash
# The compose stage (make compose-check; .ci/run runs it): `docker compose up` from
# the project's own docker-compose.yml and Dockerfile, as the README's Quick start
# runs it, then tools/stack's TestComposeStage against the stack — every container
# healthy, the services running as 65532 with no shell, `make demo` giving the
# README's walkthrough, a restart and SIGKILLs under light traffic losing nothing
# — and `docker compose down -v`, which must leave no container, volume or
# network of the project.
#
# It needs a Docker engine with Compose and buildx, and starts one when none
# answers (scripts/docker-engine.sh). Pinned images it cannot pull are replaced
# by local stand-ins through an override file and a generated Dockerfile that
# change only image references (scripts/standins/); with a registry, it runs the
# real images. The one-time parts are cached in PAYMENTS_OUTBOX_CI_CACHE
# (default /var/cache/payments-outbox-ci); the generated files are kept in
# .compose-stage/ for reading afterwards. Host ports are free ones, unless the
# compose file's variables (POSTGRES_HOST_PORT, ...) are set.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/.compose-stage
began=$(date +%s)
say() { echo "compose-stage: [$(($(date +%s) - began))s] $*"; }

# The engine: the one that answers, else one started here and stopped on exit.
unset PAYMENTS_OUTBOX_DOCKERD_PID
engine=$(bash scripts/docker-engine.sh start)
eval "$engine" # DOCKER_HOST, DOCKER_CONFIG, TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1

stack_up=false
finish() {
	local code=$?
	set +e
	if $stack_up; then
		if [ "$code" != 0 ]; then
			say "failed; the stack as it was:"
			docker compose ps --all
			docker compose logs --no-color --tail 40
		fi
		docker compose down --volumes --remove-orphans --timeout 25 >/dev/null 2>&1
	fi
	bash scripts/docker-engine.sh stop
	say "$([ "$code" = 0 ] && echo passed || echo "FAILED (exit $code)") in $(($(date +%s) - began))s"
	exit "$code"
}
trap finish EXIT
say "engine $(docker version --format '{{.Server.Version}}'), compose $(docker compose version --short), buildx $(docker buildx version | awk '{print $2}')"

# The images: the pinned ones, or stand-ins where they cannot be pulled.
images=$(bash scripts/standins/apply.sh "$out")
eval "$images"
if [ -f "$out/standins.yml" ]; then
	say "stand-ins: $COMPOSE_FILE"
	# The override and the generated Dockerfile change image references only:
	# with those taken out, compose's view of the project and the Dockerfile are
	# the project's own.
	python3 - "$out/Dockerfile" <<'PY'
import json, os, re, subprocess, sys

def config(*files):
    args = ["docker", "compose"] + [a for f in files for a in ("-f", f)] + ["config", "--format", "json"]
    return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)

def without_images(project):
    for s in project["services"].values():
        s.pop("image", None)
        (s.get("build") or {}).pop("dockerfile", None)
    return project

own = without_images(config("docker-compose.yml"))
staged = without_images(config(*os.environ["COMPOSE_FILE"].split(":")))
if own != staged:
    sys.exit("compose-stage: the override changes more than image references")

def dockerfile(path):
    lines = open(path).read().splitlines()
    lines = [l for i, l in enumerate(lines) if not (i == 0 and l.startswith("# syntax="))]
    return [re.sub(r"^(\s*FROM\s+)\S+", r"\1IMAGE", l, flags=re.I) for l in lines]

if dockerfile("Dockerfile") != dockerfile(sys.argv[1]):
    sys.exit("compose-stage: the generated Dockerfile changes more than image references")
PY
fi

# Free host ports for whatever the caller did not set: the stage must not
# collide with a developer's `docker compose up`, or with anything else here.
free_port() { # below the ephemeral range, which outgoing connections draw from
	python3 -c '
import random, socket
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for port in random.sample(range(lo // 2, lo), lo - lo // 2):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    print(port)
    break
'
}
for var in POSTGRES_HOST_PORT LOCALSTACK_HOST_PORT PAYMENTS_HOST_PORT LEDGER_HOST_PORT WEBHOOKS_HOST_PORT \
	RECEIVER_HOST_PORT PAYMENTS_OPS_HOST_PORT LEDGER_OPS_HOST_PORT WEBHOOKS_OPS_HOST_PORT; do
	[ -n "${!var:-}" ] || export "$var=$(free_port)"
done

# A stack left by an interrupted run goes first.
docker compose down --volumes --remove-orphans >/dev/null 2>&1 || true
stack_up=true
say "docker compose up --build --wait"
docker compose up --build --wait --wait-timeout 900 --quiet-pull >"$out/up.log" 2>&1 || {
	tail -n 60 "$out/up.log"
	exit 1
}
say "up: $(docker compose ps --format '{{.Service}}' | sort | tr '\n' ' ')"

say "go test -tags composestage -run TestComposeStage ./stack"
go -C tools vet -tags composestage ./stack
status=0
go -C tools test -tags composestage -count=1 -timeout 20m -v -run '^TestComposeStage$' ./stack 2>&1 | tee "$out/test.log" |
	{ grep --line-buffered -E '^(=== RUN|--- |    --- |PASS|FAIL|ok|panic)|compose_stage_test.go' || true; } || status=$?
[ "$status" = 0 ] || exit "$status"

say "docker compose down -v"
docker compose down --volumes --remove-orphans --timeout 25 >"$out/down.log" 2>&1
stack_up=false
project=$(docker compose config --format json | python3 -c 'import json, sys; print(json.load(sys.stdin)["name"])')
left=$(
	docker ps --all --quiet --filter "label=com.docker.compose.project=$project"
	docker volume ls --quiet --filter "label=com.docker.compose.project=$project"
	docker network ls --quiet --filter "label=com.docker.compose.project=$project"
)
if [ -n "$left" ]; then
	say "docker compose down -v left containers, volumes or networks of $project:"
	echo "$left"
	exit 1
fi
say "down -v left no container, volume or network of $project"

# What a rebuild left behind: the project's and the stand-ins' images that no
# tag names any more, and, on the engine's own data root, build cache unused
# for a week.
docker image prune --force --filter "label=com.docker.compose.project=$project" >/dev/null
docker image prune --force --filter label=org.payments-outbox.standin.inputs >/dev/null
if [ "$(docker info --format '{{.DockerRootDir}}')" = "${PAYMENTS_OUTBOX_CI_CACHE:-/var/cache/payments-outbox-ci}/docker" ]; then
	docker builder prune --force --filter until=168h >/dev/null
fi
