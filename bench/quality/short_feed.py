#!/usr/bin/env python3
"""A feed of short texts only, for timing `neardup scan` where the recent-text
stage works on every record: the records of the six short quality streams
(very_short, hard_short, boilerplate, templated, short_zh, short_en; built by
run.sh), five times over, with a number appended from the second pass on (so
later passes are near-duplicates, not exact copies). 90,000 records at full size.

Usage: short_feed.py [--out-dir bench/quality/out] > short_feed.jsonl
Then, e.g.: /usr/bin/time -f '%U %S' build/release/app/neardup scan short_feed.jsonl > /dev/null
"""

import argparse
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=os.path.join(HERE, "out"))
    args = ap.parse_args(argv)
    rng = random.Random(5)
    n = 0
    for rep in range(5):
        for stream in ("very_short", "hard_short", "boilerplate", "templated", "short_zh", "short_en"):
            with open(os.path.join(args.out_dir, "streams", f"{stream}.jsonl"), encoding="utf-8") as f:
                for line in f:
                    text = json.loads(line)["text"]
                    if rep:
                        text += " " + str(rng.randint(0, 999))
                    sys.stdout.write(json.dumps({"id": n, "text": text}, ensure_ascii=False) + "\n")
                    n += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
