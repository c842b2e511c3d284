#!/usr/bin/env bash
# `neardup compare A B` explains the verdict the window would reach: on every
# pair of a sample (English and Chinese texts with words or characters
# swapped, inserted, dropped; seeded), its verdict equals `neardup scan`'s on
# the two-record stream [A, B], its exit status says the same (0
# near-duplicates, 1 not, as cmp and diff), its similarity is scan's, and the
# path it names is consistent with the distance and bands it prints. A usage
# error or a text with nothing to judge exits 2, and --help says all three.
set -euo pipefail
neardup=${NEARDUP:?set NEARDUP to the neardup binary}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

python3 - "$neardup" "$tmp" <<'PY'
import json, random, re, subprocess, sys
neardup, tmp = sys.argv[1], sys.argv[2]
english = [
    "Just finished my first marathon in under four hours, legs are gone but so happy",
    "The committee will meet on Thursday to discuss the budget for next year",
    "Never trust a computer you cannot throw out of a window",
    "Breaking: markets rally as the central bank signals lower rates ahead",
]
chinese = ["床前明月光，疑是地上霜。举头望明月，低头思故乡。", "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。",
           "今天天气很好，我们一起去公园散步吧", "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"]
rng = random.Random(17)
pairs = []
for i in range(48):
    if i % 2 == 0:
        a = rng.choice(english); w = a.split()
        for _ in range(rng.randint(1, 4)):
            j = rng.randrange(len(w)); op = rng.randrange(3)
            if op == 0: w[j] = rng.choice(["really", "today", "news", "big"])
            elif op == 1: w.insert(j, rng.choice(["really", "today", "news"]))
            elif len(w) > 3: del w[j]
        b = " ".join(w)
    else:
        a = rng.choice(chinese); c = list(a)
        for _ in range(rng.randint(1, 4)):
            j = rng.randrange(len(c)); op = rng.randrange(3)
            if op == 0: c[j] = rng.choice("风花雪月山水云天")
            elif op == 1: c.insert(j, rng.choice("风花雪月山水云天"))
            else: del c[j]
        b = "".join(c)
    pairs.append((a, b))
failures, statuses = [], {}
# Twice: with the product's defaults (two recent short texts: the exact Jaccard
# decides) and with the recent-text stage off (the sketch's estimate decides).
def sample(env, required):
    paths = set()
    for n, (a, b) in enumerate(pairs):
        out = subprocess.run([neardup, "compare", a, b], capture_output=True, text=True, env=env)
        if out.returncode not in (0, 1):
            failures.append(f"pair {n}: compare exited {out.returncode}: {out.stderr.strip()}")
            continue
        fields = dict(re.match(r"(\w+)\s+(.*)", line).groups() for line in out.stdout.splitlines())
        verdict = fields["verdict"]
        stream = f"{tmp}/pair.jsonl"
        with open(stream, "w", encoding="utf-8") as f:
            f.write(json.dumps({"id": "a", "text": a}, ensure_ascii=False) + "\n")
            f.write(json.dumps({"id": "b", "text": b}, ensure_ascii=False) + "\n")
        scan = [json.loads(l) for l in subprocess.run([neardup, "scan", stream], capture_output=True,
                                                       text=True, check=True, env=env).stdout.splitlines()]
        dup = verdict.startswith("near-duplicate:")
        if dup != (scan[1]["verdict"] == "duplicate"):
            failures.append(f"pair {n}: compare says {verdict!r}, scan says {scan[1]}")
        statuses[out.returncode] = statuses.get(out.returncode, 0) + 1
        if out.returncode != (0 if scan[1]["verdict"] == "duplicate" else 1):
            failures.append(f"pair {n}: compare exited {out.returncode}, scan says {scan[1]['verdict']}")
        if dup and fields["similarity"].split()[0] != f'{scan[1]["similarity"]:.3f}':
            failures.append(f"pair {n}: similarity {fields['similarity']!r}, scan {scan[1]['similarity']}")
        distance = int(fields["distance"].split()[0])
        shared = fields["bands"] != "none of 3 shared"
        # Between two recent short texts the exact Jaccard decides, whichever
        # path found the pair: the path it names must still fit.
        if "a SimHash candidate" in verdict or "(within k bits" in verdict:
            paths.add("simhash"); ok = distance <= 3
        elif ("shares LSH band" in verdict or "a candidate through LSH band" in verdict
              or "(a shared LSH band" in verdict):
            paths.add("band"); ok = distance > 3 and shared
        elif "(a shared recent-text band" in verdict:
            paths.add("recent"); ok = True
        elif "but their exact Jaccard" in verdict:
            paths.add("exact"); ok = True
        elif "never compared" in verdict:
            paths.add("none"); ok = distance > 3 and not shared
        else:
            ok = False
        if not ok:
            failures.append(f"pair {n}: the path named does not fit: {out.stdout}")
    for path in required:
        if path not in paths:
            failures.append(f"the sample never reached the {path} path ({label(env)})")
    return paths
import os
def label(env):
    return "dedup.sketch.recent 0" if "NEARDUP_DEDUP_SKETCH_RECENT" in env else "defaults"
paths = sample(dict(os.environ), ("band", "exact", "recent", "none"))
paths |= sample(dict(os.environ, NEARDUP_DEDUP_SKETCH_RECENT="0"), ("simhash", "band", "none"))
for status in (0, 1):
    if status not in statuses:
        failures.append(f"no pair of the sample exited {status}")
# Trouble: 2, with the reason on stderr (usage) or on the verdict line (invalid).
for args, expect in ((["only-one-text"], "expected two texts"),
                     (["a", "b", "c"], "expected two texts"),
                     (["--no-such-flag", "a", "b"], "unknown option"),
                     (["", "the cat sat on the mat"], "verdict    invalid"),
                     (["the cat sat on the mat", "!!! ..."], "verdict    invalid")):
    out = subprocess.run([neardup, "compare", *args], capture_output=True, text=True)
    if out.returncode != 2 or expect not in out.stdout + out.stderr:
        failures.append(f"compare {args}: exited {out.returncode} (expected 2 and {expect!r}): "
                        f"{(out.stdout + out.stderr).strip()}")
help_text = " ".join(
    subprocess.run([neardup, "compare", "--help"], capture_output=True, text=True).stdout.split())
for phrase in ("0 the texts are near-duplicates; 1 they are not; 2 a usage",):
    if phrase not in help_text:
        failures.append(f"compare --help does not say {phrase!r}")
print(f"compare_test: {len(pairs)} pairs, paths {sorted(paths)}, exit statuses {statuses}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
PY
echo "compare_test: compare and scan agree"
