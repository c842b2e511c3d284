#!/usr/bin/env bash
# e2e: stream/kafka/ is the only code that speaks librdkafka (stream/README.md):
# deploy/check-kafka-boundary.sh finds no librdkafka include or lowercase
# rd_kafka_* name in stream/, app/, bench/ or tests/ outside stream/kafka/ (but
# the files it allows), and none in a header under stream/kafka/. The check is
# probed first on a small tree that breaks the rule, and must name those files
# and lines. Needs no binary.
set -euo pipefail
name=kafka_boundary_test
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=${NEARDUP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
check="$root/deploy/check-kafka-boundary.sh"

# The probe: a tree (not a git checkout) with one offending line in
# stream/judge/, one in stream/service/ and one in a header under
# stream/kafka/clients/, the same names in a .cc file inside stream/kafka/ and
# in the allowed shim.
probe="$work/probe"
mkdir -p "$probe/stream/kafka/clients" "$probe/stream/judge" "$probe/stream/service" "$probe/tests"
printf '#include "stream/kafka/kafka.h"\nint n = rd_kafka_outq_len(nullptr);\n' >"$probe/stream/judge/judge.cc"
printf '#include <librdkafka/rdkafka.h>\nint n = rd_kafka_outq_len(nullptr);\n' \
  >"$probe/stream/kafka/clients/producer.cc"
printf '#pragma once\n#include <librdkafka/rdkafka.h>\n' >"$probe/stream/kafka/clients/producer.h"
printf '// rd_kafka_new\n' >"$probe/tests/tsan_c11_threads.cc"
printf 'void on(const rd_kafka_message_t& m);\n' >"$probe/stream/service/service.cc"
if bash "$check" "$probe" >"$work/probe.out" 2>&1; then
  cat "$work/probe.out"
  fail "the check passed a tree that names rd_kafka_ in stream/judge/"
fi
grep -q '^stream/judge/judge.cc:2:' "$work/probe.out" \
  || { cat "$work/probe.out"; fail "the check did not name stream/judge/judge.cc:2"; }
grep -q '^stream/service/service.cc:1:' "$work/probe.out" \
  || { cat "$work/probe.out"; fail "the check did not name stream/service/service.cc:1"; }
grep -q '^stream/kafka/clients/producer.h:2:' "$work/probe.out" \
  || { cat "$work/probe.out"; fail "the check did not name stream/kafka/clients/producer.h:2"; }
[ "$(grep -c '^stream/' "$work/probe.out")" -eq 3 ] \
  || { cat "$work/probe.out"; fail "the check named more than the three offending lines"; }
pass
printf '#include "stream/kafka/kafka.h"\n' >"$probe/stream/judge/judge.cc"
printf 'void on(kafka::Message m);\n' >"$probe/stream/service/service.cc"
printf '#pragma once\nstruct MessageHandle;\n' >"$probe/stream/kafka/clients/producer.h"
bash "$check" "$probe" >"$work/probe.out" 2>&1 \
  || { cat "$work/probe.out"; fail "the check failed a tree that keeps the rule"; }
pass

bash "$check" "$root" >"$work/found" 2>&1 \
  || { cat "$work/found"; fail "the lines above name librdkafka outside stream/kafka/'s .cc files (use stream/kafka/'s types)"; }
pass

echo "$name: $passed passed, 0 failed"
