"""The local side of team sync (SQLite): its state, the events to push, the teammates' events pulled in.

Owns the SQL against ``sync_state``, ``sync_pulled`` and ``sync_forgotten`` (schema 70). The policy (what is
filtered or sealed, when to run, what to do on errors) is ``memlane.sync``'s; these are the reads and the
transactions it needs. A pull's events, their ``sync_pulled`` rows and the advanced cursor are one
transaction, so a crash or a network cut leaves either all of a batch or none of it.
"""

from __future__ import annotations

import json

from memlane.store import keys, schema
from memlane.store.forget import ForgetStore
from memlane.store.records import NewEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


class SyncStore(ForgetStore):
    """Team sync state of one local store."""

    def sync_state(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM sync_state").fetchall())

    def sync_set(self, **values: object) -> None:
        with self.write() as db:
            db.executemany(
                "INSERT OR REPLACE INTO sync_state (key, value) VALUES (?, ?)", [(k, str(v)) for k, v in values.items()]
            )

    def sync_clear(self) -> None:
        """Stop sharing: the state goes; the record of pulled events stays (they are still teammates')."""
        with self.write() as db:
            db.execute("DELETE FROM sync_state")

    def sync_outgoing(self, after_seq: int, limit: int) -> list[dict[str, Any]]:
        """This machine's own events after ``after_seq`` (pulled ones are the teammates'), oldest first."""
        rows = self.db.execute(
            "SELECT e.seq, e.id, e.type, e.session_id, e.ts, e.content, e.dedupe_key, e.metadata FROM events e"
            " WHERE e.seq > ? AND NOT EXISTS (SELECT 1 FROM sync_pulled p WHERE p.event_id = e.id)"
            " ORDER BY e.seq LIMIT ?",
            (after_seq, limit),
        ).fetchall()
        names = ("seq", "id", "type", "session_id", "ts", "content", "dedupe_key", "metadata")
        return [dict(zip(names, r, strict=True)) for r in rows]

    def sync_outgoing_count(self, after_seq: int) -> int:
        return int(
            self.db.execute(
                "SELECT COUNT(*) FROM events e WHERE e.seq > ?"
                " AND NOT EXISTS (SELECT 1 FROM sync_pulled p WHERE p.event_id = e.id)",
                (after_seq,),
            ).fetchone()[0]
        )

    def sync_embedded_after(self, after_seq: int, limit: int) -> tuple[list[str], int]:
        """(ids of own searchable events after ``after_seq`` whose vectors exist, the seq to resume from).

        Stops at the first event still waiting for its embedding, so none is skipped."""
        rows = self.db.execute(
            "SELECT e.seq, e.id, o.status FROM events e LEFT JOIN outbox o ON o.event_id = e.id"
            " WHERE e.seq > ? AND NOT EXISTS (SELECT 1 FROM sync_pulled p WHERE p.event_id = e.id)"
            " ORDER BY e.seq LIMIT ?",
            (after_seq, limit),
        ).fetchall()
        ids: list[str] = []
        last = after_seq
        for seq, event_id, status in rows:
            if status in ("pending", "processing"):
                break
            if status == "done":
                ids.append(event_id)
            last = seq
        return ids, last

    def sync_append_pulled(self, rows: Sequence[dict[str, Any]], cursor: int) -> int:
        """Store teammates' events under their own ids (skipping any already here or forgotten here), mark
        them pulled and move the pull cursor, in one transaction. Returns how many were new."""
        added = 0
        with self.write() as db:
            for row in rows:
                if db.execute(
                    "SELECT 1 FROM events WHERE id = ? OR dedupe_key = ?", (row["id"], row["dedupe_key"])
                ).fetchone():
                    continue
                if db.execute("SELECT 1 FROM sync_forgotten WHERE event_id = ?", (row["id"],)).fetchone():
                    continue
                self._insert_pulled(db, row)
                db.execute(
                    "INSERT OR REPLACE INTO sync_pulled (event_id, origin) VALUES (?, ?)", (row["id"], row["origin"])
                )
                added += 1
            db.execute("INSERT OR REPLACE INTO sync_state (key, value) VALUES ('pull_seq', ?)", (str(cursor),))
        return added

    def _insert_pulled(self, db: Any, row: dict[str, Any]) -> None:
        metadata = json.loads(row["metadata"] or "{}")
        citation = next(
            c
            for c in keys.citation_candidates(row["id"], self.citation_length)
            if not db.execute("SELECT 1 FROM events WHERE citation = ?", (c,)).fetchone()
        )
        content = row["content"]
        db.execute(
            "INSERT INTO events (id, citation, type, session_id, project_id, ts, content, canonical_key,"
            " dedupe_key, has_cjk, metadata) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                row["id"],
                citation,
                row["type"],
                row["session_id"],
                self.project_id,
                row["ts"],
                content,
                keys.canonical_key(content),
                row["dedupe_key"],
                int(keys.has_cjk(content)),
                json.dumps(metadata, ensure_ascii=False),
            ),
        )
        if schema.indexed(row["type"], content):
            now = keys.now_iso()
            db.execute(
                "INSERT INTO outbox (event_id, status, created_at, updated_at) VALUES (?, 'pending', ?, ?)",
                (row["id"], now, now),
            )
        event = NewEvent(row["type"], row["session_id"], content, metadata=metadata, ts=row["ts"])
        self._touch_session(db, event, row["ts"])

    def sync_pulled_count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM sync_pulled").fetchone()[0])

    def sync_forgotten_after(self, after: int, limit: int = 1000) -> list[tuple[int, str]]:
        """Ids this machine forgot (not the teammates' forgets it applied) after ``after``."""
        return [
            (int(r[0]), r[1])
            for r in self.db.execute(
                "SELECT seq, event_id FROM sync_forgotten WHERE seq > ? AND NOT pulled ORDER BY seq LIMIT ?",
                (after, limit),
            )
        ]

    def sync_forgotten_last(self) -> int:
        return int(self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM sync_forgotten").fetchone()[0])

    def sync_apply_forgets(self, ids: Sequence[str], origin: str, cursor: int) -> list[str]:
        """A teammate's forget: purge the events here (no new push of it), note the ids so a later pull never
        brings them back, move the cursor. Returns the ids that were here."""
        present = self.select_for_forget(ids=list(ids)) if ids else []
        if present:
            self.forget(present, "team", f"forgotten by {origin}", propagate=False)
        with self.write() as db:
            db.executemany("INSERT OR IGNORE INTO sync_forgotten (event_id, pulled) VALUES (?, 1)", [(i,) for i in ids])
            db.execute("INSERT OR REPLACE INTO sync_state (key, value) VALUES ('forget_pull', ?)", (str(cursor),))
        return [p[0] for p in present]
