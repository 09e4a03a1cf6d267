#!/usr/bin/env bash
# scripts/fork.sh NEW_MODULE_PATH [PROJECT_NAME] makes a fork of this
# repository its own, in this checkout:
#
#   - the module path: the services' module (go.mod) and the tools' (tools/go.mod,
#     NEW_MODULE_PATH/tools, which requires and replaces the services'), and every
#     text file that names it: the imports, the paths the test harnesses build
#     binaries from;
#   - the project's name, PROJECT_NAME, wherever the old one appears: the compose
#     project (and so its containers' names), the Grafana dashboard's uid, title
#     and file, the Kubernetes labels, CI, the Makefile, the licence, the docs and,
#     without its dashes, the root package's Go name;
#   - the host of its events' schema ids (api.EventSchemaBase and the producer's
#     copy of it), https://PROJECT_NAME.example/: a fork's events are its own
#     contract;
#   - deploy/PREVIOUS_RELEASE, set to none: the template's previous release is not
#     a release of the fork, whose events name other schemas (tools/rolling skips
#     until the fork's first release is written there);
#
# then tidies both modules (the renamed require line of tools/go.mod sorts
# elsewhere). docs/FORKING.md ("Rename the module") runs it, and `make
# fork-check` runs that recipe on a copy of the repository.
#
# PROJECT_NAME defaults to the module path's owner and name joined by a dash,
# lower case (a /vN major version suffix dropped); a new major version of the
# same module keeps the project's name and its deploy/PREVIOUS_RELEASE. It
# must be a word the code does not already use, in any case: every occurrence
# of the project's name is renamed, now and by the next fork, so a name such
# as "payments" would rewrite the payments service with it. The script refuses
# such a name, and says where the code uses it.
set -euo pipefail
usage='usage: scripts/fork.sh NEW_MODULE_PATH [PROJECT_NAME], e.g. scripts/fork.sh github.com/you/yourpay'
new=${1:?$usage}
cd "$(dirname "$0")/.."
export GOWORK=off # this checkout's go.mod, not a workspace's

fail() {
	echo "fork.sh: $*" >&2
	exit 1
}

old=$(go list -m)
# The project's name is the compose project's, the one place that states it.
old_name=$(sed -n 's/^name: *//p' docker-compose.yml)
[ -n "$old_name" ] || fail "docker-compose.yml has no top-level name: (the project's name)"
# The schema ids' host: scheme and host of api.EventSchemaBase.
old_host=$(sed -n 's#^const EventSchemaBase = "\([a-z]*://[^/]*/\).*"$#\1#p' api/events.go)
[ -n "$old_host" ] || fail "api/events.go has no const EventSchemaBase"

