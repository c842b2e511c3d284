#!/usr/bin/env python3
"""Ground-truth labels for a stream, independent of SimHash.

For each record (in arrival order): the best Jaccard similarity of its shingle
set to ANY earlier record of the stream, and a label:
    dup   Jaccard >= 0.8
    gray  0.6 <= Jaccard < 0.8   (excluded from scoring)
    uniq  Jaccard < 0.6

Normalization: Unicode NFKC, case fold, every run of characters that are not
letters, marks or digits (punctuation, symbols, spaces, controls) -> one space.
Shingles: character 5-grams of the normalized text; when the text is mostly
CJK (more than half of its non-space characters), character 2-grams of the
normalized text with spaces removed. A text shorter than n is one shingle.

Exactness. Similarities >= FLOOR (0.6, the gray-zone bound) are computed exactly; below it the
record is reported with jaccard = null (known to be < FLOOR, hence `uniq`).
The candidate search is prefix filtering (Bayardo et al., AllPairs): tokens are
ordered by ascending document frequency over the whole stream; if
J(x, y) >= t then |x & y| >= o := max(ceil(t|x|), ceil(t|y|)), and two sets
sharing o tokens must share one token among the first |x|-o+1 of x and the first
|y|-o+1 of y; since |x|-ceil(t|x|)+1 >= |x|-o+1 (same for y), indexing each
record's first |.|-ceil(t|.|)+1 tokens finds every pair with J >= t. A candidate
first met through token T at positions i (in x) and j (in y) is skipped when
1 + min(|x|-i-1, |y|-j-1) < ceil(t/(1+t) (|x|+|y|)): T is the smallest common
token, so no more overlap is possible, and J >= t needs that much. Every other
candidate is verified with an exact set intersection. `--check N` compares
the result with brute force on the first N records.

Usage: ground_truth.py STREAM.jsonl [-o LABELS.jsonl] [--check N]
Output lines: {"id", "jaccard": float|null, "best": id|null, "label", "len", "lang"}
"""

import argparse
import json
import math
import sys
import unicodedata
from collections import Counter

DUP = 0.8
GRAY = 0.6
FLOOR = 0.6


def _is_cjk(ch):
    cp = ord(ch)
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2FFFF
            or 0xF900 <= cp <= 0xFAFF or 0x3040 <= cp <= 0x30FF or 0xAC00 <= cp <= 0xD7AF)


def normalize(text):
    text = unicodedata.normalize("NFKC", text).casefold()
    out = []
    space = True  # suppress leading space
    for ch in text:
        if unicodedata.category(ch)[0] in "LMN":
            out.append(ch)
            space = False
        elif not space:
            out.append(" ")
            space = True
    return "".join(out).rstrip(" ")


def shingles(text):
    norm = normalize(text)
    chars = norm.replace(" ", "")
    cjk = bool(chars) and sum(_is_cjk(c) for c in chars) * 2 > len(chars)
    s, n = (chars, 2) if cjk else (norm, 5)
    if not s:
        return frozenset()
    if len(s) <= n:
        return frozenset([s])
    return frozenset(s[i:i + n] for i in range(len(s) - n + 1))


def jaccard(a, b):
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def label_of(j):
    if j is not None and j >= DUP:
        return "dup"
    if j is not None and j >= GRAY:
        return "gray"
    return "uniq"


def best_matches(sets, t=FLOOR):
    """For each i: (best Jaccard to any j < i if >= t else None, argmax j)."""
    df = Counter()
    for s in sets:
        df.update(s)
    rank = {tok: r for r, tok in enumerate(sorted(df, key=lambda k: (df[k], k)))}
    index = {}
    out = []
    for i, s in enumerate(sets):
        toks = sorted(rank[x] for x in s)
        size = len(toks)
        best, arg = None, None
        if size:
            p = size - math.ceil(t * size - 1e-9) + 1
            lo, hi = t * size - 1e-9, size / t + 1e-9
            seen = set()
            for pos, tok in enumerate(toks[:p]):
                for j, pos_j in index.get(tok, ()):
                    if j in seen:
                        continue
                    seen.add(j)
                    size_j = len(sets[j])
                    if not lo <= size_j <= hi:
                        continue
                    # positional filter (PPJoin): tok is the smallest common token,
                    # so the overlap is at most 1 + the tokens after it in both sets.
                    need = math.ceil(t / (1 + t) * (size + size_j) - 1e-9)
                    if 1 + min(size - pos - 1, size_j - pos_j - 1) < need:
                        continue
                    jac = jaccard(s, sets[j])
                    if jac >= t - 1e-12 and (best is None or jac > best):
                        best, arg = jac, j
            for pos, tok in enumerate(toks[:p]):
                index.setdefault(tok, []).append((i, pos))
        out.append((best, arg))
    return out


def brute_force(sets):
    out = []
    for i, s in enumerate(sets):
        best, arg = None, None
        for j in range(i):
            jac = jaccard(s, sets[j])
            if best is None or jac > best:
                best, arg = jac, j
        out.append((best if best is not None and best >= FLOOR - 1e-12 else None, arg))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stream")
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("--check", type=int, default=0, metavar="N",
                    help="also brute-force the first N records and fail on any difference")
    args = ap.parse_args(argv)

    recs = []
    with open(args.stream, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                recs.append(json.loads(line))
    sets = [shingles(r.get("text", "")) for r in recs]
    res = best_matches(sets)

    if args.check:
        n = min(args.check, len(sets))
        ref = brute_force(sets[:n])
        for i in range(n):
            a, b = res[i][0], ref[i][0]
            if (a is None) != (b is None) or (a is not None and abs(a - b) > 1e-12):
                sys.exit(f"ground_truth: --check mismatch at record {i}: prefix filter {a}, brute force {b}")
        print(f"ground_truth: --check {n} records: identical to brute force", file=sys.stderr)

    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    counts = Counter()
    for r, (j, arg) in zip(recs, res):
        lab = label_of(j)
        counts[lab] += 1
        out.write(json.dumps({"id": r["id"], "jaccard": None if j is None else round(j, 6),
                              "best": None if arg is None else recs[arg]["id"], "label": lab,
                              "len": len(r.get("text", "")), "lang": r.get("lang")},
                             ensure_ascii=False) + "\n")
    if out is not sys.stdout:
        out.close()
    print(f"ground_truth: {args.stream}: {len(recs)} records, dup {counts['dup']}, "
          f"gray {counts['gray']}, uniq {counts['uniq']}", file=sys.stderr)


if __name__ == "__main__":
    main()
