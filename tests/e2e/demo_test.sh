#!/usr/bin/env bash
# e2e: `neardup demo` as a newcomer runs it. Two runs with the same flags print
# the same summary (counts and example pairs), and the counts are the known
# ones for the demo feed; no raw librdkafka log line ("%3|1700000000.123|FAIL|...")
# reaches its output; Ctrl-C (SIGINT) in the middle of the feed ends it within
# 2 s, status 0, with a summary that says it stopped early; the demo's install
# step (install-deps.sh --demo) fetches no accuracy corpora. Every wait is
# bounded; every process started here is stopped by the trap.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=demo_test
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=${NEARDUP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
feed="$root/deploy/demo/feed.jsonl"
# librdkafka's own log format, printed when a client has no log callback.
raw_rdkafka='^%[0-7]\|[0-9]+\.[0-9]+\|'

# --- the same summary twice: the whole feed (291 lines at 97/s: 3 s) in a 4 s run.
for run in 1 2; do
  timeout 60 "$NEARDUP" demo --feed "$feed" --duration 4 --rate 97 --metrics-listen "" \
    >"$work/summary$run.out" 2>"$work/run$run.err" || fail "demo run $run exited $?"
done
cp "$work/run1.err" "$work/run.err"  # (what fail shows)
# stderr is a file here: no "\r" progress line in it, only whole log lines.
! grep -q $'\r' "$work/run1.err" || fail "the demo wrote a \\r progress line into a file"
diff -u "$work/summary1.out" "$work/summary2.out" || fail "two demo runs printed different summaries"
pass
# The demo feed's known verdicts (deploy/demo/feed.jsonl: 291 lines, two of them invalid).
grep -q '^neardup demo summary (action drop, 291 records at 97/s)$' "$work/summary1.out" \
  || fail "summary header: $(head -2 "$work/summary1.out")"
grep -q '^  in:         291 of 291 fed$' "$work/summary1.out" || fail "in: not 291 of 291"
grep -q '^  unique:     192$' "$work/summary1.out" || fail "unique: not 192"
grep -q '^  duplicates: 97$' "$work/summary1.out" || fail "duplicates: not 97"
grep -q '^  invalid:    2 ' "$work/summary1.out" || fail "invalid: not 2"
grep -q 'stopped early' "$work/summary1.out" && fail "a complete run says it stopped early"
[ "$(grep -c '^  d=' "$work/summary1.out")" -eq 5 ] || fail "not 5 example pairs"
# The first example: the second Nanjing metro line item and its repost with one character changed.
grep -A2 -m1 '^  d=' "$work/summary1.out" | grep -q 'dup:  南京地铁新線今天开通' \
  || fail "first example pair: $(grep -A2 -m1 '^  d=' "$work/summary1.out")"
pass

# --- README.md shows a demo summary (at the default 5/s): each line it shows is
# the demo's, so its figures cannot drift from what the demo prints.
sed -n '/^neardup demo summary (/,/^  \.\.\.$/p' "$root/README.md" | grep -v '^  \.\.\.$' \
  | sed 's|records at [0-9]*/s)$|records at 97/s)|' >"$work/readme_summary.txt"
[ "$(grep -c . "$work/readme_summary.txt")" -ge 5 ] || fail "README.md shows no demo summary"
while IFS= read -r line; do
  grep -qxF -- "$line" "$work/summary1.out" \
    || fail "README.md shows '$line'; the demo prints: $(grep -v '^$' "$work/summary1.out" | head -5)"
done <"$work/readme_summary.txt"
pass

# --- neardup_match_distance counts every duplicate, those the sketch stage
# found through a shared band (more than k bits away, in +Inf) too.
port=$(free_port)
"$NEARDUP" demo --feed "$feed" --duration 8 --rate 97 --metrics-listen "127.0.0.1:$port" \
  >"$work/metrics.out" 2>"$work/run.err" &
demo_pid=$!
pids+=($demo_pid)
all_judged() {
  curl -s --max-time 2 "http://127.0.0.1:$port/metrics" >"$work/metrics.txt" &&
    grep -q '^neardup_messages_total{verdict="duplicate"} 97$' "$work/metrics.txt"
}
wait_for 30 all_judged || fail "the demo's /metrics never counted 97 duplicates"
count=$(sed -n 's/^neardup_match_distance_count //p' "$work/metrics.txt")
[ "$count" = 97 ] || fail "neardup_match_distance_count is $count, for 97 duplicates"
grep -q '^neardup_match_distance_bucket{le="+Inf"} 97$' "$work/metrics.txt" ||
  fail "neardup_match_distance: $(grep '^neardup_match_distance_bucket' "$work/metrics.txt")"
wait "$demo_pid" || fail "the demo with metrics exited $?"
pass

# --- no raw librdkafka lines, in either stream of either run.
if grep -Eq "$raw_rdkafka" "$work"/summary*.out "$work"/run*.err; then
  fail "raw librdkafka log lines: $(grep -Eh "$raw_rdkafka" "$work"/summary*.out "$work"/run*.err | head -3)"
fi
pass

# --- Ctrl-C in the middle of the feed (default rate: 5/s for 60 s).
port=$(free_port)
"$NEARDUP" demo --feed "$feed" --metrics-listen "127.0.0.1:$port" >"$work/int.out" 2>"$work/run.err" &
demo_pid=$!
pids+=($demo_pid)
judged_some() {
  local n
  n=$(curl -s --max-time 2 "http://127.0.0.1:$port/api/summary" \
      | python3 -c 'import json,sys; print(json.load(sys.stdin)["counts"]["in"])' 2>/dev/null) || return 1
  [ "${n:-0}" -ge 10 ]
}
wait_for 30 judged_some || fail "the demo judged fewer than 10 records in 30 s"
start=$(date +%s%N)
kill -INT "$demo_pid"
exited=0
for _ in $(seq 1 50); do  # 5 s at most, in 0.1 s steps
  if ! kill -0 "$demo_pid" 2>/dev/null; then exited=1; break; fi
  sleep 0.1
done
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
[ "$exited" -eq 1 ] || fail "the demo still runs 5 s after SIGINT"
status=0
wait "$demo_pid" || status=$?
echo "demo_test: exited ${elapsed_ms} ms after SIGINT, status $status"
[ "$status" -eq 0 ] || fail "the demo exited $status after SIGINT"
[ "$elapsed_ms" -le 2000 ] || fail "the demo took ${elapsed_ms} ms to exit after SIGINT (limit 2000)"
grep -q '^neardup demo summary (action drop, 291 records at 5/s)$' "$work/int.out" \
  || fail "no summary after SIGINT: $(cat "$work/int.out")"
grep -q '^  stopped early: [0-9]* of 291 records fed' "$work/int.out" \
  || fail "the summary after SIGINT does not say it stopped early"
grep -Eq "$raw_rdkafka" "$work/int.out" "$work/run.err" && fail "raw librdkafka log lines after SIGINT"
pass

# --- the demo's install step fetches no accuracy corpora: deploy/demo.sh runs
# install-deps.sh --demo, which never calls npm (a stub records any call) and
# installs nothing for the tests (a stub apt-get refuses; when this machine
# lacks a build package, that part is skipped rather than installed).
grep -q '^bash deploy/install-deps.sh --demo' "$root/deploy/demo.sh" \
  || fail "deploy/demo.sh does not run install-deps.sh --demo"
mkdir -p "$work/stub"
printf '#!/bin/sh\necho "npm $*" >>"%s/npm.calls"\n' "$work" >"$work/stub/npm"
printf '#!/bin/sh\necho "apt-get $*" >>"%s/apt.calls"; exit 1\n' "$work" >"$work/stub/apt-get"
chmod +x "$work/stub/npm" "$work/stub/apt-get"
deps_status=0
PATH="$work/stub:$PATH" bash "$root/deploy/install-deps.sh" --demo >"$work/deps.out" 2>&1 || deps_status=$?
[ ! -e "$work/npm.calls" ] || fail "install-deps.sh --demo ran npm: $(cat "$work/npm.calls")"
grep -q 'corpus' "$work/deps.out" && fail "install-deps.sh --demo mentions the corpora: $(cat "$work/deps.out")"
if [ -e "$work/apt.calls" ]; then
  echo "$name: (this machine lacks a build package; install-deps.sh --demo's exit not checked)"
else
  [ "$deps_status" -eq 0 ] && grep -q 'install-deps: ok (demo' "$work/deps.out" \
    || fail "install-deps.sh --demo: status $deps_status, $(cat "$work/deps.out")"
fi
pass

echo "$name: $passed checks passed"
