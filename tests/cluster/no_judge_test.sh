#!/usr/bin/env bash
# cluster: a group with no judge says so. Two instances of one group, at-least-
# once, session timeouts of 45 s (librdkafka's default, which the judge
# consumer also takes when kafka.consumer sets one). The judging instance is
# frozen with SIGSTOP: until its session times out nobody judges, and the
# other instance's requests wait. Its /readyz must turn 503 naming the judge
# after 30 s, neardup_judge_waiting_seconds must pass 30, the resend warning
# must say 15 s; once the session ends it takes over the judging itself, its
# /readyz is 200 again and every message it holds comes out. Also: brokers
# that cannot be reached at start are named in the error.
# Brokers: topic creation and deletion, group.max.session.timeout.ms at least 45000
# (Kafka's default: 1800000).
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_no_judge_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
require kcat curl python3

# Unreachable brokers at start: exit 1, and the message names them.
port=$(free_port)
status=0
timeout 60 "$NEARDUP" run --brokers "127.0.0.1:$port" >"$work/unreachable.out" 2>"$work/unreachable.err" || status=$?
[ "$status" = 1 ] || fail "run with unreachable brokers exited $status, not 1"
grep -q "error .*cannot reach the Kafka brokers 127.0.0.1:$port within 10 s" "$work/unreachable.err" ||
  fail "the error does not name the unreachable brokers: $(grep -v facility "$work/unreachable.err" | tail -2)"
pass

cluster_start
config="$work/config.yaml"
cluster_config "$config" '  consumer: {session.timeout.ms: "45000"}'
printf '%s\n' 'action: tag' 'metrics: {listen: "127.0.0.1:0"}' >>"$config"
cluster_topics "$config" 4
for i in 1 2; do
  "$NEARDUP" run --config "$config" --brokers "$brokers" >"$work/run$i.out" 2>"$work/run$i.err" &
  run_pid[$i]=$!
  pids+=($!)
done
split() { [ "$(last_assigned 1)" = 2 ] && [ "$(last_assigned 2)" = 2 ]; }
wait_for 90 split || { cp "$work/run1.err" "$work/run.err"; fail "the two instances did not split the 4 partitions"; }
has_judge() { [ -n "$(current_judge 1 2)" ]; }
wait_for 60 has_judge || { cp "$work/run1.err" "$work/run.err"; fail "no instance became the judge"; }
frozen=$(current_judge 1 2)
other=$((3 - frozen))
cp "$work/run$other.err" "$work/run.err"
addr=$(metrics_address "$work/run$other.err")
[ -n "$addr" ] || fail "instance $other does not say where its metrics are"
ready() { [ "$(http_status "$addr" /readyz)" = 200 ]; }
wait_for 30 ready || fail "instance $other never became ready: $(curl -s --max-time 5 "http://$addr/readyz")"
pass

kill -STOP "${run_pid[$frozen]}"
frozen_at=$SECONDS
# 400 messages over the 4 partitions: the other instance's 2 wait for a judge.
python3 - "$work" <<'PY'
import random, sys
rng = random.Random(7)
with open(f"{sys.argv[1]}/input.txt", "w") as f:
    for i in range(400):
        f.write(f"m{i}|" + " ".join("".join(rng.choice("abcdefghij") for _ in range(7)) for _ in range(12)) + "\n")
PY
kcat -b "$brokers" -P -t "$(topic input)" -K '|' -l "$work/input.txt" || fail "kcat could not produce"
not_ready() { [ "$(http_status "$addr" /readyz)" = 503 ]; }
wait_for 40 not_ready || fail "/readyz stayed $(http_status "$addr" /readyz) with no judge for $((SECONDS - frozen_at)) s"
says=$(curl -s --max-time 5 "http://$addr/readyz")
case $says in
  "not ready: no verdict from the group's judge for "*" messages wait): is an instance of the group judging? (neardup_judge_active)") ;;
  *) fail "/readyz says: $says" ;;
esac
waited=$(sample "$addr" neardup_judge_waiting_seconds)
python3 -c "import sys; sys.exit(0 if float('$waited') >= 30 else 1)" || fail "neardup_judge_waiting_seconds is $waited while /readyz says: $says"
grep -q 'no verdict for judge request [0-9]* after 15 s' "$work/run$other.err" || fail "no resend warning saying 15 s"
echo "$name: no judge for $((SECONDS - frozen_at)) s: $says (neardup_judge_waiting_seconds $waited)"
pass

# The frozen one's session ends (45 s): the other takes over the judging and
# then its partitions; everything comes out.
took_over() { [ "$(current_judge "$other")" = "$other" ]; }
wait_for 90 took_over || fail "instance $other never took over the judging"
wait_for 30 ready || fail "/readyz did not return to 200 after the takeover: $(curl -s --max-time 5 "http://$addr/readyz")"
keys() { kcat -b "$brokers" -C -t "$(topic output)" -e -q -f '%k\n' 2>/dev/null | sort -u | grep -c . || true; }
all_out() { [ "$(keys)" -ge 400 ]; }
wait_for 90 all_out || fail "expected 400 distinct outputs, got $(keys)"
echo "$name: judging again $((SECONDS - frozen_at)) s after the freeze; 400 of 400 out"
pass
kill -CONT "${run_pid[$frozen]}" 2>/dev/null || true
stop_gracefully "${run_pid[$other]}"
echo "$name: $passed passed, 0 failed"
