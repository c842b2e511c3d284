#!/usr/bin/env python3
"""One setting swept over values: the quality figures of each, for choosing a threshold.

For every value V of KEY, scans every labelled stream with a config that is
BASE (a YAML file, or the defaults) plus `KEY: V`, and prints one Markdown
row per (value, stream): precision, recall, the lowest recall over the Jaccard
bands 0.80-1.00 and both languages, the share of flagged records below
Jaccard 0.8 and 0.7, and for the repost streams the distinct originals
flagged and the reposts caught. Run bench/quality/run.sh first (it builds
and labels the streams).

Usage: curve.py KEY V1,V2,... [--base FILE] [--neardup PATH] [--streams S1,S2]
Example: curve.py dedup.sketch.exact_threshold 0.7,0.75,0.8 --base bench/quality/strict.yaml
"""

import argparse
import os
import subprocess
import sys
import tempfile

import score

HERE = os.path.dirname(os.path.abspath(__file__))


def config_text(base, key, value):
    """BASE's YAML with `key: value` merged in (two-level keys under dedup: only)."""
    parts = key.split(".")
    lines = open(base, encoding="utf-8").read().splitlines() if base else []
    if not lines:
        lines = ["dedup:"]
    indent = "    " if len(parts) == 3 else "  "
    lines = [l for l in lines if not l.startswith(f"{indent}{parts[-1]}:")]  # the swept value wins
    # Insert under the right section; the config loader accepts a section listed once.
    if len(parts) == 3:
        section = f"  {parts[1]}:"
        if section in lines:
            i = lines.index(section)
            lines.insert(i + 1, f"    {parts[2]}: {value}")
        else:
            lines.insert(lines.index("dedup:") + 1, f"{section}\n    {parts[2]}: {value}")
    else:
        lines.insert(lines.index("dedup:") + 1, f"  {parts[1]}: {value}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("key")
    ap.add_argument("values")
    ap.add_argument("--base")
    ap.add_argument("--neardup", default=os.path.join(HERE, "..", "..", "build", "release", "app", "neardup"))
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--streams", default=",".join(score.STREAMS))
    args = ap.parse_args(argv)
    print(f"{args.key} over {args.values}" + (f", base {args.base}" if args.base else ", base: defaults"))
    print()
    print("| value | stream | P | R | lowest band recall | flagged <0.8 | flagged <0.7 | originals flagged | reposts caught |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for value in args.values.split(","):
            cfg = os.path.join(tmp, "config.yaml")
            with open(cfg, "w", encoding="utf-8") as f:
                f.write(config_text(args.base, args.key, value))
            for stream in args.streams.split(","):
                spath = os.path.join(args.out, "streams", f"{stream}.jsonl")
                lpath = os.path.join(args.out, "labels", f"{stream}.jsonl")
                if not os.path.exists(lpath):
                    continue
                opath = os.path.join(tmp, f"{stream}.jsonl")
                score.run_scan(args.neardup, spath, cfg, opath)
                recs, labels, verdicts = (score.read_jsonl(p) for p in (spath, lpath, opath))
                m = score.evaluate(recs, labels, verdicts)[0]["all"]
                d = score.detail(recs, labels, verdicts)
                bands = [score.ratio(v) for k, v in d["bands"].items() if not k.endswith("/all") and v[1] >= 10]
                row = [value, stream, score.fmt(m["precision"]), score.fmt(m["recall"]),
                       score.fmt(min(bands) if bands else None), score.fmt(d["flagged_below_0.8"]),
                       score.fmt(d["flagged_below_0.7"])]
                if stream in score.REPOST_STREAMS:
                    caught = [sum(v[0] for v in d["reposts"].values()), sum(v[1] for v in d["reposts"].values())]
                    row += [score.fmt(score.ratio(d["originals"])), score.fmt(score.ratio(caught))]
                else:
                    row += ["", ""]
                print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
