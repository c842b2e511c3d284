#!/usr/bin/env bash
# cluster: instances joining a group leave the judging where it is. Instance 1
# starts alone and becomes the judge (one takeover, one rebuild of the
# window); instances 2 and 3 join one after the other. The judge's partition
# must not move or be taken away and given back: instance 1 logs exactly one
# "now judges" and no "no longer judging" line, 2 and 3 neither, and
# instance 1's neardup_judge_takeovers_total stays 1. Then pairs sent across
# the three instances are decided: every message comes out, every pair one
# way. With librdkafka's default (eager) assignors each join took the judge
# topic's partition away and gave it to the member that sorted first, with a
# hand-over and a rebuild each time.
# Brokers: topic creation and deletion, group.min.session.timeout.ms at most 6000.
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_judge_join_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
require kcat curl python3
cluster_start

config="$work/config.yaml"
cluster_config "$config" '  consumer: {session.timeout.ms: "6000"}'
printf '%s\n' 'action: tag' 'metrics: {listen: "127.0.0.1:0"}' >>"$config"
cluster_topics "$config" 4
out=$(topic output)

takeovers() { grep -c 'judge: this instance now judges' "$work/run$1.err" || true; }
handovers() { grep -c 'judge: no longer judging' "$work/run$1.err" || true; }
ready_instance() {
  local addr
  addr=$(metrics_address "$work/run$1.err")
  [ -n "$addr" ] && [ "$(http_status "$addr" /readyz)" = 200 ]
}

start_instance 1
judging() { [ "$(current_judge 1)" = 1 ]; }
wait_for 60 judging || { cp "$work/run1.err" "$work/run.err"; fail "instance 1 never became the judge"; }
wait_for 60 ready_instance 1 || { cp "$work/run1.err" "$work/run.err"; fail "instance 1 never became ready"; }
pass

# Two more join, one after the other; each waits for its share of the input.
start_instance 2
shared2() { [ "$(last_assigned 1)" = 2 ] && [ "$(last_assigned 2)" = 2 ]; }
wait_for 60 shared2 || { cp "$work/run2.err" "$work/run.err"; fail "instances 1 and 2 did not share the 4 partitions ($(last_assigned 1), $(last_assigned 2))"; }
start_instance 3
shared3() {
  [ "$(($(last_assigned 1) + $(last_assigned 2) + $(last_assigned 3)))" = 4 ] && [ "$(last_assigned 3)" -ge 1 ]
}
wait_for 60 shared3 || { cp "$work/run3.err" "$work/run.err"; fail "instance 3 got no input partition"; }
for i in 2 3; do
  wait_for 60 ready_instance "$i" || { cp "$work/run$i.err" "$work/run.err"; fail "instance $i never became ready"; }
done
sleep 3  # (a late rebalance of the judge group would show by now)
cp "$work/run1.err" "$work/run.err"
[ "$(takeovers 1)" = 1 ] && [ "$(handovers 1)" = 0 ] ||
  fail "instance 1 took the judging over $(takeovers 1) time(s) and handed it over $(handovers 1) time(s) while 2 and 3 joined (1 and 0 expected)"
for i in 2 3; do
  [ "$(takeovers "$i")" = 0 ] || { cp "$work/run$i.err" "$work/run.err"; fail "instance $i took the judging over"; }
done
addr1=$(metrics_address "$work/run1.err")
[ "$(sample "$addr1" neardup_judge_takeovers_total)" = 1 ] ||
  fail "instance 1's neardup_judge_takeovers_total is '$(sample "$addr1" neardup_judge_takeovers_total)', not 1"
pass

# The three decide together: every pair one way.
pairs 0 60
send
keys() { read_committed "$out" | cut -d'|' -f1 | sort -u | grep -c . || true; }
all_out() { [ "$(keys)" -ge 120 ]; }
wait_for 90 all_out || fail "expected 120 distinct outputs, got $(keys)"
kcat -b "$brokers" -C -t "$out" -e -q -X isolation.level=read_committed -f '%k\t%h\n' >"$work/output.txt" 2>/dev/null || fail "cannot read the output"
python3 - "$work/output.txt" <<'PY' || fail "the pairs are not decided one way each (see above)"
import sys
verdict = {}
for line in open(sys.argv[1]):
    key, _, headers = line.rstrip("\n").partition("\t")
    verdict.setdefault(key, "duplicate" if "neardup-verdict=duplicate" in headers else "unique")
bad = [i for i in range(60)
       if sorted((verdict.get(f"o{i}"), verdict.get(f"c{i}"))) != ["duplicate", "unique"]]
if bad:
    print(f"pairs not decided one way: {bad[:10]}")
    sys.exit(1)
print(f"60 pairs, each one duplicate and one unique")
PY
[ "$(takeovers 1)" = 1 ] || fail "instance 1 took the judging over again while judging the pairs"
pass
echo "$name: $passed passed"
