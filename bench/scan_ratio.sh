#!/usr/bin/env bash
# What the sketch stage costs `neardup scan`, measured on the binary: CPU time
# (user + sys) of `neardup scan` over the news-like feed with the sketch stage
# on and off, the two alternating, the ratio taken per adjacent pair (off / on:
# the sketch-on throughput as a share of the sketch-off one). Pairs share the
# machine's load of the moment, so their ratios scatter less than the times.
# Prints every pair, then the median ratio and the quartiles.
#
#   bench/scan_ratio.sh [RECORDS] [PAIRS]          defaults: 200000 records, 21 pairs
#   NEARDUP_BIN=/path/to/neardup bench/scan_ratio.sh   another build of neardup
#   NEARDUP_BASELINE_BIN=/path/to/neardup bench/scan_ratio.sh
#       the other side is that build with its default configuration instead of
#       this build with the sketch off: e.g. a build without the sketch
#       stage (commit deca923), to compare the two binaries
#
# Needs the release build: cmake --preset release && cmake --build --preset release
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

records=${1:-200000}
pairs=${2:-21}
bin=${NEARDUP_BIN:-build/release/app/neardup}
baseline=${NEARDUP_BASELINE_BIN:-}
make_feed=build/release/bench/neardup_make_feed
if [[ ! "$records" =~ ^[1-9][0-9]*$ || ! "$pairs" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: bench/scan_ratio.sh [RECORDS] [PAIRS]  (positive integers)" >&2
  exit 2
fi
for tool in "$bin" "$make_feed" ${baseline:+"$baseline"}; do
  if [ ! -x "$tool" ]; then
    echo "scan_ratio.sh: $tool not found; build it: cmake --preset release && cmake --build --preset release" >&2
    exit 2
  fi
done

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$make_feed" "$records" > "$dir/feed.jsonl"
printf 'dedup:\n  sketch:\n    enabled: false\n' > "$dir/sketch-off.yaml"

# CPU seconds of one scan by binary $1 (bash's `time`: the child's user + sys).
cpu() {
  local TIMEFORMAT='%U %S' times binary=$1
  shift
  times=$({ time "$binary" scan "$@" "$dir/feed.jsonl" > /dev/null 2> "$dir/stderr"; } 2>&1) ||
    { echo "scan_ratio.sh: neardup scan failed:" >&2; cat "$dir/stderr" >&2; exit 1; }
  awk '{ printf "%.3f", $1 + $2 }' <<< "$times"
}

echo "neardup scan, $records records, $pairs pairs (CPU seconds)"
[ -n "$baseline" ] && echo "off = $baseline with its default configuration"
for ((i = 1; i <= pairs; i++)); do
  on=$(cpu "$bin")
  if [ -n "$baseline" ]; then off=$(cpu "$baseline"); else off=$(cpu "$bin" --config "$dir/sketch-off.yaml"); fi
  ratio=$(awk -v on="$on" -v off="$off" 'BEGIN { printf "%.3f", off / on }')
  echo "pair $i: sketch on $on, off $off, off/on $ratio"
  echo "$ratio" >> "$dir/ratios"
done
sort -n "$dir/ratios" | awk '{ r[NR] = $1 }
  END {
    printf "off/on median %.3f, quartiles %.3f-%.3f, min %.3f, max %.3f (%d pairs)\n",
      r[int((NR + 1) / 2)], r[int((NR + 3) / 4)], r[int((3 * NR + 1) / 4)], r[1], r[NR], NR
  }'
