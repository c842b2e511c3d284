#!/usr/bin/env bash
# cluster: story summaries (kafka.summary_topic). Ten stories get 0..9 edited
# reposts each, then 300 other texts push their originals out of a window of
# 50 entries: the summary topic must hold exactly one final summary for each
# story with reposts, counting exactly 1..9 (none for the story without), each
# with first_seen <= last_seen, its samples among the story's reposts, and no
# interim summary counting more than its final one, and at least one interim
# summary each (window.summary_interval: 1s, and a pause of 1.5 s with the
# stories in the window). Run twice: one instance
# deciding locally (at-least-once), then two instances with the group judge
# and exactly-once (read_committed). The first run also reads the story-size
# histogram from /metrics. Each run also reads the pages' biggest stories of
# the last hour (/api/summary): every story with its exact count.
# Brokers: topic creation and deletion, transactions, group.min.session.timeout.ms at
# most 6000.
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_story_summaries_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
for tool in kcat python3 curl; do
  command -v "$tool" >/dev/null || { echo "$name: $tool is not installed (deploy/install-deps.sh)"; exit 1; }
done
cluster_start

helper="${NEARDUP_SOURCE_DIR}/tests/cluster/story_summaries.py"
python3 "$helper" feed "$work"
cat "$work/reposts-a.txt" "$work/reposts-b.txt" >>"$work/stories.txt"
# The feed does what it says: scan finds each repost a duplicate of its story, and nothing else.
"$NEARDUP" scan "$work/all.jsonl" >"$work/scan.jsonl"
dups=$(python3 "$helper" scan "$work/scan.jsonl")
[ "$dups" = 45/45 ] && pass || fail "scan finds $dups reposts of their own story (want 45/45)"

# check_summaries RUN: the summary topic against the stories (python prints what is wrong).
check_summaries() {
  local run=$1
  kcat -b "$brokers" -C -t "$(topic summaries)" -e -q -X isolation.level=read_committed \
    -f '%k\t%s\n' 2>/dev/null >"$work/summaries-$run.tsv" || true
  kcat -b "$brokers" -C -t "$(topic input)" -e -q -f '%t/%p/%o\t%k\n' 2>/dev/null >"$work/input-$run.tsv" || true
  python3 "$helper" check "$work/summaries-$run.tsv" "$work/input-$run.tsv" "$run"
}

# run_case RUN FIRST LAST: instances FIRST..LAST (run<N>.err) get the stories,
# their outputs are awaited, then the other texts.
run_case() {
  local run=$1 i
  for i in $(seq "$2" "$3"); do
    NEARDUP_KAFKA_TRANSACTIONAL_ID="${prefix}tx$i" start_instance "$i"
  done
  kcat -b "$brokers" -P -t "$(topic input)" -p 0 -K '|' -l "$work/stories.txt" || fail "kcat could not produce"
  out_count() { read_committed "$(topic output)" | grep -c . || true; }
  stories_out() { [ "$(out_count)" -ge 10 ]; }  # the originals (the reposts are dropped)
  wait_for 120 stories_out || fail "$run: $(out_count) of 10 originals on the output: $(tail -3 "$work/run$2.err")"
  # 20 other texts after the interval (the stories stay in the window: an
  # interim summary each), then the rest (they push the stories out: finals).
  sleep 1.5
  head -20 "$work/others.txt" | kcat -b "$brokers" -P -t "$(topic input)" -p 0 -K '|' || fail "kcat could not produce"
  first_out() { [ "$(out_count)" -ge 30 ]; }
  wait_for 60 first_out || fail "$run: $(out_count) of 30 records on the output"
  tail -n +21 "$work/others.txt" | kcat -b "$brokers" -P -t "$(topic input)" -p 0 -K '|' || fail "kcat could not produce"
  all_out() { [ "$(out_count)" -ge 310 ]; }
  wait_for 180 all_out || fail "$run: $(out_count) of 310 records on the output"
  finals_in() { [ "$(check_summaries "$run" | awk '{ print $(NF-1) }')" -ge 9 ]; }
  wait_for 60 finals_in || true
  result=$(check_summaries "$run")
  [ "${result%% *}" = ok ] && pass || fail_later "$run: $result"
  interim=$(echo "$result" | awk '{ print $NF }')
  [ "$interim" -ge 9 ] && pass || fail_later "$run: $interim interim summaries (want one per story at least)"
  echo "$name: $run: $result (final, interim summaries)"
  # The pages' biggest stories of the last hour: each repost counted once, by the
  # instance that routed it, whoever wrote the summaries.
  local pages=()
  for i in $(seq "$2" "$3"); do
    curl -s --max-time 5 "http://$(metrics_address "$work/run$i.err")/api/summary" >"$work/page-$run-$i.json" ||
      fail_later "$run: no /api/summary from instance $i"
    pages+=("$work/page-$run-$i.json")
  done
  page=$(python3 "$helper" page "$work/input-$run.tsv" "${pages[@]}")
  [ "$page" = "s9:9/ok s8:8/ok s7:7/ok s6:6/ok s5:5/ok s4:4/ok s3:3/ok s2:2/ok s1:1/ok" ] && pass ||
    fail_later "$run: the pages' stories of the hour are $page"
}

# One instance deciding locally, at-least-once, 1 s interim summaries.
config="$work/config.yaml"
cluster_config "$config" '  judge_topic: ""' "  summary_topic: $(topic summaries)" \
  '  consumer: {session.timeout.ms: "6000"}'
printf '%s\n' 'window: {max_entries: 50, summary_interval: 1s}' 'metrics: {listen: "127.0.0.1:0"}' >>"$config"
cluster_topics "$config" 1
run_case local 1 1
address=$(metrics_address "$work/run1.err")
count=$(sample "$address" neardup_story_duplicates_count)
sum=$(sample "$address" neardup_story_duplicates_sum)
[ "$count" = 9 ] && [ "$sum" = 45 ] && pass ||
  fail_later "neardup_story_duplicates: count $count, sum $sum (want 9 stories, 45 duplicates)"
kill -TERM "${run_pids[1]}" 2>/dev/null || true
wait "${run_pids[1]}" 2>/dev/null || true

# Two instances with the group judge, exactly-once, on fresh topics and group.
prefix="${prefix}j-"
group="${prefix}g"
config="$work/config-judge.yaml"
cluster_config "$config" "  summary_topic: $(topic summaries)" '  delivery: exactly-once' \
  '  consumer: {session.timeout.ms: "6000"}'
printf '%s\n' 'window: {max_entries: 50, summary_interval: 1s}' 'metrics: {listen: "127.0.0.1:0"}' >>"$config"
cluster_topics "$config" 1
run_case judge 2 3
finish
