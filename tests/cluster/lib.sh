# Shared by the cluster scripts (source it after tests/e2e/lib.sh): the broker
# a cluster test runs against, and topic names of its own.
#
#   NEARDUP_TEST_BROKERS=host:port,...  an external cluster (Apache Kafka,
#       Redpanda, ...): the test creates its own uniquely named topics with
#       `neardup topics create` and deletes them on exit; tests that kill
#       brokers skip themselves.
#   otherwise                           three kfake brokers (an independent
#       implementation of the Kafka protocol, ../shared/kfake) on loopback,
#       persisting to a data dir of the test's scratch folder; NEARDUP_KFAKE
#       names the binary. Without it the test is skipped (exit 77).
#   NEARDUP_TEST_CLUSTER=mock            librdkafka's mock cluster (`neardup
#       broker`, one per cluster_topics call) instead, to compare the two;
#       tests that kill brokers skip themselves.
#
# Every name a test uses comes from here: topic NAME gives "<prefix>NAME"
# and the group is "<prefix>g", so runs never see each other's records.
prefix="nd$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')-"
group="${prefix}g"
topic() { echo "${prefix}$1"; }
kfake_pid=""
kfake_ports=""
cluster_configs=()

if [ "${NEARDUP_TEST_CLUSTER:-}" = mock ]; then
  cluster_mode=mock
elif [ -n "${NEARDUP_TEST_BROKERS:-}" ]; then
  cluster_mode=external
elif [ -n "${NEARDUP_KFAKE:-}" ] && [ -x "${NEARDUP_KFAKE}" ]; then
  cluster_mode=kfake
else
  echo "$name: SKIPPED: no kfake broker at '${NEARDUP_KFAKE:-}' (deploy/install-deps.sh builds it from ../shared/kfake when that folder exists) and NEARDUP_TEST_BROKERS is not set"
  exit 77
fi

# On exit (before lib.sh's cleanup removes the scratch folder): every process
# the test started but the brokers stops first (SIGTERM, then SIGKILL 15 s
# later), while its topics still exist; then an external cluster loses the
# topics this test created.
cluster_cleanup() {
  local pid deadline
  for pid in "${pids[@]}"; do
    [ "$pid" = "$kfake_pid" ] && continue
    ours "$pid" && kill -TERM "$pid" 2>/dev/null && kill -CONT "$pid" 2>/dev/null || true
  done
  deadline=$((SECONDS + 15))
  for pid in "${pids[@]}"; do
    [ "$pid" = "$kfake_pid" ] && continue
    while ours "$pid" && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
    ! ours "$pid" || kill -KILL "$pid" 2>/dev/null || true
  done
  if [ "$cluster_mode" = external ]; then
    for c in "${cluster_configs[@]}"; do
      timeout 60 "$NEARDUP" topics delete --config "$c" --brokers "$brokers" --yes >/dev/null 2>&1 || true
    done
  fi
  cleanup
}
trap cluster_cleanup EXIT

# need_kfake WHAT: tests that crash brokers cannot run on an external cluster.
need_kfake() {
  [ "$cluster_mode" = kfake ] && return 0
  echo "$name: SKIPPED: $1 needs the kfake brokers this test starts itself (the brokers are $cluster_mode)"
  exit 77
}

