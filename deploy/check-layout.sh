#!/usr/bin/env bash
# The layout rule of the source folders (docs/CONTRIBUTING.md, "Layout"): no
# folder under app/, base/, config/, dedup/, metrics/ or stream/ holds more
# than 15 .cc/.h files of its own (its sub-folders count apart), and no .cc/.h
# file there is over 550 lines; and the sub-folders of dedup/ and metrics/
# include one way (dedup/README.md, metrics/README.md): a file includes its own
# folder's headers and those of the folders before it in `layers` below, never
# one after it. Lists every offender and exits 1; exits 0 when there is none.
#   bash deploy/check-layout.sh [SOURCE_DIR]   (default: this repository)
# Reads the files git tracks (every file below SOURCE_DIR when it is not a git
# checkout).
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$root"

max_files=15
max_lines=550
folders=(app base config dedup metrics stream)

# Files over max_lines that are still to be split, each with its length when
# it was listed. Remove a line when its file is split; the check fails for a
# listed file that has grown, and says so for one that is no longer long.
known_long=()

# Each library's sub-folders, lowest first; "." is the folder itself.
layers=(
  "dedup: core text kernels fingerprint index engine"
  "metrics: http page ."
)

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  list() { git ls-files -- "${folders[@]}"; }
else
  list() { find "${folders[@]}" -type f 2>/dev/null || true; }
fi

files=()
while IFS= read -r f; do
  case "$f" in
    *.cc | *.h) [ -f "$f" ] && files+=("$f") ;;  # listed but deleted: not yet committed
  esac
done < <(list | sort)

status=0

# Files per folder.
while read -r count dir; do
  if [ "$count" -gt "$max_files" ]; then
    echo "$dir/: $count .cc/.h files (at most $max_files: split it into sub-folders by concern)"
    status=1
  fi
done < <(for f in "${files[@]}"; do dirname "$f"; done | sort | uniq -c)

# Lines per file.
known_limit() {
  local entry
  for entry in "${known_long[@]}"; do
    [ "${entry% *}" = "$1" ] && { echo "${entry#* }"; return 0; }
  done
  return 1
}
for f in "${files[@]}"; do
  lines=$(wc -l <"$f")
  if limit=$(known_limit "$f"); then
    if [ "$lines" -gt "$limit" ]; then
      echo "$f: $lines lines, more than the $limit it is listed with in deploy/check-layout.sh"
      status=1
    elif [ "$lines" -le "$max_lines" ]; then
      echo "$f: $lines lines, no longer over $max_lines: remove it from known_long in deploy/check-layout.sh" >&2
    fi
  elif [ "$lines" -gt "$max_lines" ]; then
    echo "$f: $lines lines (at most $max_lines: split it along a seam)"
    status=1
  fi
done

# Includes one way.
rank_of() {  # rank_of LIBRARY SUBFOLDER: its place in `layers`, or nothing
  local entry sub rank=0
  for entry in "${layers[@]}"; do
    [ "${entry%%:*}" = "$1" ] || continue
    for sub in ${entry#*:}; do
      [ "$sub" = "$2" ] && { echo "$rank"; return 0; }
      rank=$((rank + 1))
    done
  done
  return 0
}
for f in "${files[@]}"; do
  library=${f%%/*}
  case "$library" in dedup | metrics) ;; *) continue ;; esac
  rest=${f#*/}
  case "$rest" in */*) own=${rest%%/*} ;; *) own=. ;; esac
  own_rank=$(rank_of "$library" "$own")
  [ -n "$own_rank" ] || continue
  while IFS=: read -r line text; do
    header=${text#*\"}
    header=${header%%\"*}
    inner=${header#"$library"/}
    case "$inner" in */*) sub=${inner%%/*} ;; *) sub=. ;; esac
    rank=$(rank_of "$library" "$sub")
    if [ -n "$rank" ] && [ "$rank" -gt "$own_rank" ]; then
      echo "$f:$line: includes $header, from a folder above $library/$own/ (layers in deploy/check-layout.sh)"
      status=1
    fi
  done < <(grep -n "^#include \"$library/" "$f" || true)
done

if [ "$status" -ne 0 ]; then
  echo "check-layout: the folders above break the layout rule (docs/CONTRIBUTING.md, \"Layout\")" >&2
else
  echo "check-layout: every folder holds at most $max_files .cc/.h files, every file at most" \
    "$max_lines lines (${#known_long[@]} listed exceptions); dedup/ and metrics/ include one way"
fi
exit "$status"
