#!/usr/bin/env bash
# make fork-check: prove that docs/FORKING.md's rename leaves a fork whose CI
# passes. Copy the tracked files (untracked ones stay behind) to a temporary
# directory and make it a git work tree of its own, run there the commands
# docs/FORKING.md quotes between its fork markers, check that nothing names the
# old module, the old host of the events' schema ids or the old project name
# any more (in a file or in a file's name; nothing is allowed to keep it) and
# that deploy/PREVIOUS_RELEASE is none, then run on the copy what CI runs:
#
#   - make lint, whole: gofmt, both modules tidy, vet, staticcheck, actionlint,
#     the contracts' linters;
#   - the unit tests of both modules (go test -short), with no server in reach;
#   - the rolling-update test through tools/testrun with CI set, which must end
#     in the one skip CI lets pass: the fork has no previous release yet.
#
# It does not run the integration suite (make test) on the copy: that run, by
# hand, is in docs/FORKING.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off # each module against its own go.mod, as CI builds it
start=$SECONDS
old=$(go list -m)
old_name=$(sed -n 's/^name: *//p' docker-compose.yml)
old_ident=$(echo "$old_name" | tr -cd 'a-z0-9')
schema_host() { sed -n 's#^const EventSchemaBase = "\([a-z]*://[^/]*/\).*"$#\1#p' api/events.go; }
old_host=$(schema_host)
recipe=$(sed -n '/<!-- fork:start -->/,/<!-- fork:end -->/p' docs/FORKING.md |
	sed -n '/^ *```sh$/,/^ *```$/p' | grep -v '^ *```' | sed 's/^ *//' || true)
if [ -z "$recipe" ]; then
	echo "fork-check: docs/FORKING.md quotes no sh block between <!-- fork:start --> and <!-- fork:end -->" >&2
	exit 1
fi
fail() {
	echo "fork-check: $*" >&2
	exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/fork-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$work"
cd "$work"
# make lint lists the Go files with git ls-files, and fork.sh renames files with git mv.
git init -q && git add -A
echo "fork-check: in $work, running the recipe of docs/FORKING.md:"
printf '  %s\n' "$recipe"
bash -euo pipefail -c "$recipe"

[ "$(go list -m)" != "$old" ] || fail "the recipe left the module path $old unchanged"
new=$(go list -m)
[ "$(go -C tools list -m)" = "$new/tools" ] || fail "the tools module is $(go -C tools list -m), want $new/tools"
new_name=$(sed -n 's/^name: *//p' docker-compose.yml)
if [ -z "$new_name" ] || [ "$new_name" = "$old_name" ]; then
	fail "the recipe left the project name ${old_name} (docker-compose.yml's name:) unchanged"
fi
[ "$(schema_host)" = "https://$new_name.example/" ] || fail "api.EventSchemaBase is on $(schema_host), want https://$new_name.example/"
for leftover in "$old" "$old_host"; do
	if left=$(grep -rlIF --exclude-dir=.git -- "$leftover" .); then
		fail "after the recipe these files still name $leftover:"$'\n'"$left"
	fi
done
for leftover in "$old_name" "$old_ident"; do
	if grep -rliIF --exclude-dir=.git -- "$leftover" . >/dev/null; then
		grep -rniIF --exclude-dir=.git -- "$leftover" . >&2
		fail "after the recipe these lines (above) still name the project $leftover"
	fi
	if left=$(find . -path ./.git -prune -o -iname "*$leftover*" -print | grep .); then
		fail "after the recipe these files' names still hold the project name $leftover:"$'\n'"$left"
	fi
done
[ "$(grep -v '^#' deploy/PREVIOUS_RELEASE)" = none ] || fail "after the recipe deploy/PREVIOUS_RELEASE is not none"
echo "fork-check: renamed $old -> $new, project $old_name -> $new_name, in $((SECONDS - start))s"

# What CI runs, on the copy.
t=$SECONDS
make lint
echo "fork-check: make lint passed on the copy in $((SECONDS - t))s"

t=$SECONDS
(
	# The unit tests alone: no server, so that CI's cannot make them integration tests.
	unset CI DATABASE_URL AWS_ENDPOINT_URL
	for dir in . tools; do
		go -C "$dir" test -short -count=1 ./...
	done
)
echo "fork-check: the unit tests passed on the copy in $((SECONDS - t))s"

t=$SECONDS
log="$work/rolling.log"
if ! CI=true go -C tools run ./testrun -count=1 -run '^TestPreviousReleaseRunsOnTheNewSchema$' ./tools/rolling 2>&1 | tee "$log"; then
	fail "under CI the rolling-update test does not pass on the copy (above)"
fi
grep -q 'no previous release to roll from' "$log" ||
	fail "the rolling-update test did not skip for want of a previous release (above): after the rename it has none"
echo "fork-check: the rolling-update test, under CI, skips as CI expects on the copy, in $((SECONDS - t))s"
echo "fork-check: ok, in $((SECONDS - start))s"
