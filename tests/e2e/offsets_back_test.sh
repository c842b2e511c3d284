#!/usr/bin/env bash
# e2e: input offsets that go backwards. `neardup broker --port N` is restarted
# (empty: every partition's offsets start again at 0) under a running
# `neardup run`; the service must judge the new messages once each, commit
# them, say at most once that the offsets went back, and a second instance of
# the group must find nothing left to read. (Before the offset ledger, commits
# stopped silently here and a later instance judged the messages again.)
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=offsets_back_test
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require kcat python3

port=$(free_port)
brokers="127.0.0.1:$port"
start_broker() {
  rm -f "$work/bootstrap"
  "$NEARDUP" broker --port "$port" --partitions 1 --bootstrap-file "$work/bootstrap" >>"$work/broker.out" 2>>"$work/broker.err" &
  broker_pid=$!
  pids+=($broker_pid)
  wait_for 20 test -s "$work/bootstrap" || fail "broker did not start on $brokers"
}
start_broker

cat >"$work/config.yaml" <<YAML
action: tag
metrics: {listen: ""}
kafka:
  consumer: {session.timeout.ms: "6000"}
YAML
start_run() {
  "$NEARDUP" run --config "$work/config.yaml" --brokers "$brokers" >"$work/run.out" 2>"$work/run.err" &
  run_pid=$!
  pids+=($run_pid)
}
start_run

python3 - "$work" <<'PY'
import random, sys
work = sys.argv[1]
def post(seed):
    rng = random.Random(seed)
    return " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8)) for _ in range(16))
with open(f"{work}/before.txt", "w") as f:
    for i in range(300): f.write(f"b{i}|{post(i)}\n")
with open(f"{work}/after.txt", "w") as f:
    for i in range(100): f.write(f"a{i}|{post(10000 + i)}\n")
PY
count() { kcat -b "$brokers" -C -t "$1" -e -q -f '%k\n' 2>/dev/null | grep -c . || true; }
exactly() { [ "$(count "$1")" -eq "$2" ]; }

kcat -b "$brokers" -P -t input -K '|' -l "$work/before.txt" || fail "kcat could not produce"
wait_for 60 exactly output 300 || fail "expected 300 outputs before the restart, got $(count output)"
sleep 2  # the last commits and changelog batches are acknowledged
pass

# The broker comes back empty on the same port: input offsets restart at 0.
kill -KILL "$broker_pid"
wait "$broker_pid" 2>/dev/null || true
sleep 1
start_broker
kcat -b "$brokers" -P -t input -K '|' -l "$work/after.txt" || fail "kcat could not produce after the restart"
wait_for 90 exactly output 100 || fail "expected the 100 new messages on output once each, got $(count output)"
kill -0 "$run_pid" 2>/dev/null || fail "neardup run stopped"
pass
jumps=$(grep -c 'offsets went back' "$work/run.err" || true)
[ "$jumps" -le 1 ] || fail "the jump back was logged $jumps times"
pass

stop_gracefully "$run_pid"

pass

# Another instance of the group: everything was committed, nothing is judged again.
start_run
wait_for 30 grep -q 'assigned 1 partition' "$work/run.err" || fail "the second instance got no partition"
sleep 3
[ "$(count output)" -eq 100 ] || fail "the second instance judged messages again: $(count output) outputs"
pass
echo "offsets_back_test: $passed passed, 0 failed"
