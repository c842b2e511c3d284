#!/usr/bin/env bash
# cluster: an instance in a crash loop does not stall its group when it has a
# kafka.instance_id (static membership). Two `neardup run` instances of one
# group (at-least-once, action tag, so every input gives an output; 4 input
# partitions); 20,000 messages arrive over about 20 s; the instance that
# judges is killed with SIGKILL three times, 5 s apart, and each time started
# again at once with its instance id (what Kubernetes does with a crashing
# container). Every input must be out (distinct keys on the output topic)
# within 60 s of the last message; the test prints how long it took. Then a
# second process starts with the survivor's id: the survivor, fenced, must
# exit 2 with a line naming the id.
#
# NEARDUP_CRASH_LOOP_DYNAMIC=1 runs the same scenario without
# kafka.instance_id (dynamic members, the default) and only reports how long
# the group took (up to 10 min): the figure docs/KAFKA.md compares.
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_crash_loop_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
require kcat python3
dynamic=${NEARDUP_CRASH_LOOP_DYNAMIC:-}
messages=20000
send_seconds=20
limit=60
[ -n "$dynamic" ] && limit=600
cluster_start

# instance_config FILE ID: this test's configuration, with kafka.instance_id ID
# (none when measuring dynamic members).
instance_config() {
  local id_line=()
  [ -z "$dynamic" ] && id_line=("  instance_id: $2")
  cluster_config "$1" "${id_line[@]}"
  printf '%s\n' 'action: tag' 'metrics: {listen: ""}' >>"$1"
}
instance_config "$work/a.yaml" crash-loop-a
instance_config "$work/b.yaml" crash-loop-b
cluster_topics "$work/a.yaml" 4
in=$(topic input)
out=$(topic output)

# Every output key as it arrives, from one consumer that runs to the end.
kcat -b "$brokers" -C -t "$out" -o beginning -u -f '%k\n' >"$work/out.keys" 2>"$work/kcat.err" &
pids+=($!)
distinct() { sort -u "$work/out.keys" | grep -c . || true; }

config="$work/a.yaml"
start_instance 1
config="$work/b.yaml"
start_instance 2
split() { [ "$(last_assigned 1)" = 2 ] && [ "$(last_assigned 2)" = 2 ]; }
wait_for 60 split || { cp "$work/run1.err" "$work/run.err"; fail "the two instances did not split the 4 partitions ($(last_assigned 1), $(last_assigned 2))"; }
has_judge() { [ -n "$(current_judge 1 2)" ]; }
wait_for 30 has_judge || { cp "$work/run1.err" "$work/run.err"; fail "no instance became the judge"; }
# The judging instance is the one that crashes (its judge and its input
# partitions both depend on coming back as the same member).
victim=$(current_judge 1 2)
[ "$victim" = 1 ] && victim_config="$work/a.yaml" || victim_config="$work/b.yaml"
pass

# 20,000 messages, paced evenly over 20 s, keys k0..k19999, to the 4 partitions by key.
python3 - "$messages" "$send_seconds" <<'PY' 2>"$work/feed.err" | kcat -b "$brokers" -P -t "$in" -K '|' 2>"$work/send.err" &
import random, sys, time
n, seconds = int(sys.argv[1]), float(sys.argv[2])
start = time.monotonic()
for i in range(n):
    delay = start + seconds * i / n - time.monotonic()
    if delay > 0:
        sys.stdout.flush()
        time.sleep(delay)
    rng = random.Random(i)
    words = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)) for _ in range(12))
    sys.stdout.write(f"k{i}|{words}\n")
sys.stdout.flush()
PY
sender=$!
pids+=($sender)
started=$(date +%s.%N)

# Three crashes, 5 s apart, each followed at once by a restart with the same id.
incarnation=$victim
for crash in 1 2 3; do
  sleep 5
  kill -KILL "${run_pids[$incarnation]}"
  wait "${run_pids[$incarnation]}" 2>/dev/null || true
  incarnation=$((crash + 2))
  config=$victim_config
  start_instance "$incarnation"
done

# The last message is out of the feed when kcat exits (bounded: the feed takes 20 s).
sent() { ! kill -0 "$sender" 2>/dev/null; }
wait_for 60 sent || fail "the feed did not finish within 60 s"
wait "$sender" || fail "kcat could not produce: $(cat "$work/send.err")"
last_sent=$(date +%s.%N)
survivor=$((3 - victim))
cp "$work/run$survivor.err" "$work/run.err"
all_out() { [ "$(distinct)" -ge "$messages" ]; }
if wait_for "$limit" all_out; then
  done_at=$(date +%s.%N)
  after=$(python3 -c "print(f'{$done_at - $last_sent:.1f}')")
  echo "$name: all out after $after s (all $messages distinct inputs; the feed took $(python3 -c "print(f'{$last_sent - $started:.1f}')") s)$([ -n "$dynamic" ] && echo ', without kafka.instance_id')"
else
  fail "$(distinct) of $messages inputs out $limit s after the last message$([ -n "$dynamic" ] && echo ' (without kafka.instance_id)')"
fi
pass

if [ -z "$dynamic" ]; then
  # The survivor kept its partitions all along: assigned once, never revoked.
  assignments=$(grep -c 'assigned [0-9]* partition' "$work/run$survivor.err" || true)
  [ "$assignments" = 1 ] || fail_later "the survivor was assigned partitions $assignments times (1 expected: static members need no rebalance)"
  pass
fi
[ "$(distinct)" = "$messages" ] || fail_later "$(distinct) distinct keys on the output topic, $messages expected"
pass

if [ -z "$dynamic" ]; then
  # A second process with the survivor's id: the coordinator fences the older,
  # which says so and exits 2 (a restart would only fence the newer in turn).
  [ "$survivor" = 1 ] && config="$work/a.yaml" || config="$work/b.yaml"
  [ "$survivor" = 1 ] && id=crash-loop-a || id=crash-loop-b
  start_instance 9
  exited() { ! kill -0 "${run_pids[$survivor]}" 2>/dev/null; }
  wait_for 60 exited || fail "instance $survivor still runs 60 s after another process joined with its instance id"
  wait "${run_pids[$survivor]}" && status=0 || status=$?
  [ "$status" = 2 ] || fail_later "the fenced instance exited $status, 2 expected"
  grep -q "another instance uses kafka.instance_id '$id' in group '$group'" "$work/run$survivor.err" ||
    fail_later "the fenced instance did not name its instance id: $(grep -i fenced "$work/run$survivor.err" | tail -2)"
  pass
  stop_gracefully "${run_pids[9]}"
else
  stop_gracefully "${run_pids[$survivor]}"
fi
stop_gracefully "${run_pids[$incarnation]}"
pass
finish
