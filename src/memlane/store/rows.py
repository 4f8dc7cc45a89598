"""Small pieces every table module of the store shares: JSON columns in and out, ``?`` placeholders."""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing costs hook start-up time (the Store's table modules are on the hook path)
if TYPE_CHECKING:
    from typing import Any


def loads(text: str | None, default: Any) -> Any:
    """A JSON column's value; ``default`` for NULL, empty or unreadable text (a derived row never fails a read)."""
    try:
        return json.loads(text) if text else default
    except ValueError:
        return default


def dumps(value: Any) -> str:
    """A value as a JSON column stores it: sorted keys, so equal values are equal text (rebuild compares them)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def marks(n: int) -> str:
    """``?,?,…`` for an ``IN (…)`` of ``n`` values."""
    return ",".join("?" * n)
