#!/usr/bin/env bash
# `neardup scan` held against a bare fingerprint loop over the same texts, in
# one run: BM_ScanJsonl200Bytes (JSON in, window, decisions, verdicts out) and
# BM_FingerprintLoop200Bytes (the same texts, decoded beforehand, analyzed as
# the default configuration analyzes them: normalize, features, SimHash,
# MinHash sketch), their repetitions interleaved at random. Prints the CPU time
# per record of each (medians) and scan's throughput as a share of the loop's.
#
#   bench/scan_bare.sh [REPETITIONS]        default 9
#   NEARDUP_CPU=avx2 bench/scan_bare.sh     as an AVX2-only machine runs it
#
# Needs the benchmarks: cmake --preset release -DNEARDUP_BUILD_BENCH=ON && cmake --build --preset release
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

repetitions=${1:-9}
bench=${NEARDUP_BENCH_BIN:-build/release/bench/neardup_bench}
if [[ ! "$repetitions" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: bench/scan_bare.sh [REPETITIONS]  (a positive integer)" >&2
  exit 2
fi
if [ ! -x "$bench" ]; then
  echo "scan_bare.sh: $bench not found; build it: cmake --preset release && cmake --build --preset release" >&2
  exit 2
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$bench" --benchmark_filter='^(BM_ScanJsonl200Bytes|BM_FingerprintLoop200Bytes)/200000$' \
  --benchmark_repetitions="$repetitions" --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=false --benchmark_format=json > "$out" 2> /dev/null
python3 - "$out" "$repetitions" <<'PY'
import json, statistics, sys
runs = json.load(open(sys.argv[1]))
ctx = runs["context"]
cpu = {}
for b in runs["benchmarks"]:
    if b.get("run_type") != "iteration":
        continue
    name = b["run_name"].split("/")[0]
    # cpu_time is per iteration in ms; an iteration is 200,000 records
    cpu.setdefault(name, []).append(b["cpu_time"] * 1e3 / 200000)
scan = statistics.median(cpu["BM_ScanJsonl200Bytes"])
bare = statistics.median(cpu["BM_FingerprintLoop200Bytes"])
print(f"# {ctx.get('host_name', '')}: {ctx['num_cpus']} cores at {ctx['mhz_per_cpu']} MHz, {sys.argv[2]} repetitions each")
print(f"scan (JSON, window, verdicts): {scan:.3f} us a record, CPU, median")
print(f"bare fingerprint loop:         {bare:.3f} us a record, CPU, median")
print(f"scan_over_bare={bare / scan:.3f}")
PY
