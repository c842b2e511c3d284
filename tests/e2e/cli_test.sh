#!/usr/bin/env bash
# Command-line errors that must fail fast, with the documented exit status and
# a message a person can act on; none of these starts a broker or opens a port.
# The contract (app/main.cc): 0 ok, 1 runtime failure, 2 usage or configuration error.
set -uo pipefail
neardup=${NEARDUP:?set NEARDUP to the neardup binary}
export NEARDUP_METRICS_LISTEN=""  # should a check regress and `run` start, it opens no port
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect STATUS PATTERN -- COMMAND...: runs COMMAND (at most 20 s), checks its
# exit status and that stderr matches PATTERN (grep -E).
expect() {
  local status=$1 pattern=$2
  shift 3
  timeout 20 "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$status" ] || ! grep -Eq -- "$pattern" "$tmp/err"; then
    echo "FAIL  $*: exit $got (expected $status), stderr:"; sed 's/^/      /' "$tmp/err"
    failures=$((failures + 1))
  else
    echo "ok    $* -> $status"
  fi
}

# Usage errors: 2.
expect 2 "--brokers: expected HOST:PORT" -- "$neardup" run --brokers 127.0.0.1:notaport
expect 2 "--brokers: expected HOST:PORT" -- "$neardup" run --brokers 127.0.0.1:99999
expect 2 "unknown option" -- "$neardup" scan --no-such-option
expect 2 "--id-field: expected a JSON pointer" -- "$neardup" scan --id-field '/a~9'

expect 2 "unknown command" -- "$neardup" no-such-command
# A near miss names the command meant (within 2 edits); a far one does not.
expect 2 "^neardup: unknown command 'runn' \\(did you mean 'run'\\?\\)" -- "$neardup" runn
expect 2 "^neardup: unknown command 'sacn' \\(did you mean 'scan'\\?\\)" -- "$neardup" sacn
expect 2 "^neardup help: unknown command 'confg check' \\(did you mean 'config'\\?\\)" -- "$neardup" help confg check
expect 2 "^neardup: unknown command 'no-such-command' \\(see" -- "$neardup" no-such-command
# metrics.listen: config check refuses what run could not serve, saying why (2, not 1 later).
printf 'metrics:\n  listen: "999.1.1.1:80"\n' >"$tmp/listen-host.yaml"
expect 2 "listen-host.yaml:2:11: metrics.listen: expected an IPv4 address \\(four numbers in 0..255" -- "$neardup" config check --no-env "$tmp/listen-host.yaml"
printf 'metrics:\n  listen: "127.0.0.1:99999"\n' >"$tmp/listen-port.yaml"
expect 2 "listen-port.yaml:2:11: metrics.listen: port out of range: 99999 is not in 0..65535" -- "$neardup" config check --no-env "$tmp/listen-port.yaml"

# Configuration errors: 2 as well (restarting cannot fix them, so the systemd
# unit's RestartPreventExitStatus=2 stops there), naming the file, line, column
# and key.
printf 'window:\n  max_entries: 1073741825\n' >"$tmp/big.yaml"
expect 2 "big.yaml:2:16: window.max_entries: expected an integer in 1..1073741824" -- "$neardup" config check "$tmp/big.yaml"
# (the file as for run, too)
expect 2 "big.yaml:2:16: window.max_entries: expected an integer in 1..1073741824" -- "$neardup" config check --config "$tmp/big.yaml"
printf 'dedup:\n  blocks: 16\n' >"$tmp/blocks.yaml"
expect 2 "blocks.yaml:2:11: dedup.blocks: index layout blocks 16" -- "$neardup" run --config "$tmp/blocks.yaml"
printf 'kafka:\n  changelog_topic: output\n' >"$tmp/changelog.yaml"
expect 2 "changelog.yaml:2:20: kafka.changelog_topic" -- "$neardup" scan --config "$tmp/changelog.yaml" /dev/null
expect 2 "does-not-exist.yaml" -- "$neardup" run --config "$tmp/does-not-exist.yaml"
expect 2 "NEARDUP_ACTION" -- env NEARDUP_ACTION=bogus "$neardup" scan /dev/null
# A property librdkafka rejects (the client is created before any connection).
printf 'kafka:\n  consumer:\n    no.such.property: "1"\n' >"$tmp/property.yaml"
expect 2 "no.such.property" -- "$neardup" run --config "$tmp/property.yaml" --brokers 127.0.0.1:9

