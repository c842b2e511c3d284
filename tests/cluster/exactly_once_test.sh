#!/usr/bin/env bash
# cluster: exactly-once with the group judge through crashes. Two instances of
# one group (4 input partitions, kafka.delivery: exactly-once) take 20,000
# messages with planted near-duplicates, fed in 20 chunks while instances are
# killed with -9 three times and the instance holding the judge once (each
# restarted at once with its transactional.id, which aborts what it left
# open; each kill once the group has settled). A read_committed consumer must
# then see every input exactly once on
# the output topic, and the duplicates tagged must be at least 0.98 of those
# `neardup scan` finds in the same messages, in order.
# Brokers: topic creation and deletion, transactions (the ACLs of docs/KAFKA.md
# "exactly-once"), group.min.session.timeout.ms at most 6000.
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_exactly_once_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
require kcat python3
total=20000
chunks=20

cluster_start
cluster_config "$work/config.yaml" "  delivery: exactly-once" \
  "  consumer: {session.timeout.ms: \"6000\", heartbeat.interval.ms: \"1000\"}"
# The recent-text stage's ring starts empty at every judge takeover (the
# changelog does not carry exact shingle sets), and this test kills judges:
# the service and scan both run without it, to compare like for like.
printf '%s\n' 'action: tag' 'metrics: {listen: ""}' 'dedup: {sketch: {recent: 0}}' >>"$work/config.yaml"
cluster_topics "$work/config.yaml" 4

# The feed: 14,000 stories of 16 random words and 6,000 near copies, each 20
# to 600 messages after its story, 7 in 10 on the story's partition: the same
# text in capitals with a "!", or one word replaced. chunk<c>.p<p> files for kcat, feed.jsonl for scan.
python3 - "$work" "$total" "$chunks" <<'PY'
import json, random, sys
work, total, chunks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(20261126)
word = lambda: "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
slots = [None] * total
stories = []
copies = 6000
# place the copies first: a copy at j, its original at j - gap
taken = set()
pairs = []
while len(pairs) < copies:
    j = rng.randrange(700, total)
    i = j - rng.randint(20, 600)
    if i in taken or j in taken:
        continue
    taken.update((i, j))
    pairs.append((i, j))
texts = [None] * total
for i in range(total):
    if texts[i] is None:
        texts[i] = " ".join(word() for _ in range(16))
for i, j in pairs:
    if rng.random() < 0.5:
        texts[j] = texts[i].upper() + "!"
    else:
        w = texts[i].split()
        w[rng.randrange(len(w))] = word()
        texts[j] = " ".join(w)
partition = list(range(total))
for i in range(total):
    partition[i] = rng.randrange(4)
for i, j in pairs:  # 7 in 10 copies on their story's partition, the others elsewhere
    partition[j] = partition[i] if rng.random() < 0.7 else (partition[i] + rng.randint(1, 3)) % 4
per_chunk = total // chunks
with open(f"{work}/feed.jsonl", "w") as feed:
    for c in range(chunks):
        files = [open(f"{work}/chunk{c}.p{p}", "w") for p in range(4)]
        for k in range(c * per_chunk, (c + 1) * per_chunk):
            files[partition[k]].write(f"m{k}|{texts[k]}\n")
            feed.write(json.dumps({"id": f"m{k}", "text": texts[k]}) + "\n")
        for f in files:
            f.close()
PY
"$NEARDUP" scan --config "$work/config.yaml" "$work/feed.jsonl" >"$work/scan.jsonl" 2>"$work/scan.err" ||
  fail "neardup scan failed: $(cat "$work/scan.err")"

# Instance i (1 or 2), incarnation n: its own transactional.id, a log per incarnation.
declare -A run_pid incarnation
start_instance() {
  local i=$1
  incarnation[$i]=$((${incarnation[$i]:-0} + 1))
  NEARDUP_KAFKA_TRANSACTIONAL_ID="${prefix}tx$i" \
    "$NEARDUP" run --config "$work/config.yaml" --brokers "$brokers" \
    >"$work/run$i.${incarnation[$i]}.out" 2>"$work/run$i.${incarnation[$i]}.err" &
  run_pid[$i]=$!
  pids+=($!)
}
log_of() { echo "$work/run$1.${incarnation[$1]}.err"; }
# judging: the instance whose current incarnation judges now (its last judge line says so).
judging() {
  for i in 1 2; do
    last=$(grep -o 'judge: \(this instance now judges\|no longer judging\)' "$(log_of "$i")" | tail -1 || true)
    [ "$last" = "judge: this instance now judges" ] && { echo "$i"; return 0; }
  done
  return 0
}
has_judge() { [ -n "$(judging)" ]; }
kill_instance() {
  local i=$1
  kill -KILL "${run_pid[$i]}"
  wait "${run_pid[$i]}" 2>/dev/null || true
  cp "$(log_of "$i")" "$work/run.err"
  start_instance "$i"
}
start_instance 1
start_instance 2
both_assigned() { grep -q 'assigned 2 partition' "$(log_of 1)" && grep -q 'assigned 2 partition' "$(log_of 2)"; }
wait_for 60 both_assigned || { cp "$(log_of 1)" "$work/run.err"; fail "the two instances did not split the 4 partitions"; }
wait_for 30 has_judge || { cp "$(log_of 1)" "$work/run.err"; fail "no instance became the judge"; }
pass

