#!/usr/bin/env bash
# Bytes per window changelog entry as an operator sees them: 2,000 unique
# ~200-character messages through `neardup run` (the defaults: group judge,
# sketch on with 3 bands) on three kfake brokers (or NEARDUP_TEST_BROKERS /
# NEARDUP_TEST_CLUSTER=mock, as the cluster tests), then the sum of the
# changelog's record value sizes divided by its entries.
#
#   NEARDUP=build/release/app/neardup NEARDUP_SOURCE_DIR=$PWD \
#     NEARDUP_KFAKE=path/to/kfake bash bench/changelog/changelog_bytes.sh
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=changelog_bytes
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
messages=${MESSAGES:-2000}

cluster_start
cluster_config "$work/config.yaml"
cluster_topics "$work/config.yaml" 4
python3 - "$work" "$messages" <<'PY'
import random, sys
rng = random.Random(42)
words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(5000)]
with open(f"{sys.argv[1]}/input.txt", "w") as f:
    for i in range(int(sys.argv[2])):
        text = ""
        while len(text) < 200:
            text += rng.choice(words) + " "
        f.write(f"m{i}|{text.strip()}\n")
PY
"$NEARDUP" run --config "$work/config.yaml" --brokers "$brokers" >"$work/run.out" 2>"$work/run.err" &
run_pid=$!
pids+=($run_pid)
kcat -b "$brokers" -P -t "$(topic input)" -K '|' -l "$work/input.txt" || fail "kcat could not produce"
outputs() { kcat -b "$brokers" -C -t "$(topic output)" -e -q -f '%k\n' 2>/dev/null | grep -c . || true; }
all_out() { [ "$(outputs)" -ge "$messages" ]; }
wait_for 120 all_out || fail "only $(outputs) of $messages messages came out"
stop_gracefully "$run_pid"
changelog="${group}-window"
bytes=$(kcat -b "$brokers" -C -t "$changelog" -e -q -f '%S\n' 2>/dev/null | awk '{ s += $1; n += 1 } END { print s + 0, n + 0 }')
timeout 60 "$NEARDUP" changelog --config "$work/config.yaml" --brokers "$brokers" --timeout 30 >"$work/changelog.jsonl" 2>"$work/changelog.err" ||
  fail "neardup changelog failed: $(cat "$work/changelog.err")"
entries=$(grep -c . "$work/changelog.jsonl")
set -- $bytes
python3 -c "print(f'$name: {$entries} entries in {$2} records, {$1} value bytes: {$1 / $entries:.2f} bytes/entry')"
