#!/usr/bin/env python3
"""Turns a `perf report` of neardup into one message's CPU cost by stage.

Reads `perf report --no-children --sort comm,dso,sym --stdio -g none
--field-separator=';'` output on stdin, sorts every sample's symbol into a
stage by the rules below (the first rule that matches wins) and prints a
Markdown table: each stage's share of the samples and its microseconds per
message, the share times the CPU time per message given on the command line.

Usage: stages.py --cpu-seconds S --messages N [--title T] [--pipeline] < report

--pipeline sorts by thread too: the embedded broker (`rdk:mock`) and the
bench's feeder are the bench's own cost, listed apart from neardup's.
"""

import argparse
import re
import sys

# (stage, regex over "comm;dso;symbol"), first match wins. Stages name the
# steps of one message in the order it takes them.
RULES = [
    ("the bench: embedded broker", r"^rdk:mock;"),
    ("the bench: feeder, feed and isolated loop", r"^bench-"),
    ("start and load (once)", r"_dl_|do_lookup|check_match|elf_load|RecentTexts::RecentTexts"),
    ("consume (librdkafka fetch, decompress, queue)", r"rd_kafka_(fetch|msgset_reader|consume|q_|op_|queue|toppar_fetch|buf_read|aligned|poll|consumer)|Consumer::|rd_kafka_msg_destroy"),
    ("produce (librdkafka batch, send, delivery)", r"rd_kafka_(produce|msgset_writer|msg_new|msg_partitioner|dr_|broker_produce|msgq|send|txn)|Producer::|rd_kafka_msg"),
    ("decode (JSON, lines)", r"simdjson|Decoder::|LineReader|at_pointer|json"),
    ("normalize", r"Normalizer|normalize"),
    ("features (tokens, shingles, weights)", r"FeatureExtractor|FeatureCounter|Fingerprinter::analyze|dedup::analyze|Analyzer::|Idf"),
    ("SimHash (bit sums)", r"run<|accumulate|simhash|SimHash"),
    ("MinHash sketch", r"Sketcher|hash_windows|join_ascii|kAvx\d+.*lambda|densify|hash_shingles|detail::pack|sort_low32"),
    ("short-text stage (recent texts)", r"RecentTexts"),
    ("window probe and insert", r"Window::|CellTables|kernels::filter|filter24_|filter_|mix64"),
    ("sketch index (LSH bands)", r"SketchIndex|estimate_jaccard"),
    ("decision (engine)", r"Engine::|Classifier::|decide"),
    ("verdict out (headers, records, output)", r"VerdictSink|append_hex|append_number|OutputRouter|headers|Headers|ChangelogRecord|encode|Verdict|JudgeRecord"),
    ("judge (requests, verdict records)", r";.*([Jj]udge|GroupDecider)"),
    ("offsets and commit", r"Ledger|commit|Commit"),
    ("metrics and page", r"prometheus|Metrics|RecentPairs|metrics"),
    ("allocation", r"malloc|free@|cfree|_int_free|_int_malloc|operator new|operator delete|sysmalloc|unlink_chunk|tcache"),
    ("memory copies", r"memmove|memcpy|memset|memcmp|memchr|strlen"),
    ("locks and wake-ups", r"pthread|futex|mtx_|cnd_|mutex|condition"),
    ("kernel: syscalls, page faults, network", r";\[kernel|\[k\]|kallsyms"),
    ("librdkafka, other", r"librdkafka|rd_kafka|^rdk:"),
    ("C library, other", r";libc\.so"),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpu-seconds", type=float, required=True, help="the run's CPU time (user + sys)")
    ap.add_argument("--messages", type=int, required=True)
    ap.add_argument("--title", default="stage")
    ap.add_argument("--pipeline", action="store_true")
    args = ap.parse_args()

    rules = [(stage, re.compile(rx)) for stage, rx in RULES]
    shares: dict[str, float] = {}
    threads: dict[str, float] = {}
    total = 0.0
    for line in sys.stdin:
        if line.startswith("#") or not line.strip():
            continue
        parts = [p.strip() for p in line.rstrip("\n").split(";")]
        if len(parts) < 4:
            continue
        try:
            pct = float(parts[0].rstrip("%"))
        except ValueError:
            continue
        key = ";".join(parts[1:])
        stage = next((s for s, rx in rules if rx.search(key)), "other")
        if not args.pipeline and stage.startswith("the bench"):
            stage = "other"
        shares[stage] = shares.get(stage, 0.0) + pct
        threads[parts[1]] = threads.get(parts[1], 0.0) + pct
        total += pct
    if args.pipeline:
        print("| thread | share |")
        print("|---|---:|")
        for comm, pct in sorted(threads.items(), key=lambda kv: -kv[1]):
            if pct / total >= 0.005:
                print(f"| {comm} | {100 * pct / total:.1f}% |")
        print()
    if total <= 0:
        print("stages.py: no samples in the report", file=sys.stderr)
        return 1
    us_per_msg = args.cpu_seconds * 1e6 / args.messages
    order = [s for s, _ in RULES] + ["other"]
    print(f"| {args.title} | share | us/message |")
    print("|---|---:|---:|")
    ours = 0.0
    for stage in order:
        if stage not in shares or shares[stage] / total < 0.0005:
            continue
        share = shares[stage] / total
        if not stage.startswith("the bench"):
            ours += share
        print(f"| {stage} | {100 * share:.1f}% | {share * us_per_msg:.2f} |")
    print(f"| **all** | 100% | **{us_per_msg:.2f}** |")
    if args.pipeline:
        print(f"| **neardup's own (all but the bench)** | {100 * ours:.1f}% | **{ours * us_per_msg:.2f}** |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
