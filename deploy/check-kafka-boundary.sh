#!/usr/bin/env bash
# stream/kafka/ is the only code that speaks librdkafka (stream/README.md):
# no C or C++ file in stream/, app/, bench/ or tests/ outside stream/kafka/
# includes a librdkafka header or names a lowercase rd_kafka_* function or
# type; they use stream/kafka/'s types (kafka::Message, kafka::TopicPartitions,
# kafka::ErrorCode, the clients' methods). Inside stream/kafka/ only the .cc
# files do: no header there includes librdkafka or names an rd_kafka_* or
# RD_KAFKA_* name (not even in a comment or a forward declaration), so that
# what includes stream/kafka/'s headers cannot reach librdkafka through them.
# Lists every offending file:line and exits 1; exits 0 when there is none.
#   bash deploy/check-kafka-boundary.sh [SOURCE_DIR]   (default: this repository)
# Reads the files git tracks (every file below SOURCE_DIR when it is not a git
# checkout).
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$root"

# Files that may name librdkafka outside stream/kafka/: a shim for
# ThreadSanitizer that stands in for librdkafka's C11 threads.
allowed=(
  tests/tsan_c11_threads.cc
)

raw='rd_kafka_|#[[:space:]]*include[[:space:]]*[<"]librdkafka/'
# What no header under stream/kafka/ may hold.
in_header='rd_kafka_|RD_KAFKA_|#[[:space:]]*include[[:space:]]*[<"]librdkafka/'

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  list() { git ls-files -z -- stream app bench tests; }
else
  list() { find stream app bench tests -type f -printf '%p\0' 2>/dev/null || true; }
fi
is_allowed() {
  local f
  for f in "${allowed[@]}"; do [ "$1" = "$f" ] && return 0; done
  return 1
}

files=()
headers=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue  # listed but deleted, not yet committed
  case "$f" in
    stream/kafka/*.h | stream/kafka/*.hh | stream/kafka/*.hpp | stream/kafka/*.ipp | stream/kafka/*.inc)
      headers+=("$f")
      continue
      ;;
    stream/kafka/*) continue ;;
    *.c | *.cc | *.cpp | *.cxx | *.h | *.hh | *.hpp | *.ipp | *.inc) ;;
    *) continue ;;
  esac
  is_allowed "$f" && continue
  files+=("$f")
done < <(list)

found=""
if [ "${#files[@]}" -gt 0 ]; then
  found=$(grep -n -H -E -- "$raw" "${files[@]}" || true)
fi
found_in_headers=""
if [ "${#headers[@]}" -gt 0 ]; then
  found_in_headers=$(grep -n -H -E -- "$in_header" "${headers[@]}" || true)
fi

status=0
if [ -n "$found" ]; then
  printf '%s\n' "$found"
  echo "check-kafka-boundary: $(printf '%s\n' "$found" | wc -l) line(s) outside stream/kafka/ name" \
    "librdkafka; use stream/kafka/'s types and methods (add one there when none fits)" >&2
  status=1
fi
if [ -n "$found_in_headers" ]; then
  printf '%s\n' "$found_in_headers"
  echo "check-kafka-boundary: $(printf '%s\n' "$found_in_headers" | wc -l) line(s) of headers under" \
    "stream/kafka/ name librdkafka; keep it in the .cc files (an opaque handle of" \
    "stream/kafka/'s own in the header, converted in the .cc)" >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "check-kafka-boundary: only stream/kafka/'s .cc files name librdkafka"
exit "$status"
