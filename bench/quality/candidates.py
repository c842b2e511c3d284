#!/usr/bin/env python3
"""Candidate recall: which true near-duplicate pairs reach the sketch's verification.

For every record labelled `dup` (ground_truth.py: shingle Jaccard >= 0.8 to some
earlier record) the pair (record, its best earlier match) is judged the way the
engine's two candidate paths would see it, with the default configuration:

  simhash   the fingerprints are within max_distance (3) bits
  band      the two texts share an LSH band key (3 bands of 4 bins)
  verified  a candidate by either path whose sketches estimate a Jaccard >= 0.7

reported per Jaccard band (0.80-0.85, 0.85-0.90, 0.90-0.95, 0.95-1.00). This is
a pair-level figure: the window holds only kept records, so a record can still
be caught through another earlier copy (or missed when its best match was
itself a duplicate and never kept); `score.py` measures the verdicts.

Everything comes from the engine itself: neardup_sketch_dump (bench/tools)
prints each text's fingerprint, sketch and band keys.

Usage: candidates.py [--dump PATH] [--out DIR] [--band-bins N] [STREAM ...]
  --dump  neardup_sketch_dump (default build/release/bench/neardup_sketch_dump)
  --out   the quality output directory with streams/ and labels/ (run.sh's,
          default bench/quality/out)
  --band-bins  dedup.sketch.band_bins of the bands compared (default 4)
Prints a Markdown table.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
JACCARD_BANDS = ((0.80, 0.85), (0.85, 0.90), (0.90, 0.95), (0.95, 1.01))
MAX_DISTANCE = 3
THRESHOLD = 0.7
BITS = 2


def analyses(dump, texts, band_bins=None):
    """-> [(fingerprint, sketch words, band keys) or None] per text."""
    data = "".join(t.encode("utf-8").hex() + "\n" for t in texts).encode()
    command = [dump] + (["--band-bins", str(band_bins)] if band_bins else [])
    out = subprocess.run(command, input=data, capture_output=True, check=True).stdout.decode()
    rows = []
    for line in out.splitlines():
        f = line.split("\t")
        if f[2] == "-":
            rows.append(None)
            continue
        sketch = (int(f[2][:16], 16), int(f[2][16:], 16))
        rows.append((int(f[1], 16), sketch, f[3].split(",")))
    if len(rows) != len(texts):
        sys.exit(f"candidates: {dump} printed {len(rows)} lines for {len(texts)} texts")
    return rows


def estimate(a, b):
    """dedup::estimate_jaccard for 2-bit bins."""
    differing = 0
    for x, y in zip(a, b):
        d = x ^ y
        d = (d | (d >> 1)) & 0x5555555555555555
        differing += bin(d).count("1")
    bins = 128 // BITS
    agree = (bins - differing) / bins
    chance = 1 / (1 << BITS)
    return min(1.0, max(0.0, (agree - chance) / (1 - chance)))


def stream_table(dump, out_dir, stream, band_bins=None):
    with open(os.path.join(out_dir, "streams", f"{stream}.jsonl"), encoding="utf-8") as f:
        recs = [json.loads(line) for line in f if line.strip()]
    with open(os.path.join(out_dir, "labels", f"{stream}.jsonl"), encoding="utf-8") as f:
        labels = [json.loads(line) for line in f if line.strip()]
    rows = analyses(dump, [r["text"] for r in recs], band_bins)
    at = {r["id"]: i for i, r in enumerate(recs)}
    counts = {band: [0, 0, 0, 0, 0] for band in JACCARD_BANDS}  # pairs, simhash, band, candidate, verified
    for i, lab in enumerate(labels):
        if lab["label"] != "dup" or rows[i] is None or rows[at[lab["best"]]] is None:
            continue
        (fa, sa, ka), (fb, sb, kb) = rows[i], rows[at[lab["best"]]]
        simhash = bin(fa ^ fb).count("1") <= MAX_DISTANCE
        band = any(x == y for x, y in zip(ka, kb))
        verified = (simhash or band) and estimate(sa, sb) >= THRESHOLD
        for lo, hi in JACCARD_BANDS:
            if lo <= lab["jaccard"] < hi:
                c = counts[(lo, hi)]
                c[0] += 1
                c[1] += simhash
                c[2] += band
                c[3] += simhash or band
                c[4] += verified
    return counts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", default=os.path.join(ROOT, "build", "release", "bench", "neardup_sketch_dump"))
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--band-bins", type=int, help="dedup.sketch.band_bins (default: the default config's)")
    ap.add_argument("streams", nargs="*",
                    default=["long_en", "short_en", "short_zh", "mixed", "very_short"])
    args = ap.parse_args(argv)
    if not os.access(args.dump, os.X_OK):
        sys.exit(f"candidates: {args.dump} is not an executable (build neardup_sketch_dump)")
    print("| stream | Jaccard | pairs | SimHash <= 3 bits | shared band | candidate (either) | verified (>= 0.7) |")
    print("|---|---|---|---|---|---|---|")
    for stream in args.streams:
        if not os.path.exists(os.path.join(args.out, "labels", f"{stream}.jsonl")):
            continue
        total = [0, 0, 0, 0, 0]
        for (lo, hi), c in stream_table(args.dump, args.out, stream, args.band_bins).items():
            total = [t + x for t, x in zip(total, c)]
            if c[0]:
                print(f"| {stream} | {lo:.2f}-{min(hi, 1.0):.2f} | {c[0]} | " +
                      " | ".join(f"{x / c[0]:.3f}" for x in c[1:]) + " |")
        if total[0]:
            print(f"| {stream} | **0.80-1.00** | {total[0]} | " +
                  " | ".join(f"{x / total[0]:.3f}" for x in total[1:]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
