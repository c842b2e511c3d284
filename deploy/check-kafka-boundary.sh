#!/usr/bin/env bash
# stream/kafka/ is the only code that speaks librdkafka (stream/README.md):
# no C or C++ file in stream/, app/, bench/ or tests/ outside stream/kafka/
# includes a librdkafka header or names a lowercase rd_kafka_* function or
# type; they use stream/kafka/'s types (kafka::Message, kafka::TopicPartitions,
# kafka::ErrorCode, the clients' methods). Lists every offending file:line and
# exits 1; exits 0 when there is none.
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
# TEMPORARY: stream/service/ still passes librdkafka's types to the raw
# overloads of stream/kafka/ (Producer::handle(), Consumer::handle(), the raw
# handlers, kafka::header(), PartitionListPtr). Converting a file removes it
# from this list; the list, and then those overloads, go.
allowed_for_now=(
  stream/service/output_router.cc
  stream/service/output_router.h
  stream/service/service.cc
  stream/service/service_delivery.cc
  stream/service/service_impl.h
  stream/service/service_judge.cc
  stream/service/service_rebalance.cc
)

raw='rd_kafka_|#[[:space:]]*include[[:space:]]*[<"]librdkafka/'

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  list() { git ls-files -z -- stream app bench tests; }
else
  list() { find stream app bench tests -type f -printf '%p\0' 2>/dev/null || true; }
fi
is_allowed() {
  local f
  for f in "${allowed[@]}" "${allowed_for_now[@]}"; do [ "$1" = "$f" ] && return 0; done
  return 1
}

files=()
while IFS= read -r -d '' f; do
  case "$f" in
    stream/kafka/*) continue ;;
    *.c | *.cc | *.cpp | *.cxx | *.h | *.hh | *.hpp | *.ipp | *.inc) ;;
    *) continue ;;
  esac
  [ -f "$f" ] || continue  # listed but deleted, not yet committed
  is_allowed "$f" && continue
  files+=("$f")
done < <(list)

found=""
if [ "${#files[@]}" -gt 0 ]; then
  found=$(grep -n -H -E -- "$raw" "${files[@]}" || true)
fi

# An allowance that no longer allows anything goes (so the list only shrinks).
stale=""
for f in "${allowed_for_now[@]}"; do
  if [ ! -f "$f" ] || ! grep -q -E -- "$raw" "$f"; then
    stale+="$f"$'\n'
  fi
done

status=0
if [ -n "$found" ]; then
  printf '%s\n' "$found"
  echo "check-kafka-boundary: $(printf '%s\n' "$found" | wc -l) line(s) outside stream/kafka/ name" \
    "librdkafka; use stream/kafka/'s types and methods (add one there when none fits)" >&2
  status=1
fi
if [ -n "$stale" ]; then
  printf '%s' "$stale"
  echo "check-kafka-boundary: the file(s) above no longer name librdkafka (or are gone):" \
    "remove them from allowed_for_now in deploy/check-kafka-boundary.sh" >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "check-kafka-boundary: only stream/kafka/ names librdkafka" \
  "(and ${#allowed_for_now[@]} file(s) of stream/service/ for now)"
exit "$status"
