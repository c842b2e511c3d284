#!/usr/bin/env python3
"""Writes deploy/demo/feed.jsonl, the demo feed of `neardup demo`.

Originals are news items and microblog posts (English and Chinese) built from
independent random slots, so two originals rarely share more than a word or
two; about a third of the records are reposts of a recent original with the
small edits real feeds make: case and punctuation, an appended URL, hashtag or
mention, a "BREAKING:" prefix, one word changed, a number updated, Chinese
punctuation or a traditional character. Two records are invalid on purpose (an
empty text and a record without the text field): they go to the dead-letter
topic. Deterministic (seeded): run it again to get the same file.
"""
import json
import random
import sys

rng = random.Random(7)

CITIES = ["Hanoi", "Quito", "Leeds", "Oslo", "Bergen", "Porto", "Lagos", "Perth", "Lima", "Riga",
          "Tartu", "Cork", "Graz", "Kyoto", "Accra", "Quebec"]
SUBJECTS = ["the rail operator", "the city council", "a local bakery", "the harbour authority", "the regional hospital",
            "the university", "a football club", "the water company", "farmers", "the energy regulator",
            "a group of teachers", "the museum", "firefighters", "the airport", "a start-up", "the orchestra"]
ACTIONS = ["cancels", "approves", "opens", "closes", "celebrates", "postpones", "announces", "doubles",
           "rejects", "launches", "rebuilds", "wins"]
OBJECTS = ["its evening timetable", "a new budget for cycling lanes", "a second site near the river",
           "the old bridge", "a record harvest festival", "the summer concert series", "free tap water points",
           "a night market", "its annual report", "a scholarship for nurses", "the league title",
           "an exhibition of medieval maps", "a solar farm", "a late-night bus line", "a recycling scheme"]
REASONS = ["after a signal failure", "after months of debate", "because of heavy snow", "to cut waiting times",
           "after a record year", "despite a funding gap", "ahead of the holidays", "after a public vote",
           "to attract young families", "after complaints from residents"]
DETAILS = ["Officials said more details would follow on Monday.", "Critics called the decision rushed.",
           "Volunteers worked through the night.", "Tickets sell out within hours every year.",
           "The project took three years to plan.", "Shop owners welcomed the news.",
           "A spokesperson declined to comment further.", "Residents can send questions by email.",
           "The mayor is expected to attend.", "Prices will stay the same until spring."]
ZH_PLACES = ["杭州", "成都", "西安", "厦门", "青岛", "昆明", "南京", "长沙"]
ZH_EVENTS = ["地铁新线今天开通", "博物馆推出夜间开放", "暴雨导致多条道路封闭", "老城区开始改造",
             "马拉松比赛吸引三万人参加", "图书馆延长开放时间", "新的公园对市民免费开放", "机场增加国际航班"]
ZH_TAILS = ["市民纷纷前往体验。", "相关部门提醒注意安全。", "预计下月全面完成。", "网友表示非常期待。",
            "当地商家生意明显好转。", "专家建议提前规划出行。"]
ZH_DETAILS = ["首日客流超过五万人次", "部分区域实行交通管制", "活动将持续到周末", "工程总投资约十亿元",
              "现场秩序井然", "周边停车位十分紧张", "志愿者在现场提供帮助", "票价维持不变"]
TRADITIONAL = {"线": "線", "导": "導", "长": "長", "间": "間", "图": "圖", "书": "書", "际": "際", "机": "機",
               "场": "場", "开": "開", "门": "門", "马": "馬", "赛": "賽", "网": "網", "专": "專", "划": "劃"}


def english_original():
    number = rng.randint(12, 480)
    return (f"{rng.choice(CITIES)}: {rng.choice(SUBJECTS)} {rng.choice(ACTIONS)} {rng.choice(OBJECTS)} "
            f"{rng.choice(REASONS)}; {number} people signed up in the first week. {rng.choice(DETAILS)}")


def chinese_original():
    return (f"{rng.choice(ZH_PLACES)}{rng.choice(ZH_EVENTS)}，{rng.choice(ZH_DETAILS)}，"
            f"{rng.choice(ZH_TAILS)}")


def repost(text):
    if any("\u4e00" <= c <= "\u9fff" for c in text):
        edit = rng.choice(["trad", "punct", "tag", "space"])
        if edit == "trad":  # one character in its traditional form
            for i, c in enumerate(text):
                if c in TRADITIONAL:
                    return text[:i] + TRADITIONAL[c] + text[i + 1:]
            return text + "！"
        if edit == "punct":
            return text.replace("，", ",").replace("。", "!")
        if edit == "tag":
            return text + " #同城新闻#"
        return text.replace("，", " ")
    edit = rng.choice(["case", "punct", "url", "tag", "breaking", "word", "number", "mention"])
    if edit == "case":
        return text.upper()
    if edit == "punct":
        return text.replace(";", " -").replace(".", "!")
    if edit == "url":
        return text + f" https://news.example.org/{rng.randint(1000, 9999)}"
    if edit == "tag":
        return text + " #local #news"
    if edit == "breaking":
        return "BREAKING: " + text
    if edit == "mention":
        return f"via @{rng.choice(['citydesk', 'newsbot', 'anna_k'])}: " + text
    if edit == "number":
        words = text.split(" ")
        for i, w in enumerate(words):
            if w.isdigit():
                words[i] = str(int(w) + rng.randint(1, 9))
                break
        return " ".join(words)
    words = text.split(" ")
    i = rng.randrange(2, len(words) - 2)
    words[i] = rng.choice(["new", "big", "long-awaited", "controversial"])
    return " ".join(words)


def main(path):
    records, originals = [], []  # (text, id of the original it reposts or None); (text, id)
    while len(records) < 289:
        if originals and rng.random() < 0.33:
            text, of = originals[-1 - min(len(originals) - 1, int(rng.expovariate(1 / 8)))]
            records.append((repost(text), of))
        else:
            text = chinese_original() if rng.random() < 0.25 else english_original()
            if any(text == t for t, _ in originals):
                continue  # an original is a new story, never a chance repeat
            originals.append((text, f"n{len(records) + 1}"))
            records.append((text, None))
    with open(path, "w", encoding="utf-8") as out:
        for i, (text, of) in enumerate(records, start=1):
            record = {"id": f"n{i}", "text": text}
            if of:
                record["repost_of"] = of  # the truth, for readers of the demo; neardup ignores it
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            if i == 100:
                out.write(json.dumps({"id": "bad-empty", "text": ""}) + "\n")
            if i == 200:
                out.write(json.dumps({"id": "bad-no-text", "title": "a record without the text field"}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "deploy/demo/feed.jsonl")
