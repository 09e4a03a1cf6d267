#!/usr/bin/env bash
# scripts/fork.sh NEW_MODULE_PATH renames the Go module of a fork: go.mod, and
# every text file that names the module path — the imports, and the paths the
# test harnesses build binaries from. README.md's "How to fork" runs it, and
# `make fork-check` runs README's command on a copy of the repository.
set -euo pipefail
new=${1:?usage: scripts/fork.sh NEW_MODULE_PATH, e.g. github.com/you/yourpay}
cd "$(dirname "$0")/.."
old=$(go list -m)
[ "$old" != "$new" ] || exit 0
go mod edit -module "$new"
# sed -i.bak works with both GNU and BSD (macOS) sed.
grep -rlIF --exclude-dir=.git -- "$old" . | while IFS= read -r f; do
	sed -i.bak -e "s#${old//./\\.}#${new}#g" "$f" && rm -f "$f.bak"
done
echo "module renamed: $old -> $new"
