#!/usr/bin/env bash
# e2e: the page on the metrics port in a real browser. `neardup demo` feeds the
# demo feed (291 lines, deterministic verdicts) and stays up; headless Chromium
# loads http://ADDR/ and its DOM (--dump-dom) must show the known counts, a
# known pair with the differing words marked (the Quito item, 348 -> 357
# people), its distance and similarity, the originals with the most
# duplicates, and the biggest stories of the last hour (counts 3, 3, 2 x 8,
# the first the Changsha item, each with an SVG chart whose bars add up to
# its count); /api/summary must carry the same pair and stories. Both answer with a
# Content-Security-Policy, and the page works under it: its script reloads the
# live part (body data-refreshed) and Chromium's console reports no policy
# violation. A screenshot is kept for
# people to look at (build/<preset>/e2e-artifacts/page.png, or
# $NEARDUP_ARTIFACTS/page.png). Every wait is bounded; every process started
# here is stopped by the trap.
set -euo pipefail
NEARDUP=${NEARDUP:?set NEARDUP to the neardup binary}
name=page_test
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=${NEARDUP_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
artifacts=${NEARDUP_ARTIFACTS:-$(cd "$(dirname "$NEARDUP")/.." && pwd)/e2e-artifacts}
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || { echo "$name: chromium is not installed (deploy/install-deps.sh)"; exit 1; }
require curl python3

port=$(free_port)
"$NEARDUP" demo --feed "$root/deploy/demo/feed.jsonl" --rate 97 --duration 120 \
  --metrics-listen "127.0.0.1:$port" >"$work/demo.out" 2>"$work/run.err" &
demo_pid=$!
pids+=($demo_pid)
url="http://127.0.0.1:$port"

all_judged() {
  curl -s --max-time 2 "$url/api/summary" >"$work/summary.json" || return 1
  python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["counts"]["in"] == 291 else 1)' \
    "$work/summary.json" 2>/dev/null
}
wait_for 60 all_judged || fail "the demo did not judge the feed's 291 lines within 60 s"
pass

# --- the JSON endpoint: counts and the known pair, texts and changed words.
python3 - "$work/summary.json" <<'PY' || fail "/api/summary is not as expected"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["counts"]
assert (c["in"], c["unique"], c["duplicate"], c["invalid"]) == (291, 192, 97, 2), c
assert d["recorded"] == 97 and len(d["pairs"]) == 64, (d["recorded"], len(d["pairs"]))
assert d["pairs"][0]["seq"] == 97, d["pairs"][0]["seq"]
[p] = [p for p in d["pairs"] if p["duplicate"]["offset"] == 192]
assert (p["distance"], p["similarity"], p["count"]) == (3, 0.875, 2), p
assert (p["original"]["offset"], p["duplicate"]["offset"]) == (179, 192), p
assert p["original"]["held"] and p["original"]["text"].startswith(
    "Quito: the city council rebuilds a second site near the river after months of debate; 348 people"), p
assert p["duplicate"]["text"].startswith(
    "Quito: the city council rebuilds a second site near the river after months of debate; 357 people"), p
changed = lambda side: [s["text"] for s in p[side]["segments"] if s["changed"]]
assert changed("original") == ["348"] and changed("duplicate") == ["357"], (changed("original"), changed("duplicate"))
top = d["top"][0]
assert top["duplicates"] == 3 and top["original"]["text"].startswith("Leeds: the museum announces a solar farm"), top
# The biggest stories of the last hour: the feed took 3 s, so every duplicate
# is in the last three minutes of each chart (the feed and the reading may
# straddle minutes).
STORY_HOURS = [3, 3, 3, 2, 2, 2, 2, 2, 2, 2]
st = d["stories"]
assert d["limits"]["stories"] == 64 and d["stories_minute_ms"] % 60000 == 0, d["limits"]
assert [s["hour"] for s in st] == STORY_HOURS, [s["hour"] for s in st]
for s in st:
    assert len(s["per_minute"]) == 60 and sum(s["per_minute"][-3:]) == s["hour"], s
assert st[0]["original"]["offset"] == top["original"]["offset"], (st[0]["original"], top["original"])
assert st[0]["original"]["text"].startswith("Leeds: the museum announces a solar farm"), st[0]
PY
pass

# --- what Chromium rendered.
chromium_log=$work/chromium.err
browse() {  # browse ARGS...: headless Chromium on the page, at most 60 s; stderr to $chromium_log
  timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --user-data-dir="$work/chromium" "$@" "$url/" 2>>"$chromium_log"
}
browse --dump-dom >"$work/dom.html" || fail "chromium --dump-dom failed: $(tail -5 "$work/chromium.err")"
python3 - "$work/dom.html" <<'PY' || fail "the rendered page is not as expected"
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
def stat(id_):
    m = re.search(r'<span class="n[^"]*" id="%s">([^<]*)</span>' % id_, dom)
    assert m, "no #%s in the DOM" % id_
    return m.group(1)
assert (stat("count-in"), stat("count-unique"), stat("count-duplicate"), stat("count-invalid")) == \
    ("291", "192", "97", "2"), "counts"
