#!/usr/bin/env bash
# e2e: README.md's own lines, run as written there (read from README.md, with
# `neardup` -> $NEARDUP and ADDR -> the broker's address): `neardup broker ...`,
# then `neardup run --config deploy/examples/embedded.yaml --brokers ADDR` on it,
# fed and read by README's kcat lines plus a few messages of our own, with exact
# counts on the output topic; a group the broker was not told about gets its
# judge and verdict topics with one partition and starts; and the line
# `neardup run --config deploy/examples/embedded.yaml` alone, on its own
# embedded broker. (README's demo figures: demo_test.sh.) Every wait is bounded;
# every process started here is stopped by the trap.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=readme_test
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=${NEARDUP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
readme="$root/README.md"
command -v kcat >/dev/null || { echo "$name: kcat is not installed (deploy/install-deps.sh)"; exit 1; }
cd "$root"  # README's paths (deploy/examples/...) are the repository's
# embedded.yaml serves metrics on 127.0.0.1:9464, which another test may hold:
# the environment moves them (not part of the lines under test).
export NEARDUP_METRICS_LISTEN=127.0.0.1:0

# readme_line REGEX: sets `line` to the one line of README.md that matches REGEX (else fails).
readme_line() {
  line=$(grep -E -- "$1" "$readme" || true)
  if [ -z "$line" ] || [ "$(printf '%s\n' "$line" | wc -l)" -ne 1 ]; then
    fail "expected one line of README.md to match '$1', got: ${line:-none}"
  fi
}
# as_command LINE: LINE with its leading `neardup` -> "$NEARDUP", ADDR -> $brokers.
as_command() {
  local line=${1/#neardup /\"\$NEARDUP\" }
  printf '%s\n' "${line//ADDR/${brokers:-ADDR}}"
}
# start LOG LINE: runs a README line in the background (its trailing comment is
# a comment there too); stdout to LOG.out, stderr to LOG.err; its pid in `started`.
start() {
  (eval "exec $(as_command "$2")") >"$work/$1.out" 2>"$work/$1.err" &
  started=$!
  pids+=("$started")
}
# partitions TOPIC: its partition count on $brokers, "" when it does not exist
# (from the list of every topic: asking about one would create it).
partitions() {
  kcat -b "$brokers" -L 2>/dev/null | sed -n "s/^ *topic \"$1\" with \([0-9]*\) partitions.*/\1/p"
}
count() { kcat -b "$brokers" -C -t "$1" -e -q 2>/dev/null | grep -c . || true; }
at_least() { [ "$(count "$1")" -ge "$2" ]; }
alive() { kill -0 "$1" 2>/dev/null || fail "$2 exited: $(tail -5 "$work/run.err")"; }

# --- `neardup broker ...` as README writes it; ADDR is the address it prints.
readme_line '^neardup broker '
broker_line=$line
start broker "$broker_line"
wait_for 20 test -s "$work/broker.out" || fail "'$broker_line' printed no address: $(cat "$work/broker.err")"
brokers=$(head -1 "$work/broker.out")
[[ $brokers =~ ^127\.0\.0\.1:[0-9]+$ ]] || fail "'$broker_line' printed '$brokers', not an address"
for t in neardup-judge neardup-verdicts; do
  [ "$(partitions "$t")" = 1 ] || fail "'$broker_line' did not create $t with one partition"
done
[ -n "$(partitions neardup-window)" ] || fail "'$broker_line' did not create neardup-window"
pass

# --- README's `neardup run --config deploy/examples/embedded.yaml --brokers ADDR` on it.
readme_line '^neardup run --config deploy/examples/embedded\.yaml --brokers ADDR'
run_line=$line
start run "$run_line"
run_pid=$started

# README's kcat producer line (a1, and a2: a1 again in capitals with a "!"),
# then ours: b2 repeats b1 edited, b3 is new (in /text), b4 is not JSON. All to
# partition 0, so the first of each pair is judged first.
readme_line '\| kcat -b ADDR -P -t input -p 0$'
produce_line=$line
timeout 30 bash -c "$(as_command "$produce_line")" || fail "README's kcat line failed: $produce_line"
cat >"$work/input.jsonl" <<'JSONL'
{"id":"b1","title":"Council approves the new school budget after a long debate on housing"}
{"id":"b2","title":"council approves the new school budget, after a long debate on housing."}
{"id":"b3","text":"Museum reopens its science wing after a year of careful restoration"}
{"id":"b4","title":
JSONL
kcat -b "$brokers" -P -t input -p 0 -l "$work/input.jsonl" || fail "kcat could not produce"
wait_for 60 at_least output 5 || { alive "$run_pid" "'$run_line'"; fail "expected 5 records on output, got $(count output)"; }
wait_for 30 at_least dead-letters 1 || fail "expected 1 dead letter, got $(count dead-letters)"
pass

# README's kcat consumer line, as written: exactly the 5 republished, a2 and b2 tagged.
readme_line '^kcat -b ADDR -C -t output '
consume_line=$line
timeout 30 bash -c "$(as_command "$consume_line")" >"$work/output.txt" 2>/dev/null ||
  fail "README's kcat line failed: $consume_line"
[ "$(grep -c . "$work/output.txt")" -eq 5 ] || fail "expected exactly 5 output records: $(cat "$work/output.txt")"
[ "$(grep -c 'neardup-verdict=duplicate' "$work/output.txt")" -eq 2 ] ||
  fail "expected 2 tagged duplicates: $(cat "$work/output.txt")"
for id in a2 b2; do
  grep "\"id\":\"$id\"" "$work/output.txt" | grep -q 'neardup-verdict=duplicate' || fail "$id is not tagged duplicate"
done
for id in a1 b1 b3; do
  grep "\"id\":\"$id\"" "$work/output.txt" | grep -vq 'neardup-verdict' || fail "$id must be republished untagged"
done
[ "$(count dead-letters)" -eq 1 ] || fail "expected exactly 1 dead letter, got $(count dead-letters)"
pass
stop_gracefully "$run_pid"

# --- a group the broker was not told about (no --groups): the broker creates its
# judge and verdict topics with one partition when the service first asks, and
# the service starts (with 4, the mock's default, it would exit 2 and leave them).
cat >"$work/other.yaml" <<'YAML'
kafka: {group_id: other, input_topics: [other-input], output_topic: other-output}
YAML
mv "$work/run.err" "$work/run1.err"
"$NEARDUP" run --config "$work/other.yaml" --brokers "$brokers" >"$work/run.out" 2>"$work/run.err" &
other_pid=$!
pids+=("$other_pid")
judging() { alive "$other_pid" "the run of group 'other'"; grep -q "judges for group 'other'" "$work/run.err"; }
wait_for 30 judging || fail "the run of group 'other' did not start judging"
for t in other-judge other-verdicts; do
  [ "$(partitions "$t")" = 1 ] || fail "$t has $(partitions "$t") partitions, not one"
done
stop_gracefully "$other_pid"
pass

# --- README's `neardup run --config deploy/examples/embedded.yaml` alone: its own
# embedded broker, whose address it logs.
readme_line '^neardup run --config deploy/examples/embedded\.yaml *(#|$)'
embedded_line=$line
start run "$embedded_line"
embedded_pid=$started
has_address() { alive "$embedded_pid" "'$embedded_line'"; grep -q 'embedded broker at 127\.0\.0\.1:' "$work/run.err"; }
wait_for 30 has_address || fail "'$embedded_line' logged no embedded broker address"
brokers=$(grep -o 'embedded broker at 127\.0\.0\.1:[0-9]*' "$work/run.err" | head -1 | sed 's/.* at //')
printf '%s\n' '{"id":"c1","title":"Railway strike halts trains into the city for a second day running"}' \
  '{"id":"c2","title":"RAILWAY STRIKE halts trains into the city for a second day running!"}' \
  '{"id":"c3","title":"Storm closes the harbour bridge as rivers rise across the county"}' |
  kcat -b "$brokers" -P -t input -p 0 || fail "kcat could not produce to $brokers"
wait_for 60 at_least output 3 || fail "expected 3 records on output, got $(count output)"
kcat -b "$brokers" -C -t output -e -q -f '%h %s\n' >"$work/embedded.txt" 2>/dev/null
[ "$(grep -c . "$work/embedded.txt")" -eq 3 ] || fail "expected exactly 3 output records: $(cat "$work/embedded.txt")"
grep '"id":"c2"' "$work/embedded.txt" | grep -q 'neardup-verdict=duplicate' || fail "c2 is not tagged duplicate"
[ "$(grep -c 'neardup-verdict=duplicate' "$work/embedded.txt")" -eq 1 ] || fail "expected 1 tagged duplicate"
stop_gracefully "$embedded_pid"
pass

echo "$name: $passed passed, 0 failed"
