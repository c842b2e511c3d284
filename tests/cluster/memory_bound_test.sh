#!/usr/bin/env bash
# cluster: `window.max_memory: 12MiB` bounds the window in bytes. One instance
# (the group judge on, as by default) reads 200,000 texts, every one distinct
# (at least one and a half times the entries `neardup plan --memory 12MiB`
# says the bound holds, so the bound binds):
# `neardup_window_bytes`, sampled every 0.2 s while they go through and at
# the end, never exceeds 12 MiB, and the window ends holding the entries the
# plan says (less at most 2%, the spills' early evictions), none more, and at
# least 80,000.
# Brokers: topic creation and deletion.
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_memory_bound_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
require kcat curl python3
cluster_start

bound=$((12 * 1024 * 1024))
config="$work/config.yaml"
cluster_config "$config"
printf '%s\n' 'metrics: {listen: "127.0.0.1:0"}' 'window: {max_memory: 12MiB}' >>"$config"
cluster_topics "$config" 4
holds=$("$NEARDUP" plan --memory 12MiB --config "$config" | sed -n 's/.* holds \([0-9]*\) entries.*/\1/p')
[ -n "$holds" ] && [ "$holds" -ge 50000 ] && pass || fail "neardup plan --memory 12MiB says it holds '${holds}' entries"
texts=$((holds + holds / 2 > 200000 ? holds + holds / 2 : 200000))

python3 - "$work/feed.txt" "$texts" <<'PY'
import random, sys
rng = random.Random(12)
letters = "abcdefghijklmnopqrstuvwxyz"
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write(f"t{i}|" + " ".join("".join(rng.choice(letters) for _ in range(7)) for _ in range(12)) + "\n")
PY

start_instance 1
knows_metrics() { [ -n "$(metrics_address "$work/run1.err")" ]; }
wait_for 30 knows_metrics || fail "no metrics address logged: $(tail -3 "$work/run1.err")"
address=$(metrics_address "$work/run1.err")
kcat -b "$brokers" -P -t "$(topic input)" -K '|' -l "$work/feed.txt" || fail "kcat could not produce"

most=0
out_count() { kcat -b "$brokers" -C -t "$(topic output)" -e -q -f 'x\n' 2>/dev/null | grep -c '^x' || true; }
deadline=$((SECONDS + 300))
while [ "$SECONDS" -lt "$deadline" ]; do
  bytes=$(sample "$address" neardup_window_bytes)
  [ -n "$bytes" ] && most=$(python3 -c "print(max($most, int(float('$bytes'))))")
  judged=$(curl -s --max-time 5 "http://$address/metrics" |
    awk '$1 ~ /^neardup_messages_total/ { s += $2 } END { printf "%d", s }')
  [ "${judged:-0}" -ge "$texts" ] && break
  sleep 0.2
done
[ "${judged:-0}" -ge "$texts" ] && pass || fail "$judged of $texts texts judged in 300 s"
entries=$(sample "$address" neardup_window_entries)
bytes=$(sample "$address" neardup_window_bytes)
most=$(python3 -c "print(max($most, int(float('$bytes'))))")
entries=${entries%.*}
echo "$name: $texts distinct texts: the window holds $entries entries of the plan's $holds; neardup_window_bytes at most $most of $bound"
[ "$most" -le "$bound" ] && pass || fail_later "neardup_window_bytes reached $most, over the bound of $bound"
[ "$entries" -le "$holds" ] && [ "$entries" -ge $((holds - holds / 50)) ] && pass ||
  fail_later "the window holds $entries entries; the plan says $holds"
[ "$entries" -ge 80000 ] && pass || fail_later "12 MiB holds $entries entries, fewer than 80,000"
kill -0 "${run_pids[1]}" 2>/dev/null || fail_later "the instance stopped: $(tail -3 "$work/run1.err")"
finish