send_chunk() {
  local senders=()
  for p in 0 1 2 3; do
    [ -s "$work/chunk$1.p$p" ] || continue
    kcat -b "$brokers" -P -t "$(topic input)" -p "$p" -K '|' -l "$work/chunk$1.p$p" &
    senders+=($!)
  done
  for pid in "${senders[@]}"; do wait "$pid" || fail "kcat could not produce chunk $1"; done
}
# settled: the current incarnations hold all 4 partitions between them and one
# of them judges. Each kill waits for it: a member that dies while its group
# rebalances may hold kfake's rebalance until the rebalance timeout (Apache
# Kafka drops it at its session timeout), and the test is about crashes, not that.
held() {
  local last
  last=$(grep -o '\(assigned\|revoked\) [0-9]* partition' "$(log_of "$1")" | tail -1 || true)
  case $last in assigned*) echo "${last//[^0-9]/}" ;; *) echo 0 ;; esac
}
settled() { [ $(($(held 1) + $(held 2))) -eq 4 ] && has_judge; }
kills=()
started=$SECONDS
for c in $(seq 0 $((chunks - 1))); do
  send_chunk "$c"
  case $c in 4 | 8 | 12 | 16) wait_for 90 settled || { cp "$(log_of 1)" "$work/run.err"; fail "the group did not settle before the kill after chunk $c"; } ;; esac
  case $c in
    4 | 8 | 12)  # an instance that does not judge
      j=$(judging); victim=$((j == 1 ? 2 : 1)); [ -n "$j" ] || victim=1
      kill_instance "$victim"; kills+=("chunk $c: instance $victim") ;;
    16)  # the judge
      j=$(judging); [ -n "$j" ] || j=1
      kill_instance "$j"; kills+=("chunk $c: instance $j (the judge)") ;;
  esac
  sleep 1
done
echo "$name: fed $total messages in $((SECONDS - started)) s; killed: ${kills[*]}"

distinct() { read_committed "$(topic output)" | cut -d'|' -f1 | sort -u | grep -c . || true; }
all_out() { [ "$(distinct)" -ge "$total" ]; }
wait_for 300 all_out || fail "expected $total distinct inputs on output, got $(distinct)"
echo "$name: all $total out $((SECONDS - started)) s after the feed began"
pass
for i in 1 2; do cp "$(log_of "$i")" "$work/run.err"; stop_gracefully "${run_pid[$i]}"; done

read_committed "$(topic output)" >"$work/output.txt"
read_committed "$(topic dead-letters)" >"$work/dead.txt"
kcat -b "$brokers" -C -t "$(topic input)" -e -q -f '%k %p %o\n' >"$work/input.txt" 2>/dev/null
# A pair of scan's (a duplicate and its original) is caught when the stream
# tags one of the two as a duplicate of the other: across partitions, a
# crash that delays one partition may bring the copy to the judge first.
python3 - "$work" "$(topic input)" "$total" <<'PY' || fail "exactly-once or recall failed (see above)"
import collections, json, sys
work, input_topic, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
key_of = {}
for line in open(f"{work}/input.txt"):
    key, p, o = line.split()
    key_of[f"{input_topic}/{p}/{o}"] = key
seen = collections.Counter()
tagged = {}
for line in open(f"{work}/output.txt", encoding="utf-8", errors="replace"):
    key, _, rest = line.partition("|")
    seen[key] += 1
    headers = dict(h.split("=", 1) for h in rest.partition("|")[0].split(",") if "=" in h)
    if headers.get("neardup-verdict") == "duplicate":
        tagged[key] = key_of.get(headers.get("neardup-of", "").rsplit(",", 1)[0])
dead = sum(1 for _ in open(f"{work}/dead.txt"))
repeated = sum(1 for n in seen.values() if n > 1)
scan = [json.loads(l) for l in open(f"{work}/scan.jsonl")]
pairs = {(r["id"], r["of"]) for r in scan if r["verdict"] == "duplicate"}
same_way = sum(1 for d, o in pairs if tagged.get(d) == o)
other_way = sum(1 for d, o in pairs if tagged.get(d) != o and tagged.get(o) == d)
caught = same_way + other_way
extra = len(tagged) - caught
print(f"outputs {sum(seen.values())}, distinct {len(seen)}, repeated {repeated}, dead letters {dead}; "
      f"scan's pairs {len(pairs)}: caught {caught} ({caught / len(pairs):.4f}; {same_way} the same way, "
      f"{other_way} the other way), other duplicates tagged {extra}")
ok = sum(seen.values()) == total and len(seen) == total and dead == 0
ok = ok and caught >= 0.98 * len(pairs) and extra <= 0.02 * len(pairs)
sys.exit(0 if ok else 1)
PY
pass
echo "$name: $passed passed, 0 failed"
