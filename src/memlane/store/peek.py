"""Read-only looks at a memory.db file without opening a ``Store``: status and doctor lines.

Opening a ``Store`` creates a missing file, migrates an old one and tightens its mode; a status line
must do none of that, so these open ``?mode=ro`` and close again. Errors are the caller's to handle.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from typing import Any


def _read_only(file: str | os.PathLike[str], timeout: float) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{os.fspath(file)}?mode=ro", uri=True, timeout=timeout)


def count_events(file: str | os.PathLike[str], timeout: float = 5.0) -> int:
    with closing(_read_only(file, timeout)) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])


def count_unembedded(file: str | os.PathLike[str], timeout: float = 5.0) -> int:
    """Outbox jobs not done yet (pending, processing or failed)."""
    with closing(_read_only(file, timeout)) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM outbox WHERE status != 'done'").fetchone()[0])


def recent_prompts(file: str | os.PathLike[str], limit: int = 200, timeout: float = 5.0) -> list[str]:
    """The texts of the store's latest user prompts, newest first."""
    with closing(_read_only(file, timeout)) as conn:
        rows = conn.execute(
            "SELECT content FROM events WHERE type = 'user_prompt' ORDER BY ts DESC, seq DESC LIMIT ?", (limit,)
        )
        return [str(r[0]) for r in rows]


def recent_turns(file: str | os.PathLike[str], limit: int, chars: int, timeout: float = 5.0) -> list[str]:
    """The first ``chars`` characters of the store's latest user prompts and agent answers (``retrieval.speakers``
    reads names from them; a pasted log is not read whole)."""
    with closing(_read_only(file, timeout)) as conn:
        rows = conn.execute(
            "SELECT substr(content, 1, ?) FROM events WHERE type IN ('user_prompt', 'agent_response')"
            " ORDER BY seq DESC LIMIT ?",
            (chars, limit),
        )
        return [str(r[0]) for r in rows]


def damage(file: str | os.PathLike[str], timeout: float = 5.0) -> str | None:
    """Why the store is damaged (the cheap check every command runs, ``store.health``), or None."""
    from memlane.store.health import probe

    try:
        with closing(_read_only(file, timeout)) as conn:
            return probe(conn)
    except sqlite3.DatabaseError as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def outbox_metrics(file: str | os.PathLike[str], timeout: float = 5.0) -> dict[str, Any]:
    """``store.outbox.metrics`` through a read-only connection."""
    from memlane.store.outbox import metrics

    with closing(_read_only(file, timeout)) as conn:
        return metrics(conn)


def vocabulary(file: str | os.PathLike[str], timeout: float = 5.0) -> list[tuple[str, int]]:
    """Every word of three or more Latin letters in the word index, with its document count (one walk of the
    index; ``retrieval.loanwords`` builds its lexicon from it, on a thread of its own)."""
    with closing(_read_only(file, timeout)) as conn:
        rows = conn.execute("SELECT term, doc FROM events_vocab WHERE term GLOB '[a-z][a-z][a-z]*'")
        return [(str(term), int(doc)) for term, doc in rows]
