#!/usr/bin/env bash
# `neardup scan --threads N` against `--threads 1` on the binary:
# records/s (wall clock) of the news-like feed (~200-byte JSON Lines records,
# ~20% near-duplicates), the two thread counts alternating, RUNS runs each;
# prints every run, the median records/s of each side, the ratio of the
# medians and the median of the per-pair ratios (a pair shares the machine's
# load of the moment). Also checks that both outputs are identical.
#
#   bench/scan_threads.sh [RECORDS] [RUNS] [THREADS]   defaults: 200000 records, 9 runs, 2 threads
#   NEARDUP_BIN=/path/to/neardup bench/scan_threads.sh  another build of neardup
#
# The speed-up needs idle cores: on a machine shared with other work, run it
# when the load average is low (it prints the load before and after).
# Needs the release build: cmake --preset release && cmake --build --preset release
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

records=${1:-200000}
runs=${2:-9}
threads=${3:-2}
bin=${NEARDUP_BIN:-build/release/app/neardup}
make_feed=${NEARDUP_MAKE_FEED:-$(dirname "$bin")/../bench/neardup_make_feed}
if [[ ! "$records" =~ ^[1-9][0-9]*$ || ! "$runs" =~ ^[1-9][0-9]*$ || ! "$threads" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: bench/scan_threads.sh [RECORDS] [RUNS] [THREADS]  (positive integers)" >&2
  exit 2
fi
for tool in "$bin" "$make_feed"; do
  if [ ! -x "$tool" ]; then
    echo "scan_threads.sh: $tool not found; build it: cmake --preset release && cmake --build --preset release" >&2
    exit 2
  fi
done

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$make_feed" "$records" > "$dir/feed.jsonl"
bytes=$(wc -c < "$dir/feed.jsonl")

# Wall seconds of one scan with $1 threads; its output goes to $dir/out.$1.
wall() {
  local TIMEFORMAT='%R' seconds
  seconds=$({ time "$bin" scan --threads "$1" "$dir/feed.jsonl" > "$dir/out.$1" 2> "$dir/stderr"; } 2>&1) ||
    { echo "scan_threads.sh: neardup scan failed:" >&2; cat "$dir/stderr" >&2; exit 1; }
  echo "$seconds"
}

echo "neardup scan --threads 1 vs --threads $threads: $records records of $((bytes / records)) bytes, $runs runs each"
echo "cores available: $(nproc), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
wall 1 > /dev/null  # warm the page cache and the binary
for ((i = 1; i <= runs; i++)); do
  one=$(wall 1)
  many=$(wall "$threads")
  cmp -s "$dir/out.1" "$dir/out.$threads" ||
    { echo "scan_threads.sh: --threads $threads wrote another output than --threads 1" >&2; exit 1; }
  awk -v n="$records" -v one="$one" -v many="$many" -v t="$threads" -v i="$i" 'BEGIN {
    printf "run %d: 1 thread %.0f records/s, %d threads %.0f records/s, ratio %.3f\n",
      i, n / one, t, n / many, one / many }'
  echo "$one $many" >> "$dir/times"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v n="$records" -v t="$threads" '
  function median(a, k,   i, j, x) {  # insertion sort, then the middle
    for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  { one[NR] = n / $1; many[NR] = n / $2; ratio[NR] = $1 / $2 }
  END {
    m1 = median(one, NR); mt = median(many, NR); mr = median(ratio, NR)
    printf "median: 1 thread %.0f records/s, %d threads %.0f records/s\n", m1, t, mt
    printf "threads=%d speedup=%.3f (ratio of the medians), median pair ratio %.3f, outputs identical\n", t, mt / m1, mr
  }' "$dir/times"
