"""Mechanical checks of the conversational corpus (benchmarks/conversation/data/*.json).

    python benchmarks/conversation/validate.py [--quiet]

Checks, failing with a list of problems:
  - ids: every turn id is unique and has the form ``cN:sNN:tNN``; sessions are in date order;
  - evidence and stale ids exist, do not overlap, stale only on knowledge-update questions,
    answerable questions have evidence and unanswerable ones have none;
  - paraphrase questions share no content word with any of their evidence turns, after lowercasing,
    a small stop list and simple stemming (English: suffixes; Korean: particles, then the word's first
    two syllables), numbers included;
  - unanswerable questions are on topic: each of their ``key`` terms occurs in the conversation (and,
    for a question in the conversation's language, in the question itself).
Then prints counts of conversations, sessions, turns and questions per split, kind and language.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
KINDS = ("single", "multi", "temporal", "paraphrase", "update", "inference", "unanswerable")
TURN_ID = re.compile(r"^c\d+:s\d{2}:t\d{2}$")

# A small stop list: function words, pronouns, auxiliaries, question words and the verbs every
# question about a conversation uses ("what did she say"). Anything else is a content word.
_STOP_EN = """
a about above after again against all also am an and any are as at be because been before being below
between both but by can could did do does doing done down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own same she should so
some such than that the their theirs them themselves then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you your yours
yourself yourselves s t don ll re ve m d
say said says tell told ask asked mention mentioned talk talked think thought
"""
_STOP_KO = """
뭐 뭐야 뭐였 뭐라 무엇 무슨 어디 어디야 언제 언제야 어떻게 어떤 왜 누구 누가 얼마 얼마나 몇 그 이 저 그거 이거 저거
그리고 그래서 근데 그런데 하지만 했어 했다 했는 했던 하는 하고 해서 해야 했지 있어 있었 있는 있다 없어 없었 없는
한다 했대 했다고 말했 말한 얘기 이야 이야기 라고 이라 였어 이었 인가 일까 거야 건가 것 거 수 때 좀 더 또 다시 지금
"""
STOP_EN = frozenset(_STOP_EN.split())
STOP_KO = frozenset(_STOP_KO.split())
_HANGUL = re.compile(r"[\uac00-\ud7a3]+")
_LATIN = re.compile(r"[a-z0-9]+")
PARTICLES = (
    "에서는", "으로는", "에게서", "이라고", "에서", "으로", "에게", "한테", "까지", "부터", "처럼", "보다", "이랑",
    "하고", "이랑", "라고", "은", "는", "이", "가", "을", "를", "에", "의", "로", "와", "과", "도", "만", "랑",
)  # fmt: skip


def stem_en(word: str) -> str:
    """A light Porter-like stem: plurals, -ing/-ed/-ly, doubled consonants, a final e, y → i."""
    if len(word) <= 2:
        return word
    if word.endswith("ies") or word.endswith("ied"):
        word = word[:-3] + "y"
    elif word.endswith("sses") or re.search(r"(?:[sxz]|ch|sh)es$", word):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]  # runn(ing) → run
    if len(word) >= 4 and word.endswith("e"):
        word = word[:-1]  # slide / slid(ing)
    if len(word) >= 3 and word.endswith("y"):
        word = word[:-1] + "i"  # try / tri(ed)
    return word


def stem_ko(word: str) -> str:
    for particle in PARTICLES:
        if word.endswith(particle) and len(word) - len(particle) >= 1:
            word = word[: -len(particle)]
            break
    return word[:2]


def content_words(text: str) -> set[str]:
    """Stemmed content words of ``text`` (English and Korean), numbers included."""
    lower = text.lower().replace("\u2019", "'").replace("'s ", " ")
    out = {stem_en(w) for w in _LATIN.findall(lower) if w not in STOP_EN}
    out |= {"ko:" + stem_ko(w) for w in _HANGUL.findall(lower) if w not in STOP_KO and stem_ko(w) not in STOP_KO}
    return out


def shared(a: set[str], b: set[str]) -> set[str]:
    """Words of ``a`` that ``b`` has too: the same stem, or (English) one stem a prefix of the other, both
    five letters or longer."""
    out = a & b
    for x in a - out:
        if (
            not x.startswith("ko:")
            and len(x) >= 5
            and any(len(y) >= 5 and (y.startswith(x) or x.startswith(y)) for y in b)
        ):
            out.add(x)
    return out


def stems(text: str) -> list[str]:
    return [stem_en(w) for w in _LATIN.findall(text.lower())]


def has_term(text: str, term: str, tokens: list[str] | None = None) -> bool:
    """Does ``text`` contain the phrase ``term`` (as stemmed words in order; Korean by substring)?
    ``tokens``: ``stems(text)``, when the caller has them already."""
    if _HANGUL.search(term):
        return term in text
    words = stems(term)
    tokens = stems(text) if tokens is None else tokens
    n = len(words)
    return any(tokens[i : i + n] == words for i in range(len(tokens) - n + 1))


def load(data: Path = DATA) -> list[dict[str, Any]]:
    return [
        json.loads(p.read_text(encoding="utf-8")) for p in sorted(data.glob("c*.json"), key=lambda p: int(p.stem[1:]))
    ]


def check(convs: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()
    for conv in convs:
        cid = conv["id"]
        ids = [t["id"] for s in conv["sessions"] for t in s["turns"]]
        turns = {t["id"]: t for s in conv["sessions"] for t in s["turns"]}
        dates = [s["date"] for s in conv["sessions"]]
        if dates != sorted(dates):
            problems.append(f"{cid}: sessions out of date order")
        for tid in ids:
            if not TURN_ID.match(tid) or not tid.startswith(cid + ":"):
                problems.append(f"{cid}: bad turn id {tid}")
            if tid in seen:
                problems.append(f"{cid}: turn id {tid} repeated")
            seen.add(tid)
        if {t["speaker"] for t in turns.values()} != set(conv["speakers"].values()):
            problems.append(f"{cid}: speakers do not match the turns")
        whole = "\n".join(t["text"] for t in turns.values())
        whole_stems = stems(whole)
        for q in conv["questions"]:
            qid, ev, st = q["id"], q["evidence"], q.get("stale", [])
            if q["kind"] not in KINDS:
                problems.append(f"{qid}: unknown kind {q['kind']}")
            for i in ev + st:
                if i not in turns:
                    problems.append(f"{qid}: no turn {i}")
            if set(ev) & set(st):
                problems.append(f"{qid}: a turn is both evidence and stale")
            if st and q["kind"] != "update":
                problems.append(f"{qid}: stale turns on a {q['kind']} question")
            if q["kind"] == "update" and not st:
                problems.append(f"{qid}: knowledge update without stale turns")
            if q["answerable"] != (q["kind"] != "unanswerable"):
                problems.append(f"{qid}: answerable does not match kind")
            if q["answerable"] and not ev:
                problems.append(f"{qid}: answerable without evidence")
            if not q["answerable"] and ev:
                problems.append(f"{qid}: unanswerable with evidence")
            if bool(_HANGUL.search(q["text"])) != (q["lang"] == "ko"):
                problems.append(f"{qid}: lang {q['lang']} does not match the text")
            if q["kind"] == "paraphrase":
                words = content_words(q["text"])
                for i in ev:
                    if i in turns and (common := shared(words, content_words(turns[i]["text"]))):
                        problems.append(f"{qid}: paraphrase shares {sorted(common)} with {i}")
            if not q["answerable"]:
                keys = q.get("key") or []
                if not keys:
                    problems.append(f"{qid}: unanswerable without key terms")
                for term in keys:
                    if not has_term(whole, term, whole_stems):
                        problems.append(f"{qid}: key term {term!r} is not in the conversation")
                    if q["lang"] == conv["lang"] and not has_term(q["text"], term):
                        problems.append(f"{qid}: key term {term!r} is not in the question")
    return problems


def counts(convs: list[dict[str, Any]]) -> str:
    lines = []
    for split in ("dev", "test"):
        part = [c for c in convs if c["split"] == split]
        qs = [q for c in part for q in c["questions"]]
        turns = sum(len(s["turns"]) for c in part for s in c["sessions"])
        sessions = sum(len(c["sessions"]) for c in part)
        langs = Counter(c["lang"] for c in part)
        lines.append(
            f"{split}: {len(part)} conversations ({', '.join(f'{n} {k}' for k, n in sorted(langs.items()))}), "
            f"{sessions} sessions, {turns} turns, {len(qs)} questions"
        )
        kinds = Counter(q["kind"] for q in qs)
        lines.append("  by kind: " + ", ".join(f"{k} {kinds[k]}" for k in KINDS))
        cross = sum(1 for c in part for q in c["questions"] if q["lang"] != c["lang"])
        ko = sum(1 for q in qs if q["lang"] == "ko")
        lines.append(f"  Korean questions {ko}, cross-lingual questions {cross}, unanswerable {kinds['unanswerable']}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--quiet", action="store_true", help="only problems")
    args = ap.parse_args()
    convs = load(args.data)
    problems = check(convs)
    if not args.quiet:
        print(counts(convs))
    for p in problems:
        print("problem:", p)
    if problems:
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        return 1
    if not args.quiet:
        print("ok: ids, evidence, paraphrase overlap and on-topic checks pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