assert stat("duplicate-share") == "33.6%", stat("duplicate-share")
assert stat("ready") == "ready", stat("ready")
assert dom.count('<article class="pair"') == 64, dom.count('<article class="pair"')
m = re.search(r'<article class="pair" data-seq="64">(.*?)</article>', dom, re.S)
assert m, "pair 64 is not on the page"
pair = m.group(1)
assert 'distance <b class="distance">3</b>' in pair and 'duplicate <b class="count">2</b>' in pair, pair
assert 'similarity <b class="similarity">0.875</b>' in pair, pair
original, duplicate = pair.split('<div class="side duplicate">')
assert "input/0/179" in original and "input/0/192" in duplicate, pair
assert "Quito: the city council rebuilds a second site near the river after months of debate; " \
    '<mark class="del">348</mark> people signed up' in original, original
assert "Quito: the city council rebuilds a second site near the river after months of debate; " \
    '<mark class="add">357</mark> people signed up' in duplicate, duplicate
assert re.findall(r'<mark class="del">([^<]*)</mark>', original) == ["348"], original
assert re.findall(r'<mark class="add">([^<]*)</mark>', duplicate) == ["357"], duplicate
m = re.search(r'<section id="top">.*?<tbody><tr><td class="count">(\d+)</td><td>([^<]*)</td><td>([^<]*)</td>', dom, re.S)
assert m and m.group(1) == "3" and m.group(3).startswith("Leeds: the museum announces a solar farm"), m and m.groups()
# The biggest stories of the last hour, each with its count and an inline SVG
# chart whose bars (data-n) add up to it; the excerpt is cut at 160 bytes.
STORY_HOURS = [3, 3, 3, 2, 2, 2, 2, 2, 2, 2]
m = re.search(r'<section id="stories">(.*?)</section>', dom, re.S)
assert m, "no stories section in the DOM"
rows = re.findall(r'<tr class="story"><td class="hour">(\d+)</td><td>(<svg class="spark".*?</svg>)</td>'
                  r'<td>([^<]*)</td><td class="excerpt">([^<]*)', m.group(1), re.S)
assert [int(r[0]) for r in rows] == STORY_HOURS, [r[0] for r in rows]
for hour, svg, at, excerpt in rows:
    bars = [int(n) for n in re.findall(r'<rect [^>]*data-n="(\d+)"', svg)]
    assert sum(bars) == int(hour) and 1 <= len(bars) <= 2, (hour, bars)
    assert 'width="180"' in svg and '<title>' in svg, svg[:200]
hour, svg, at, excerpt = rows[0]
assert at.startswith("input/0/") and excerpt.startswith("Leeds: the museum announces a solar farm"), (at, excerpt)
assert len(excerpt.encode()) <= 160, len(excerpt.encode())
PY
pass

# --- the Content-Security-Policy: sent, and the page still works under it.
for path in / /api/summary; do
  curl -s --max-time 5 -D "$work/headers" -o /dev/null "$url$path" || fail "curl $path failed"
  tr -d '\r' <"$work/headers" >"$work/headers.txt"
  grep -q "^Content-Security-Policy: default-src 'none'" "$work/headers.txt" \
    || fail "$path sends no Content-Security-Policy: $(cat "$work/headers.txt")"
  grep -qx "X-Content-Type-Options: nosniff" "$work/headers.txt" || fail "$path sends no nosniff"
done
# 5 s of virtual time: the script's 2 s reload runs (fetch, replace #live) and
# marks the body; a blocked style, script or fetch is logged on the console.
chromium_log=$work/chromium-csp.err
browse --enable-logging=stderr --v=0 --virtual-time-budget=5000 --dump-dom >"$work/dom-csp.html" \
  || fail "chromium --dump-dom (policy check) failed: $(tail -5 "$work/chromium-csp.err")"
grep -Eq '<body data-refreshed="[1-9]' "$work/dom-csp.html" \
  || fail "the page's script did not reload the live part under its policy: $(grep -o '<body[^>]*>' "$work/dom-csp.html")"
if grep -i "Content Security Policy" "$work/chromium-csp.err" >"$work/violations"; then
  fail "Chromium reports policy violations: $(head -3 "$work/violations")"
fi
chromium_log=$work/chromium.err
pass

mkdir -p "$artifacts"
rm -f "$artifacts/page.png"
browse --screenshot="$artifacts/page.png" --window-size=1280,2400 --hide-scrollbars >/dev/null \
  || fail "chromium --screenshot failed: $(tail -5 "$work/chromium.err")"
[ "$(head -c 8 "$artifacts/page.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] \
  || fail "the screenshot is not a PNG"
[ "$(stat -c %s "$artifacts/page.png")" -gt 20000 ] || fail "the screenshot is nearly empty"
echo "$name: screenshot at $artifacts/page.png"
pass

kill -INT "$demo_pid"
status=0
for _ in $(seq 1 100); do kill -0 "$demo_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$demo_pid" 2>/dev/null && fail "the demo still runs 10 s after SIGINT"
wait "$demo_pid" || status=$?
[ "$status" -eq 0 ] || fail "the demo exited $status after SIGINT"
pass
echo "$name: $passed checks passed"
