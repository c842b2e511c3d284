#!/usr/bin/env bash
# cluster: the offsets `neardup run` commits, read back from the brokers. After
# a graceful stop, the input group's committed offsets are the end of every
# input partition (a read_committed kcat member of the group, which commits
# nothing, finds no record past them), and so are the judge group's on the
# judge topic; a restarted instance re-emits nothing, and messages produced
# while no instance ran come out once each. Exactly-once commits the input
# offsets through its transactions: after a kill -9 mid-feed, an instance
# restarted with the same transactional id leaves a read_committed consumer
# every input record exactly once. For at-least-once and exactly-once.
# Brokers: topic creation and deletion, transactions (the exactly-once runs),
# group.min.session.timeout.ms at most 6000.
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_offsets_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
require kcat python3
cluster_start

# first.txt: 1000 posts, every tenth followed (later) by a near copy; second.txt: 200 more;
# batch<N>.txt: 40 batches of 50 for the crash.
python3 - "$work" <<'PY'
import random, sys
work = sys.argv[1]
def post(seed):
    rng = random.Random(seed)
    return " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8)) for _ in range(16))
with open(f"{work}/first.txt", "w") as f:
    for i in range(900):
        f.write(f"f{i}|{post(i)}\n")
        if i % 9 == 8: f.write(f"c{i}|{post(i - 4).upper()}!\n")
with open(f"{work}/second.txt", "w") as f:
    for i in range(200): f.write(f"s{i}|{post(5000 + i)}\n")
for b in range(40):
    with open(f"{work}/batch{b}.txt", "w") as f:
        for i in range(b * 50, b * 50 + 50): f.write(f"k{i}|{post(10000 + i)}\n")
PY
[ "$(wc -l <"$work/first.txt")" -eq 1000 ] || fail "the generator wrote $(wc -l <"$work/first.txt") first posts"

start_run() {
  "$NEARDUP" run --config "$config" --brokers "$brokers" >"$work/run.out" 2>"$work/run.err" &
  run_pid=$!
  pids+=($run_pid)
}
count() { read_committed "$(topic output)" | grep -c . || true; }
exactly() { [ "$(count)" -eq "$1" ]; }
at_least() { [ "$(count)" -ge "$1" ]; }

# run_once DELIVERY
run_once() {
  local delivery=$1
  prefix="nd$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')-"
  group="${prefix}g"
  config="$work/$delivery.yaml"
  cluster_config "$config" "  delivery: $delivery" "  transactional_id: ${prefix}tx" '  consumer: {session.timeout.ms: "6000"}'
  printf '%s\n' 'action: tag' 'metrics: {listen: ""}' >>"$config"
  cluster_topics "$config"
  : >"$work/run.err"
  start_run
  kcat -b "$brokers" -P -t "$(topic input)" -K '|' -l "$work/first.txt" || fail "$delivery: kcat could not produce"
  wait_for 60 exactly 1000 || fail "$delivery: expected 1000 outputs, got $(count)"
  local dups
  dups=$(read_committed "$(topic output)" | grep -c 'neardup-verdict=duplicate' || true)
  [ "$dups" -eq 100 ] || fail "$delivery: expected the 100 copies tagged, got $dups"
  sleep 1
  stop_gracefully "$run_pid"
  pass

  # The committed offsets are the end of the input (and of the judge topic).
  local backlog
  backlog=$(group_backlog "$group" "$(topic input)")
  [ "$backlog" -eq 0 ] || fail "$delivery: $backlog input record(s) lie past the group's committed offsets after a graceful stop"
  backlog=$(group_backlog "$group.judge" "$group-judge")
  [ "$backlog" -eq 0 ] || fail "$delivery: $backlog judge request(s) lie past the judge group's committed offset after a graceful stop"
  pass

  # A restart re-emits nothing; what came while no instance ran comes out once.
  : >"$work/run.err"
  start_run
  wait_for 60 grep -q 'assigned 4 partition' "$work/run.err" || fail "$delivery: the restarted instance was not assigned the input"
  sleep 3
  [ "$(count)" -eq 1000 ] || fail "$delivery: the restart re-emitted $(($(count) - 1000)) record(s)"
  stop_gracefully "$run_pid"
  kcat -b "$brokers" -P -t "$(topic input)" -K '|' -l "$work/second.txt" || fail "$delivery: kcat could not produce"
  start_run
  wait_for 60 at_least 1200 || fail "$delivery: expected 1200 outputs after the second batch, got $(count)"
  sleep 3
  # (a restart that finds a backlog must start at the committed offsets, and stay there)
  local n
  n=$(count)
  if [ "$n" -eq 1200 ] && [ "$(read_committed "$(topic output)" | cut -d'|' -f1 | sort -u | wc -l)" -eq 1200 ]; then
    pass
  else
    fail_later "$delivery: a restart with 200 records waiting emitted $((n - 1000)) records, not 200" \
      "($(read_committed "$(topic output)" | cut -d'|' -f1 | sort | uniq -d | wc -l) emitted twice); its log: $(grep 'offsets went back' "$work/run.err" | cut -d' ' -f3- | head -4 | tr '\n' '|')"
  fi
  stop_gracefully "$run_pid"
  echo "$name: $delivery: graceful stops done at ${SECONDS}s"
}