# config check reads a file as run does: what run refuses, the check refuses,
# in the same words (the properties through librdkafka as well).
printf 'kafka:\n  consumer:\n    sesion.timeout.ms: 6000\n' >"$tmp/misspelled.yaml"
expect 2 "misspelled.yaml:3:5: kafka.consumer: kafka property 'sesion.timeout.ms': No such configuration property" -- \
  "$neardup" config check --no-env "$tmp/misspelled.yaml"
expect 2 "misspelled.yaml:3:5: kafka.consumer: kafka property 'sesion.timeout.ms': No such configuration property" -- \
  "$neardup" run --config "$tmp/misspelled.yaml" --brokers 127.0.0.1:9
printf 'kafka:\n  producer: {acks: 1}\n' >"$tmp/acks.yaml"
expect 2 "kafka.producer: cannot create Kafka producer: .acks. must be set to .all." -- \
  "$neardup" config check --no-env "$tmp/acks.yaml"
expect 2 "cannot create Kafka producer: .acks. must be set to .all." -- \
  "$neardup" run --config "$tmp/acks.yaml" --brokers 127.0.0.1:9
printf 'metrics:\n  listen: "[::1]:9472"\n' >"$tmp/ipv6.yaml"
for command in "config check --no-env" "run --config"; do
  # shellcheck disable=SC2086 # the words of the command
  expect 2 "ipv6.yaml:2:11: metrics.listen: .*IPv6 addresses cannot be served" -- \
    "$neardup" $command "$tmp/ipv6.yaml"
done
printf 'window:\n  duration: 24\n' >"$tmp/bare.yaml"
expect 2 "bare.yaml:2:13: window.duration: .*got '24', a number without a unit \\(write 24s, 24m or 24h\\)" -- \
  "$neardup" config check --no-env "$tmp/bare.yaml"
# Every error of a file, one a line.
printf 'dedup:\n  max_distance: 99\nwindow:\n  duration: 24\naction: nuke\n' >"$tmp/three.yaml"
expect 2 "three.yaml:5:9: action" -- "$neardup" config check --no-env "$tmp/three.yaml"
if [ "$(grep -c '^.*three.yaml:[0-9]*:[0-9]*: ' "$tmp/err")" -eq 3 ] && [ "$(wc -l <"$tmp/err")" -eq 3 ]; then
  echo "ok    config check three.yaml: 3 errors, 3 lines"
else
  echo "FAIL  config check three.yaml: expected 3 lines:"; sed 's/^/      /' "$tmp/err"; failures=$((failures + 1))
fi

# A misspelled variable is ignored, as every variable that names no key, but said
# (the check itself passes: 0).
printf 'action: tag\n' >"$tmp/ok.yaml"
expect 0 "warning: NEARDUP_ACTON is not a configuration variable and is ignored \\(did you mean NEARDUP_ACTION\\?\\)" -- \
  env NEARDUP_ACTON=route "$neardup" config check "$tmp/ok.yaml"

# The page served to every host without credentials: said in one line, the
# check passes (0); with credentials, or on loopback, nothing is said.
printf 'metrics:\n  listen: 0.0.0.0:9464\n  page: on\n' >"$tmp/open.yaml"
expect 0 "^neardup: warning: metrics.page: on serves message texts on 0.0.0.0:9464" -- \
  "$neardup" config check --no-env "$tmp/open.yaml"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "FAIL  the warning is not one line"; failures=$((failures + 1)); }
printf 'metrics:\n  listen: 0.0.0.0:9464\n  page: on\n  page_user: ops\n  page_password_file: /run/secrets/neardup-page\n' >"$tmp/guarded.yaml"
printf 'metrics:\n  listen: 127.0.0.1:9464\n  page: on\n' >"$tmp/loopback.yaml"
for quiet in guarded loopback; do
  if timeout 20 "$neardup" config check --no-env "$tmp/$quiet.yaml" >/dev/null 2>"$tmp/err" && [ ! -s "$tmp/err" ]; then
    echo "ok    config check $quiet.yaml -> 0, nothing on stderr"
  else
    echo "FAIL  config check $quiet.yaml:"; sed 's/^/      /' "$tmp/err"; failures=$((failures + 1))
  fi
