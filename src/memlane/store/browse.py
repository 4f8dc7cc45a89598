"""Reads for people browsing a store (the dashboard): pages by keyset, counts, new rows by seq, per-day
activity and outbox health, what redactions removed. (Injection figures: ``injections.py``.)

Every read here is bounded: pages walk an index from a cursor (``(ts, seq)``) instead of OFFSET, so the
10,000th page of a 100k-event project costs what the first does; the live stream asks only for rows with a
``seq`` above the last one it sent; counts that could touch every row stop at ``COUNT_CAP``.
"""

from __future__ import annotations

import json

from memlane.store.events import EventStore
from memlane.store.records import EVENT_COLUMNS, Event, event_from_row

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

COUNT_CAP = 10_000  # "10,000+" is as precise as a person needs, and a count never walks a whole large table


class BrowseStore(EventStore):
    """Paged and aggregate reads."""

    def page(
        self,
        *,
        session: str | None = None,
        types: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        after: tuple[str, int] | None = None,
        limit: int = 50,
        oldest_first: bool = False,
    ) -> list[Event]:
        """Events by time (then seq), starting past the cursor ``after`` = (ts, seq) of the last row shown."""
        where, args = self._filters(session=session, types=types, since=since, until=until)
        if after is not None:
            op = ">" if oldest_first else "<"
            where += (" AND " if where else "WHERE ") + f"(ts {op} ? OR (ts = ? AND seq {op} ?))"
            args.extend([after[0], after[0], after[1]])
        order = "ASC" if oldest_first else "DESC"
        rows = self.db.execute(
            f"SELECT {EVENT_COLUMNS} FROM events {where} ORDER BY ts {order}, seq {order} LIMIT ?", [*args, limit]
        ).fetchall()
        return [event_from_row(r) for r in rows]

    def count_events(
        self,
        *,
        session: str | None = None,
        types: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        cap: int = COUNT_CAP,
    ) -> int:
        """How many events match, counted up to ``cap`` + 1 (more than ``cap`` means "cap+")."""
        where, args = self._filters(session=session, types=types, since=since, until=until)
        if not where:
            return int(self.db.execute("SELECT COUNT(*) FROM events").fetchone()[0])
        return int(
            self.db.execute(
                f"SELECT COUNT(*) FROM (SELECT 1 FROM events {where} LIMIT ?)", [*args, cap + 1]
            ).fetchone()[0]
        )

    def after_seq(self, seq: int, *, types: Sequence[str] | None = None, limit: int = 200) -> list[Event]:
        """Rows added after ``seq`` (the live stream's next batch), in insertion order."""
        where, args = self._filters(types=types)
        where += (" AND " if where else "WHERE ") + "seq > ?"
        rows = self.db.execute(
            f"SELECT {EVENT_COLUMNS} FROM events {where} ORDER BY seq LIMIT ?", [*args, seq, limit]
        ).fetchall()
        return [event_from_row(r) for r in rows]

    def latest_seq(self) -> int:
        return int(self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0])

    def sessions_page(self, offset: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        """Sessions by last activity, newest first, and how many there are (sessions are few: OFFSET is fine)."""
        cur = self.db.execute(
            "SELECT id, started_at, last_activity, ended_at, end_reason, source, cwd, event_count,"
            " prompt_count, summary FROM sessions ORDER BY last_activity DESC LIMIT ? OFFSET ?",
            (limit, offset),
        )
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        return rows, int(self.db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0])

    def session_type_counts(self, session_id: str) -> dict[str, int]:
        rows = self.db.execute(
            "SELECT type, COUNT(*) FROM events WHERE session_id = ? GROUP BY type", (session_id,)
        ).fetchall()
        return {t: int(n) for t, n in rows}

    def daily_counts(self, since: str) -> list[tuple[str, int, int]]:
        """(UTC day, events, sessions active that day) from ``since`` on, oldest day first."""
        rows = self.db.execute(
            "SELECT substr(ts, 1, 10) AS day, COUNT(*), COUNT(DISTINCT session_id) FROM events"
            " WHERE ts >= ? GROUP BY day ORDER BY day",
            (since,),
        ).fetchall()
        return [(str(d), int(n), int(s)) for d, n, s in rows]

    def outbox_health(self, recent: int = 500) -> dict[str, Any]:
        """Jobs by status, the oldest job still waiting, and the average time from event to vector over
        the last ``recent`` jobs done (seconds)."""
        counts = dict(self.db.execute("SELECT status, COUNT(*) FROM outbox GROUP BY status").fetchall())
        oldest = self.db.execute(
            "SELECT MIN(created_at) FROM outbox WHERE status IN ('pending', 'processing')"
        ).fetchone()[0]
        avg = self.db.execute(
            "SELECT AVG((julianday(updated_at) - julianday(created_at)) * 86400.0) FROM"
            # ``+status``: walk the newest rows back and stop at the limit, not sort every done job by rowid.
            " (SELECT created_at, updated_at FROM outbox WHERE +status = 'done' ORDER BY rowid DESC LIMIT ?)",
            (recent,),
        ).fetchone()[0]
        errors = [r[0] for r in self.db.execute("SELECT DISTINCT error FROM outbox WHERE status = 'failed' LIMIT 3")]
        return {
            "pending": int(counts.get("pending", 0)),
            "processing": int(counts.get("processing", 0)),
            "done": int(counts.get("done", 0)),
            "failed": int(counts.get("failed", 0)),
            "oldest_waiting": oldest,
            "avg_seconds": round(float(avg), 3) if avg is not None else None,
            "failed_errors": errors,
        }

    def scan_redaction_kinds(self) -> dict[str, int]:
        """Each secret kind a later ``memlane privacy scan --redact`` removed (from its tombstones)."""
        kinds: dict[str, int] = {}
        for (detail,) in self.db.execute("SELECT detail FROM tombstones WHERE scope = 'redact'"):
            try:
                found = json.loads(detail or "{}").get("kinds") or {}
            except (ValueError, AttributeError):
                continue
            for kind, n in found.items():
                if isinstance(n, int):
                    kinds[kind] = kinds.get(kind, 0) + n
        return kinds

    def count_matches(self, words: Sequence[str], trigrams: Sequence[str], cap: int = COUNT_CAP) -> int:
        """Events holding every word (the word index) or every trigram (the CJK index), up to ``cap`` + 1."""
        import sqlite3

        parts: list[str] = []
        args: list[Any] = []
        if words:
            parts.append("SELECT rowid FROM events_fts WHERE events_fts MATCH ?")
            args.append(" AND ".join(words))
        if trigrams:
            parts.append("SELECT rowid FROM events_cjk WHERE events_cjk MATCH ?")
            args.append(" AND ".join(trigrams))
        if not parts:
            return 0
        try:
            return int(
                self.db.execute(f"SELECT COUNT(*) FROM ({' UNION '.join(parts)} LIMIT ?)", [*args, cap + 1]).fetchone()[
                    0
                ]
            )
        except sqlite3.OperationalError:
            return 0
