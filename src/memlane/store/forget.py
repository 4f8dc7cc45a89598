"""Removing and rewriting stored events for privacy: select/forget (purge + tombstone), redact in place,
the tombstone log. The only places events are not append-only; both scrub free pages afterwards.
"""

from __future__ import annotations

import json

from memlane.store import keys, schema
from memlane.store.events import EventStore

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


class ForgetStore(EventStore):
    """Forget, redact and tombstones."""

    # ---- forget --------------------------------------------------------------------------------

    def select_for_forget(
        self,
        *,
        ids: Sequence[str] = (),
        session: str | None = None,
        before: str | None = None,
        since: str | None = None,
        until: str | None = None,
        everything: bool = False,
    ) -> list[tuple[str, str]]:
        """(id, type) of the events a forget would remove; ``since``/``until`` select a time range."""
        if everything:
            return [tuple(r) for r in self.db.execute("SELECT id, type FROM events")]
        if ids:
            marks = ",".join("?" * len(ids))
            return [tuple(r) for r in self.db.execute(f"SELECT id, type FROM events WHERE id IN ({marks})", list(ids))]
        if session:
            return [tuple(r) for r in self.db.execute("SELECT id, type FROM events WHERE session_id = ?", (session,))]
        if before:
            return [tuple(r) for r in self.db.execute("SELECT id, type FROM events WHERE ts < ?", (before,))]
        if since or until:
            where, args = self._filters(since=since, until=until)
            return [tuple(r) for r in self.db.execute(f"SELECT id, type FROM events {where}", args)]
        return []

    def forget(self, targets: Sequence[tuple[str, str]], scope: str, selector: str) -> int:
        """Purge events (FTS rows via triggers, outbox via cascade), tombstone, then scrub free pages."""
        if not targets:
            return 0
        ids = [t[0] for t in targets]
        types: dict[str, int] = {}
        for _, etype in targets:
            types[etype] = types.get(etype, 0) + 1
        self.db.execute("PRAGMA secure_delete = ON")
        with self.write() as db:
            self._delete_ids(db, ids)
            db.execute("DELETE FROM term_counts")  # words of the purged events may be among them; recounted later
            db.execute(
                "INSERT INTO tombstones (ts, scope, selector, event_count, detail) VALUES (?,?,?,?,?)",
                (keys.now_iso(), scope, selector, len(ids), json.dumps({"types": types, "ids": ids[:1000]})),
            )
        # Merge FTS segments so deleted terms are gone from the index files too, and push the
        # WAL into the main file so old pages do not linger there.
        self.db.execute("INSERT INTO events_fts(events_fts) VALUES ('optimize')")
        self.db.execute("INSERT INTO events_cjk(events_cjk) VALUES ('optimize')")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return len(ids)

    def redact(self, updates: Sequence[tuple[str, str, dict[str, Any]]], detail: dict[str, Any]) -> int:
        """Replace events' content and metadata in place: ``(event id, new content, new metadata)``.

        Events are append-only except for privacy (like ``forget``). The FTS tables are external-content
        with insert/delete triggers only, so the old row is deleted from them with its *old* text and
        the new text indexed; the embedding job is re-queued (the caller drops the old vectors); a
        tombstone records what was redacted (ids and counts, never content). Free pages are scrubbed.
        """
        if not updates:
            return 0
        self.db.execute("PRAGMA secure_delete = ON")
        now = keys.now_iso()
        with self.write() as db:
            for event_id, content, metadata in updates:
                row = db.execute(
                    "SELECT seq, type, session_id, content, has_cjk FROM events WHERE id = ?", (event_id,)
                ).fetchone()
                if row is None:
                    continue
                seq, etype, session_id, old, old_cjk = row
                searched = schema.indexed(etype, old)  # bookkeeping is in neither the full-text indexes nor the vectors
                if searched:
                    db.execute("INSERT INTO events_fts(events_fts, rowid, content) VALUES ('delete', ?, ?)", (seq, old))
                if searched and old_cjk:
                    db.execute("INSERT INTO events_cjk(events_cjk, rowid, content) VALUES ('delete', ?, ?)", (seq, old))
                cjk = int(keys.has_cjk(content))
                db.execute(
                    "UPDATE events SET content = ?, canonical_key = ?, has_cjk = ?, metadata = ? WHERE seq = ?",
                    (content, keys.canonical_key(content), cjk, json.dumps(metadata, ensure_ascii=False), seq),
                )
                if searched:
                    db.execute("INSERT INTO events_fts(rowid, content) VALUES (?, ?)", (seq, content))
                if searched and cjk:
                    db.execute("INSERT INTO events_cjk(rowid, content) VALUES (?, ?)", (seq, content))
                if etype == "session_summary":
                    db.execute(
                        "UPDATE sessions SET summary = ? WHERE id = ? AND summary = ?", (content, session_id, old)
                    )
                if searched:  # bookkeeping gets no vectors
                    db.execute(
                        "INSERT INTO outbox (event_id, status, created_at, updated_at) VALUES (?, 'pending', ?, ?)"
                        " ON CONFLICT(event_id) DO UPDATE SET status = 'pending', attempts = 0,"
                        " next_attempt_at = NULL, error = NULL, updated_at = excluded.updated_at",
                        (event_id, now, now),
                    )
            db.execute("DELETE FROM term_counts")  # the redacted words may be among them; recounted later
            ids = [u[0] for u in updates]
            db.execute(
                "INSERT INTO tombstones (ts, scope, selector, event_count, detail) VALUES (?,?,?,?,?)",
                (now, "redact", "privacy scan", len(ids), json.dumps({**detail, "ids": ids[:1000]})),
            )
        self.db.execute("INSERT INTO events_fts(events_fts) VALUES ('optimize')")
        self.db.execute("INSERT INTO events_cjk(events_cjk) VALUES ('optimize')")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return len(updates)

    def tombstones(self, limit: int = 50) -> list[dict[str, Any]]:
        cur = self.db.execute(
            "SELECT id, ts, scope, selector, event_count, detail FROM tombstones ORDER BY id DESC LIMIT ?", (limit,)
        )
        out = []
        for row in cur.fetchall():
            item = dict(zip(["id", "ts", "scope", "selector", "event_count", "detail"], row, strict=True))
            item["detail"] = json.loads(item["detail"] or "{}")
            out.append(item)
        return out


_MAX_WORDS, _MAX_TRIGRAMS, _MAX_SHORT_CJK = 32, 64, 8
