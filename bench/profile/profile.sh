#!/usr/bin/env bash
# One message's CPU cost by stage, measured with perf (Debian linux-perf): the
# tables of docs/PERFORMANCE.md, made again with one command.
#
#   bash bench/profile/profile.sh [scan|pipeline|all] [RECORDS]     default: all 200000
#   NEARDUP_CPU=avx2 bash bench/profile/profile.sh                  another kernel variant
#   NEARDUP_BIN=/path/to/neardup NEARDUP_PIPELINE_BENCH=/path/to/neardup_pipeline_bench ...
#
# scan: `neardup scan --threads 1` over the news-like feed (~200-byte texts,
#   bench/tools/make_feed.cc) and over the short-text feed
#   (bench/quality/short_feed.py, 90,000 posts in Chinese and English); CPU
#   time from perf stat's task-clock, the split from perf record's samples.
# pipeline: `neardup_pipeline_bench --only neardup` on the embedded broker
#   (the service with the group judge and at-least-once, as by default);
#   the embedded broker and the bench's feeder are listed apart.
#
# Each sample's symbol is sorted into a stage by bench/profile/stages.py. Needs
# the release build (cmake --preset release && cmake --build --preset release)
# and perf allowed to sample (root, or kernel.perf_event_paranoid <= 1).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

what=${1:-all}
records=${2:-200000}
bin=${NEARDUP_BIN:-build/release/app/neardup}
pipeline_bench=${NEARDUP_PIPELINE_BENCH:-build/release/bench/neardup_pipeline_bench}
make_feed=build/release/bench/neardup_make_feed
here=bench/profile
command -v perf > /dev/null || { echo "profile.sh: perf not found (apt-get install linux-perf)" >&2; exit 2; }
case "$what" in scan | pipeline | all) ;; *) echo "usage: profile.sh [scan|pipeline|all] [RECORDS]" >&2; exit 2 ;; esac

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
variant=${NEARDUP_CPU:-the best this CPU runs}
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores; kernel variant: $variant"

# CPU seconds (task-clock) of a command, from perf stat.
cpu_seconds() {
  perf stat -x, -e task-clock -o "$dir/stat" -- "$@" > /dev/null 2> "$dir/stderr" ||
    { echo "profile.sh: failed: $*" >&2; cat "$dir/stderr" >&2; exit 1; }
  awk -F, '/task-clock/ { printf "%.4f", $1 / 1000 }' "$dir/stat"
}

report() {  # perf.data -> stage table
  perf report -i "$1" --no-children --sort comm,dso,sym --stdio -g none --field-separator=';' 2> /dev/null
}

scan_feed() {  # name, file, records
  local name=$1 file=$2 n=$3 secs
  secs=$(cpu_seconds "$bin" scan --threads 1 "$file")
  perf record -q -F 4999 -o "$dir/perf.data" -- "$bin" scan --threads 1 "$file" > /dev/null 2>&1
  echo
  echo "## neardup scan --threads 1, $name: $n records, $secs CPU s"
  echo
  report "$dir/perf.data" | python3 "$here/stages.py" --cpu-seconds "$secs" --messages "$n" --title "$name"
}

if [ "$what" = scan ] || [ "$what" = all ]; then
  "$make_feed" "$records" > "$dir/long.jsonl"
  scan_feed "news-like feed (~200 bytes)" "$dir/long.jsonl" "$records"
  if [ ! -s bench/quality/out/streams/templated.jsonl ]; then
    python3 bench/quality/make_streams.py --out bench/quality/out/streams > /dev/null
  fi
  python3 bench/quality/short_feed.py > "$dir/short.jsonl"
  scan_feed "short posts (zh, en)" "$dir/short.jsonl" "$(wc -l < "$dir/short.jsonl")"
fi

if [ "$what" = pipeline ] || [ "$what" = all ]; then
  # The bench's own isolated loop runs on its main thread after the service:
  # perf samples the whole process, and stages.py lists the bench's threads apart.
  out=$(perf record -q -F 1999 -o "$dir/perf.data" -- "$pipeline_bench" --only neardup --messages "$records" 2> "$dir/stderr") ||
    { echo "profile.sh: the pipeline bench failed" >&2; cat "$dir/stderr" >&2; exit 1; }
  secs=$(perf report -i "$dir/perf.data" --stdio --sort comm -g none 2> /dev/null | awk '/Event count/ { printf "%.4f", $NF / 1e9 }')
  echo
  echo "## neardup_pipeline_bench --only neardup, embedded broker: $records messages, $secs CPU s sampled"
  echo
  echo "$out" | grep -E "threads,|worker/isolated" | sed "s/^/    /"
  echo
  report "$dir/perf.data" | python3 "$here/stages.py" --pipeline --cpu-seconds "$secs" --messages "$records" --title "stage (thread)"
fi
