#!/usr/bin/env bash
# cluster: story counts survive a kill -9 of the group judge, exactly. Two
# instances with the group judge and exactly-once; ten stories, the first
# half of their 0..9 reposts, then (once an interim summary counts them and
# a marker message behind them is committed on the output, so no instance
# reads them again) the judging instance is killed with SIGKILL; the
# survivor takes the judging over, goes on from the summary topic (its log
# says 9 open stories), gets the other half of the reposts and then 300
# other texts through a window of 50 entries. The topics have two partitions,
# one per instance, and every message goes to the
# one the survivor reads, and a session timeout of 20 s keeps the
# judging away for longer than an instance waits before it sends a request
# again (15 s): the survivor's requests for the second half reach the new
# judge twice (neardup_judge_resends_total counts them). The
# summary topic (read_committed) must hold exactly one final summary per
# story with reposts, counting exactly 1..9, none twice.
# Brokers: topic creation and deletion, transactions, group.min.session.timeout.ms at
# most 6000 and group.max.session.timeout.ms at least 20000 (Kafka's default: 30 min).
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_story_failover_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
for tool in kcat python3; do
  command -v "$tool" >/dev/null || { echo "$name: $tool is not installed (deploy/install-deps.sh)"; exit 1; }
done
cluster_start
helper="${NEARDUP_SOURCE_DIR}/tests/cluster/story_summaries.py"
python3 "$helper" feed "$work"

config="$work/config.yaml"
cluster_config "$config" "  summary_topic: $(topic summaries)" '  delivery: exactly-once' \
  '  consumer: {session.timeout.ms: "20000"}'
printf '%s\n' 'window: {max_entries: 50, summary_interval: 1s}' 'metrics: {listen: "127.0.0.1:0"}' >>"$config"
cluster_topics "$config" 2
summaries() {
  kcat -b "$brokers" -C -t "$(topic summaries)" -e -q -X isolation.level=read_committed \
    -f '%k\t%s\n' 2>/dev/null >"$work/summaries.tsv" || true
}
counted() { summaries; python3 "$helper" latest "$work/summaries.tsv"; }
send() { kcat -b "$brokers" -P -t "$(topic input)" -p "$part" -K '|' -l "$work/$1.txt" || fail "kcat could not produce $1"; }
# owned N: the input partitions instance N reads (its consumer lag series).
owned() {
  curl -s --max-time 5 "http://$(metrics_address "$work/run$1.err")/metrics" |
    grep -o '^neardup_consumer_lag{[^}]*partition="[0-9]*"' | grep -o '[0-9]*"$' | tr -d '"' | sort -n | tr '\n' ' ' || true
}

for i in 1 2; do NEARDUP_KAFKA_TRANSACTIONAL_ID="${prefix}tx$i" start_instance "$i"; done
judge_known() { [ -n "$(current_judge 1 2)" ]; }
wait_for 60 judge_known || fail "no instance judges: $(tail -3 "$work/run1.err")"
split() { [ "$(owned 1 | wc -w)" = 1 ] && [ "$(owned 2 | wc -w)" = 1 ]; }
wait_for 60 split || fail "the instances read partitions '$(owned 1)' and '$(owned 2)', want one each"
judge=$(current_judge 1 2)
survivor=$((3 - judge))
# Everything goes to a partition the survivor reads: its requests for the
# second half wait through the takeover and are sent again.
part=$(owned "$survivor" | awk '{ print $1 }')
send stories
send reposts-a
first_half=$(grep -c . "$work/reposts-a.txt")
counts_first() { [ "$(counted)" = "$first_half" ]; }
wait_for 120 counts_first || fail "the interim summaries count $(counted) reposts, want $first_half"
# A marker behind the first half: once its output is committed, so are the
# input offsets before it (one transaction), and no instance reads them again.
echo 'm0|qzvkep wolbra tuncix mefrag olpuds vyrket sanobi kreplu dimoza htarve plusko gnovri zetlam bufeci ornalt kiswed jopuma ruvelt caxino femdal' >"$work/marker.txt"
send marker
out_count() { kcat -b "$brokers" -C -t "$(topic output)" -e -q -X isolation.level=read_committed -f '%k\n' 2>/dev/null | grep -c . || true; }
marker_out() { [ "$(out_count)" -ge 11 ]; }  # the ten originals and the marker
wait_for 60 marker_out || fail "$(out_count) of 11 records on the output"
[ "$(current_judge 1 2)" = "$judge" ] || fail "the judging moved to instance $(current_judge 1 2) before the kill"
kill -KILL "${run_pids[$judge]}"
wait "${run_pids[$judge]}" 2>/dev/null || true
send reposts-b
took_over() { [ "$(current_judge "$survivor")" = "$survivor" ]; }
wait_for 90 took_over || fail "instance $survivor did not take the judging over: $(tail -3 "$work/run$survivor.err")"
goes_on=$(grep -o 'story summaries: [0-9]* open stories go on' "$work/run$survivor.err" | tail -1 | grep -o '[0-9]*' || true)
[ "$goes_on" = 9 ] && pass || fail_later "the new judge went on with '$goes_on' open stories, want 9"
counts_all() { [ "$(counted)" = 45 ]; }
wait_for 120 counts_all || fail "the interim summaries count $(counted) reposts after the takeover, want 45"
send others
kcat -b "$brokers" -C -t "$(topic input)" -e -q -f '%t/%p/%o\t%k\n' 2>/dev/null >"$work/input.tsv" || true
finals() { summaries; [ "$(python3 "$helper" check "$work/summaries.tsv" "$work/input.tsv" judge | awk '{ print $(NF-1) }')" -ge 9 ]; }
wait_for 120 finals || true
kcat -b "$brokers" -C -t "$(topic input)" -e -q -f '%t/%p/%o\t%k\n' 2>/dev/null >"$work/input.tsv" || true
summaries
result=$(python3 "$helper" check "$work/summaries.tsv" "$work/input.tsv" judge)
cp "$work/run$survivor.err" "$work/run.err"
[ "${result%% *}" = ok ] && pass || fail_later "$result"
resends=$(sample "$(metrics_address "$work/run$survivor.err")" neardup_judge_resends_total)
[ "${resends:-0}" -ge 1 ] && pass || fail_later "the survivor sent no request again (neardup_judge_resends_total '${resends}')"
echo "$name: $result (final, interim summaries); the survivor sent $resends request(s) again"
finish
