#!/usr/bin/env bash
# cluster: a group decides short texts as one instance does, reposts of
# reposts included. 1,200 short stories, each reposted twice in a chain (the
# second repost edits the first, and is close to it but not to the story),
# go through one input partition to two instances with the group judge and
# exactly-once delivery. The duplicates tagged on the output must be exactly
# those `neardup scan` finds in the same records, and the chains must matter:
# scan without the recent-text stage (`dedup.sketch.recent: 0`) finds fewer.
# Brokers: topic creation and deletion, transactions, group.min.session.timeout.ms at
# most 6000.
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_short_reposts_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
require kcat python3
cluster_start

config="$work/config.yaml"
cluster_config "$config" '  consumer: {session.timeout.ms: "6000"}' '  delivery: exactly-once'
printf '%s\n' 'action: tag' 'metrics: {listen: "127.0.0.1:0"}' 'input: {format: json}' >>"$config"
cluster_topics "$config" 1

# Story: 14 random words (about 80 characters). Repost 1 changes a letter of
# one word (Jaccard about 0.88); repost 2 changes a letter of another word of
# repost 1 (0.88 to it, about 0.78 to the story). Each repost comes a few
# dozen records after what it repeats. Then 300 stories of 12 words reposted
# with a link (the story rule: the whole texts share about 0.7), and 300 posts
# of 6 words reposted with two letters of a word swapped (the typo rule: about
# 0.7), so the group's requests must carry marks and words.
python3 - "$work/feed.jsonl" <<'PY'
import json, random, sys
rng = random.Random(7)
word = lambda: "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 6)))
def edit(words, i):
    w = list(words[i]); w[len(w) // 2] = "z" if w[len(w) // 2] != "z" else "y"
    out = list(words); out[i] = "".join(w); return out
events = []
for i in range(1200):
    story = [word() for _ in range(14)]
    first = edit(story, rng.randrange(0, 5))
    second = edit(first, rng.randrange(9, 14))
    t = i * 3
    events.append((t, f"s{i}", " ".join(story)))
    events.append((t + rng.randint(1, 40), f"r{i}", " ".join(first)))
    events.append((t + rng.randint(41, 80), f"q{i}", " ".join(second)))
for i in range(300):
    t = i * 12 + 1
    story = " ".join(word() for _ in range(12))
    link = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(8))
    events.append((t, f"l{i}", story))
    events.append((t + rng.randint(1, 40), f"m{i}", f"{story} https://t.co/{link}"))
    post = [word() for _ in range(6)]
    k = rng.randrange(1, 5)
    w = list(post[k])
    j = next(j for j in range(len(w) - 1) if w[j] != w[j + 1]) if len(set(w)) > 1 else None
    if j is None:
        w[1] = "z" if w[1] != "z" else "y"
    else:
        w[j], w[j + 1] = w[j + 1], w[j]
    typo = list(post)
    typo[k] = "".join(w)
    events.append((t + 2, f"u{i}", " ".join(post)))
    events.append((t + 2 + rng.randint(1, 40), f"v{i}", " ".join(typo)))
events.sort(key=lambda e: e[0])
with open(sys.argv[1], "w") as f:
    for _, id_, text in events:
        f.write(json.dumps({"id": id_, "text": text}) + "\n")
PY
records=$(grep -c . "$work/feed.jsonl")
"$NEARDUP" scan "$work/feed.jsonl" >"$work/scan.jsonl"
want=$(grep -c '"verdict":"duplicate"' "$work/scan.jsonl" || true)
printf 'dedup:\n  sketch: {recent: 0}\n' >"$work/norecent.yaml"
"$NEARDUP" scan --config "$work/norecent.yaml" "$work/feed.jsonl" >"$work/scan0.jsonl"
without=$(grep -c '"verdict":"duplicate"' "$work/scan0.jsonl" || true)
chained=$(python3 - "$work/scan.jsonl" <<'PY'
import json, sys
# second reposts caught as duplicates of their story; link reposts; typos
rows = [json.loads(l) for l in open(sys.argv[1])]
print(*(sum(1 for r in rows if r["id"].startswith(p) and r["verdict"] == "duplicate") for p in "qmv"))
PY
)
read -r chained linked typos <<<"$chained"
[ "$without" -lt "$want" ] && [ "$chained" -ge 1100 ] && [ "$linked" -ge 250 ] && [ "$typos" -ge 250 ] && pass ||
  fail "the feed does not exercise the rules: scan finds $want duplicates, $without without the recent-text stage, $chained second reposts, $linked link reposts, $typos typos"

# (each its own transactional.id: one host name would give both the same)
NEARDUP_KAFKA_TRANSACTIONAL_ID="${prefix}tx1" start_instance 1
NEARDUP_KAFKA_TRANSACTIONAL_ID="${prefix}tx2" start_instance 2
kcat -b "$brokers" -P -t "$(topic input)" -p 0 -l "$work/feed.jsonl" || fail "kcat could not produce"
out_count() { kcat -b "$brokers" -C -t "$(topic output)" -e -q -X isolation.level=read_committed -f 'x%h\n' 2>/dev/null | grep -c '^x' || true; }
all_out() { [ "$(out_count)" -ge "$records" ]; }
wait_for 240 all_out || { cp "$work/run1.err" "$work/run.err"; fail "$(out_count) of $records records on the output"; }
kcat -b "$brokers" -C -t "$(topic output)" -e -q -X isolation.level=read_committed -f 'x%h\n' 2>/dev/null >"$work/out.txt" || true
got_records=$(grep -c '^x' "$work/out.txt" || true)
got=$(grep -c 'neardup-verdict=duplicate' "$work/out.txt" || true)
cat "$work/run1.err" "$work/run2.err" >"$work/run.err"
for i in 1 2; do
  kill -0 "${run_pids[$i]}" 2>/dev/null || fail "instance $i stopped: $(tail -3 "$work/run$i.err")"
done
[ "$got_records" = "$records" ] && [ "$got" = "$want" ] && pass ||
  fail "the group tagged $got duplicates in $got_records records; scan finds $want in $records"
finish
