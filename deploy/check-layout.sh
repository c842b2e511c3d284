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
done < <(for f in "${files[@]}"; do echo "${f%/*}"; done | sort | uniq -c)  # (every file is in a folder)

# Lines per file: one wc for every file (its counts in the order given, then a
# total when there are several), no process per file.
known_limit() {  # known_limit FILE: sets limit to FILE's listed length; fails if unlisted
  local entry
  for entry in "${known_long[@]}"; do
    [ "${entry% *}" = "$1" ] && { limit=${entry#* }; return 0; }
  done
  return 1
}
counts=()
[ "${#files[@]}" -eq 0 ] || mapfile -t counts < <(wc -l -- "${files[@]}" | awk '{ print $1 }')
for i in "${!files[@]}"; do
  f=${files[$i]}
  lines=${counts[$i]}
  if known_limit "$f"; then
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

# Includes one way: one grep over the files of dedup/ and metrics/ (file,
# line and text of each include of either), no process per file or include.
rank_of() {  # rank_of LIBRARY SUBFOLDER: sets rank to its place in `layers`, or to nothing
  local entry sub
  rank=0
  for entry in "${layers[@]}"; do
    [ "${entry%%:*}" = "$1" ] || continue
    for sub in ${entry#*:}; do
      [ "$sub" = "$2" ] && return 0
      rank=$((rank + 1))
    done
  done
  rank=""
}
layered=()
for f in "${files[@]}"; do
  case "${f%%/*}" in dedup | metrics) layered+=("$f") ;; esac
done
# (-H: the file name even when there is one file)
while IFS= read -r hit; do
  f=${hit%%:*}
  hit=${hit#*:}
  line=${hit%%:*}
  text=${hit#*:}
  library=${f%%/*}
  case "$text" in "#include \"$library/"*) ;; *) continue ;; esac  # another library's header
  rest=${f#*/}
  case "$rest" in */*) own=${rest%%/*} ;; *) own=. ;; esac
  rank_of "$library" "$own"
  own_rank=$rank
  [ -n "$own_rank" ] || continue
  header=${text#*\"}
  header=${header%%\"*}
  inner=${header#"$library"/}
  case "$inner" in */*) sub=${inner%%/*} ;; *) sub=. ;; esac
  rank_of "$library" "$sub"
  if [ -n "$rank" ] && [ "$rank" -gt "$own_rank" ]; then
    echo "$f:$line: includes $header, from a folder above $library/$own/ (layers in deploy/check-layout.sh)"
    status=1
  fi
done < <([ "${#layered[@]}" -eq 0 ] || grep -Hn '^#include "\(dedup\|metrics\)/' -- "${layered[@]}" || true)

if [ "$status" -ne 0 ]; then
  echo "check-layout: the folders above break the layout rule (docs/CONTRIBUTING.md, \"Layout\")" >&2
else
  echo "check-layout: every folder holds at most $max_files .cc/.h files, every file at most" \
    "$max_lines lines (${#known_long[@]} listed exceptions); dedup/ and metrics/ include one way"
fi
exit "$status"
