#!/usr/bin/env bash
# cluster: the judge fails over between real processes. Two `neardup run`
# instances of one group (at-least-once, 4 input partitions); each original
# goes to partition p and its near copy (upper case, "!"), in the same round,
# to partition p+2, so original and copy are read by different instances at
# the same moment. The instance that judges is killed with SIGKILL, a third
# instance joins, and more pairs arrive while the partitions and the judging
# move (session timeout 6 s). Every message must come out (repeats are counted
# and must carry the verdict they had), every pair must be decided one way
# (exactly one of the two a duplicate, pointing at the other), and the pairs
# found must be the ones `neardup scan` finds in the same messages.
# Brokers: topic creation and deletion, group.min.session.timeout.ms at most 6000.
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_failover_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
require kcat python3
cluster_start

config="$work/config.yaml"
cluster_config "$config" '  consumer: {session.timeout.ms: "6000"}'
# (the recent-text stage's ring starts empty at a judge takeover: the service
# and scan both run without it, to compare like for like)
printf '%s\n' 'action: tag' 'metrics: {listen: ""}' 'dedup: {sketch: {recent: 0}}' >>"$config"
cluster_topics "$config" 4
in=$(topic input)
out=$(topic output)

start_instance 1
start_instance 2
# (the last assignment each logged: 2 and 2)
split() { [ "$(last_assigned 1)" = 2 ] && [ "$(last_assigned 2)" = 2 ]; }
wait_for 60 split || { cp "$work/run1.err" "$work/run.err"; fail "the two instances did not split the 4 partitions ($(last_assigned 1), $(last_assigned 2))"; }
has_judge() { [ -n "$(current_judge 1 2)" ]; }
wait_for 30 has_judge || { cp "$work/run1.err" "$work/run.err"; fail "no instance became the judge"; }
judge_index=$(current_judge 1 2)
survivor=$((3 - judge_index))
pass

keys() { read_committed "$out" | cut -d'|' -f1 | sort -u | grep -c . || true; }
at_least() { [ "$(keys)" -ge "$1" ]; }

pairs 0 100
send
wait_for 60 at_least 200 || { cp "$work/run$judge_index.err" "$work/run.err"; fail "expected 200 distinct outputs before the kill, got $(keys)"; }
pass

# The judge dies; a third instance joins; 100 more pairs while everything moves.
kill -KILL "${run_pids[$judge_index]}"
killed_at=$SECONDS
start_instance 3
pairs 100 100
send
cp "$work/run$survivor.err" "$work/run.err"
wait_for 90 at_least 400 || { cp "$work/run$survivor.err" "$work/run.err"; fail "expected 400 distinct outputs after the kill, got $(keys)"; }
[ -n "$(current_judge "$survivor" 3)" ] || fail "neither the survivor nor the new instance took over the judging"
echo "$name: instance $(current_judge "$survivor" 3) judges now; 400 distinct outputs $((SECONDS - killed_at)) s after the kill"
pass
# the survivors share the partitions again (2 + 2)
resplit() { [ "$(($(last_assigned $survivor) + $(last_assigned 3)))" = 4 ] && [ "$(last_assigned 3)" -ge 1 ]; }
wait_for 30 resplit || fail "the survivor and the new instance do not share the 4 partitions ($(last_assigned $survivor), $(last_assigned 3))"
pass

# Verdicts: each pair one way, repeats with the verdict they had, and the pairs scan finds.
sleep 2
kcat -b "$brokers" -C -t "$in" -e -q -f '%t/%p/%o %k\n' >"$work/input.txt" 2>/dev/null || fail "cannot read the input back"
kcat -b "$brokers" -C -t "$out" -e -q -X isolation.level=read_committed -f '%k\t%h\n' >"$work/output.txt" 2>/dev/null || fail "cannot read the output"
"$NEARDUP" scan --config "$config" --format jsonl "$work/all.jsonl" >"$work/scan.jsonl" 2>"$work/scan.err" || fail "neardup scan failed: $(cat "$work/scan.err")"
python3 - "$work/input.txt" "$work/output.txt" "$work/scan.jsonl" <<'PY' || fail "the verdicts are not consistent (see above)"
import collections, json, sys
where = dict(line.split() for line in open(sys.argv[1]))   # topic/partition/offset -> key
verdicts = collections.defaultdict(list)                    # key -> [(verdict, of-key)]
for line in open(sys.argv[2]):
    key, _, headers = line.rstrip("\n").partition("\t")
    h = dict(kv.split("=", 1) for kv in headers.split(",") if "=" in kv)
    if h.get("neardup-verdict") == "duplicate":
        verdicts[key].append(("duplicate", where.get(h.get("neardup-of"), "?" + h.get("neardup-of", ""))))
    else:
        verdicts[key].append(("unique", None))
bad = []
for key, vs in verdicts.items():
    if len(set(vs)) > 1:
        bad.append(f"{key}: repeated with another verdict: {vs}")
stream_pairs = set()
for i in range(200):
    o, c = verdicts.get(f"o{i}"), verdicts.get(f"c{i}")
    if not o or not c:
        bad.append(f"pair {i}: missing output ({o}, {c})")
        continue
    kinds = (o[0][0], c[0][0])
    if kinds == ("unique", "duplicate") and c[0][1] == f"o{i}":
        stream_pairs.add(frozenset((f"o{i}", f"c{i}")))
    elif kinds == ("duplicate", "unique") and o[0][1] == f"c{i}":
        stream_pairs.add(frozenset((f"o{i}", f"c{i}")))
    else:
        bad.append(f"pair {i}: original {o[0]}, copy {c[0]}")
scan_pairs = set()
for line in open(sys.argv[3]):
    r = json.loads(line)
    if r["verdict"] == "duplicate":
        scan_pairs.add(frozenset((str(r["id"]), str(r["of"]))))
    elif r["verdict"] != "unique":
        bad.append(f"scan: {r}")
if stream_pairs != scan_pairs:
    bad.append(f"stream and scan disagree: {len(stream_pairs)} pairs in the stream, {len(scan_pairs)} by scan; "
               f"only stream: {sorted(map(sorted, stream_pairs - scan_pairs))[:5]}; only scan: {sorted(map(sorted, scan_pairs - stream_pairs))[:5]}")
records = sum(len(v) for v in verdicts.values())
repeated = sorted(k for k, v in verdicts.items() if len(v) > 1)
print(f"{records} output records for {len(verdicts)} keys; {len(repeated)} repeated: {' '.join(repeated[:10])}; "
      f"{len(stream_pairs)} pairs decided, as scan finds {len(scan_pairs)}")
for b in bad[:10]:
    print(b)
sys.exit(1 if bad else 0)
PY
pass

for i in $survivor 3; do stop_gracefully "${run_pids[$i]}"; done
pass
finish
