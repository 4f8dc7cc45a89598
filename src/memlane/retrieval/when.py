"""Relative time in a query: "what did we change yesterday?", "the bug from two weeks ago".

A query that names a time points at events from then, whatever words they share with it. This finds
the window a query points at (relative to a reference moment, normally now) so retrieval can prefer
events inside it. English phrases only; a query without one is left alone.

Only prose counts: inline code, quoted strings and identifiers (``date.today()``, ``last_week``,
"render '3 days ago' labels") talk about time, they do not ask about it, so they are masked before
the phrases are looked for. Day boundaries are the system's local time zone.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta

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


def find(query: str, now: datetime) -> tuple[tuple[datetime, datetime], str] | None:
    """(the window a relative time phrase points at, the query without the phrase), or None.

    The rest of the query is what to match words against: "days" and "ago" say when, not what.
    """
    prose = _prose(query)
    now = now.astimezone()  # the user's day, not UTC's
    if m := _AGO.search(prose):
        days = _count(m.group(1)) * _UNIT_DAYS[m.group(2).lower()]
        slack = max(1.0, days * 0.25)  # "two weeks ago" is rarely exactly fourteen days
        span = now - timedelta(days=days + slack), now - timedelta(days=max(days - slack, 0.0))
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
    elif m := _DAY.search(prose):
        # Rolling windows: the user's time zone and day boundaries are unknown.
        yesterday = m.group(1).lower() in ("yesterday", "last night")
        span = (now - timedelta(days=2), now - timedelta(days=0.5)) if yesterday else (now - timedelta(days=1), now)
    else:
        return None
    return span, (query[: m.start()] + " " + query[m.end() :]).strip()


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
