#!/usr/bin/env python3
"""Prototype of a two-stage decision rule, simulated on the evaluation streams.

Stage 1 (candidates): earlier KEPT records whose SimHash fingerprint (taken from
`neardup scan` output, default config) is within K(n) bits, where n is the
number of distinct features of the incoming text (words; CJK 2-grams) and K is
a per-band threshold. Stage 2 (verification): a b-bit one-permutation MinHash
sketch (k bins, b bits per bin: k*b/8 bytes per window entry) over the same
character shingles as the ground truth; duplicate when the estimated Jaccard
is >= tau. Records judged unique are inserted, like the engine's window.

Prints (1) candidate recall by feature band and K: the share of true
duplicates that have a true near-duplicate (J >= 0.8) among earlier records
within K bits -- the ceiling of any verifier behind a SimHash stage -- and the
mean number of candidates per query; (2) the best rule found on a small grid.

Usage: proto.py [--dir bench/quality/out] [--scan default]
"""

import argparse
import hashlib
import json
import os
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ground_truth as gt  # noqa: E402

STREAMS = ("long_en", "short_en", "short_zh", "mixed")
BANDS = ((0, 16), (16, 32), (32, 64), (64, 128), (128, 1 << 30))
MAXK = 24


def features(text):
    norm = gt.normalize(text)
    feats = set()
    for word in norm.split(" "):
        run = ""
        for ch in word + " ":
            if gt._is_cjk(ch):
                run += ch
                continue
            if len(run) == 1:
                feats.add(run)
            feats.update(run[i:i + 2] for i in range(len(run) - 1))
            run = ""
        rest = "".join(" " if gt._is_cjk(c) else c for c in word).split()
        feats.update(rest)
    return feats


def band_of(n):
    for i, (lo, hi) in enumerate(BANDS):
        if lo <= n < hi:
            return i
    return len(BANDS) - 1


def h64(s):
    return int.from_bytes(hashlib.blake2b(s.encode("utf-8"), digest_size=8).digest(), "little")


def oph_sketch(shingles, k):
    """One-permutation MinHash with k bins, empty bins filled from the next bin (rotation)."""
    bins = [None] * k
    for s in shingles:
        h = h64(s)
        b, v = h % k, h // k
        if bins[b] is None or v < bins[b]:
            bins[b] = v
    if all(x is None for x in bins):
        return [0] * k
    out = list(bins)
    for i in range(k):
        j, step = i, 0
        while bins[j] is None:
            j = (j + 1) % k
            step += 1
        out[i] = bins[j] + step * 0x9E3779B97F4A7C15 if step else bins[j]
    return out


def est_jaccard(a, b, bits):
    mask = (1 << bits) - 1
    eq = sum(((x ^ y) & mask) == 0 for x, y in zip(a, b)) / len(a)
    c = 1.0 / (1 << bits)
    return (eq - c) / (1 - c)


def load(dirpath, stream, scan):
    recs = [json.loads(l) for l in open(os.path.join(dirpath, "streams", f"{stream}.jsonl"), encoding="utf-8")]
    labs = [json.loads(l) for l in open(os.path.join(dirpath, "labels", f"{stream}.jsonl"), encoding="utf-8")]
    outs = [json.loads(l) for l in open(os.path.join(dirpath, "scan", scan, f"{stream}.jsonl"), encoding="utf-8")]
    return recs, labs, outs


def prepare(recs, labs, outs, sketch_cfgs):
    n = len(recs)
    fps = [int(o.get("fingerprint", "0"), 16) for o in outs]
    nfeat = [len(features(r["text"])) for r in recs]
    sh = [gt.shingles(r["text"]) for r in recs]
    sketches = {k: [oph_sketch(s, k) for s in sh] for k in {k for k, _ in sketch_cfgs}}
    near = []  # i -> [(dist, j)] for j < i within MAXK
    for i in range(n):
        fi = fps[i]
        near.append([(d, j) for j in range(i) if (d := (fi ^ fps[j]).bit_count()) <= MAXK])
    return fps, nfeat, sh, sketches, near


_EST = {}


def simulate(labs, nfeat, sh, sketches, near, kband, k, bits, tau):
    n = len(labs)
    cache = _EST.setdefault((id(sketches), k, bits), {})
    kept = [False] * n
    pred = [False] * n
    for i in range(n):
        K = kband[band_of(nfeat[i])]
        dup = False
        for d, j in near[i]:
            if d <= K and kept[j]:
                e = cache.get((i, j))
                if e is None:
                    e = cache[(i, j)] = est_jaccard(sketches[k][i], sketches[k][j], bits)
                if e >= tau:
                    dup = True
                    break
        pred[i] = dup
        kept[i] = not dup
    return pred