# kfake_start [-c key=value ...]: three brokers on loopback (the same ports and
# data dir again after kfake_kill). Sets $brokers.
kfake_args=()
kfake_start() {
  [ $# -gt 0 ] && kfake_args=("$@")
  local ports=${kfake_ports:-0,0,0}
  rm -f "$work/kfake.addrs"
  mkdir -p "$work/kfake-data"
  "$NEARDUP_KFAKE" -ports "$ports" -data-dir "$work/kfake-data" \
    -c group.min.session.timeout.ms=1000 "${kfake_args[@]}" >"$work/kfake.addrs" 2>>"$work/kfake.err" &
  kfake_pid=$!
  pids+=($kfake_pid)
  three_addresses() { [ -s "$work/kfake.addrs" ] && [ "$(grep -c . "$work/kfake.addrs")" -ge 3 ]; }
  wait_for 30 three_addresses || fail "kfake did not start: $(tail -5 "$work/kfake.err")"
  brokers=$(paste -sd, "$work/kfake.addrs")
  kfake_ports=$(sed 's/.*://' "$work/kfake.addrs" | paste -sd,)
}

# kfake_kill: every broker dies at once (SIGKILL: no goodbye, nothing flushed).
kfake_kill() {
  kill -KILL "$kfake_pid"
  wait "$kfake_pid" 2>/dev/null || true
}

# cluster_start [-c key=value ...]: the brokers of this test (kfake options are
# ignored on an external cluster). Sets $brokers.
cluster_start() {
  if [ "$cluster_mode" = external ]; then
    brokers=$NEARDUP_TEST_BROKERS
  elif [ "$cluster_mode" = mock ]; then
    brokers=""  # (cluster_topics starts it, with the topics)
  else
    kfake_start "$@"
  fi
}

# cluster_topics CONFIG [PARTITIONS]: creates every topic CONFIG names (and
# deletes them on exit on an external cluster).
cluster_topics() {
  if [ "$cluster_mode" = mock ]; then
    rm -f "$work/mock.bootstrap"
    "$NEARDUP" broker --partitions "${2:-4}" --groups "$group" \
      --topics "$(topic input),$(topic output),$(topic duplicates),$(topic dead-letters)" \
      --bootstrap-file "$work/mock.bootstrap" >>"$work/mock.out" 2>>"$work/mock.err" &
    pids+=($!)
    wait_for 20 test -s "$work/mock.bootstrap" || fail "the mock broker did not start"
    brokers=$(cat "$work/mock.bootstrap")
    return 0
  fi
  cluster_configs+=("$1")
  "$NEARDUP" topics create --config "$1" --brokers "$brokers" --partitions "${2:-4}" \
    --timeout 30 >"$work/topics.out" 2>&1 || fail "topics create: $(cat "$work/topics.out")"
}

# cluster_config FILE [YAML...]: a configuration on this test's own topics and
# group; further lines are appended as they are.
cluster_config() {
  local file=$1
  shift
  {
    echo "kafka:"
    echo "  group_id: $group"
    echo "  input_topics: [$(topic input)]"
    echo "  output_topic: $(topic output)"
    echo "  duplicates_topic: $(topic duplicates)"
    echo "  dead_letter_topic: $(topic dead-letters)"
    printf '%s\n' "$@"
  } >"$file"
}

# committed TOPIC: records a read_committed consumer sees (key|headers|value).
read_committed() {
  kcat -b "$brokers" -C -t "$1" -e -q -X isolation.level=read_committed -f '%k|%h|%s\n' 2>/dev/null || true
}

# metrics_address LOG: the host:port a `neardup run` logged its metrics at (text or JSON log).
metrics_address() { grep -o 'metrics at http://[^/]*' "$1" 2>/dev/null | head -1 | sed 's|metrics at http://||'; }
# http_status ADDR PATH: the HTTP status of http://ADDR/PATH (000 when nothing answers).
http_status() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$1$2" || true; }
# sample ADDR NAME: the value of the unlabelled metric NAME at http://ADDR/metrics.
sample() { curl -s --max-time 5 "http://$1/metrics" | awk -v name="$2" '$1 == name { print $2 }'; }
# group_backlog GROUP TOPIC: records of TOPIC past GROUP's committed offsets (read_committed;
# a kcat member of GROUP that commits nothing, so run it only while no instance is in the group).
group_backlog() {
  timeout 60 kcat -b "$brokers" -G "$1" -X enable.auto.commit=false -X enable.auto.offset.store=false \
    -X auto.offset.reset=earliest -X isolation.level=read_committed -e -q -f '%k\n' "$2" 2>/dev/null | grep -c . || true
}
# fail_later MESSAGE: a failed check that need not stop the test (the later
# checks still say what they find); finish prints the count line and exits 1
# if any check failed.
failed=0
fail_later() { echo "$name: FAIL: $*"; failed=$((failed + 1)); }
finish() {
  echo "$name: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

# ---- instances of one group (run<N>.err logs)
# start_instance N: `neardup run` with $config on the cluster, logs to
# run<N>.out / run<N>.err, its pid in run_pids[N] (stopped by the trap).
run_pids=()
start_instance() {
  "$NEARDUP" run --config "$config" --brokers "$brokers" >"$work/run$1.out" 2>"$work/run$1.err" &
  run_pids[$1]=$!
  pids+=($!)
}
# last_assigned N: the partitions instance N's last assignment gave it.
last_assigned() { grep -o 'assigned [0-9]* partition' "$work/run$1.err" | tail -1 | grep -o '[0-9]*' || echo 0; }
# current_judge N...: which of the instances judges now (its last judge line
# says so: a joining instance can take the judging over), or nothing.
current_judge() {
  local i last
  for i in "$@"; do
    last=$(grep -o 'judge: \(this instance now judges\|no longer judging\)' "$work/run$i.err" 2>/dev/null | tail -1 || true)
    [ "$last" = "judge: this instance now judges" ] && { echo "$i"; return 0; }
  done
  return 0
}

# pairs FIRST COUNT: p<partition>.txt, "o<i>|text" on p, "c<i>|TEXT!" on p+2, so
# that original and copy are read by different instances; all.jsonl gets every
# message in the order `neardup scan` reads them (original, then copy).
pairs() {
  python3 - "$work" "$1" "$2" <<'PY'
import json, random, sys
work, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
files = {p: open(f"{work}/p{p}.txt", "w") for p in range(4)}
with open(f"{work}/all.jsonl", "a") as jsonl:
    for i in range(first, first + count):
        rng = random.Random(i)
        text = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8)) for _ in range(16))
        p = i % 4
        files[p].write(f"o{i}|{text}\n")
        files[(p + 2) % 4].write(f"c{i}|{text.upper()}!\n")
        jsonl.write(json.dumps({"id": f"o{i}", "text": text}) + "\n")
        jsonl.write(json.dumps({"id": f"c{i}", "text": text.upper() + "!"}) + "\n")
PY
}
# send: the p<partition>.txt files of pairs() to the input topic's 4 partitions.
send() {
  local senders=() p pid
  for p in 0 1 2 3; do
    kcat -b "$brokers" -P -t "$(topic input)" -p "$p" -K '|' -l "$work/p$p.txt" &
    senders+=($!)
  done
  for pid in "${senders[@]}"; do wait "$pid" || fail "kcat could not produce"; done
}
