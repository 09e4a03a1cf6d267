#!/usr/bin/env bash
# Finds which images docker-compose.yml and the Dockerfile pin that the engine
# (DOCKER_HOST) has neither locally nor can pull, builds a stand-in for each
# (build.sh), and writes, in OUT (default .compose-stage/):
#   - Dockerfile: the project's Dockerfile with those images' references
#     replaced by the stand-ins' (and the `# syntax` line dropped when its
#     frontend image is out of reach: the engine's built-in frontend reads it);
#   - standins.yml: a compose override that sets those services' `image`, and
#     points the services built from the Dockerfile at OUT/Dockerfile.
# Nothing else of either file changes; compose-stage.sh checks that. It prints
# the export lines that apply them, for eval:
#   COMPOSE_FILE (docker-compose.yml plus the override, when there is one) and
#   TESTCONTAINERS_POSTGRES_IMAGE / TESTCONTAINERS_LOCALSTACK_IMAGE (the image
#   the test helpers start instead of the pinned one; unset when it can be
#   pulled).
# With every pinned image at hand (a registry answers) it prints only
# COMPOSE_FILE=.../docker-compose.yml, and the stages run the real images.
#
#   eval "$(bash scripts/standins/apply.sh [OUT])"
#
# With --test-images it looks at the services' images only (Postgres and
# LocalStack, which the test helpers start too), writes nothing, and prints
# only the TESTCONTAINERS_* lines.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
test_images=false
if [ "${1:-}" = --test-images ]; then
	test_images=true
	shift
fi
out=$(mkdir -p "${1:-$root/.compose-stage}" && cd "${1:-$root/.compose-stage}" && pwd)

log() { echo "standins: $*" >&2; }
die() {
	log "$*"
	exit 1
}

# available REF: the engine has REF, or pulls it now.
available() {
	docker image inspect "$1" >/dev/null 2>&1 && return 0
	docker pull --quiet "$1" >/dev/null 2>&1
}

# standin_for REF names the stand-in of a pinned image.
standin_for() {
	case "$1" in
	golang:*) echo golang ;;
	gcr.io/distroless/static*) echo distroless ;;
	postgres:*) echo postgres ;;
	localstack/localstack:*) echo localstack ;;
	docker/dockerfile:*) echo frontend ;;
	*) die "$1 cannot be pulled and has no stand-in (scripts/standins)" ;;
	esac
}

# The services compose runs by default (no profile) from an image, and the
# images they pin; then the Dockerfile's `# syntax` frontend and FROM images
# (FROM a stage name is no image).
config=$(cd "$root" && docker compose -f docker-compose.yml config --format json)
service_images=$(python3 -c '
import json, sys
for name, s in json.load(sys.stdin)["services"].items():
    if "image" in s and "build" not in s and not s.get("profiles"):
        print(name, s["image"])
' <<<"$config")
syntax=$(sed -n '1s/^# *syntax=\([^ ]*\).*/\1/p' "$root/Dockerfile")
stages=$(sed -n 's/^FROM .* AS \([^ ]*\)$/\1/Ip' "$root/Dockerfile")
from_images=$(awk 'toupper($1) == "FROM" {print $2}' "$root/Dockerfile" | grep -vxF -f <(echo "$stages") | sort -u)

refs=$(awk '{print $2}' <<<"$service_images")
$test_images || refs="$refs $syntax $from_images"
declare -A standin=() # pinned reference -> stand-in name
for ref in $refs; do
	if available "$ref"; then
		log "pulled or found $ref"
	else
		standin[$ref]=$(standin_for "$ref")
		case "${standin[$ref]}" in
		frontend) log "$ref cannot be pulled: the engine's built-in Dockerfile frontend reads the Dockerfile" ;;
		*) log "$ref cannot be pulled: using the ${standin[$ref]} stand-in" ;;
		esac
	fi
done

if [ ${#standin[@]} -eq 0 ]; then
	$test_images && exit 0
	rm -f "$out/standins.yml" "$out/Dockerfile"
	echo "export COMPOSE_FILE=$root/docker-compose.yml"
	exit 0
fi

# Build the stand-ins needed, once each; read back NAME=IMAGE.
declare -A image=()
names=$(printf '%s\n' "${standin[@]}" | grep -vx frontend | sort -u || true)
if [ -n "$names" ]; then
	# shellcheck disable=SC2086 # one argument per name
	while IFS='=' read -r name tag; do
		image[$name]=$tag
	done < <(bash "$here/build.sh" $names)
fi

test_image_exports() {
	for ref in "${!standin[@]}"; do
		case "${standin[$ref]}" in
		postgres) echo "export TESTCONTAINERS_POSTGRES_IMAGE=${image[postgres]}" ;;
		localstack) echo "export TESTCONTAINERS_LOCALSTACK_IMAGE=${image[localstack]}" ;;
		esac
	done
}
if $test_images; then
	test_image_exports
	exit 0
fi

# The Dockerfile with the unreachable references swapped, line for line: the
# image of a FROM line, and the `# syntax` line when its frontend is out of reach.
swaps=()
for ref in "${!standin[@]}"; do
	name=${standin[$ref]}
	if [ "$name" = frontend ]; then
		swaps+=("$ref" "")
	elif grep -qxF "$ref" <<<"$from_images"; then
		swaps+=("$ref" "${image[$name]}")
	fi
done
python3 - "$root/Dockerfile" "$out/Dockerfile" "${swaps[@]}" <<'PY'
import re, sys
src, dst, pairs = sys.argv[1], sys.argv[2], sys.argv[3:]
swap = dict(zip(pairs[0::2], pairs[1::2]))
lines = open(src).read().splitlines(keepends=True)
out = []
for i, line in enumerate(lines):
    syntax = re.match(r"#\s*syntax=(\S+)", line) if i == 0 else None
    if syntax and swap.get(syntax.group(1)) == "":
        continue  # the engine's built-in frontend
    m = re.match(r"(\s*FROM\s+)(\S+)(.*)", line, re.S | re.I)
    if m and swap.get(m.group(2)):
        line = m.group(1) + swap[m.group(2)] + m.group(3)
    out.append(line)
open(dst, "w").write("".join(out))
PY
dockerfile_changed=false
[ ${#swaps[@]} -eq 0 ] || dockerfile_changed=true

{
	echo "# Generated by scripts/standins/apply.sh: the stand-ins for the pinned images"
	echo "# this engine cannot pull. Only image references differ from docker-compose.yml."
	echo "services:"
	while read -r service ref; do
		[ -n "${standin[$ref]:-}" ] || continue
		printf '  %s:\n    image: %s\n' "$service" "${image[${standin[$ref]}]}"
	done <<<"$service_images"
	if $dockerfile_changed; then
		python3 -c '
import json, sys
for name, s in json.load(sys.stdin)["services"].items():
    if "build" in s and not s.get("profiles"):
        print(name)
' <<<"$config" | while read -r service; do
			printf '  %s:\n    build:\n      dockerfile: %s\n' "$service" "$out/Dockerfile"
		done
	fi
} >"$out/standins.yml"

echo "export COMPOSE_FILE=$root/docker-compose.yml:$out/standins.yml"
test_image_exports
