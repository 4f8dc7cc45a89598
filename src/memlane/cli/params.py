"""Parameter types shared by commands."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import click

_RELATIVE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def to_iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class When(click.ParamType):
    """A point in time: ISO date/datetime (``2026-11-01``, ``2026-11-01T09:30``) or an age (``7d``, ``12h``)."""

    name = "when"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip()
        match = _RELATIVE.match(text)
        if match:
            delta = timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
            return to_iso(datetime.now(UTC) - delta)
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            self.fail(f"'{text}' is not a date (use 2026-11-01, 2026-11-01T09:30 or an age like 7d, 12h)", param, ctx)
        if moment.tzinfo is None:
            moment = moment.astimezone()  # a date without a zone means local time
        return to_iso(moment)


WHEN = When()
