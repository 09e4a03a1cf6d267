#!/usr/bin/env bash
# make fork-check: prove docs/FORKING.md's fork recipe works. Copy the tracked files
# (untracked ones stay behind) to a temporary directory, run there the commands
# docs/FORKING.md quotes between its fork markers, check that nothing names the old
# module, the old ids of the events' schemas or the old project name any more
# (in a file or in a file's name; nothing is allowed to keep it), then build, vet and
# run the unit tests (go test -short) of the result, both of its modules, with
# no database or broker in reach.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off # each module against its own go.mod, as CI builds it
old=$(go list -m)
schema_base() { sed -n 's/^const EventSchemaBase = "\(.*\)"$/\1/p' api/events.go; }
old_base=$(schema_base)
# The project's name: the module's last element (scripts/fork.sh renames it),
# and the same without its dashes, the root package's Go name.
old_name=${old##*/}
case $old_name in v[0-9]*) old_name=${old%/*} && old_name=${old_name##*/} ;; esac
old_ident=$(echo "$old_name" | tr -cd 'a-z0-9')
recipe=$(sed -n '/<!-- fork:start -->/,/<!-- fork:end -->/p' docs/FORKING.md |
	sed -n '/^ *```sh$/,/^ *```$/p' | grep -v '^ *```' | sed 's/^ *//' || true)
if [ -z "$recipe" ]; then
	echo "fork-check: docs/FORKING.md quotes no sh block between <!-- fork:start --> and <!-- fork:end -->" >&2
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/fork-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$work"
cd "$work"
echo "fork-check: in $work, running the recipe of docs/FORKING.md:"
printf '  %s\n' "$recipe"
bash -euo pipefail -c "$recipe"

if [ "$(go list -m)" = "$old" ]; then
	echo "fork-check: the recipe left the module path $old unchanged" >&2
	exit 1
fi
new=$(go list -m)
if [ "$(go -C tools list -m)" != "$new/tools" ]; then
	echo "fork-check: the tools module is $(go -C tools list -m), want $new/tools" >&2
	exit 1
fi
if left=$(grep -rlIF -- "$old" .) ; then
	echo "fork-check: after the recipe these files still name $old:" >&2
	echo "$left" >&2
	exit 1
fi
if [ -z "$old_base" ] || [ "$(schema_base)" = "$old_base" ]; then
	echo "fork-check: the recipe left the events' schema ids under ${old_base:-(no EventSchemaBase in api/events.go)}" >&2
	exit 1
fi
if left=$(grep -rlIF -- "$old_base" .); then
	echo "fork-check: after the recipe these files still name the events' schema ids $old_base:" >&2
	echo "$left" >&2
	exit 1
fi
new_name=${new##*/}
case $new_name in v[0-9]*) new_name=${new%/*} && new_name=${new_name##*/} ;; esac
if [ "$(echo "$new_name" | tr '[:upper:]' '[:lower:]')" != "$old_name" ]; then
	for leftover in "$old_name" "$old_ident"; do
		if left=$(grep -rliIF --exclude-dir=.git -- "$leftover" .); then
			echo "fork-check: after the recipe these files still name the project $leftover:" >&2
			grep -rniIF --exclude-dir=.git -- "$leftover" . >&2
			exit 1
		fi
		if left=$(find . -path ./.git -prune -o -iname "*$leftover*" -print | grep .); then
			echo "fork-check: after the recipe these files' names still hold the project name $leftover:" >&2
			echo "$left" >&2
			exit 1
		fi
	done
fi
# The unit tests only: no server is in reach, and CI must not turn the
# integration tests' skips into failures.
unset CI DATABASE_URL AWS_ENDPOINT_URL
for dir in . tools; do
	go -C "$dir" build ./...
	go -C "$dir" vet ./...
	go -C "$dir" test -short -count=1 ./...
done
echo "fork-check: ok"