done

# Runtime failures: 1 (worth a retry or a restart).
expect 1 "cannot open" -- "$neardup" scan "$tmp/does-not-exist.jsonl"

# The demo feed of an installed neardup: bin/neardup finds
# share/neardup/demo/feed.jsonl beside it from any directory (an empty feed
# here: found, and refused before any broker starts); without it, the error
# names every place it looked.
inst=$(cd "$tmp" && pwd -P)/prefix
mkdir -p "$inst/bin" "$inst/share/neardup/demo" "$tmp/elsewhere"
cp "$neardup" "$inst/bin/neardup"
: >"$inst/share/neardup/demo/feed.jsonl"
expect 1 "the demo feed '$inst/share/neardup/demo/feed.jsonl' is empty" -- \
  env -C "$tmp/elsewhere" "$inst/bin/neardup" demo --metrics-listen ""
rm "$inst/share/neardup/demo/feed.jsonl"
expect 1 "cannot find the demo feed: looked in deploy/demo/feed.jsonl, $inst/share/neardup/demo/feed.jsonl" -- \
  env -C "$tmp/elsewhere" "$inst/bin/neardup" demo --metrics-listen ""
rm -rf "$inst"

# The exit-status contract is said once per --help (app/main.cc prints it):
# no subcommand repeats it. compare states its own (its status is its answer:
# 0 near-duplicates, 1 not), once.
"$neardup" --help | sed -n '/^commands:/,/^$/p' | awk -F'  +' 'NF > 1 { print $2 }' >"$tmp/commands"
[ "$(wc -l <"$tmp/commands")" -ge 9 ] || { echo "FAIL  neardup --help lists $(wc -l <"$tmp/commands") commands"; failures=$((failures + 1)); }
while IFS= read -r command; do
  # shellcheck disable=SC2086  # "config check" is two words
  "$neardup" $command --help >"$tmp/help" 2>&1 || { echo "FAIL  neardup $command --help exited $?"; failures=$((failures + 1)); }
  paragraphs=$(grep -c '^exit status' "$tmp/help")
  shared=$(grep -c '^exit status: 0 success' "$tmp/help")
  own=$(grep -c '^exit status, as cmp' "$tmp/help")
  if [ "$command" = compare ]; then ok=$([ "$own" -eq 1 ] && [ "$shared" -le 1 ] && echo 1); else
    ok=$([ "$paragraphs" -eq 1 ] && [ "$shared" -eq 1 ] && echo 1); fi
  if [ -n "$ok" ]; then
    echo "ok    neardup $command --help: the exit status once"
  else
    echo "FAIL  neardup $command --help has $paragraphs exit-status paragraphs:"
    grep -n -A2 '^exit status' "$tmp/help" | sed 's/^/      /'
    failures=$((failures + 1))
  fi
  # `neardup help COMMAND` prints the same help, status 0.
  # shellcheck disable=SC2086
  "$neardup" help $command >"$tmp/help2" 2>&1 && cmp -s "$tmp/help" "$tmp/help2" &&
    echo "ok    neardup help $command = neardup $command --help" ||
    { echo "FAIL  neardup help $command differs from neardup $command --help"; failures=$((failures + 1)); }
done <"$tmp/commands"
"$neardup" help >"$tmp/help" 2>&1 && grep -q '^commands:' "$tmp/help" &&
  echo "ok    neardup help: the overview" || { echo "FAIL  neardup help"; failures=$((failures + 1)); }
"$neardup" help config >"$tmp/help" 2>&1 && grep -q 'neardup config check' "$tmp/help" &&
  echo "ok    neardup help config: the group's commands" || { echo "FAIL  neardup help config"; failures=$((failures + 1)); }

[ "$failures" -eq 0 ] || { echo "cli_test: $failures failure(s)"; exit 1; }
echo "cli_test: all as documented"