def score(labs, recs, pred):
    rows = defaultdict(list)
    for lab, rec, p in zip(labs, recs, pred):
        if lab["label"] == "gray":
            continue
        t = lab["label"] == "dup"
        ln = len(rec["text"])
        rows["all"].append((t, p))
        rows["<100" if ln < 100 else "100-500" if ln <= 500 else ">500"].append((t, p))
    out = {}
    for key, rs in rows.items():
        tp = sum(t and p for t, p in rs)
        fp = sum((not t) and p for t, p in rs)
        fn = sum(t and not p for t, p in rs)
        pr = tp / (tp + fp) if tp + fp else 1.0
        rc = tp / (tp + fn) if tp + fn else 1.0
        out[key] = (pr, rc, 2 * pr * rc / (pr + rc) if pr + rc else 0.0)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=os.path.join(HERE, "out"))
    ap.add_argument("--scan", default="default")
    args = ap.parse_args(argv)
    sketch_cfgs = ((128, 1), (64, 2), (32, 4), (16, 8), (128, 2), (64, 4), (32, 8))
    data = {}
    for s in STREAMS:
        recs, labs, outs = load(args.dir, s, args.scan)
        data[s] = (recs, labs) + prepare(recs, labs, outs, sketch_cfgs)
        print(f"proto: prepared {s}", file=sys.stderr)

    # (1) candidate recall ceiling by feature band and K
    print("## Candidate recall of a SimHash stage (true dups with a J>=0.8 earlier record within K bits)\n")
    ks = (3, 4, 6, 8, 10, 12, 16, 20, 24)
    print("| stream | features | true dups | " + " | ".join(f"K={k}" for k in ks) + " | cand/query K=8 | K=12 |")
    print("|---|---|---|" + "---|" * (len(ks) + 2))
    for s, (recs, labs, fps, nfeat, sh, sketches, near) in data.items():
        per_band = defaultdict(list)
        load_band = defaultdict(lambda: [0, 0, 0])
        for i, lab in enumerate(labs):
            b = band_of(nfeat[i])
            lb = load_band[b]
            lb[0] += 1
            lb[1] += sum(1 for d, _ in near[i] if d <= 8)
            lb[2] += sum(1 for d, _ in near[i] if d <= 12)
            if lab["label"] != "dup":
                continue
            dmin = min((d for d, j in near[i] if gt.jaccard(sh[i], sh[j]) >= gt.DUP), default=99)
            per_band[b].append(dmin)
        for b in sorted(per_band):
            ds = per_band[b]
            lo, hi = BANDS[b]
            cells = " | ".join(f"{sum(d <= k for d in ds) / len(ds):.2f}" for k in ks)
            lb = load_band[b]
            print(f"| {s} | {lo}-{hi if hi < 1 << 29 else '∞'} | {len(ds)} | {cells} | "
                  f"{lb[1] / lb[0]:.1f} | {lb[2] / lb[0]:.1f} |")

    # (2) grid over the rule
    print("\n## Two-stage rule: best settings on the grid (F1 per stream, min precision over buckets)\n")
    kbands = {
        "K=3 everywhere (today)": (3, 3, 3, 3, 3),
        "K=8 everywhere": (8, 8, 8, 8, 8),
        "K by band 12/10/8/6/4": (12, 10, 8, 6, 4),
        "K by band 16/12/10/8/6": (16, 12, 10, 8, 6),
        "K by band 20/16/12/8/6": (20, 16, 12, 8, 6),
        "K by band 24/20/16/10/8": (24, 20, 16, 10, 8),
    }
    print("| K | sketch | tau | long_en F1 | short_en F1 | short_zh F1 | mixed F1 | min P (bucket) |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for kname, kband in kbands.items():
        for k, bits in sketch_cfgs:
            for tau in (0.6, 0.65, 0.7, 0.75):
                res = {}
                for s, (recs, labs, fps, nfeat, sh, sketches, near) in data.items():
                    res[s] = score(labs, recs, simulate(labs, nfeat, sh, sketches, near, kband, k, bits, tau))
                minp = min(v[0] for r in res.values() for v in r.values())
                rows.append((kname, f"{k}x{bits}b={k * bits // 8}B", tau, res, minp))
    ok = [r for r in rows if r[4] >= 0.95]
    ok.sort(key=lambda r: -min(r[3]["short_en"]["all"][2], r[3]["short_zh"]["all"][2], r[3]["long_en"]["all"][2]))
    for kname, sk, tau, res, minp in ok[:12] + [r for r in rows if r[0].startswith("K=3") and r[1] == "32x8b=32B" and r[2] == 0.7]:
        print(f"| {kname} | {sk} | {tau} | " + " | ".join(f"{res[s]['all'][2]:.3f}" for s in STREAMS) + f" | {minp:.3f} |")


if __name__ == "__main__":
    main()
