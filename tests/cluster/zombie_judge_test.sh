#!/usr/bin/env bash
# cluster: a zombie judge under exactly-once. Two `neardup run` instances of
# one group (each its own transactional id, 4 input partitions, session
# timeout 6 s), near-duplicate pairs across partitions (original on p, copy on
# p+2). The judging instance is frozen with SIGSTOP past the session timeout,
# so the other takes over the judging and every input partition; more pairs
# arrive; then the frozen one gets SIGCONT. Its open transactions, verdicts and
# offset commits must count for nothing: a read_committed consumer sees every
# input record exactly once, every pair decided one way. The zombie must say
# that it was fenced or lost its partitions (a clear log line); it may exit 1
# (fenced) or rejoin; the group goes on judging what comes after.
# Brokers: kfake only (a zombie judge fenced by the brokers' transactions).
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_zombie_judge_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
require kcat python3
need_kfake "a zombie judge fenced by the brokers' transactions"
cluster_start

config="$work/config.yaml"
cluster_config "$config" '  delivery: exactly-once' '  consumer: {session.timeout.ms: "6000"}'
printf '%s\n' 'action: tag' 'metrics: {listen: ""}' >>"$config"
cluster_topics "$config" 4
in=$(topic input)
out=$(topic output)

run_pids=()
start_instance() { # start_instance N: transactional id <prefix>tx-N, logs to run<N>.err
  NEARDUP_KAFKA_TRANSACTIONAL_ID="${prefix}tx-$1" \
    "$NEARDUP" run --config "$config" --brokers "$brokers" >"$work/run$1.out" 2>"$work/run$1.err" &
  run_pids[$1]=$!
  pids+=($!)
}
start_instance 1
start_instance 2
split() { [ "$(last_assigned 1)" = 2 ] && [ "$(last_assigned 2)" = 2 ]; }
wait_for 60 split || { cp "$work/run1.err" "$work/run.err"; fail "the two instances did not split the 4 partitions ($(last_assigned 1), $(last_assigned 2))"; }
has_judge() { [ -n "$(current_judge 1 2)" ]; }
wait_for 30 has_judge || { cp "$work/run1.err" "$work/run.err"; fail "no instance became the judge"; }
zombie=$(current_judge 1 2)
other=$((3 - zombie))
cp "$work/run$other.err" "$work/run.err"
pass

keys() { read_committed "$out" | cut -d'|' -f1 | sort -u | grep -c . || true; }
at_least() { [ "$(keys)" -ge "$1" ]; }

pairs 0 100
send
wait_for 60 at_least 200 || fail "expected 200 distinct outputs before the freeze, got $(keys)"
pass

# Freeze the judge mid-stream: 1000 more pairs are on their way as it stops.
pairs 100 1000
send &
sender=$!
sleep 0.5
kill -STOP "${run_pids[$zombie]}"
stopped_at=$SECONDS
wait "$sender" || fail "kcat could not produce"
took_over() { [ "$(current_judge "$other")" = "$other" ]; }
wait_for 30 took_over || fail "instance $other did not take over the judging within 30 s of the freeze"
owns_all() { [ "$(last_assigned $other)" = 4 ]; }
wait_for 30 owns_all || fail "instance $other did not take over every input partition"
echo "$name: instance $zombie (the judge) frozen; instance $other judges and owns 4 partitions after $((SECONDS - stopped_at)) s"
pairs 1100 50
send
wait_for 60 at_least 2300 || fail "expected 2300 distinct outputs with the judge frozen, got $(keys)"
pass

# The zombie wakes up.
kill -CONT "${run_pids[$zombie]}"
echo "$name: instance $zombie resumed after $((SECONDS - stopped_at)) s"
said() { grep -E -q 'fenced|no longer judging|revoked|lost' "$work/run$zombie.err"; }
wait_for 30 said || { cp "$work/run$zombie.err" "$work/run.err"; fail "the zombie said nothing about losing its partitions or being fenced"; }
sleep 8 # time to commit anything it still would, or to rejoin
zombie_status=running
if ! kill -0 "${run_pids[$zombie]}" 2>/dev/null; then
  wait "${run_pids[$zombie]}" && zombie_status=0 || zombie_status=$?
fi
echo "$name: the zombie: $zombie_status; its log says: $(grep -E 'fenced|no longer judging|revoked|lost|fatal|stopped' "$work/run$zombie.err" | grep -v facility= | cut -c1-220 | tr '\n' '|')"
case $zombie_status in
  running) ;;
  1) grep -q 'fatal Kafka error.*fenced' "$work/run$zombie.err" || fail "the zombie exited 1 without saying it was fenced" ;;
  *) fail "the zombie exited $zombie_status" ;;
esac
kill -0 "${run_pids[$other]}" 2>/dev/null || fail "instance $other stopped"
pass

# After it: more pairs, judged by the group.
pairs 1150 50
send
wait_for 60 at_least 2400 || fail "expected 2400 distinct outputs after the zombie woke, got $(keys)"
sleep 3
pass

# Every input record exactly once, every pair one way.
read_committed "$in" | cut -d'|' -f1 | sort >"$work/in-keys.txt"
kcat -b "$brokers" -C -t "$out" -e -q -X isolation.level=read_committed -f '%k\t%h\n' >"$work/output.txt" 2>/dev/null || fail "cannot read the output"
[ "$(wc -l <"$work/in-keys.txt")" -eq 2400 ] || fail "the input holds $(wc -l <"$work/in-keys.txt") records, not 2400"
cut -f1 "$work/output.txt" | sort >"$work/out-keys.txt"
if ! diff "$work/in-keys.txt" "$work/out-keys.txt" >/dev/null; then
  fail_later "a read_committed consumer does not see every input record exactly once: $(wc -l <"$work/out-keys.txt") records for 2400;" \
    "repeated: $(uniq -d "$work/out-keys.txt" | wc -l) ($(uniq -d "$work/out-keys.txt" | head -8 | tr '\n' ' ')); missing: $(comm -23 "$work/in-keys.txt" <(sort -u "$work/out-keys.txt") | wc -l)"
else
  pass
fi
python3 - "$work/output.txt" <<'PY' || fail_later "a pair was not decided one way (see above)"
import collections, sys
verdicts = collections.defaultdict(set)
for line in open(sys.argv[1]):
    key, _, headers = line.rstrip("\n").partition("\t")
    verdicts[key].add("duplicate" if "neardup-verdict=duplicate" in headers else "unique")
bad = []
for i in range(1200):
    o, c = verdicts.get(f"o{i}"), verdicts.get(f"c{i}")
    if not o or not c:
        bad.append(f"pair {i}: missing output ({o}, {c})")
    elif not ((o == {"unique"} and c == {"duplicate"}) or (o == {"duplicate"} and c == {"unique"})):
        bad.append(f"pair {i}: original {sorted(o)}, copy {sorted(c)}")
print(f"{len(bad)} of 1200 pairs not decided one way")
for b in bad[:10]:
    print(b)
sys.exit(1 if bad else 0)
PY
[ "$failed" -gt 0 ] || pass

for i in 1 2; do
  if kill -0 "${run_pids[$i]}" 2>/dev/null; then stop_gracefully "${run_pids[$i]}"; fi
done
pass
finish
