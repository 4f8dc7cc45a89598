"""What kind of thing a question asks for, and whether a memory holds one: a question that asks *when* wants
the turn that says when, one that asks *how many* the turn with a number.

In a long conversation every turn is about the same few people and plans, so the words of "When did Mina
sprain her ankle?" find every turn about Mina and her running, and the one that answers ("I sprained it last
Saturday on the trail") ranks with the rest. The answer's own shape tells it apart: it holds a time. A memory
holding a time expression gains ``retrieval.answer_weight`` log-odds for a question asking when (``WEIGHED``;
``engine.shaped_config`` sets it in a store of dialogue; in a store of code a "when" prompt asks about a
commit or a deploy, whose memories all carry times). A question for a number gets in full only memories that
hold one (``REQUIRED``, ``select.fitting``): "How much did the house sell for?" found the house, not its price.

As weights, the other kinds were measured the same way (conversations and another writer's questions, dev
splits: "how many" → a number, "where"/"who" → a capitalised name, "what is it called" → a quoted or
capitalised name) and gained nothing or lost (numbers 10 → 9 of 12 on both): docs/retrieval.md, "A question
that asks when, or how many".
"""

from __future__ import annotations

import re

TIME = "time"
NUMBER = "number"
WEIGHED = (TIME,)  # the kinds whose memories gain ``retrieval.answer_weight``
# The kinds a memory in full must hold. Not a time: a memory's own date answers "when" ("I just handed in my
# badge!" is when Frank retired), and the index line shows it.
REQUIRED = (NUMBER,)

# Questions that ask when, in English and Korean: at the start of a clause, so "the day when" in a statement
# is no question.
_ASKS_TIME = (
    r"(?:^|[.?!,;:]\s*|\b(?:so|and|but|remind me|tell me|do you remember|do you know)\s+)"
    r"(?:when\b|since when\b|until when\b|what (?:date|day|month|year|time|week)\b|"
    r"which (?:date|day|month|year|week|weekend)\b|how long ago\b|on what (?:date|day)\b)"
)
_ASKS_TIME_KO = r"언제|며칠|몇\s?월|몇\s?년|몇\s?시|무슨\s?요일|날짜"

# Questions that ask for a quantity: how many, how much, how old, how far, how often, how long (a duration).
_ASKS_NUMBER = r"\bhow (?:many|much|old|far|often|long)\b"
_ASKS_NUMBER_KO = r"몇|얼마(?!\s?전)"  # 얼마 전: "a while ago", no quantity

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
# Month names only capitalised ("may", "march" are verbs); the rest in any case.
_TIME_EN = (
    rf"\b(?:{_MONTHS}|(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?(?=\s+\d))\b|"
    rf"(?i:\b(?:{_DAYS}|weekend|yesterday|today|tonight|tomorrow|ago|"
    r"(?:last|next|this|that) (?:week|month|year|night|morning|evening|afternoon|spring|summer|autumn|winter)|"
    r"morning|afternoon|evening|christmas|easter|thanksgiving|new year|"
    r"\d{1,2}(?:st|nd|rd|th)|(?:19|20)\d\d|\d{1,2}(?::\d\d)?\s?(?:am|pm)|\d{1,2}:\d\d|"
    r"\d{1,4}[-/]\d{1,2}(?:[-/]\d{1,4})?|"
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|several|couple of)\s"
    r"(?:minute|hour|day|week|month|year)s?)\b)"
)
_TIME_KO = (
    r"\d+\s?(?:월|일|년|시)|\d+\s?(?:주|달|개월|년|일)\s?(?:전|뒤|후)|어제|오늘|내일|모레|그저께|지난\s?(?:주|달|해)|다음\s?(?:주|달|해)|이번\s?(?:주|달)|"
    r"작년|올해|내년|주말|[월화수목금토일]요일|아침|저녁|새벽|설날|추석|크리스마스"
)


_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|"
    "eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|dozen|half|"
    "once|twice|couple|few|several"
)
# Korean counts: the native numerals, and the Sino-Korean ones before a unit or a counter (이십 분, 삼 년).
_NUMBER = (
    rf"\d|\b(?:{_NUMBER_WORDS})\b|하나|둘|셋|넷|다섯|여섯|일곱|여덟|아홉|스물|서른|마흔|"
    r"(?:한|두|세|네)\s?(?:번|명|개|살|시간|달|주|마리|잔|권|군데)"
)


def asks(query: str) -> str | None:
    """The kind of answer ``query`` asks for (``TIME``, ``NUMBER``), or None."""
    # The patterns are strings: ``re`` compiles each on first use and caches it, so a hook that never asks pays nothing.
    if re.search(_ASKS_TIME, query, re.IGNORECASE) or re.search(_ASKS_TIME_KO, query):
        return TIME
    if re.search(_ASKS_NUMBER, query, re.IGNORECASE) or re.search(_ASKS_NUMBER_KO, query):
        return NUMBER
    return None


def holds(kind: str, text: str) -> bool:
    """Whether ``text`` holds an answer of ``kind``: for ``TIME``, a date, a day, a month or a time of day; for
    ``NUMBER``, a numeral or a number word."""
    if kind == TIME:
        return re.search(_TIME_EN, text) is not None or re.search(_TIME_KO, text) is not None
    if kind == NUMBER:
        return re.search(_NUMBER, text, re.IGNORECASE) is not None
    return False