# crash_once: exactly-once, kill -9 mid-feed, restart with the same transactional id.
crash_once() {
  prefix="nd$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')-"
  group="${prefix}g"
  config="$work/crash.yaml"
  cluster_config "$config" "  delivery: exactly-once" "  transactional_id: ${prefix}tx" '  consumer: {session.timeout.ms: "6000"}'
  printf '%s\n' 'action: tag' 'metrics: {listen: ""}' >>"$config"
  cluster_topics "$config"
  : >"$work/run.err"
  start_run
  wait_for 60 grep -q 'assigned 4 partition' "$work/run.err" || fail "crash: the instance was not assigned the input"
  local b
  for b in $(seq 0 19); do
    kcat -b "$brokers" -P -t "$(topic input)" -K '|' -l "$work/batch$b.txt" || fail "crash: kcat could not produce"
  done
  wait_for 30 bash -c "[ \$(kcat -b $brokers -C -t $(topic output) -e -q -f '%k\n' 2>/dev/null | grep -c .) -ge 1 ]" || fail "crash: nothing came out"
  kill -KILL "$run_pid"
  wait "$run_pid" 2>/dev/null || true
  for b in $(seq 20 39); do
    kcat -b "$brokers" -P -t "$(topic input)" -K '|' -l "$work/batch$b.txt" || fail "crash: kcat could not produce"
  done
  : >"$work/run.err"
  start_run
  wait_for 90 at_least 2000 || fail "crash: expected 2000 outputs after the restart, got $(count)"
  sleep 3
  stop_gracefully "$run_pid"
  read_committed "$(topic input)" | cut -d'|' -f1 | sort >"$work/in-keys.txt"
  read_committed "$(topic output)" | cut -d'|' -f1 | sort >"$work/out-keys.txt"
  [ "$(wc -l <"$work/in-keys.txt")" -eq 2000 ] || fail "crash: the input holds $(wc -l <"$work/in-keys.txt") records, not 2000"
  diff "$work/in-keys.txt" "$work/out-keys.txt" >/dev/null ||
    fail "crash: a read_committed consumer does not see every input record exactly once: $(uniq -d "$work/out-keys.txt" | wc -l) repeated"
  local uncommitted
  uncommitted=$(kcat -b "$brokers" -C -t "$(topic output)" -e -q -X isolation.level=read_uncommitted -f '%k\n' 2>/dev/null | grep -c . || true)
  echo "$name: crash: $uncommitted output records in the log (read_uncommitted), 2000 committed"
  [ "$(group_backlog "$group" "$(topic input)")" -eq 0 ] || fail "crash: input records lie past the committed offsets after the final stop"
  pass
}

run_once at-least-once
run_once exactly-once
crash_once
finish
