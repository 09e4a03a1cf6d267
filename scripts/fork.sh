#!/usr/bin/env bash
# scripts/fork.sh NEW_MODULE_PATH renames the Go modules of a fork: the
# services' (go.mod) and the tools' (tools/go.mod, NEW_MODULE_PATH/tools, which
# requires and replaces the services'), every text file that names the module
# path — the imports, and the paths the test harnesses build binaries from —
# the ids of its events' schemas, and the project's name wherever it appears
# (compose project, Grafana dashboard, CI, Makefile, docs, file names).
# docs/FORKING.md ("Rename the module") runs it, and `make fork-check` runs its
# command on a copy of the repository.
set -euo pipefail
new=${1:?usage: scripts/fork.sh NEW_MODULE_PATH, e.g. github.com/you/yourpay}
cd "$(dirname "$0")/.."
export GOWORK=off # this checkout's go.mod, not a workspace's
old=$(go list -m)
[ "$old" != "$new" ] || exit 0
go mod edit -module "$new"
# replace OLD NEW: in every text file, with GNU and BSD (macOS) sed alike.
replace() {
	{ grep -rlIF --exclude-dir=.git -- "$1" . || true; } | while IFS= read -r f; do
		sed -i.bak -e "s#${1//./\\.}#${2}#g" "$f" && rm -f "$f.bak"
	done
}
# The services' path prefixes the tools module's, so this renames both
# modules, tools/go.mod's require and replace, and every import.
replace "$old" "$new"
echo "modules renamed: $old -> $new, $old/tools -> $new/tools"

# The events' schema ids — api.EventSchemaBase, which starts every $id in
# api/events, and the producer's copy of it, eventSchemaBase in
# application/payments/events.go, which starts the dataschema of every event —
# are https://<name>.example/…, <name> being the module's last element
# (before a /vN): a fork's events name schemas of its own. .example is
# reserved for documentation; to serve the schemas, replace the host with one
# you own the same way.
name() {
	local n=${1##*/}
	case $n in v[0-9]*) n=${1%/*} && n=${n##*/} ;; esac
	echo "$n"
}
old_base="https://$(name "$old").example/"
new_base="https://$(name "$new").example/"
if [ "$old_base" != "$new_base" ]; then
	replace "$old_base" "$new_base"
	echo "event schema ids renamed: $old_base -> $new_base"
fi

# The project's name, the old module's last element: the compose project (and
# so its containers' names, which docs quote), the Grafana dashboard's uid,
# title and file, CI, the Makefile, the licence, the docs — and, without its
# dashes, the root package's Go name (paymentsoutbox_test). The new name is
# lower case, as compose project names must be.
old_name=$(name "$old")
new_name=$(name "$new" | tr '[:upper:]' '[:lower:]')
ident() { echo "$1" | tr -cd 'a-z0-9'; }
if [ "$old_name" != "$new_name" ]; then
	replace "$old_name" "$new_name"
	if [ "$(ident "$old_name")" != "$(ident "$new_name")" ] && [ -n "$(ident "$new_name")" ]; then
		replace "$(ident "$old_name")" "$(ident "$new_name")"
	fi
	{ find . -path ./.git -prune -o -name "*$old_name*" -print || true; } | sort -r | while IFS= read -r f; do
		to="$(dirname "$f")/$(basename "$f" | sed "s#${old_name//./\\.}#${new_name}#g")"
		if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && git ls-files --error-unmatch "$f" >/dev/null 2>&1; then
			git mv "$f" "$to"
		else
			mv "$f" "$to"
		fi
	done
	echo "project renamed: $old_name -> $new_name"
fi
