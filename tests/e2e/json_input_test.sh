#!/usr/bin/env bash
# e2e: with no input.format in the configuration (auto), `neardup run` reads a
# JSON object at its text field as `neardup scan` does: two messages with one
# text and different other fields (ids, users, timestamps, tags) are
# duplicates in both, with the same counts. A plain-text value and a JSON array
# are read whole, as text; an object without its text field is dead-lettered.
# Every wait is bounded; every process started here is stopped by the trap.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=json_input_test
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v kcat >/dev/null || { echo "$name: kcat is not installed (deploy/install-deps.sh)"; exit 1; }

cat >"$work/config.yaml" <<YAML
action: tag
metrics: {listen: "127.0.0.1:0"}
YAML
"$NEARDUP" config check --no-env "$work/config.yaml" >"$work/check.out" ||
  fail "config check refused the configuration"
grep -A1 '^input:' "$work/check.out" | grep -qx '  format: auto' ||
  fail "config check does not show input.format auto: $(grep -A3 '^input:' "$work/check.out")"
pass

# The JSON objects: j2 repeats j1's text and j4 repeats j3's, with other
# metadata; j9 has no text field. Then p7 repeats plain-text p6, and a8 is a
# JSON array holding p6's words.
cat >"$work/objects.jsonl" <<'JSON'
{"id":"j1","user":"alice","at":"2024-05-01T10:00:00Z","source":"wire service alpha morning desk","text":"Storm closes the harbour bridge as rivers rise across the county tonight"}
{"id":"j2","user":"bob_the_reposter","at":"2024-05-03T23:41:07Z","source":"syndication partner network beta","tags":["weather","roads","flooding","emergency","traffic"],"text":"Storm closes the harbour bridge as rivers rise across the county tonight"}
{"id":"j3","user":"carol","at":"2024-05-01T12:00:00Z","text":"Council approves the new school budget after a long debate on housing"}
{"id":"j4","user":"dmitri.k","at":"2024-05-02T08:15:00Z","lang":"en","source":"regional politics aggregator","views":18234,"text":"Council approves the new school budget after a long debate on housing"}
{"id":"j5","user":"erin","text":"Museum reopens its science wing after a year of careful restoration"}
{"id":"j9","user":"frank","body":"an object without the text field"}
JSON
cat >"$work/others.txt" <<'TXT'
Railway strike halts trains into the city for a second day running
railway strike halts trains into the city for a second day running!
["Railway strike halts trains into the city for a second day running"]
TXT

# scan (JSON Lines): 6 records, 2 duplicates (j2 of j1, j4 of j3), 1 invalid.
"$NEARDUP" scan "$work/objects.jsonl" >"$work/scan.jsonl" 2>"$work/scan.err" ||
  fail "scan failed: $(cat "$work/scan.err")"
scan_dups=$(grep -c '"verdict":"duplicate"' "$work/scan.jsonl" || true)
[ "$scan_dups" -eq 2 ] || fail "scan: expected 2 duplicates: $(cat "$work/scan.jsonl")"
grep -q '^{"id":"j2","verdict":"duplicate","of":"j1"' "$work/scan.jsonl" || fail "scan: j2 is not j1's duplicate"
grep -q '^{"id":"j4","verdict":"duplicate","of":"j3"' "$work/scan.jsonl" || fail "scan: j4 is not j3's duplicate"
[ "$(grep -c '"verdict":"invalid"' "$work/scan.jsonl")" -eq 1 ] || fail "scan: expected j9 invalid"
pass
# Read whole, as text, the same objects are not duplicates: their other
# fields differ too much. (This is what makes the run below meaningful.)
"$NEARDUP" scan --format lines "$work/objects.jsonl" >"$work/scan-lines.jsonl"
[ "$(grep -c '"verdict":"duplicate"' "$work/scan-lines.jsonl" || true)" -eq 0 ] ||
  fail "the objects read whole are already duplicates: $(cat "$work/scan-lines.jsonl")"
pass

"$NEARDUP" broker --partitions 1 --bootstrap-file "$work/bootstrap" >"$work/broker.out" 2>"$work/broker.err" &
pids+=($!)
wait_for 20 test -s "$work/bootstrap" || fail "broker did not write its bootstrap file"
brokers=$(cat "$work/bootstrap")
"$NEARDUP" run --config "$work/config.yaml" --brokers "$brokers" >"$work/run.out" 2>"$work/run.err" &
run_pid=$!
pids+=($run_pid)

# Keyed by id: j1..j9 at offsets 0..5, then p6, p7, a8 at 6..8.
{
  sed -E 's/^\{"id":"([a-z0-9]+)".*/\1|&/' "$work/objects.jsonl"
  paste -d'|' <(printf '%s\n' p6 p7 a8) "$work/others.txt"
} >"$work/input.txt"
[ "$(wc -l <"$work/input.txt")" -eq 9 ] || fail "input: $(cat "$work/input.txt")"
kcat -b "$brokers" -P -t input -K '|' -l "$work/input.txt" || fail "kcat could not produce"

count() { kcat -b "$brokers" -C -t "$1" -e -q -f '%k\n' 2>/dev/null | grep -c . || true; }
at_least() { [ "$(count "$1")" -ge "$2" ]; }
wait_for 60 at_least output 8 || fail "expected 8 records on output, got $(count output)"
wait_for 30 at_least dead-letters 1 || fail "expected 1 dead letter"
stop_gracefully "$run_pid"

kcat -b "$brokers" -C -t output -e -q -f '%k|%h\n' >"$work/output.txt" 2>/dev/null
[ "$(wc -l <"$work/output.txt")" -eq 8 ] || fail "expected exactly 8 output records: $(cat "$work/output.txt")"
dups=$(grep 'neardup-verdict=duplicate' "$work/output.txt" | cut -d'|' -f1 | sort | tr '\n' ' ')
[ "$dups" = "a8 j2 j4 p7 " ] || fail "duplicates on output: '$dups' (expected a8 j2 j4 p7)"
pass
# The JSON objects: as many duplicates as scan found, of the same originals.
run_dups=$(grep -c '^j[0-9]|.*neardup-verdict=duplicate' "$work/output.txt" || true)
[ "$run_dups" -eq "$scan_dups" ] || fail "run found $run_dups duplicates among the objects, scan $scan_dups"
grep -q '^j2|.*neardup-of=input/0/0,' "$work/output.txt" || fail "j2 should point at input/0/0 (j1)"
grep -q '^j4|.*neardup-of=input/0/2,' "$work/output.txt" || fail "j4 should point at input/0/2 (j3)"
pass
# The text values, whole: p7 and the array a8 are duplicates of p6.
grep -q '^p7|.*neardup-of=input/0/6,' "$work/output.txt" || fail "p7 should point at input/0/6 (p6)"
grep -q '^a8|.*neardup-of=input/0/6,' "$work/output.txt" || fail "a8 should point at input/0/6 (p6)"
pass
kcat -b "$brokers" -C -t dead-letters -e -q -f '%k|%h\n' >"$work/dead.txt" 2>/dev/null
[ "$(wc -l <"$work/dead.txt")" -eq 1 ] || fail "expected exactly 1 dead letter: $(cat "$work/dead.txt")"
grep -q '^j9|.*neardup-error=missing text field /text' "$work/dead.txt" ||
  fail "j9 not dead-lettered as 'missing text field /text': $(cat "$work/dead.txt")"
pass
echo "$name: $passed passed, 0 failed"
