"""Relative time in a query: "what did we change yesterday?", "the bug from two weeks ago".

A query that names a time points at events from then, whatever words they share with it. This finds
the window a query points at (relative to a reference moment, normally now) so retrieval can prefer
events inside it. English and Korean phrases ("in October", "어제 고친 버그", "지난주에", "3일 전");
a query without one is left alone.

Only prose counts: inline code, quoted strings and identifiers (``date.today()``, ``last_week``,
"render '3 days ago' labels") talk about time, they do not ask about it, so they are masked before
the phrases are looked for. Day boundaries are the system's local time zone.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta

from memlane.retrieval.cjk import final_consonant, has_hangul

_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 4,
}
_UNIT_DAYS = {"day": 1.0, "week": 7.0, "month": 30.0, "year": 365.0}
_COUNT = r"(\d{1,3}|" + "|".join(sorted((re.escape(k) for k in _NUMBERS), key=len, reverse=True)) + r")"
_UNIT = r"(day|week|month|year)s?"
_AGO = re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+ago\b", re.IGNORECASE)
_SPAN = re.compile(rf"\b(?:past|last|previous)\s+{_COUNT}\s+{_UNIT}\b", re.IGNORECASE)
_LAST = re.compile(r"\b(?:last|previous)\s+(week|month|year)\b", re.IGNORECASE)
_THIS = re.compile(r"\bthis\s+(week|month|year)\b", re.IGNORECASE)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY = re.compile(rf"\b(?:last|this past)\s+({'|'.join(_WEEKDAYS)}|weekend)\b", re.IGNORECASE)
_DAY = re.compile(r"\b(today|this morning|yesterday|last night)\b", re.IGNORECASE)  # not "tonight": that asks ahead
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")  # fmt: skip
# "May" and "March" only capitalised (the verb "may", "march through the list").
_MONTH_NAME = r"((?i:january|february|april|june|july|august|september|october|november|december)|May|March)"

# Korean: a time word and the particle after it (어제는, 지난주에, 3일 전에), so what is left has no stray 에 or 는,
# as whole words only (아까워 "what a waste" is not 아까 "earlier", 전부 "all" is not 전 "before").
_KO_START = r"(?<![가-힣])"
_KO_PARTICLE = r"(?:\s*동안|에서|에는|에도|부터|까지|쯤에|쯤|이랑|랑|하고|처럼|보다|에|엔|는|은|의|도|만)?(?![가-힣])"
_KO_NATIVE = {
    "하루": 1,
    "이틀": 2,
    "사흘": 3,
    "나흘": 4,
    "며칠": 3,
    "일주일": 7,
    "한": 1,
    "두": 2,
    "세": 3,
    "네": 4,
    "몇": 3,
}
_KO_UNIT = {"일": 1.0, "주": 7.0, "주일": 7.0, "달": 30.0, "개월": 30.0, "년": 365.0}
_KO_WEEKDAYS = "월화수목금토일"

# Compiled on first use (``_pattern``): the rarer English phrases, each behind a plain substring test, and the
# Korean ones, only for a query with Hangul in it. A hook process compiles what its prompt needs: all of
# these at import took ~5 ms, the Korean ones 4 of it.
_SOURCES = {
    # A question in the past tense (asks_about_past), and words that ask about the present whatever the tense.
    "past": r"(?i)\b(?:did|was|were|had|didn't|wasn't|weren't|hadn't)\b",
    "present": r"(?i)\b(?:now|currently|still|these\s+days|any\s?more|nowadays)\b|지금|요즘|아직|현재",
    "day_before": r"(?i)\b(?:the\s+)?day\s+before\s+yesterday\b",
    "other_day": r"(?i)\bthe\s+other\s+day\b",
    "back": rf"(?i)\b{_COUNT}\s+{_UNIT}\s+back\b",
    # A month after "in", "during", "since", "back in", "early", "late", "mid", "last": "in October", "since March".
    "month": r"\b((?i:in|during|since|back\s+in|early|late|mid|last))\s*-?\s*"
    + _MONTH_NAME
    + r"(?:,?\s+(\d{4}))?\b(?!\s*\d)",
    "date": r"\b(?:(?i:on)\s+)?" + _MONTH_NAME + r"\s+(\d{1,2})(?:st|nd|rd|th)?\b",  # March 15, on October 3rd
    "ko_ago": _KO_START
    + r"(?:(\d{1,3})\s*(일|주일|주|달|개월|년)|(하루|이틀|사흘|나흘|며칠|일주일)|(한|두|세|네|몇)\s*(주|달|해))\s*전"
    + _KO_PARTICLE,
    "ko_span": _KO_START + r"(?:지난|최근)\s*(\d{1,3})\s*(일|주일|주|달|개월|년)" + _KO_PARTICLE,
    "ko_weekday": _KO_START + r"(?:지난|저번)\s*([월화수목금토일])요일" + _KO_PARTICLE,
    "ko_period": _KO_START + r"(?:(이번|지난|저번)\s*(주말|주|달)|(올해|작년))" + _KO_PARTICLE,
    "ko_day": _KO_START + r"(오늘\s*아침|오늘|아까|방금|어젯밤|어제|그저께|그제)" + _KO_PARTICLE,
    "ko_date": r"(?<!\d)(1[0-2]|[1-9])\s*월\s*([1-9]|[12]\d|3[01])\s*일" + _KO_PARTICLE,  # 3월 15일에
    "ko_month": r"(?<!\d)(1[0-2]|[1-9])\s*월" + _KO_PARTICLE + r"(?!\s*\d)",  # 10월에, not 3월 15일
}
# Months and dates stay among the words matched: memories name them too ("the workshops I went to in April").
_NAMED_TIMES = frozenset(_SOURCES[name] for name in ("month", "date", "ko_month", "ko_date"))
_compiled: dict[str, re.Pattern[str]] = {}


def _pattern(name: str) -> re.Pattern[str]:
    if name not in _compiled:
        _compiled[name] = re.compile(_SOURCES[name])
    return _compiled[name]


# What is code or quoted text rather than a question about time: fenced and inline code, quoted
# strings, and identifiers joined by dots, underscores or call parentheses.
_CODE = re.compile(
    r"```.*?(?:```|$)|`[^`\n]*`?"
    r"|\"[^\"\n]{0,200}\"|(?<![\w])'[^'\n]{0,200}'(?![\w])"
    r"|[\w$]+(?:(?:\.|::|->)[\w$]+)+(?:\([^)\n]{0,80}\))?|\w*_\w+|\w+\([^)\n]{0,80}\)",
    re.DOTALL,
)


def _prose(query: str) -> str:
    """The query with code and quoted text blanked out (same length, so match offsets still apply)."""
    return _CODE.sub(lambda m: " " * len(m.group(0)), query)


def _count(word: str) -> float:
    word = word.lower()
    return float(word) if word.isdigit() else float(_NUMBERS[word])


_Found = tuple["tuple[datetime, datetime] | None", re.Match[str]]  # the window (None: no such day) and the phrase


def find(query: str, now: datetime) -> tuple[tuple[datetime, datetime], str] | None:
    """(the window a relative time phrase points at, the query without the phrase), or None.

    The rest of the query is what to match words against: "days" and "ago" say when, not what. A month or a
    date stays in it: memories name them too ("the workshops I went to in April"; without "April" LongMemEval-S
    lost one question's evidence from its top 50).
    """
    prose = _prose(query)
    now = now.astimezone()  # the user's day, not UTC's
    found = _english(prose, now) or _korean(prose, now)
    span, m = found or (None, None)
    if span is None or m is None:  # none, or a day the month does not have (February 30)
        return None
    if m.re.pattern in _NAMED_TIMES:
        return span, query
    return span, (query[: m.start()] + " " + query[m.end() :]).strip()


def _ago(days: float, now: datetime) -> tuple[datetime, datetime]:
    slack = max(1.0, days * 0.25)  # "two weeks ago" is rarely exactly fourteen days
    return now - timedelta(days=days + slack), now - timedelta(days=max(days - slack, 0.0))


def _english(prose: str, now: datetime) -> _Found | None:
    span: tuple[datetime, datetime] | None
    low = prose.lower()
    if m := _AGO.search(prose) or (" back" in low and _pattern("back").search(prose)) or None:
        span = _ago(_count(m.group(1)) * _UNIT_DAYS[m.group(2).lower()], now)
    elif m := _SPAN.search(prose):
        days = _count(m.group(1)) * _UNIT_DAYS[m.group(2).lower()]
        span = now - timedelta(days=days), now
    elif m := _LAST.search(prose):
        days = _UNIT_DAYS[m.group(1).lower()]
        if prose[m.end() :].lstrip().lower().startswith("of "):  # "the last year of invoices": the past year
            span = now - timedelta(days=days), now
        else:
            span = now - timedelta(days=2 * days), now - timedelta(days=days * 0.5)
    elif m := _WEEKDAY.search(prose):
        span = _weekday(m.group(1).lower(), now)
    elif m := _THIS.search(prose):
        span = now - timedelta(days=_UNIT_DAYS[m.group(1).lower()]), now
    elif "before yesterday" in low and (m := _pattern("day_before").search(prose)):
        span = now - timedelta(days=3), now - timedelta(days=1.5)
    elif m := _DAY.search(prose):
        span = _day(m.group(1).lower() in ("yesterday", "last night"), now)
    elif "other day" in low and (m := _pattern("other_day").search(prose)):
        span = now - timedelta(days=7), now - timedelta(days=1)
    elif any(name in low for name in _MONTHS) and (m := _pattern("date").search(prose)):
        span = _date(_MONTHS.index(m.group(1).lower()) + 1, int(m.group(2)), now)
    elif any(name in low for name in _MONTHS) and (m := _pattern("month").search(prose)):
        year = int(m.group(3)) if m.group(3) else None
        span = _month(_MONTHS.index(m.group(2).lower()) + 1, now, year=year)
    else:
        return None
    return span, m


def _korean(prose: str, now: datetime) -> _Found | None:
    if not has_hangul(prose):
        return None
    span: tuple[datetime, datetime] | None
    if m := _pattern("ko_ago").search(prose):
        if m.group(1):
            days = float(m.group(1)) * _KO_UNIT[m.group(2)]
        elif m.group(3):
            days = float(_KO_NATIVE[m.group(3)])
        else:
            days = _KO_NATIVE[m.group(4)] * {"주": 7.0, "달": 30.0, "해": 365.0}[m.group(5)]
        span = _ago(days, now)
    elif m := _pattern("ko_span").search(prose):
        span = now - timedelta(days=float(m.group(1)) * _KO_UNIT[m.group(2)]), now
    elif m := _pattern("ko_weekday").search(prose):
        span = _weekday(_WEEKDAYS[_KO_WEEKDAYS.index(m.group(1))], now)
    elif m := _pattern("ko_period").search(prose):
        which, unit, year = m.group(1), m.group(2), m.group(3)
        if year:
            span = (
                (now - timedelta(days=365), now)
                if year == "올해"
                else (now - timedelta(days=730), now - timedelta(days=182.5))
            )
        elif unit == "주말":
            span = _weekday("weekend", now)
        else:
            days = 7.0 if unit == "주" else 30.0
            span = (
                (now - timedelta(days=days), now)
                if which == "이번"
                else (now - timedelta(days=2 * days), now - timedelta(days=days * 0.5))
            )
    elif m := _pattern("ko_day").search(prose):
        word = m.group(1)
        if word in ("그저께", "그제"):
            span = now - timedelta(days=3), now - timedelta(days=1.5)
        else:
            span = _day(word in ("어제", "어젯밤"), now)
    elif m := _pattern("ko_date").search(prose):
        span = _date(int(m.group(1)), int(m.group(2)), now)
    elif m := _pattern("ko_month").search(prose):
        span = _month(int(m.group(1)), now)
    else:
        return None
    return span, m


def _day(yesterday: bool, now: datetime) -> tuple[datetime, datetime]:
    """Rolling windows: the user's time zone and day boundaries are unknown."""
    return (now - timedelta(days=2), now - timedelta(days=0.5)) if yesterday else (now - timedelta(days=1), now)


def _date(month: int, day: int, now: datetime) -> tuple[datetime, datetime] | None:
    """From the latest such day up to now (``_month``), half a day earlier for time zones; None for a day the
    month does not have."""
    try:
        start = now.replace(month=month, day=day, hour=0, minute=0, second=0, microsecond=0)
        if start > now:
            start = start.replace(year=now.year - 1)
    except ValueError:
        return None
    return start - timedelta(hours=12), now


def _month(month: int, now: datetime, year: int | None = None) -> tuple[datetime, datetime] | None:
    """From the start of the latest such month up to now (this one, or last year's; or ``year``'s), half a day
    earlier for time zones; None for a month after now.

    Not the month alone: what happened in April is often told of later ("the workshops I went to in April",
    said on May 1; "the vet on December 24", told on January 8), and a window of the month alone put those
    memories below others (LongMemEval-S test: one question's evidence out of the top 10; conversations dev:
    one question out of reach). Up to now, it still puts what came before the month below it.
    """
    year = year or (now.year if month <= now.month else now.year - 1)
    if (year, month) > (now.year, now.month) or year < 1:
        return None
    start = now.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    return start - timedelta(hours=12), now


def _weekday(name: str, now: datetime) -> tuple[datetime, datetime]:
    """The latest such day (or Saturday-Sunday) before today, half a day wider each side for time zones."""
    first = _WEEKDAYS.index("saturday" if name == "weekend" else name)
    back = (now.weekday() - first) % 7 or 7
    start = (now - timedelta(days=back)).replace(hour=0, minute=0, second=0, microsecond=0)
    days = 2 if name == "weekend" else 1
    return start - timedelta(hours=12), start + timedelta(days=days, hours=12)


def closeness(ts: str, span: tuple[datetime, datetime]) -> float:
    """1 inside the window, falling off outside it by the window's own width (0.5 one width away)."""
    try:
        moment = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    start, end = span
    if start <= moment <= end:
        return 1.0
    width = max((end - start).total_seconds(), 3600.0)
    distance = (start - moment if moment < start else moment - end).total_seconds()
    return math.pow(0.5, distance / width)


_FINAL_SS = 20  # the final consonant ㅆ: the past ending's (했, 였)


def asks_about_past(query: str) -> bool:
    """Whether ``query`` asks what happened rather than how things are now: a past tense (did, was, were, had; a
    Korean verb in the past, 받았어, 뭐였어 — a syllable with the final ㅆ other than 있) and no word about the
    present (now, still, these days, 지금, 요즘). "Where did Mina sprain her ankle?" wants the sprain, even
    though a later turn talks about her knee."""
    prose = _prose(query)
    if _pattern("present").search(prose):
        return False
    if _pattern("past").search(prose):
        return True
    return any(
        "\uac00" <= ch <= "\ud7a3" and ch != "있" and final_consonant(ch) == _FINAL_SS for ch in prose
    )
