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

# Configuration errors: 2 as well (restarting cannot fix them, so the systemd
# unit's RestartPreventExitStatus=2 stops there), naming the file, line, column
# and key.
printf 'window:\n  max_entries: 1073741825\n' >"$tmp/big.yaml"
expect 2 "big.yaml:2:16: window.max_entries: expected an integer in 1..1073741824" -- "$neardup" config check "$tmp/big.yaml"
printf 'dedup:\n  blocks: 16\n' >"$tmp/blocks.yaml"
expect 2 "blocks.yaml:2:11: dedup.blocks: index layout blocks 16" -- "$neardup" run --config "$tmp/blocks.yaml"
printf 'kafka:\n  changelog_topic: output\n' >"$tmp/changelog.yaml"
expect 2 "changelog.yaml:2:20: kafka.changelog_topic" -- "$neardup" scan --config "$tmp/changelog.yaml" /dev/null
expect 2 "does-not-exist.yaml" -- "$neardup" run --config "$tmp/does-not-exist.yaml"
expect 2 "NEARDUP_ACTION" -- env NEARDUP_ACTION=bogus "$neardup" scan /dev/null
# A property librdkafka rejects (the client is created before any connection).
printf 'kafka:\n  consumer:\n    no.such.property: "1"\n' >"$tmp/property.yaml"
expect 2 "no.such.property" -- "$neardup" run --config "$tmp/property.yaml" --brokers 127.0.0.1:9

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

[ "$failures" -eq 0 ] || { echo "cli_test: $failures failure(s)"; exit 1; }
echo "cli_test: all as documented"
