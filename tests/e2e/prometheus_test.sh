#!/usr/bin/env bash
# neardup run on its embedded broker, scraped by a real Prometheus server (Debian
# package `prometheus`) on loopback every second. Feeds known messages with kcat
# and asserts, through Prometheus's HTTP API, that the counts by verdict equal
# what was fed; checks /healthz and /readyz (503 before partitions are assigned,
# 200 after) and a clean shutdown on SIGTERM. Every wait is bounded.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
for tool in kcat prometheus curl python3; do
  if ! command -v "$tool" >/dev/null; then echo "prometheus_test: skip: $tool not installed"; exit 0; fi
done

tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
die() {
  echo "prometheus_test: FAIL: $*"
  echo "--- neardup log"; tail -n 30 "$tmp/neardup.log" 2>/dev/null || true
  echo "--- prometheus log"; tail -n 10 "$tmp/prometheus.log" 2>/dev/null || true
  exit 1
}
# wait_for SECONDS DESCRIPTION COMMAND...: runs COMMAND (re-evaluated each time: pass a
# function, not a "$(...)" expansion) every 0.1 s until it succeeds, at most SECONDS.
wait_for() {
  local limit=$1 what=$2; shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || die "timed out after ${limit}s waiting for $what"
    sleep 0.1
  done
}
status_of() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$1" || true; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# --- known input: unique texts (random words, fingerprints ~32 bits apart),
# exact copies of some of them, and messages larger than input.max_bytes.
n_unique=120 n_duplicate=30 n_invalid=4
python3 - "$tmp/feed.txt" "$n_unique" "$n_duplicate" "$n_invalid" <<'PY'
import random, sys
path, n_unique, n_dup, n_invalid = sys.argv[1], *map(int, sys.argv[2:])
rng = random.Random(4)
vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(5000)]
texts = [" ".join(rng.choice(vocab) for _ in range(40)) for _ in range(n_unique)]
lines = texts + texts[:n_dup] + ["x" * 3000 for _ in range(n_invalid)]
open(path, "w").write("\n".join(lines) + "\n")
PY

cat > "$tmp/neardup.yaml" <<'EOF'
kafka:
  embedded_partitions: 2
input:
  format: text
  max_bytes: 2KiB
action: drop
metrics:
  listen: "127.0.0.1:0"
log:
  format: text
  level: info
EOF

# --- neardup
"$NEARDUP" run --config "$tmp/neardup.yaml" --bootstrap-file "$tmp/bootstrap" 2> "$tmp/neardup.log" &
neardup_pid=$!
pids+=("$neardup_pid")
metrics_address() { grep -o 'metrics at http://[^/ ]*' "$tmp/neardup.log" | head -n 1 | sed 's#metrics at http://##'; }
has_metrics_address() { [ -n "$(metrics_address)" ]; }
wait_for 30 "neardup to log its metrics address" has_metrics_address
addr=$(metrics_address)

# /readyz must say 503 before the consumer group assigns partitions, then 200.
first_ready=$(status_of "$addr/readyz")
[ "$first_ready" = 503 ] || die "/readyz before assignment: expected 503, got '$first_ready'"
[ "$(status_of "$addr/healthz")" = 200 ] || die "/healthz while starting: expected 200"
is_ready() { [ "$(status_of "$addr/readyz")" = 200 ]; }
wait_for 60 "/readyz to turn 200 (partitions assigned)" is_ready
[ "$(status_of "$addr/healthz")" = 200 ] || die "/healthz when ready: expected 200"
echo "ok    /healthz 200; /readyz 503 -> 200 after assignment"

# `promtool check metrics` on a live scrape reports nothing.
if command -v promtool >/dev/null; then
  lint=$(curl -s --max-time 5 "http://$addr/metrics" | promtool check metrics 2>&1) || die "promtool check metrics: $lint"
  [ -z "$lint" ] || die "promtool check metrics reported: $lint"
  echo "ok    promtool check metrics on the live /metrics: nothing to report"
fi

# --- Prometheus scraping neardup every second
prom_port=$(free_port)
cat > "$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: neardup
    static_configs:
      - targets: ["$addr"]
EOF
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/prometheus-data" \
  --web.listen-address="127.0.0.1:$prom_port" > "$tmp/prometheus.log" 2>&1 &
pids+=($!)
prom="http://127.0.0.1:$prom_port"
wait_for 60 "Prometheus to be ready" curl -sf --max-time 2 "$prom/-/ready"

