#!/usr/bin/env python3
"""How much of a text a URL or a hashtag edit leaves in common with its source.

For every variant made by a `url` or a `hashtag` edit (alone or with others),
the ground truth's Jaccard of the variant and its source (ground_truth.py:
normalized 5-grams, CJK 2-grams) on the whole texts and on the texts without
URLs, hashtags and repost mentions. Per stream and edit it prints how many
such variants there are, how many are near-duplicates once the boilerplate is
stripped (J >= 0.8), and of those how many share at least 0.6 of the whole
texts (the truth's gray zone or above) and how many less (the truth calls them
unique when nothing closer came before). A rule on the texts alone cannot
call the last kind duplicates in one stream and unique in another. Run
bench/quality/run.sh first (it builds the streams).

Usage: boilerplate_overlap.py [STREAM ...]   (default: every stream with such edits)
"""

import json
import os
import re
import sys

from ground_truth import jaccard, shingles

HERE = os.path.dirname(os.path.abspath(__file__))
URL = re.compile(r"https?://\S+|www\.\S+")
HASHTAG = re.compile(r"#\w+#?")
MENTION = re.compile(r"(?:\bRT\s+|\bvia\s+|转发\s*|//\s*)?@\w+\s*[:：]?")
STREAMS = ("templated", "boilerplate", "news", "short_en", "short_zh", "mixed")


def stripped(text):
    return MENTION.sub(" ", HASHTAG.sub(" ", URL.sub(" ", text)))


def edit_of(edits):
    """'url' or 'hashtag' when an edit of that kind made the variant, else None."""
    for kind in ("url", "hashtag"):
        if any(kind in e for e in edits):
            return kind
    return None


def overlap(path):
    records = [json.loads(line) for line in open(path, encoding="utf-8")]
    by_id = {r["id"]: r for r in records}
    counts = {}
    for r in records:
        kind = edit_of(r.get("edits") or [])
        if r.get("kind") != "variant" or not r.get("src") or kind is None:
            continue
        source = by_id[r["src"]]
        whole = jaccard(shingles(r["text"]), shingles(source["text"]))
        bare = jaccard(shingles(stripped(r["text"])), shingles(stripped(source["text"])))
        c = counts.setdefault(kind, [0, 0, 0, 0])
        c[0] += 1
        c[1] += bare >= 0.8
        c[2] += bare >= 0.8 and whole >= 0.6
        c[3] += bare >= 0.8 and whole < 0.6
    return counts


def main(argv):
    names = argv or STREAMS
    print("| stream | edit | variants | J >= 0.8 stripped | of those, whole J >= 0.6 | whole J < 0.6 |")
    print("|---|---|---|---|---|---|")
    for name in names:
        path = os.path.join(HERE, "out", "streams", name + ".jsonl")
        if not os.path.exists(path):
            sys.exit(f"boilerplate_overlap: {path} is missing; run bench/quality/run.sh first")
        for kind, (n, near, gray_or_more, below) in sorted(overlap(path).items()):
            print(f"| {name} | {kind} | {n} | {near} | {gray_or_more} | {below} |")


if __name__ == "__main__":
    main(sys.argv[1:])
