"""Feed and checks of the story summary tests (tests/cluster/story_*_test.sh).

feed WORK: stories.txt ("s<i>|story" for i in 0..9, 20 random words each),
  reposts-a.txt and reposts-b.txt ("r<i>-<j>|the story with a word of its own
  appended": story i has i reposts, the first half, rounded up, in a), and
  others.txt (300 "x<n>|text"); all.jsonl holds all of them for `neardup scan`.
scan SCAN_JSONL: "<reposts found as duplicates of their own story>/<duplicates>".
check SUMMARIES_TSV INPUT_TSV RUN: the summary topic (key TAB value lines)
  against the stories; prints "ok" or what is wrong, then the number of final
  and interim summaries.
latest SUMMARIES_TSV: the duplicates the latest summary of each story counts, summed.
page INPUT_TSV SUMMARY_JSON...: the biggest stories of the last hour on the
  instances' pages (/api/summary), summed over the instances by story:
  "s<i>:<duplicates in the hour>" most first, each with "/ok" when its 60
  per-minute counts add up to it and its excerpt is the story's text.
"""
import json
import random
import sys


def feed(work):
    rng = random.Random(11)
    word = lambda: "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6))
    stories = [[word() for _ in range(20)] for _ in range(10)]
    files = {"stories": [], "reposts-a": [], "reposts-b": []}
    for i, story in enumerate(stories):
        files["stories"].append((f"s{i}", " ".join(story)))
    for i, story in enumerate(stories):
        for j in range(i):
            part = "reposts-a" if j < (i + 1) // 2 else "reposts-b"
            files[part].append((f"r{i}-{j}", " ".join(story + [f"update{j}"])))
    files["others"] = [(f"x{n}", " ".join(word() for _ in range(20))) for n in range(300)]
    for name, lines in files.items():
        with open(f"{work}/{name}.txt", "w") as f:
            f.writelines(f"{k}|{t}\n" for k, t in lines)
    with open(f"{work}/all.jsonl", "w") as f:
        for name in ("stories", "reposts-a", "reposts-b", "others"):
            f.writelines(json.dumps({"id": k, "text": t}) + "\n" for k, t in files[name])


def scan(path):
    verdicts = [json.loads(l) for l in open(path)]
    own = sum(1 for r in verdicts if r["verdict"] == "duplicate" and r["id"].startswith("r")
              and r["of"] == "s" + r["id"][1:].split("-")[0])
    print(f'{own}/{sum(1 for r in verdicts if r["verdict"] == "duplicate")}')


def records(path):
    for line in open(path):
        if line.strip():
            key, value = line.rstrip("\n").split("\t", 1)
            yield key, json.loads(value)


def check(summaries, inputs, run):
    key_of = dict(l.rstrip("\n").split("\t", 1) for l in open(inputs) if "\t" in l)
    problems, finals, interims = [], {}, {}
    for key, s in records(summaries):
        o = s["original"]
        where = f'{o["topic"]}/{o["partition"]}/{o["offset"]}'
        if key != where:
            problems.append(f"record key {key} is not its original {where}")
        story = key_of.get(where, "?")
        if s["version"] != 1:
            problems.append(f"{story}: version {s['version']}")
        if not s["first_seen"] <= s["last_seen"]:
            problems.append(f"{story}: first_seen {s['first_seen']} > last_seen {s['last_seen']}")
        reposts = {f"r{story[1:]}-{j}" for j in range(10)}
        for p in s["samples"]:
            k = key_of.get(f'{p["topic"]}/{p["partition"]}/{p["offset"]}', "?")
            if k not in reposts:
                problems.append(f"{story}: sample {k} is not one of its reposts")
        if len(s["samples"]) != min(5, s["duplicates"]):
            problems.append(f"{story}: {len(s['samples'])} samples of {s['duplicates']} duplicates")
        if run == "local" and ("excerpt" not in s or s["key"] != story):
            problems.append(f"{story}: no excerpt or key ({s.get('key')})")
        if s["final"]:
            if story in finals:
                problems.append(f"{story}: final twice")
            finals[story] = s["duplicates"]
        else:
            interims.setdefault(story, []).append(s["duplicates"])
    want = {f"s{i}": i for i in range(1, 10)}
    if finals != want:
        problems.append(f"finals {sorted(finals.items())}, want {sorted(want.items())}")
    for story, counts in interims.items():
        if story not in finals or max(counts) > finals[story]:
            problems.append(f"{story}: interim counts {counts}, final {finals.get(story)}")
    print("; ".join(problems[:6]) if problems else "ok", len(finals),
          sum(len(c) for c in interims.values()))


def latest(summaries):
    last = {}
    for key, s in records(summaries):
        last[key] = s["duplicates"]
    print(sum(last.values()))


def page(inputs, *pages):
    key_of = dict(l.rstrip("\n").split("\t", 1) for l in open(inputs) if "\t" in l)
    texts = dict(l.rstrip("\n").split("|", 1) for l in open(inputs.rsplit("/", 1)[0] + "/stories.txt"))
    hours, ok = {}, {}
    for path in pages:
        for s in json.load(open(path))["stories"]:
            o = s["original"]
            story = key_of.get(f'{o["topic"]}/{o["partition"]}/{o["offset"]}', "?")
            hours[story] = hours.get(story, 0) + s["hour"]
            good = (len(s["per_minute"]) == 60 and sum(s["per_minute"]) == s["hour"]
                    and o["held"] and o["text"] == texts.get(story))
            ok[story] = ok.get(story, True) and good
    order = sorted(hours, key=lambda k: (-hours[k], k))
    print(" ".join(f"{k}:{hours[k]}" + ("/ok" if ok[k] else "/bad") for k in order))


if __name__ == "__main__":
    {"feed": feed, "scan": scan, "check": check, "latest": latest, "page": page}[sys.argv[1]](*sys.argv[2:])
