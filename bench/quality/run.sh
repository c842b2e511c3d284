#!/usr/bin/env bash
# The whole quality evaluation in one command:
#   bench/quality/run.sh [--small] [--neardup PATH] [--require-targets] [--out DIR]
# Builds the streams if absent, labels them (exact Jaccard ground truth), scans
# them with the default config, the classic baseline and the strict config
# (bench/quality/strict.yaml: reposts and templated stories), and writes the table
# to bench/quality/out/report.md (--small: out/small/report.md) (also printed, with a QUALITY_JSON line).
# Exit: 0, or 3 with --require-targets when the default config misses a target.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
small=""
neardup="$root/build/release/app/neardup"
require=""
out=""
while (($#)); do
  case "$1" in
    --small) small="--small" ;;
    --neardup) neardup="$2"; shift ;;
    --neardup=*) neardup="${1#--neardup=}" ;;
    --require-targets) require="--require-targets" ;;
    --out) out="$2"; shift ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done

out="${out:-$here/out${small:+/small}}"
mkdir -p "$out/streams" "$out/labels"
if [[ ! -s "$out/streams/mixed.jsonl" || ! -s "$out/streams/very_short.jsonl" ||
      ! -s "$out/streams/templated.jsonl" || ! -s "$out/streams/news.jsonl" ||
      ! -s "$out/streams/long_chain.jsonl" ]]; then
  python3 "$here/make_streams.py" $small --out "$out/streams"
fi
for stream in long_en short_en short_zh mixed very_short hard_short boilerplate templated news long_chain; do
  if [[ ! -s "$out/labels/$stream.jsonl" || "$out/streams/$stream.jsonl" -nt "$out/labels/$stream.jsonl" ]]; then
    python3 "$here/ground_truth.py" "$out/streams/$stream.jsonl" -o "$out/labels/$stream.jsonl"
  fi
done
status=0
python3 "$here/score.py" --neardup "$neardup" --streams "$out/streams" --labels "$out/labels" \
  --scans "$out/scan" $require > "$out/report.txt" || status=$?
grep -v '^QUALITY_JSON ' "$out/report.txt" > "$out/report.md" || true
cat "$out/report.txt"
echo "report: $out/report.md" >&2
exit "$status"