# default_name MODULE_PATH: the path's owner and name (a /vN major version
# dropped) joined by a dash, lower case, anything but letters and digits a dash.
default_name() {
	local p=$1 owner=
	if [[ $p =~ ^(.+)/v[0-9]+$ ]]; then p=${BASH_REMATCH[1]}; fi
	if [[ $p == */* ]]; then owner=${p%/*} && owner=${owner##*/}-; fi
	echo "$owner${p##*/}" | tr '[:upper:]' '[:lower:]' | sed -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/^-//' -e 's/-$//'
}
# A new major version of the same module (a /vN added or changed) is the
# same project: it keeps its name, and its previous release.
unversioned() { [[ $1 =~ ^(.+)/v[0-9]+$ ]] && echo "${BASH_REMATCH[1]}" || echo "$1"; }
same_module=false
[ "$(unversioned "$old")" != "$(unversioned "$new")" ] || same_module=true
if $same_module; then
	new_name=${2:-$old_name}
else
	new_name=${2:-$(default_name "$new")}
fi
# A compose project, a DNS label (a Kubernetes ConfigMap, the schema host), a
# Grafana uid (40 characters at most) and, without its dashes, a Go package name.
if ! echo "$new_name" | grep -Eqx '[a-z][a-z0-9-]{0,38}[a-z0-9]'; then
	fail "project name \"$new_name\": want lower-case letters, digits and dashes, a letter first, 2 to 40 characters; pass one: $usage"
fi
ident() { echo "$1" | tr -cd 'a-z0-9'; }
old_ident=$(ident "$old_name")
new_ident=$(ident "$new_name")
new_host="https://$new_name.example/"

if [ "$old" = "$new" ] && [ "$old_name" = "$new_name" ]; then
	echo "fork.sh: the module is already $new and the project $new_name"
	exit 0
fi

# Every text file but git's.
text_files() { grep -rlIF --exclude-dir=.git "$@" . || true; }

# A new project name the code already uses (once the old names are taken out
# of it) would be renamed with the project from now on.
if [ "$old_name" != "$new_name" ]; then
	for word in "$new_name" $([ "$new_ident" = "$new_name" ] || echo "$new_ident"); do
		used=$(text_files -i -e "$word" | while IFS= read -r f; do
			awk -v old="$old" -v host="$old_host" -v name="$old_name" -v id="$old_ident" -v w="$word" '
				function strip(s, t,   i) { while ((i = index(s, t)) > 0) s = substr(s, 1, i - 1) " " substr(s, i + length(t)); return s }
				{ s = strip(strip(strip(strip($0, old), host), name), id); if (index(tolower(s), w)) print FILENAME ":" FNR ": " $0 }
			' "$f"
		done)
		if [ -n "$used" ]; then
			echo "fork.sh: the code already uses \"$word\", in $(echo "$used" | wc -l | tr -d ' ') lines; the first ones:" >&2
			echo "$used" | head -10 | sed 's/^/  /' >&2
			fail "every occurrence of the project's name is renamed, now and by the next fork, and these would be too: pick another project name ($usage)"
		fi
	done
fi

# The renames, in one pass per file: each old string becomes a placeholder
# first, and the placeholders the new strings last, so that a new string that
# holds an old one (a project renamed to its owner's name, a dash and its own
# name) is never renamed again. In order: the Go form of the project's name,
# in package clauses only (where the root package's name is written, and the
# Go form of a name without dashes is the name itself); the module path (which
# may hold the project's name); the schema host; the project's name.
mark=$'\001'
regex() { printf '%s' "$1" | sed 's/[][\\/.^$*#]/\\&/g'; }
literal() { printf '%s' "$1" | sed 's/[\\&#]/\\&/g'; }
olds=() news=() script=()
rename() {
	[ "$1" != "$2" ] || return 0
	script+=(-e "${3:-}s#$(regex "$1")#$mark${#olds[@]}$mark#g")
	olds+=("$1") && news+=("$2")
}
rename "$old_ident" "$new_ident" '/^package /'
rename "$old" "$new"
rename "$old_host" "$new_host"
rename "$old_name" "$new_name"
grep_olds=()
for i in "${!olds[@]}"; do
	script+=(-e "s#$mark$i$mark#$(literal "${news[$i]}")#g")
	grep_olds+=(-e "${olds[$i]}")
done
if [ -n "$(text_files -e "$mark")" ]; then
	fail "a text file holds the byte \\001, which the renames use as a placeholder"
fi
# tools/go.mod requires the services' module at a zero pseudo-version of its
# major version (v0.0.0-…, v2.0.0-…), and replaces it: go mod tidy, below,
# writes the requirement again with the new path's.
go -C tools mod edit -droprequire="$old"
# With GNU and BSD (macOS) sed alike.
text_files "${grep_olds[@]}" | while IFS= read -r f; do
	sed -i.bak "${script[@]}" "$f" && rm -f "$f.bak"
done

# File names that hold the project's name (the dashboard's).
if [ "$old_name" != "$new_name" ]; then
	{ find . -path ./.git -prune -o \( -name "*$old_name*" -o -name "*$old_ident*" \) -print || true; } | sort -r | while IFS= read -r f; do
		base=$(basename "$f" | sed -e "s#$(regex "$old_name")#$(literal "$new_name")#g" -e "s#$(regex "$old_ident")#$(literal "$new_ident")#g")
		to="$(dirname "$f")/$base"
		if git ls-files --error-unmatch "$f" >/dev/null 2>&1; then
			git mv "$f" "$to"
		else
			mv "$f" "$to"
		fi
	done
fi

# The previous release of another module is not the fork's: a fork has none
# until it ships.
if ! $same_module; then
	sed -i.bak -e '/^[^#]/s/.*/none/' deploy/PREVIOUS_RELEASE && rm -f deploy/PREVIOUS_RELEASE.bak
	previous="none: write your first release's commit there when it ships"
else
	previous="unchanged: the same module"
fi

# A renamed identifier or string changes the width gofmt aligns a block of
# fields or comments to.
gofmt -w $(git ls-files '*.go')

# tools/go.mod requires the services' module again, where its new path sorts.
# Quiet, unless it fails: tidy names every package it finds in the module.
for dir in . tools; do
	out=$(go -C "$dir" mod tidy 2>&1) || fail "go mod tidy in $dir: $out"
done

# The manifests deploy/kubernetes generates from elsewhere (init-aws.sh, the
# queue policies) embed what was renamed, and YAML folds a long line where its
# length puts it: written again, not edited.
out=$(go -C tools run ./kubernetes/gen 2>&1) || fail "go -C tools run ./kubernetes/gen: $out"

echo "fork.sh: module $old -> $new (tools: $new/tools)"
[ "$old_host" = "$new_host" ] || echo "fork.sh: events' schema ids ${old_host}… -> ${new_host}…"
[ "$old_name" = "$new_name" ] || echo "fork.sh: project $old_name -> $new_name"
echo "fork.sh: deploy/PREVIOUS_RELEASE $previous"
echo "fork.sh: what is left to do by hand: docs/FORKING.md, \"Rename the module\""
