#!/usr/bin/env bash
# Checks that the C++ lines a change adds or modifies are formatted as
# .clang-format says (clang-format 14, Debian 12's). Only changed lines are
# checked (clang-format-diff), so older code is never reformatted wholesale
# (docs/architecture.md §8).
#
#   scripts/check-format.sh [BASE]        check the changes since BASE
#   scripts/check-format.sh --fix [BASE]  format those lines in place instead
#
# BASE is a commit (default: the one recorded in .ci/format-base). The changes
# are those from the merge base of BASE and HEAD to the working tree: HEAD's
# commits and anything not committed yet (new files count once `git add`ed).
# On a clean clone that is exactly BASE...HEAD; it needs the history down to
# BASE (not a shallow clone). Deleted lines and pure renames are not checked.
# Exit status: 0 formatted, 1 not (the fix is printed as a diff), 2 setup error.
set -euo pipefail
cd "$(dirname "$0")/.."

fix=0
if [ "${1:-}" = "--fix" ]; then
  fix=1
  shift
fi
if [ $# -gt 1 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  echo "usage: scripts/check-format.sh [--fix] [BASE]" >&2
  exit 2
fi

if [ $# -eq 1 ]; then
  base="$1"
elif [ -r .ci/format-base ]; then
  base="$(tr -d '[:space:]' < .ci/format-base)"
else
  echo "check-format: no BASE given and no .ci/format-base" >&2
  exit 2
fi

# clang-format itself (the config is tuned for 14), and clang-format-diff.
fmt=""
for c in clang-format-14 clang-format; do
  if command -v "$c" > /dev/null 2>&1; then
    fmt="$(command -v "$c")"
    break
  fi
done
diff_cmd=()
for c in clang-format-diff-14 clang-format-diff; do
  if command -v "$c" > /dev/null 2>&1; then
    diff_cmd=("$(command -v "$c")")
    break
  fi
done
if [ ${#diff_cmd[@]} -eq 0 ] && [ -r /usr/share/clang/clang-format-14/clang-format-diff.py ]; then
  diff_cmd=(python3 /usr/share/clang/clang-format-14/clang-format-diff.py)
fi
if [ -z "$fmt" ] || [ ${#diff_cmd[@]} -eq 0 ]; then
  echo "check-format: clang-format and clang-format-diff are needed (scripts/install-packages.sh clang-format)" >&2
  exit 2
fi
version="$("$fmt" --version | sed -n 's/.*version \([0-9][0-9]*\).*/\1/p')"
if [ "$version" != "14" ]; then
  echo "check-format: warning: $fmt is version ${version:-unknown}, .clang-format is tuned for 14; results may differ" >&2
fi

if ! git rev-parse --verify --quiet "$base^{commit}" > /dev/null; then
  echo "check-format: base commit '$base' is not in this clone (a shallow clone? git fetch --unshallow)" >&2
  exit 2
fi
if ! merge_base="$(git merge-base "$base" HEAD)"; then
  echo "check-format: '$base' and HEAD have no common history" >&2
  exit 2
fi

# Changed lines of C++ sources, against the working tree (which clang-format
# reads). Hunks that only delete (+N,0) are dropped: clang-format-diff would
# otherwise format the untouched line where the deletion was.
patch="$(git -c core.quotePath=false diff -U0 --no-color --no-ext-diff -M --diff-filter=d \
           --src-prefix=a/ --dst-prefix=b/ "$merge_base" -- '*.cpp' '*.h' '*.cu' '*.cuh' |
         awk '!/^@@ -[0-9,]+ \+[0-9]+,0 @@/')"
files="$(printf '%s\n' "$patch" | grep -c '^+++ b/' || true)"

args=(-p1 -binary "$fmt" -iregex '.*\.(cpp|h|cu|cuh)')
if [ "$fix" -eq 1 ]; then
  printf '%s\n' "$patch" | "${diff_cmd[@]}" "${args[@]}" -i
  echo "check-format: formatted the changed lines of $files file(s) since ${base:0:12}"
  exit 0
fi

out="$(printf '%s\n' "$patch" | "${diff_cmd[@]}" "${args[@]}")"
if [ -n "$out" ]; then
  printf '%s\n' "$out"
  echo "check-format: changed lines since ${base:0:12} are not formatted as .clang-format says;" >&2
  echo "check-format: the diff above fixes them (apply it with scripts/check-format.sh --fix${1:+ $1})" >&2
  exit 1
fi
echo "check-format: the changed lines of $files C++ file(s) since ${base:0:12} are formatted"
