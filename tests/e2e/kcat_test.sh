#!/usr/bin/env bash
# e2e: `neardup broker` and `neardup run --brokers` as separate processes; kcat
# produces messages with known near-duplicates and consumes the outputs.
# Every wait is bounded; every process started here is stopped by the trap.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=kcat_test
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v kcat >/dev/null || { echo "kcat_test: kcat is not installed (deploy/install-deps.sh)"; exit 1; }

# The group "news" has its own changelog, judge and verdict topics (news-window,
# news-judge, news-verdicts), which --groups creates with the right partitions.
"$NEARDUP" broker --partitions 1 --groups news --bootstrap-file "$work/bootstrap" >"$work/broker.out" 2>"$work/broker.err" &
pids+=($!)
wait_for 20 test -s "$work/bootstrap" || fail "broker did not write its bootstrap file"
brokers=$(cat "$work/bootstrap")

kcat -b "$brokers" -L -t news-judge 2>/dev/null | grep -q 'topic "news-judge" with 1 partitions' ||
  fail "the broker did not create news-judge with one partition"
cat >"$work/config.yaml" <<YAML
kafka: {group_id: news}
action: tag
metrics: {listen: "127.0.0.1:0"}
YAML
"$NEARDUP" run --config "$work/config.yaml" --brokers "$brokers" >"$work/run.out" 2>"$work/run.err" &
run_pid=$!
pids+=($run_pid)

# 6 messages: 4 unique stories, 2 reposts (case/punctuation edits), 1 invalid (only punctuation).
cat >"$work/input.txt" <<'TXT'
a1|Storm closes the harbour bridge as rivers rise across the county tonight
a2|Council approves the new school budget after a long debate on housing
a3|STORM closes the harbour bridge, as rivers rise across the county tonight!
a4|Museum reopens its science wing after a year of careful restoration
a5|museum reopens its science wing after a year of careful restoration.
a6|Railway strike halts trains into the city for a second day running
a7|... !!! ...
TXT
kcat -b "$brokers" -P -t input -K '|' -l "$work/input.txt" || fail "kcat could not produce"

count() { kcat -b "$brokers" -C -t "$1" -e -q -f '%k\n' 2>/dev/null | grep -c . || true; }
at_least() { [ "$(count "$1")" -ge "$2" ]; }
wait_for 60 at_least output 6 || fail "expected 6 records on output, got $(count output)"
wait_for 30 at_least dead-letters 1 || fail "expected 1 dead letter"

kcat -b "$brokers" -C -t output -e -q -f '%k|%h|%s\n' >"$work/output.txt" 2>/dev/null
[ "$(wc -l <"$work/output.txt")" -eq 6 ] || fail "expected exactly 6 output records: $(cat "$work/output.txt")"
[ "$(grep -c 'neardup-verdict=duplicate' "$work/output.txt")" -eq 2 ] || fail "expected 2 tagged duplicates"
grep -q '^a3|.*neardup-of=input/0/0,' "$work/output.txt" || fail "a3 should point at input/0/0 (a1)"
grep -q '^a5|.*neardup-of=input/0/3,' "$work/output.txt" || fail "a5 should point at input/0/3 (a4)"
grep '^a3|' "$work/output.txt" | grep -q 'neardup-fingerprint=[0-9a-f]\{16\}' || fail "a3 has no fingerprint header"
grep '^a1|' "$work/output.txt" | grep -vq 'neardup-verdict' || fail "a1 must be republished untagged"
kcat -b "$brokers" -C -t dead-letters -e -q -f '%k|%h\n' 2>/dev/null | grep -q '^a7|.*neardup-error=' || fail "a7 not dead-lettered with neardup-error"

# The embedded broker (librdkafka's mock) answers a fetch that finds nothing
# only when its wait ends: the judge's and verdicts' consumers wait 5 ms.
grep -q 'judge and verdict consumers: a fetch waits up to 5 ms for data' "$work/run.err" ||
  fail "no log line of a 5 ms fetch wait: $(grep 'a fetch waits' "$work/run.err")"

# SIGTERM: flush, commit, exit 0 within 10 s.
stop_gracefully "$run_pid"

# The window changelog (binary batches) as JSON lines: the 4 kept stories, at their offsets.
timeout 60 "$NEARDUP" changelog --config "$work/config.yaml" --brokers "$brokers" --timeout 30 >"$work/changelog.jsonl" 2>"$work/changelog.err" ||
  fail "neardup changelog failed: $(cat "$work/changelog.err")"
[ "$(wc -l <"$work/changelog.jsonl")" -eq 4 ] || fail "expected 4 changelog entries: $(cat "$work/changelog.jsonl")"
offsets=$(grep -o '"offset":[0-9]*' "$work/changelog.jsonl" | sort | tr '\n' ' ')
[ "$offsets" = '"offset":0 "offset":1 "offset":3 "offset":5 ' ] || fail "changelog offsets: $offsets"
[ "$(grep -c '"topic":"input","partition":0' "$work/changelog.jsonl")" -eq 4 ] || fail "changelog topics: $(cat "$work/changelog.jsonl")"
grep -q '4 entries, 0 unreadable records' "$work/changelog.err" || fail "changelog summary: $(cat "$work/changelog.err")"
[ "$(count neardup-window)" -eq 0 ] || fail "group news wrote to the default group's changelog"
echo "kcat_test: 11 passed, 0 failed"
