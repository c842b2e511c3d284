#!/usr/bin/env bash
# cluster: no single message stops `neardup run`, on brokers whose own limit
# (message.max.bytes raised to 10 MB on kfake) lets huge records through, so
# neardup's limits (input.max_bytes, the producer's message.max.bytes) are what
# stop them. On one input partition (JSON input), among 40 good messages: a
# 1,010,000-byte record (over input.max_bytes: dead-lettered whole), a 3 MB and
# a 6 MB one (dead-lettered cut under 1 MiB, with their original size),
# malformed JSON, an empty value, a null value (tombstone), a record without the
# text field, a text that is not a string, empty text, only punctuation and
# invalid UTF-8. Each bad one is dead-lettered exactly once with its reason and
# neardup-source, the good ones come out exactly once, the service keeps
# running, the metrics count them, and a restart reads nothing again: for
# at-least-once and for exactly-once (read through a read_committed consumer).
# Brokers: topic creation and deletion, transactions, group.min.session.timeout.ms
# at most 6000, and message.max.bytes of at least 10485760 (kfake is started
# so; on another cluster the test fails at once, saying so, when the brokers
# refuse a 6 MB record).
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_poison_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
require kcat curl python3

# The brokers take 10 MB records: only neardup's own limits refuse the big ones.
cluster_start -c message.max.bytes=10485760
if [ "$cluster_mode" = external ]; then
  # Another cluster keeps its own limit: a 6 MB record to a topic of this test's
  # own says whether it is high enough.
  cluster_config "$work/probe.yaml"
  sed -i "s/$(topic input)/$(topic probe)/" "$work/probe.yaml"
  cluster_topics "$work/probe.yaml" 1
  head -c 6000000 /dev/zero | tr '\0' x >"$work/probe.txt"
  timeout 60 kcat -b "$brokers" -P -t "$(topic probe)" -X message.max.bytes=8000000 "$work/probe.txt" \
    >"$work/probe.out" 2>&1 \
    || fail "the brokers refuse a 6 MB record ($(tr '\n' ' ' <"$work/probe.out")): this test needs their message.max.bytes (and the topics') at 10485760 or more"
fi

python3 - "$work" <<'PY'
import json, random, sys
work = sys.argv[1]
def words(n, seed):
    rng = random.Random(seed)
    return " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)) for _ in range(n))
