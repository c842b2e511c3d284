#!/usr/bin/env bash
# cluster: topics whose max.message.bytes is below the producer's
# message.max.bytes. A broker refuses a whole batch when it is over the limit,
# the valid records in it along with the one too large; neardup reads the
# topics' limit at start, sizes its batches to it (batch.size) and sends a
# record over it to the dead letters, cut to fit, without producing it.
# The feed (one input partition, produced while the brokers take 10 MB): 20
# small messages, one of 700 KB, 20 more small ones. The brokers then restart
# with message.max.bytes 560000. For at-least-once with the producer's default
# limit and for exactly-once with the producer's raised to 10 MiB (and
# input.max_bytes to 5 MiB, so the 700 KB message is valid input): the 40 small
# messages come out exactly once, the big one is one dead letter cut under
# 560000 bytes with its original size and the reason, no transaction is
# aborted, and the log says the limit it took.
# Brokers: kfake (restarted with another message.max.bytes), transactions.
# Every wait is bounded; every process started here is stopped by the trap; loopback only.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=cluster_record_limit_test
# shellcheck source=tests/e2e/lib.sh
source "${NEARDUP_SOURCE_DIR:?}/tests/e2e/lib.sh"
# shellcheck source=tests/cluster/lib.sh
source "${NEARDUP_SOURCE_DIR}/tests/cluster/lib.sh"
require kcat python3
need_kfake "brokers restarted with a lower message.max.bytes"

kfake_start -c message.max.bytes=10485760
python3 - "$work" <<'PY'
import json, random, sys
work = sys.argv[1]
def words(n, seed):
    rng = random.Random(seed)
    return " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)) for _ in range(n))
for part, first in (("a", 0), ("b", 20)):
    with open(f"{work}/small-{part}.txt", "w") as f:
        for i in range(first, first + 20):
            f.write(f"s{i}|" + json.dumps({"id": f"s{i}", "text": words(20, i)}) + "\n")
big = json.dumps({"id": "big", "text": words(87000, 999)})
assert 690000 < len(big) < 710000
open(f"{work}/big.json", "w").write(big)
PY
big_size=$(stat -c %s "$work/big.json")

base=$prefix
for delivery in at-least-once exactly-once; do
  prefix="$base$delivery-"
  group="${prefix}g"
  extra=('  consumer: {session.timeout.ms: "6000"}')
  if [ "$delivery" = exactly-once ]; then
    extra+=("  delivery: exactly-once" "  transactional_id: ${prefix}tx"
      '  producer: {message.max.bytes: "10485760"}')
  fi
  cluster_config "$work/$delivery.yaml" "${extra[@]}"
  input='input: {format: json, text_fields: [/text]}'
  [ "$delivery" = exactly-once ] && input='input: {format: json, text_fields: [/text], max_bytes: 5MiB}'
  printf '%s\n' 'action: tag' 'metrics: {listen: ""}' "$input" >>"$work/$delivery.yaml"
  cluster_topics "$work/$delivery.yaml" 1
  in=$(topic input)
  kcat -b "$brokers" -P -t "$in" -p 0 -K '|' -l "$work/small-a.txt" || fail "kcat could not produce"
  kcat -b "$brokers" -P -t "$in" -p 0 -X message.max.bytes=8000000 -k big "$work/big.json" || fail "kcat could not produce the big one"
  kcat -b "$brokers" -P -t "$in" -p 0 -K '|' -l "$work/small-b.txt" || fail "kcat could not produce"
done

# The brokers come back taking 560,000 bytes a batch.
kfake_kill
kfake_start -c message.max.bytes=560000

for delivery in at-least-once exactly-once; do
  prefix="$base$delivery-"
  group="${prefix}g"
  "$NEARDUP" run --config "$work/$delivery.yaml" --brokers "$brokers" >"$work/run.out" 2>"$work/run.err" &
  run_pid=$!
  pids+=($run_pid)
  count() { read_committed "$1" | grep -c . || true; }
  at_least() { [ "$(count "$1")" -ge "$2" ]; }
  wait_for 90 at_least "$(topic output)" 40 ||
    fail "$delivery: expected 40 records on output, got $(count "$(topic output)"): $(grep -E 'error|warn' "$work/run.err" | tail -3)"
  wait_for 30 at_least "$(topic dead-letters)" 1 || fail "$delivery: the big message is not in the dead letters"
  sleep 2 # a repeat or a valid message dead-lettered would be visible by now
  kill -0 "$run_pid" 2>/dev/null || fail "$delivery: neardup run stopped"

  read_committed "$(topic output)" | cut -d'|' -f1 | sort >"$work/out-keys.txt"
  seq 0 39 | sed 's/^/s/' | sort >"$work/small-keys.txt"
  diff "$work/small-keys.txt" "$work/out-keys.txt" >/dev/null ||
    fail "$delivery: output is not the 40 small messages once each: $(diff "$work/small-keys.txt" "$work/out-keys.txt" | grep '^[<>]' | head -5 | tr '\n' ' ')"
  kcat -b "$brokers" -C -t "$(topic dead-letters)" -e -q -X isolation.level=read_committed \
    -f '%k|%S|%h\n' >"$work/dead.txt" 2>/dev/null || true
  [ "$(wc -l <"$work/dead.txt")" -eq 1 ] || fail "$delivery: expected exactly 1 dead letter: $(cut -c1-200 "$work/dead.txt")"
  IFS='|' read -r key size headers <"$work/dead.txt"
  [ "$key" = big ] || fail "$delivery: the dead letter is '$key', not the big message"
  [ "$size" -gt 500000 ] && [ "$size" -lt 560000 ] || fail "$delivery: the dead letter keeps $size bytes, not its first bytes under 560000"
  case $headers in
    *"neardup-error=output to '$(topic output)' rejected: larger than the topics' max.message.bytes (560000)"*) ;;
    *) fail "$delivery: the dead letter's reason: $headers" ;;
  esac
  case $headers in *"neardup-original-size=$big_size"*) ;; *) fail "$delivery: no original size $big_size: $headers" ;; esac
  ! grep -q 'transaction aborted' "$work/run.err" ||
    fail "$delivery: a transaction was aborted: $(grep 'transaction aborted' "$work/run.err" | head -2)"
  grep -q "takes records of at most 560000 bytes (max.message.bytes)" "$work/run.err" ||
    fail "$delivery: the log does not say the topics' limit: $(head -5 "$work/run.err")"
  stop_gracefully "$run_pid"
  echo "$name: $delivery: 40 of 40 small messages out once, the big one dead-lettered cut to $size of $big_size bytes"
  pass
done
finish
