#!/usr/bin/env bash
# e2e: consistent scale-out with real processes. Two `neardup run` instances of
# one group on `neardup broker` (4 input partitions); each original goes to
# partition p and its near copy, in the same kcat batch, to partition p+2, so
# original and copy are read by different instances at the same moment. Then
# the instance that judges is killed with SIGKILL and more pairs arrive while
# the survivor takes over its partitions and the judging (session timeout 6 s).
# Every message must come out, and every pair must be decided one way: exactly
# one of the two a duplicate in every output record of it (a message replayed
# after the kill gets the verdict it had).
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=scale_out_test
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require kcat python3

port=$(free_port)
brokers="127.0.0.1:$port"
"$NEARDUP" broker --port "$port" --partitions 4 --bootstrap-file "$work/bootstrap" >"$work/broker.out" 2>"$work/broker.err" &
pids+=($!)
wait_for 20 test -s "$work/bootstrap" || fail "broker did not start on $brokers"

cat >"$work/config.yaml" <<YAML
action: tag
metrics: {listen: ""}
kafka:
  consumer: {session.timeout.ms: "6000"}
YAML
run_pids=()
for i in 1 2; do
  "$NEARDUP" run --config "$work/config.yaml" --brokers "$brokers" >"$work/run$i.out" 2>"$work/run$i.err" &
  run_pids+=($!)
  pids+=($!)
done
assigned() { grep -q 'assigned 2 partition' "$work/run1.err" && grep -q 'assigned 2 partition' "$work/run2.err"; }
wait_for 60 assigned || { cp "$work/run1.err" "$work/run.err"; fail "the two instances did not split the 4 partitions"; }
judging() { grep -l 'judge: this instance now judges' "$work"/run[12].err 2>/dev/null | head -1; }
# (a function: `wait_for 30 test -n "$(judging)"` would look once, at the call)
has_judge() { [ -n "$(judging)" ]; }
wait_for 30 has_judge || { cp "$work/run1.err" "$work/run.err"; fail "no instance became the judge"; }
judge_log=$(judging)
judge_index=${judge_log##*/run}
judge_index=${judge_index%.err}
cp "$work/run$((3 - judge_index)).err" "$work/run.err.survivor"
pass

# pairs FIRST COUNT: writes p<partition>.txt files, "o<i>|text" on p, "c<i>|TEXT!" on p+2.
pairs() {
  python3 - "$work" "$1" "$2" <<'PY'
import random, sys
work, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
files = {p: open(f"{work}/p{p}.txt", "w") for p in range(4)}
for i in range(first, first + count):
    rng = random.Random(i)
    text = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8)) for _ in range(16))
    p = i % 4
    files[p].write(f"o{i}|{text}\n")
    files[(p + 2) % 4].write(f"c{i}|{text.upper()}!\n")
PY
}
send() {
  local senders=()
  for p in 0 1 2 3; do
    kcat -b "$brokers" -P -t input -p "$p" -K '|' -l "$work/p$p.txt" &
    senders+=($!)
  done
  for pid in "${senders[@]}"; do wait "$pid" || fail "kcat could not produce"; done
}
keys() { kcat -b "$brokers" -C -t output -e -q -f '%k\n' 2>/dev/null | sort -u | grep -c . || true; }
at_least() { [ "$(keys)" -ge "$1" ]; }

pairs 0 100
send
wait_for 60 at_least 200 || fail "expected 200 distinct outputs before the kill, got $(keys)"
pass

kill -KILL "${run_pids[$((judge_index - 1))]}"
pairs 100 100
send
survivor_err="$work/run$((3 - judge_index)).err"
cp "$survivor_err" "$work/run.err"
wait_for 90 at_least 400 || { cp "$survivor_err" "$work/run.err"; fail "expected 400 distinct outputs after the kill, got $(keys)"; }
grep -q 'judge: this instance now judges' "$survivor_err" || fail "the survivor never took over the judging"
pass

kcat -b "$brokers" -C -t output -e -q -f '%k %h\n' >"$work/output.txt" 2>/dev/null
python3 - "$work/output.txt" <<'PY' || fail "a pair was not decided one way (see above)"
import collections, sys
verdicts = collections.defaultdict(set)
for line in open(sys.argv[1]):
    key, _, headers = line.rstrip("\n").partition(" ")
    verdicts[key].add("duplicate" if "neardup-verdict=duplicate" in headers else "unique")
bad = []
for i in range(200):
    o, c = verdicts.get(f"o{i}"), verdicts.get(f"c{i}")
    if not o or not c:
        bad.append(f"pair {i}: missing output ({o}, {c})")
    elif not ((o == {"unique"} and c == {"duplicate"}) or (o == {"duplicate"} and c == {"unique"})):
        bad.append(f"pair {i}: original {sorted(o)}, copy {sorted(c)}")
for b in bad[:10]:
    print(b)
sys.exit(1 if bad else 0)
PY
pass

stop_gracefully "${run_pids[$((2 - judge_index))]}"
echo "$name: $passed checks passed"