# query PROMQL -> one value per line, "label_value value", sorted.
query() {
  curl -s --max-time 5 --get "$prom/api/v1/query" --data-urlencode "query=$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["status"] == "success", r
for s in sorted(r["data"]["result"], key=lambda s: sorted(s["metric"].items())):
    print(",".join(v for k, v in sorted(s["metric"].items())) or "-", s["value"][1])'
}
is_up() { [ "$(query 'up{job="neardup"}' | cut -d' ' -f2)" = 1 ]; }
wait_for 30 "Prometheus to scrape neardup (up == 1)" is_up

# --- feed and compare
wait_for 10 "the embedded broker's bootstrap file" test -s "$tmp/bootstrap"
kcat -b "$(cat "$tmp/bootstrap")" -t input -P -l "$tmp/feed.txt" || die "kcat could not produce the feed"

expected="duplicate $n_duplicate
invalid $n_invalid
unique $n_unique"
by_verdict() { query 'sum by (verdict) (neardup_messages_total{job="neardup"})'; }
if ! wait_for_counts=$(
  deadline=$((SECONDS + 60))
  until [ "$(by_verdict)" = "$expected" ]; do
    [ "$SECONDS" -lt "$deadline" ] || { by_verdict; exit 1; }
    sleep 0.5
  done
); then
  die "Prometheus counts by verdict never reached the fed counts; expected:
$expected
last seen:
$wait_for_counts"
fi
echo "ok    Prometheus: neardup_messages_total by verdict = fed counts ($n_unique unique, $n_duplicate duplicate, $n_invalid invalid)"

# Other series arrived through Prometheus too, with values implied by the feed.
# Dead letters are counted when the broker acknowledges them, which may be a
# scrape after the verdict counts: poll until every series agrees.
series_agree() {
  [ "$(query 'sum(neardup_dead_letters_total{job="neardup"})' | cut -d' ' -f2)" = "$n_invalid" ] &&
  [ "$(query 'sum(neardup_match_distance_count{job="neardup"})' | cut -d' ' -f2)" = "$n_duplicate" ] &&
  [ "$(query 'sum(neardup_match_distance_bucket{job="neardup",le="0"})' | cut -d' ' -f2)" = "$n_duplicate" ] &&
  [ "$(query 'sum(neardup_window_entries{job="neardup"})' | cut -d' ' -f2)" = "$n_unique" ] &&
  [ "$(query 'sum(neardup_candidates_per_probe_count{job="neardup"})' | cut -d' ' -f2)" = "$((n_unique + n_duplicate))" ] &&
  [ "$(query 'sum(neardup_ready{job="neardup"})' | cut -d' ' -f2)" = 1 ] &&
  [ "$(query 'count(neardup_build_info{job="neardup",version!=""})' | cut -d' ' -f2)" = 1 ]
}
deadline=$((SECONDS + 30))
until series_agree; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    for q in 'sum(neardup_dead_letters_total{job="neardup"})' 'sum(neardup_match_distance_count{job="neardup"})' \
             'sum(neardup_match_distance_bucket{job="neardup",le="0"})' 'sum(neardup_window_entries{job="neardup"})' \
             'sum(neardup_candidates_per_probe_count{job="neardup"})' \
             'sum(neardup_ready{job="neardup"})' 'count(neardup_build_info{job="neardup",version!=""})'; do
      echo "  $q = $(query "$q")"
    done
    die "series disagree with the feed (expected dead letters $n_invalid, duplicates $n_duplicate, window entries $n_unique, lookups $((n_unique + n_duplicate)))"
  fi
  sleep 0.5
done
echo "ok    Prometheus: dead letters, match distance, window entries, lookups, ready and build_info agree with the feed"

# --- clean shutdown: SIGTERM -> exit 0, endpoint gone.
kill -TERM "$neardup_pid"
deadline=$((SECONDS + 60))
while kill -0 "$neardup_pid" 2>/dev/null; do
  [ "$SECONDS" -lt "$deadline" ] || die "neardup did not stop within 60 s of SIGTERM"
  sleep 0.1
done
set +e
wait "$neardup_pid"
status=$?
set -e
[ "$status" -eq 0 ] || die "neardup exited with status $status after SIGTERM"
[ "$(status_of "$addr/healthz")" = 000 ] || die "/healthz still answers after exit"
echo "ok    SIGTERM: neardup exited 0 and its endpoint is gone"
echo "prometheus_test: all checks passed"
