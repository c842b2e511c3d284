#!/usr/bin/env bash
# cluster: `neardup run` against three brokers of an independent Kafka
# implementation (kfake) or the cluster in NEARDUP_TEST_BROKERS, at-least-once
# and exactly-once, each with the group judge: kcat produces messages with
# known near-duplicates; a read_committed consumer reads the outputs.
# Brokers: topic creation and deletion, transactions (the exactly-once run).
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_kcat_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
command -v kcat >/dev/null || { echo "$name: kcat is not installed (deploy/install-deps.sh)"; exit 1; }

cluster_start

# 6 messages: 4 unique stories, 2 reposts (case/punctuation edits), 1 invalid (only punctuation).
cat >"$work/input.txt" <<'TXT'
a1|Storm closes the harbour bridge as rivers rise across the county tonight
a2|Council approves the new school budget after a long debate on housing
a3|STORM closes the harbour bridge, as rivers rise across the county tonight!
a4|Museum reopens its science wing after a year of careful restoration
a5|museum reopens its science wing after a year of careful restoration.
a6|Railway strike halts trains into the city for a second day running
a7|... !!! ...
TXT

# run_once DELIVERY: a fresh set of topics (one partition: the offsets are known), one instance.
run_once() {
  local delivery=$1
  prefix="nd$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')-"
  group="${prefix}g"
  cluster_config "$work/$delivery.yaml" "  delivery: $delivery" "  transactional_id: ${prefix}tx"
  printf '%s\n' 'action: tag' 'metrics: {listen: "127.0.0.1:0"}' >>"$work/$delivery.yaml"
  cluster_topics "$work/$delivery.yaml" 1
  "$NEARDUP" run --config "$work/$delivery.yaml" --brokers "$brokers" >"$work/run.out" 2>"$work/run.err" &
  local run_pid=$!
  pids+=($run_pid)
  kcat -b "$brokers" -P -t "$(topic input)" -K '|' -l "$work/input.txt" || fail "kcat could not produce"
  outputs() { read_committed "$(topic output)" | grep -c . || true; }
  six_out() { [ "$(outputs)" -ge 6 ]; }
  wait_for 60 six_out || fail "$delivery: expected 6 records on output, got $(outputs)"
  dead() { read_committed "$(topic dead-letters)" | grep -c . || true; }
  one_dead() { [ "$(dead)" -ge 1 ]; }
  wait_for 30 one_dead || fail "$delivery: expected 1 dead letter"
  stop_gracefully "$run_pid"

  read_committed "$(topic output)" >"$work/output.txt"
  [ "$(wc -l <"$work/output.txt")" -eq 6 ] || fail "$delivery: expected exactly 6 output records: $(cat "$work/output.txt")"
  [ "$(cut -d'|' -f1 "$work/output.txt" | sort | tr '\n' ' ')" = "a1 a2 a3 a4 a5 a6 " ] ||
    fail "$delivery: output keys: $(cut -d'|' -f1 "$work/output.txt" | tr '\n' ' ')"
  [ "$(grep -c 'neardup-verdict=duplicate' "$work/output.txt")" -eq 2 ] || fail "$delivery: expected 2 tagged duplicates"
  grep -q "^a3|.*neardup-of=$(topic input)/0/0," "$work/output.txt" || fail "$delivery: a3 should point at input/0/0 (a1)"
  grep -q "^a5|.*neardup-of=$(topic input)/0/3," "$work/output.txt" || fail "$delivery: a5 should point at input/0/3 (a4)"
  [ "$(read_committed "$(topic dead-letters)" | grep -c '^a7|.*neardup-error=')" -eq 1 ] ||
    fail "$delivery: a7 not dead-lettered exactly once with neardup-error"
  # kfake and Kafka answer a fetch as soon as data arrives: the judge's and
  # the verdicts' consumers let theirs wait 500 ms (librdkafka's mock: 5 ms).
  local wait_ms=500
  [ "$cluster_mode" = mock ] && wait_ms=5
  grep -q "judge and verdict consumers: a fetch waits up to $wait_ms ms for data" "$work/run.err" ||
    fail "$delivery: no log line of a $wait_ms ms fetch wait: $(grep 'a fetch waits' "$work/run.err")"
  pass

  # The window changelog: the 4 kept stories, at their offsets.
  timeout 60 "$NEARDUP" changelog --config "$work/$delivery.yaml" --brokers "$brokers" --timeout 30 >"$work/changelog.jsonl" 2>"$work/changelog.err" ||
    fail "$delivery: neardup changelog failed: $(cat "$work/changelog.err")"
  offsets=$(grep -o '"offset":[0-9]*' "$work/changelog.jsonl" | sort | tr '\n' ' ')
  [ "$offsets" = '"offset":0 "offset":1 "offset":3 "offset":5 ' ] || fail "$delivery: changelog offsets: $offsets"
  pass

  # The input group's committed offset is the end of the input: a restart reads nothing again.
  "$NEARDUP" run --config "$work/$delivery.yaml" --brokers "$brokers" >"$work/run2.out" 2>"$work/run.err" &
  run_pid=$!
  pids+=($run_pid)
  assigned() { grep -q 'assigned 1 partition' "$work/run.err"; }
  wait_for 60 assigned || fail "$delivery: the restarted instance was not assigned the input"
  sleep 3
  stop_gracefully "$run_pid"
  [ "$(read_committed "$(topic output)" | grep -c .)" -eq 6 ] || fail "$delivery: a restart republished committed input"
  pass
}
run_once at-least-once
run_once exactly-once
echo "$name: $passed passed, 0 failed"
