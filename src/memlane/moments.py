"""Points in time given by people: ``2026-11-01``, ``2026-11-01T09:30`` or an age like ``7d``, ``12h``.

The library parses them (``Memory.search``/``history``/``forget`` take either form), so the CLI, MCP
tools and HTTP routes all accept the same forms and refuse bad ones with the same message. Stored
timestamps are ISO 8601 UTC with milliseconds (``2026-11-01T09:30:00.000Z``) and compare as strings;
an already-converted value parses to itself. Standard library only.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from memlane.errors import InputError

_RELATIVE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
FORMS = "use 2026-11-01, 2026-11-01T09:30 or an age like 7d, 12h"


def to_iso(moment: datetime) -> str:
    """The stored timestamp form: UTC, milliseconds, ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse(value: object, name: str | None = None) -> str:
    """``value`` as a stored timestamp; ``name`` (``since``…) prefixes the error when given."""
    text = str(value).strip()
    match = _RELATIVE.match(text)
    if match:
        delta = timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
        return to_iso(datetime.now(UTC) - delta)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        prefix = f"{name}: " if name else ""
        raise InputError(f"{prefix}'{text}' is not a date ({FORMS})") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # a date without a zone means local time
    return to_iso(moment)


def parse_optional(value: object, name: str) -> str | None:
    """Like ``parse``, but None or blank means no bound."""
    if value is None or not str(value).strip():
        return None
    return parse(value, name)
