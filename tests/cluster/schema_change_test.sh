#!/usr/bin/env bash
# cluster: a change of the fingerprint schema is detected and reported. One
# instance keeps a story with dedup.cjk_ngram 2 and stops; restarted with 3,
# it says so in its log (both schema ids, the option that differs), counts
# the old entry in neardup_changelog_foreign_schema_total and does not use it:
# a copy of the story is unique again. `neardup changelog` names both schemas.
# Then a second instance of the group still runs cjk_ngram 2: the judge
# answers its requests invalid and they go to the dead letters, with the reason.
# Brokers: topic creation and deletion.
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_schema_change_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
require kcat curl

cluster_start
# config_with N FILE: the group's configuration with dedup.cjk_ngram N.
config_with() {
  cluster_config "$2"
  printf '%s\n' 'action: tag' 'metrics: {listen: "127.0.0.1:0"}' "dedup: {cjk_ngram: $1}" >>"$2"
}
config_with 2 "$work/ngram2.yaml"
config_with 3 "$work/ngram3.yaml"
cluster_topics "$work/ngram2.yaml" 2
story="Storm closes the harbour bridge as rivers rise across the county tonight"
outputs() { read_committed "$(topic output)" | grep -c . || true; }

# run N CONFIG: instance N (its log run<N>.err) with CONFIG.
run() {
  "$NEARDUP" run --config "$2" --brokers "$brokers" >"$work/run$1.out" 2>"$work/run$1.err" &
  run_pid[$1]=$!
  pids+=($!)
}

run 1 "$work/ngram2.yaml"
echo "s1|$story" | kcat -b "$brokers" -P -t "$(topic input)" -p 0 -K '|' || fail "kcat could not produce"
one_out() { [ "$(outputs)" -ge 1 ]; }
wait_for 60 one_out || { cp "$work/run1.err" "$work/run.err"; fail "s1 did not come out"; }
stop_gracefully "${run_pid[1]}"
pass

run 1 "$work/ngram3.yaml"
addr=""
ready() {
  addr=$(metrics_address "$work/run1.err")
  [ -n "$addr" ] && [ "$(http_status "$addr" /readyz)" = 200 ]
}
wait_for 60 ready || { cp "$work/run1.err" "$work/run.err"; fail "the restarted instance never became ready"; }
cp "$work/run1.err" "$work/run.err"
said() { grep -q 'window changelog: entries of fingerprint schema [0-9a-f]\{8\} are not used: this instance.s schema is [0-9a-f]\{8\} (options differ: cjk_ngram 2 -> 3)' "$work/run1.err"; }
wait_for 30 said || fail "no log line naming both schemas and cjk_ngram 2 -> 3"
[ "$(grep -c 'entries of fingerprint schema' "$work/run1.err")" -eq 1 ] || fail "the schema change was said more than once"
foreign() { [ "$(sample "$addr" neardup_changelog_foreign_schema_total)" = 1 ]; }
wait_for 20 foreign || fail "neardup_changelog_foreign_schema_total is '$(sample "$addr" neardup_changelog_foreign_schema_total)', not 1"
grep 'entries of fingerprint schema' "$work/run1.err" | sed "s/^/$name: /"
pass

# The old entry is not used: a copy of the story is unique under the new schema.
echo "s2|$story" | kcat -b "$brokers" -P -t "$(topic input)" -p 0 -K '|' || fail "kcat could not produce"
two_out() { [ "$(outputs)" -ge 2 ]; }
wait_for 60 two_out || fail "s2 did not come out"
s2=$(read_committed "$(topic output)" | grep '^s2|')
case $s2 in *neardup-verdict=duplicate*) fail "s2 was judged against the entry of the old schema: $s2" ;; esac
# ... and a third copy is a duplicate of the second (the new schema's window works).
echo "s3|$story" | kcat -b "$brokers" -P -t "$(topic input)" -p 0 -K '|' || fail "kcat could not produce"
three_out() { [ "$(outputs)" -ge 3 ]; }
wait_for 60 three_out || fail "s3 did not come out"
read_committed "$(topic output)" | grep -q "^s3|.*neardup-verdict=duplicate.*neardup-of=$(topic input)/0/1," ||
  fail "s3 is not a duplicate of s2: $(read_committed "$(topic output)" | grep '^s3|')"