def big(size, seed):
    head = '{"id":"x","text":"'
    body = (words(size // 8 + 10, seed))[: size - len(head) - 2]
    record = head + body + '"}'
    assert len(record) == size
    return record
open(f"{work}/big1.json", "w").write(big(1010000, 1))
open(f"{work}/big2.json", "w").write(big(3000000, 2))
open(f"{work}/big3.json", "w").write(big(6000000, 3))
for batch in range(4):
    with open(f"{work}/good{batch}.txt", "w") as f:
        for i in range(batch * 10, batch * 10 + 10):
            f.write(f"g{i}|" + json.dumps({"id": f"g{i}", "text": words(20, 100 + i)}) + "\n")
open(f"{work}/badutf8.bin", "wb").write(b'{"id":"u","text":"caf\xc3 \xff\xfe broken \xc0\xaf bytes"}')
PY

# run_once DELIVERY: fresh topics (one partition: offsets are known), one instance, the feed, the checks.
run_once() {
  local delivery=$1
  prefix="nd$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')-"
  group="${prefix}g"
  local in
  in=$(topic input)
  cluster_config "$work/$delivery.yaml" "  delivery: $delivery" "  transactional_id: ${prefix}tx" \
    '  consumer: {session.timeout.ms: "6000"}'
  printf '%s\n' 'action: tag' 'log: {level: info}' 'metrics: {listen: "127.0.0.1:0"}' \
    'input: {format: json, text_fields: [/text], id_field: /id}' >>"$work/$delivery.yaml"
  cluster_topics "$work/$delivery.yaml" 1
  : >"$work/run.err"
  "$NEARDUP" run --config "$work/$delivery.yaml" --brokers "$brokers" >"$work/run.out" 2>"$work/run.err" &
  run_pid=$!
  pids+=($run_pid)

  # The feed, one record at a time where it matters, so the offsets are known:
  # 0-9 good, 10 big1, 11 big2, 12 big3, 13-19 small bad ones, 20-29 good, 30 bad UTF-8, 31-50 good.
  local big=(-X message.max.bytes=8000000)
  produce() { kcat -b "$brokers" -P -t "$in" -p 0 "${big[@]}" "$@" || fail "$delivery: kcat could not produce ($*)"; }
  produce -K '|' -l "$work/good0.txt"
  produce -k big1 "$work/big1.json"
  produce -k big2 "$work/big2.json"
  produce -k big3 "$work/big3.json"
  printf '%s\n' 'badjson|{"id":"b","text":"unterminated' | produce -K '|'
  printf '%s\n' 'empty|' | produce -K '|'
  printf '%s\n' 'tomb|' | produce -Z -K '|'
  printf '%s\n' 'notext|{"id":"n","title":"a story without its text field"}' | produce -K '|'
  printf '%s\n' 'nonstring|{"id":"s","text":{"title":"an object, not a text"}}' | produce -K '|'
  printf '%s\n' 'emptytext|{"id":"e","text":""}' | produce -K '|'
  printf '%s\n' 'punct|{"id":"p","text":"... !!! ,,, ???"}' | produce -K '|'
  produce -K '|' -l "$work/good1.txt"
  produce -k badutf8 "$work/badutf8.bin"
  produce -K '|' -l "$work/good2.txt"
  produce -K '|' -l "$work/good3.txt"
  local n_good=40 n_bad=11

  count() { read_committed "$1" | grep -c . || true; }
  at_least() { [ "$(count "$1")" -ge "$2" ]; }
  wait_for 90 at_least "$(topic output)" $n_good || fail "$delivery: expected $n_good records on output, got $(count "$(topic output)")"
  wait_for 30 at_least "$(topic dead-letters)" $n_bad || fail "$delivery: expected $n_bad dead letters, got $(count "$(topic dead-letters)"): $(read_committed "$(topic dead-letters)" | cut -d'|' -f1 | tr '\n' ' ')"
  sleep 2 # anything extra (a repeat) would be visible by now
  kill -0 "$run_pid" 2>/dev/null || fail "$delivery: neardup run stopped"
  pass

  read_committed "$(topic output)" | cut -d'|' -f1 | sort >"$work/out-keys.txt"
  seq 0 39 | sed 's/^/g/' | sort >"$work/good-keys.txt"
  diff "$work/good-keys.txt" "$work/out-keys.txt" >/dev/null ||
    fail "$delivery: output is not the 40 good keys once each: $(diff "$work/good-keys.txt" "$work/out-keys.txt" | grep '^[<>]' | head -5 | tr '\n' ' ')"
  pass

  kcat -b "$brokers" -C -t "$(topic dead-letters)" -e -q -X isolation.level=read_committed \
    -X fetch.message.max.bytes=8000000 -f '%k|%S|%h\n' >"$work/dead.txt" 2>/dev/null || true
  [ "$(wc -l <"$work/dead.txt")" -eq $n_bad ] || fail "$delivery: expected exactly $n_bad dead letters: $(cut -c1-200 "$work/dead.txt")"
  [ "$(cut -d'|' -f1 "$work/dead.txt" | sort -u | wc -l)" -eq $n_bad ] ||
    fail "$delivery: a bad message was dead-lettered twice: $(cut -d'|' -f1 "$work/dead.txt" | sort | uniq -d | tr '\n' ' ')"
  pass
  # dead KEY OFFSET REASON: KEY's dead letter names its source and its reason.
  dead() {
    local line
    line=$(grep "^$1|" "$work/dead.txt") || fail "$delivery: $1 is not on the dead-letter topic"
    echo "$line" | grep -q "neardup-source=$in/0/$2" || fail "$delivery: $1 has no neardup-source=$in/0/$2: $(echo "$line" | cut -c1-300)"
    echo "$line" | grep -q "neardup-error=$3" || fail "$delivery: $1's reason is not '$3': $(echo "$line" | cut -c1-300)"
  }
  dead big1 10 'record of 1010000 bytes exceeds input.max_bytes (1000000)'
  grep '^big1|' "$work/dead.txt" | grep -q '^big1|1010000|' || fail "$delivery: big1 was not dead-lettered whole"
  grep '^big1|' "$work/dead.txt" | grep -vq 'neardup-truncated-to' || fail "$delivery: big1 should not be cut"
  local b size
  for b in big2:11:3000000 big3:12:6000000; do
    dead "${b%%:*}" "$(echo "$b" | cut -d: -f2)" "record of ${b##*:} bytes exceeds input.max_bytes"
    size=$(grep "^${b%%:*}|" "$work/dead.txt" | cut -d'|' -f2)
    [ "$size" -gt 1000000 ] && [ "$size" -lt 1048576 ] || fail "$delivery: ${b%%:*} should be cut under 1 MiB, kept $size bytes"
    grep "^${b%%:*}|" "$work/dead.txt" | grep -q "neardup-original-size=${b##*:}" || fail "$delivery: ${b%%:*} has no neardup-original-size"
    grep "^${b%%:*}|" "$work/dead.txt" | grep -q "neardup-truncated-to=$size" || fail "$delivery: ${b%%:*} has no neardup-truncated-to=$size"
  done
  dead badjson 13 'malformed JSON'
  dead empty 14 'malformed JSON'
  dead tomb 15 '' # a tombstone: some reason, checked below
  grep '^tomb|' "$work/dead.txt" | grep -q 'neardup-error=.' || fail "$delivery: the null value has no neardup-error"
  dead notext 16 'missing text field /text'
  dead nonstring 17 'text field /text is an object, not a string'
  dead emptytext 18 'empty text'
  dead punct 19 'no words or characters to compare'
  dead badutf8 30 'malformed JSON'
  pass

  local addr
  addr=$(metrics_address "$work/run.err")
  [ -n "$addr" ] || fail "$delivery: no metrics address in the run log"
  dl_total() { [ "$(sample "$addr" neardup_dead_letters_total)" = "$n_bad" ]; }
  wait_for 10 dl_total || fail "$delivery: neardup_dead_letters_total is $(sample "$addr" neardup_dead_letters_total), not $n_bad"
  truncated() { [ "$(sample "$addr" neardup_dead_letters_truncated_total)" = 2 ]; }
  wait_for 10 truncated || fail "$delivery: neardup_dead_letters_truncated_total is $(sample "$addr" neardup_dead_letters_truncated_total), not 2"
  pass

  # SIGTERM, then a restart of the same group: everything was committed, nothing is read again.
  stop_gracefully "$run_pid"
  "$NEARDUP" run --config "$work/$delivery.yaml" --brokers "$brokers" >"$work/run.out" 2>"$work/run.err" &
  run_pid=$!
  pids+=($run_pid)
  wait_for 60 grep -q 'assigned 1 partition' "$work/run.err" || fail "$delivery: the restarted service got no partition"
  sleep 3
  kill -0 "$run_pid" 2>/dev/null || fail "$delivery: the restarted service stopped"
  [ "$(count "$(topic output)")" -eq $n_good ] && [ "$(count "$(topic dead-letters)")" -eq $n_bad ] ||
    fail "$delivery: the restart re-read messages: output $(count "$(topic output)"), dead letters $(count "$(topic dead-letters)")"
  stop_gracefully "$run_pid"
  pass
  echo "$name: $delivery done at ${SECONDS}s"
}
run_once at-least-once
run_once exactly-once
echo "$name: $passed passed, 0 failed"
