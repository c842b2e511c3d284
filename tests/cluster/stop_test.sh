#!/usr/bin/env bash
# cluster: a stop always ends. A running `neardup run` (group judge on, the
# default) has its topics deleted under it (`neardup topics delete`), then gets
# SIGTERM: it must exit within 15 s (docs/KAFKA.md promises 10 s), with status
# 0, or 1 and a log line saying what it gave up. Then, on kfake only, the same
# with every broker killed (-9) before the SIGTERM. Each exit time, status and
# the stop's last log line are printed.
# Brokers: topic creation and deletion, group.min.session.timeout.ms at most
# 6000; the second part kills the brokers, so it runs on kfake only.
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_stop_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
require kcat python3
[ "$cluster_mode" = mock ] && { echo "$name: SKIPPED: deletes topics and kills brokers, which the mock cluster does not do"; exit 77; }
cluster_start

# running N CONFIG: instance N on CONFIG, judging and assigned, with 20 pairs out.
running() {
  config=$2
  cluster_topics "$config" 4
  start_instance "$1"
  local i=$1
  judging() { [ "$(current_judge "$i")" = "$i" ] && [ "$(last_assigned "$i")" = 4 ]; }
  wait_for 60 judging || { cp "$work/run$i.err" "$work/run.err"; fail "instance $i did not start judging with 4 partitions"; }
  rm -f "$work"/p?.txt
  pairs 0 20
  send
  outputs() { [ "$(read_committed "$(topic output)" | grep -c . || true)" -ge 40 ]; }
  wait_for 60 outputs || { cp "$work/run$i.err" "$work/run.err"; fail "instance $i did not put out 40 records"; }
}

# stop_within N WHAT: SIGTERM to instance N; it must be gone within 15 s.
stop_within() {
  local i=$1 pid=${run_pids[$1]} status
  local started
  started=$(date +%s%N)
  kill -TERM "$pid"
  local deadline=$((SECONDS + 15))
  while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.05; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    cp "$work/run$i.err" "$work/run.err"
    fail "$2: neardup run still ran 15 s after SIGTERM"
  fi
  local ms=$((($(date +%s%N) - started) / 1000000))
  wait "$pid" && status=0 || status=$?
  local said
  said=$(grep -E 'stop incomplete|stop: not finished|exiting without waiting|stopped: in=' "$work/run$i.err" | tail -1 | cut -c1-300)
  echo "$name: $2: exited ${ms} ms after SIGTERM, status $status; last stop line: $said"
  cp "$work/run$i.err" "$work/run.err"
  case $status in
    0) ;;
    1) grep -Eq 'stop incomplete|stop: not finished' "$work/run$i.err" || fail "$2: exit status 1 without a line saying what the stop gave up" ;;
    *) fail "$2: exit status $status (0, or 1 with the reason, expected)" ;;
  esac
  [ "$ms" -le 15000 ] || fail "$2: ${ms} ms"
}

config1="$work/config1.yaml"
cluster_config "$config1" '  consumer: {session.timeout.ms: "6000"}'
printf '%s\n' 'action: tag' 'metrics: {listen: ""}' >>"$config1"
running 1 "$config1"
"$NEARDUP" topics delete --config "$config1" --brokers "$brokers" --yes >"$work/delete.out" 2>&1 \
  || fail "topics delete: $(cat "$work/delete.out")"
sleep 3  # (the clients see the topics gone)
stop_within 1 "topics deleted"
pass

if [ "$cluster_mode" = kfake ]; then
  config2="$work/config2.yaml"
  sed "s/group_id: $group\$/group_id: ${group}2/" "$config1" >"$config2"
  running 2 "$config2"
  kfake_kill
  sleep 3  # (the clients see the brokers gone)
  stop_within 2 "brokers gone"
  pass
else
  echo "$name: the brokers-gone part needs the kfake brokers this test starts itself (skipped on $cluster_mode)"
fi
finish
