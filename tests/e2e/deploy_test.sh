#!/usr/bin/env bash
# Validates the deploy kit without running it: promtool on the scrape config,
# alert rules (syntax and behaviour) and every dashboard query; JSON and YAML
# parse; systemd-analyze verify on the unit; the Dockerfile's COPY sources and
# Debian package names. Tools that are missing are reported and skipped.
set -euo pipefail
src=${NEARDUP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
deploy=$src/deploy
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
pass() { echo "ok    $*"; }
fail() { echo "FAIL  $*"; failures=$((failures + 1)); }
skip() { echo "skip  $*"; }
check() {  # check "description" command...
  local what=$1; shift
  if out=$("$@" 2>&1); then pass "$what"; else fail "$what"; echo "$out" | sed 's/^/      /'; fi
}

# --- Prometheus
if command -v promtool >/dev/null; then
  check "promtool check config deploy/prometheus/prometheus.yml" promtool check config "$deploy/prometheus/prometheus.yml"
  check "promtool check rules deploy/prometheus/alerts.yml" promtool check rules "$deploy/prometheus/alerts.yml"
  check "promtool test rules deploy/prometheus/alerts_test.yml" \
    bash -c "cd '$deploy/prometheus' && promtool test rules alerts_test.yml"
  # Every alert docs/METRICS.md promises exists.
  for alert in NeardupConsumerLagGrowing NeardupDeadLetters NeardupNoInput NeardupProduceErrors; do
    check "alert $alert defined" grep -q "alert: $alert\$" "$deploy/prometheus/alerts.yml"
  done
else
  skip "promtool not installed"
fi

# --- JSON and YAML parse
for f in $(find "$deploy" -name '*.json' -not -path '*/node_modules/*'); do
  check "JSON parses: ${f#$src/}" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$f"
done
if python3 -c 'import yaml' 2>/dev/null; then
  for f in $(find "$deploy" \( -name '*.yml' -o -name '*.yaml' \)); do
    check "YAML parses: ${f#$src/}" python3 -c 'import yaml,sys; list(yaml.safe_load_all(open(sys.argv[1])))' "$f"
  done
else
  skip "python3 yaml not installed (tests/unit/config/yaml_files_test.cc parses them with yaml-cpp)"
fi

# --- Grafana dashboard: the expected panels, and every query is valid PromQL.
dashboard=$deploy/grafana/neardup-dashboard.json
check "dashboard has the required panels" python3 - "$dashboard" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exprs = " ".join(t["expr"] for p in d["panels"] for t in p.get("targets", []))
titles = " ".join(p["title"].lower() for p in d["panels"])
need = {"throughput by verdict": "neardup_messages_total", "duplicate rate": "verdict=\"duplicate\"",
        "match distance": "neardup_match_distance_bucket", "latency": "neardup_end_to_end_latency_seconds_bucket",
        "consumer lag": "neardup_consumer_lag", "window size": "neardup_window_entries"}
missing = [t for t, e in need.items() if t not in titles or e not in exprs]
assert "histogram_quantile(0.99" in exprs and "histogram_quantile(0.5" in exprs, "latency p50/p99"
assert not missing, missing
ids = [p["id"] for p in d["panels"]]
assert len(ids) == len(set(ids)), "duplicate panel ids"
PY
if command -v promtool >/dev/null; then
  # Grafana's macros replaced by plain values, each query checked as a recording rule.
  python3 - "$dashboard" > "$tmp/dashboard_rules.yml" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("groups:\n  - name: dashboard\n    rules:")
for p in d["panels"]:
    for t in p.get("targets", []):
        e = (t["expr"].replace("$__rate_interval", "1m").replace("$__range", "1h")
             .replace("$job", ".*").replace("$instance", ".*"))
        print(f"      - record: dashboard:panel_{p['id']}_{t['refId']}\n        expr: {json.dumps(e)}")
PY
  check "every dashboard query is valid PromQL" promtool check rules "$tmp/dashboard_rules.yml"
fi

# --- systemd
unit=$deploy/systemd/neardup.service
if command -v systemd-analyze >/dev/null && [ -n "${NEARDUP:-}" ] && [ -x "$NEARDUP" ]; then
  # verify needs the ExecStart binary to exist: point it at the built one.
  sed "s#/usr/local/bin/neardup#$(realpath "$NEARDUP")#" "$unit" > "$tmp/neardup.service"
  check "systemd-analyze verify deploy/systemd/neardup.service" \
    bash -c "out=\$(systemd-analyze verify '$tmp/neardup.service' 2>&1); echo \"\$out\"; ! echo \"\$out\" | grep -q neardup.service"
else
  skip "systemd-analyze or NEARDUP binary not available"
fi
check "systemd unit runs 'neardup run --config'" grep -q '^ExecStart=/usr/local/bin/neardup run --config ' "$unit"

# --- Dockerfile: COPY sources exist, Debian 12 package names exist, two stages.
dockerfile=$deploy/Dockerfile
check "Dockerfile is multi-stage from debian:12" bash -c "[ \$(grep -c '^FROM debian:12' '$dockerfile') -ge 2 ]"
for source in $(awk '/^COPY/ && !/--from/ { for (i = 2; i < NF; i++) print $i }' "$dockerfile"); do
  check "Dockerfile COPY source exists: $source" test -e "$src/$source"
done
if command -v apt-cache >/dev/null && grep -q 'VERSION_ID="12"' /etc/os-release 2>/dev/null; then
  pkgs=$(sed -n '/apt-get install/,/rm -rf/p' "$dockerfile" | tr ' \\' '\n\n' |
         grep -E '^[a-z0-9][a-z0-9.+-]+$' | grep -vE '^(apt-get|install|rm|useradd|ca-certificates)$' || true)
  # One apt-cache call for all (each call reads every package list, about a
  # second): a name exists when its own "Package:" stanza comes back.
  # shellcheck disable=SC2086  # one package name a word
  apt-cache show $pkgs 2>/dev/null | sed -n 's/^Package: //p' | sort -u >"$tmp/packages.txt" || true
  for p in $pkgs; do
    check "Debian 12 package exists: $p" grep -qxF "$p" "$tmp/packages.txt"
  done
else
  skip "not Debian 12: package names not checked"
fi

# --- docker compose (only where the compose plugin exists; no daemon needed)
if docker compose version >/dev/null 2>&1; then
  check "docker compose config" docker compose -f "$deploy/docker-compose.yml" config -q
else
  skip "docker compose not available (tests/unit/config/yaml_files_test.cc checks the file's structure)"
fi

if [ "$failures" -ne 0 ]; then
  echo "deploy_test: $failures check(s) failed"
  exit 1
fi
echo "deploy_test: all checks passed"