pass

timeout 60 "$NEARDUP" changelog --config "$work/ngram3.yaml" --brokers "$brokers" --timeout 30 >"$work/changelog.jsonl" 2>"$work/changelog.err" ||
  fail "neardup changelog failed: $(cat "$work/changelog.err")"
[ "$(grep -c 'fingerprint schema [0-9a-f]\{8\} (normalize=1 cjk_ngram=[23] .*): 1 entries' "$work/changelog.err")" -eq 2 ] ||
  fail "neardup changelog does not name both schemas: $(cat "$work/changelog.err")"
grep -q 'more than one fingerprint schema' "$work/changelog.err" || fail "neardup changelog does not warn of two schemas"
[ "$(grep -c '"schema":"[0-9a-f]\{8\}"' "$work/changelog.jsonl")" -eq 2 ] || fail "changelog entries without their schema: $(cat "$work/changelog.jsonl")"
pass

# A second instance with the old options joins the group: whichever instance
# does not judge has its message refused by the judge, into the dead letters.
run 2 "$work/ngram2.yaml"
split() { [ "$(last_assigned 1)" = 1 ] && [ "$(last_assigned 2)" = 1 ]; }
wait_for 90 split || { cp "$work/run2.err" "$work/run.err"; fail "the two instances did not split the 2 partitions"; }
has_judge() { [ -n "$(current_judge 1 2)" ]; }
wait_for 60 has_judge || fail "no instance judges"
judge=$(current_judge 1 2)
printf '%s\n' "x0|Council approves the new school budget after a long debate on housing" |
  kcat -b "$brokers" -P -t "$(topic input)" -p 0 -K '|' || fail "kcat could not produce"
printf '%s\n' "x1|Museum reopens its science wing after a year of careful restoration" |
  kcat -b "$brokers" -P -t "$(topic input)" -p 1 -K '|' || fail "kcat could not produce"
dead() { read_committed "$(topic dead-letters)" | grep -c '^x' || true; }
one_dead() { [ "$(dead)" -ge 1 ]; }
wait_for 60 one_dead || { cp "$work/run$judge.err" "$work/run.err"; fail "no message of the other schema was dead-lettered"; }
five_out() { [ "$(outputs)" -ge 4 ]; }
wait_for 60 five_out || fail "the judge's own instance's message did not come out"
sleep 2
[ "$(dead)" -eq 1 ] || fail "$(dead) dead letters, not 1"
read_committed "$(topic dead-letters)" | grep -q '^x.*neardup-error=the group judge runs another fingerprint schema' ||
  fail "the dead letter does not say why: $(read_committed "$(topic dead-letters)")"
cp "$work/run$judge.err" "$work/run.err"
grep -q "judge: instance [0-9a-f]\{16\} sends fingerprint schema [0-9a-f]\{8\}, this judge's is [0-9a-f]\{8\} (options differ: cjk_ngram" "$work/run$judge.err" ||
  fail "the judge does not say which schemas differ"
judge_addr=$(metrics_address "$work/run$judge.err")
[ "$(sample "$judge_addr" neardup_judge_foreign_schema_total)" = 1 ] ||
  fail "neardup_judge_foreign_schema_total is '$(sample "$judge_addr" neardup_judge_foreign_schema_total)', not 1"
grep 'sends fingerprint schema' "$work/run$judge.err" | sed "s/^/$name: /"
pass
stop_gracefully "${run_pid[1]}"
stop_gracefully "${run_pid[2]}"
echo "$name: $passed passed, 0 failed"
