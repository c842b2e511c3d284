#!/usr/bin/env bash
# e2e: a Kafka outage while `neardup run` works. `neardup broker --port N` is
# killed, stays away for 10 s and starts again (empty) on the same port; the
# service must keep running, say so once each way in its own JSON log lines,
# show the outage on /metrics and /readyz, and process messages again after.
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=broker_outage_test
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require kcat curl python3

port=$(free_port)
brokers="127.0.0.1:$port"
start_broker() {
  rm -f "$work/bootstrap"
  "$NEARDUP" broker --port "$port" --partitions 1 --bootstrap-file "$work/bootstrap" >>"$work/broker.out" 2>>"$work/broker.err" &
  broker_pid=$!
  pids+=($broker_pid)
  wait_for 20 test -s "$work/bootstrap" || fail "broker did not start on $brokers"
  [ "$(cat "$work/bootstrap")" = "$brokers" ] || fail "broker bootstrap is $(cat "$work/bootstrap"), not $brokers"
}
start_broker

cat >"$work/config.yaml" <<YAML
action: tag
log: {format: json}
metrics: {listen: "127.0.0.1:0"}
YAML
"$NEARDUP" run --config "$work/config.yaml" --brokers "$brokers" >"$work/run.out" 2>"$work/run.err" &
run_pid=$!
pids+=($run_pid)
metrics_address() { sed -n 's|.*"metrics at http://\([^/]*\)/metrics".*|\1|p' "$work/run.err" | head -1; }
knows_metrics() { [ -n "$(metrics_address)" ]; }
wait_for 20 knows_metrics || fail "the run log does not say where the metrics are"
metrics=$(metrics_address)
status_of() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$metrics$1" || true; }
sample() { curl -s --max-time 5 "http://$metrics/metrics" | awk -v name="$1" '$1 == name { print $2 }'; }
is_ready() { [ "$(status_of /readyz)" = 200 ]; }
wait_for 60 is_ready || fail "/readyz never became 200 before the outage"

count() { kcat -b "$brokers" -C -t "$1" -e -q -f '%k\n' 2>/dev/null | grep -c . || true; }
at_least() { [ "$(count "$1")" -ge "$2" ]; }
printf '%s\n' 'b1|Storm closes the harbour bridge as rivers rise across the county tonight' \
  'b2|Council approves the new school budget after a long debate on housing' \
  'b3|STORM closes the harbour bridge, as rivers rise across the county tonight!' |
  kcat -b "$brokers" -P -t input -K '|' || fail "kcat could not produce before the outage"
wait_for 60 at_least output 3 || fail "expected 3 records on output before the outage, got $(count output)"
[ "$(sample neardup_kafka_brokers_up)" = 1 ] || fail "neardup_kafka_brokers_up is not 1 before the outage"
pass

# The outage: the broker dies (no goodbye) and stays away for 10 s.
kill -KILL "$broker_pid"
wait "$broker_pid" 2>/dev/null || true
outage_started=$SECONDS
said_unreachable() { grep -q '"msg":"Kafka brokers unreachable' "$work/run.err"; }
wait_for 15 said_unreachable || fail "neardup did not log the outage"
pass
metric_down() { [ "$(sample neardup_kafka_brokers_up)" = 0 ]; }
wait_for 5 metric_down || fail "neardup_kafka_brokers_up did not drop to 0 during the outage"
[ "$(sample neardup_kafka_broker_outages_total)" = 1 ] || fail "neardup_kafka_broker_outages_total is not 1"
[ "$(status_of /readyz)" = 503 ] || fail "/readyz is not 503 during the outage"
curl -s --max-time 5 "http://$metrics/readyz" | grep -q "Kafka brokers unreachable.*$brokers" ||
  fail "/readyz does not say that $brokers is unreachable: $(curl -s --max-time 5 "http://$metrics/readyz")"
[ "$(status_of /healthz)" = 200 ] || fail "/healthz is not 200 during the outage (a restart cannot help)"
pass
while [ $((SECONDS - outage_started)) -lt 10 ]; do sleep 0.5; done
kill -0 "$run_pid" 2>/dev/null || fail "neardup run exited during the outage"

# The broker returns, empty, on the same port: topics are recreated, offsets start at 0.
start_broker
said_reachable() { grep -q '"msg":"Kafka brokers reachable again' "$work/run.err"; }
wait_for 30 said_reachable || fail "neardup did not log the brokers' return"
wait_for 10 is_ready || fail "/readyz did not return to 200 after the outage"
[ "$(sample neardup_kafka_brokers_up)" = 1 ] || fail "neardup_kafka_brokers_up is not 1 after the outage"
pass
printf '%s\n' 'c1|Museum reopens its science wing after a year of careful restoration' \
  'c2|museum reopens its science wing after a year of careful restoration.' \
  'c3|Railway strike halts trains into the city for a second day running' |
  kcat -b "$brokers" -P -t input -K '|' || fail "kcat could not produce after the outage"
wait_for 60 at_least output 3 || fail "expected 3 records on output after the outage, got $(count output)"
kcat -b "$brokers" -C -t output -e -q -f '%k|%h\n' 2>/dev/null | grep -q '^c2|.*neardup-verdict=duplicate' ||
  fail "c2 was not judged a duplicate of c1 after the outage"
kill -0 "$run_pid" 2>/dev/null || fail "neardup run is not running after the outage"
pass

# The log: every line JSON; neardup's own lines (no librdkafka facility) tell
# the outage once, naming the broker, and the return once.
python3 - "$work/run.err" "$brokers" <<'PY' || fail "the run log does not tell the outage as expected"
import json, sys
path, broker = sys.argv[1], sys.argv[2]
lines = [json.loads(line) for line in open(path, encoding="utf-8")]  # raises on any non-JSON line
ours = [line for line in lines if "facility" not in line]
down = [line for line in ours if "unreachable" in line["msg"] and broker in line["msg"]]
up = [line for line in ours if "reachable again" in line["msg"]]
theirs = [line for line in lines if "facility" in line]
assert len(down) == 1, f"{len(down)} neardup lines name {broker} unreachable: {down}"
assert len(up) == 1, f"{len(up)} neardup lines tell the brokers' return: {up}"
assert all("client" in line and "level" in line for line in theirs), "a librdkafka line lacks client or level"
print(f"log: {len(lines)} JSON lines, {len(theirs)} from librdkafka; {down[0]['msg']!r}; {up[0]['msg']!r}")
PY
pass

# SIGTERM: still a graceful stop.
stop_gracefully "$run_pid"
pass
echo "broker_outage_test: $passed passed, 0 failed"
