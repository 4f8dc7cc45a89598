"""Removing and rewriting stored events for privacy: select/forget (purge + tombstone), redact in place,
the tombstone log. The only places events are not append-only; both scrub free pages afterwards.
"""

from __future__ import annotations

import json
import sqlite3

from memlane.store import keys, schema
from memlane.store.events import EventStore

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


READ_ONLY_TOOLS = ("Read", "Grep", "Glob", "LS", "WebFetch", "WebSearch", "NotebookRead", "BashOutput")


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

    def forget(self, targets: Sequence[tuple[str, str]], scope: str, selector: str, *, propagate: bool = True) -> int:
        """Purge events (FTS rows via triggers, outbox via cascade), tombstone, then scrub free pages.

        In a project shared with a team the ids are also kept in ``sync_forgotten`` (same transaction), for the
        sync to push as a tombstone; ``propagate=False`` is the sync applying a teammate's forget."""
        if not targets:
            return 0
        ids = [t[0] for t in targets]
        types: dict[str, int] = {}
        for _, etype in targets:
            types[etype] = types.get(etype, 0) + 1
        self.db.execute("PRAGMA secure_delete = ON")
        with self.write() as db:
            detail: dict[str, Any] = {"types": types, "ids": ids[:1000]}
            if scope == "event":  # which turns they were (no content), so no re-import brings them back
                detail["turns"] = self._turns(db, ids[:1000])
            self._delete_ids(db, ids)
            if propagate and db.execute("SELECT 1 FROM sync_state WHERE key = 'remote'").fetchone():
                db.executemany("INSERT OR IGNORE INTO sync_forgotten (event_id) VALUES (?)", [(i,) for i in ids])
            db.execute("DELETE FROM term_counts")  # words of the purged events may be among them; recounted later
            db.execute(
                "INSERT INTO tombstones (ts, scope, selector, event_count, detail) VALUES (?,?,?,?,?)",
                (keys.now_iso(), scope, selector, len(ids), json.dumps(detail)),
            )
        # Merge FTS segments so deleted terms are gone from the index files too, and push the
        # WAL into the main file so old pages do not linger there.
        self.db.execute("INSERT INTO events_fts(events_fts) VALUES ('optimize')")
        self.db.execute("INSERT INTO events_cjk(events_cjk) VALUES ('optimize')")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if scope not in ("prune", "reimport"):  # a privacy purge; pruning and re-imports are upkeep
            self._drop_backups()
        return len(ids)

    def _drop_backups(self) -> None:
        """Backups hold what was just purged: they go too (the daemon's next one is of the purged store)."""
        if self.file != ":memory:":
            from memlane.store import backup

            backup.drop(self.file)

    # ---- pruning (storage.max_size_mb) ---------------------------------------------------------

    def live_bytes(self) -> int:
        """Bytes the database holds (rows, indexes, their page headers): what ``storage.max_size_mb`` caps.

        The file does not shrink when events go; new events fill the room they left. So this is not the file's
        size: with SQLite's ``dbstat`` table (most builds) it is the used part of every page, else the pages
        that are not free (an upper bound: a page half emptied by a delete still counts whole). ~0.2 s for a
        130 MB store; it is the pruning job's to pay, never a hook's.
        """
        pages = self.db.execute("PRAGMA page_count").fetchone()[0]
        free = self.db.execute("PRAGMA freelist_count").fetchone()[0]
        size = self.db.execute("PRAGMA page_size").fetchone()[0]
        try:
            used = self.db.execute("SELECT SUM(pgsize - unused) FROM dbstat").fetchone()[0]
        except sqlite3.OperationalError:  # a build without SQLITE_ENABLE_DBSTAT_VTAB
            used = None
        return int(used) if used is not None else int((pages - free) * size)

    def select_for_prune(self, limit: int, before: str, skip: set[str]) -> list[tuple[str, str]]:
        """(id, type) of up to ``limit`` events to prune, least valuable first, oldest first within a kind:
        successful read-only tool calls (Read, Grep, Glob, web), other successful tool calls, failed tool calls
        and compaction notes, answers, prompts. Never session summaries or session start/end markers, nothing
        from ``before`` on, nothing in ``skip`` (``retention.protected_event_ids``)."""
        readers = ",".join(f"'{t}'" for t in READ_ONLY_TOOLS)
        rows = self.db.execute(
            "SELECT id, type FROM events WHERE ts < ? AND type IN"
            " ('tool_observation', 'compaction', 'agent_response', 'user_prompt')"
            " ORDER BY CASE"
            f"  WHEN type = 'tool_observation' AND COALESCE(json_extract(metadata, '$.success'), 1) != 0"
            f"   AND json_extract(metadata, '$.tool_name') IN ({readers}) THEN 0"
            "  WHEN type = 'tool_observation' AND COALESCE(json_extract(metadata, '$.success'), 1) != 0 THEN 1"
            "  WHEN type IN ('tool_observation', 'compaction') THEN 2"
            "  WHEN type = 'agent_response' THEN 3"
            "  ELSE 4 END, ts, seq"
            " LIMIT ?",
            (before, limit + len(skip)),
        )
        return [(r[0], r[1]) for r in rows if r[0] not in skip][:limit]

    def ids_of_citations(self, citations: set[str]) -> set[str]:
        """The event ids of these citations (``abc123``, without ``mem:``) that exist."""
        found: set[str] = set()
        cites = sorted(citations)
        for start in range(0, len(cites), 500):
            chunk = cites[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(r[0] for r in self.db.execute(f"SELECT id FROM events WHERE citation IN ({marks})", chunk))
        return found

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
                # An LLM's answer may quote the redacted words: it goes (its trigger removes the answer).
                db.execute("DELETE FROM llm_extraction_events WHERE event_id = ?", (event_id,))
                db.execute("DELETE FROM llm_consolidation_events WHERE event_id = ?", (event_id,))
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
        self._drop_backups()
        return len(updates)

    @staticmethod
    def _turns(db: Any, ids: Sequence[str]) -> list[str]:
        """The dedupe keys of events without their content hash: session, type and turn (never content)."""
        out: list[str] = []
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            out += [turn_of(r[0]) for r in db.execute(f"SELECT dedupe_key FROM events WHERE id IN ({marks})", chunk)]
        return out

    def forgotten(self) -> Forgotten:
        """What forget removed, as a test an event about to be imported again can be put to."""
        return Forgotten(self.tombstones(limit=-1))

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


def turn_of(dedupe_key: str) -> str:
    """``session:type:turn`` of a dedupe key (its last part is the content hash)."""
    return dedupe_key.rsplit(":", 1)[0]


class Forgotten:
    """Events a forget removed, recognised without their content, so history files that still hold them
    (Claude Code transcripts, Codex rollouts) do not bring them back on `memlane import` or a repair.

    A forgotten session, everything before a ``--before`` date, everything before a ``--project`` forget,
    and single events by their turn (``session:type:turn``, recorded by forgets from this release on).
    """

    def __init__(self, tombstones: Sequence[dict[str, Any]]) -> None:
        self.sessions: set[str] = set()
        self.turns: set[str] = set()
        self.ids: set[str] = set()  # event ids a forget named (a backup keeps ids; history files do not)
        self.before = ""  # events older than this were forgotten (the latest --before, or a --project forget)
        for stone in tombstones:
            scope, selector = stone.get("scope"), str(stone.get("selector") or "")
            if scope in ("event", "session", "before", "project"):
                self.ids.update(str(i) for i in (stone.get("detail") or {}).get("ids", []))
            if scope == "session":
                self.sessions.add(selector)
            elif scope == "before":
                self.before = max(self.before, selector)
            elif scope == "project":
                self.before = max(self.before, str(stone.get("ts") or ""))
            elif scope == "event":
                self.turns.update(str(t) for t in (stone.get("detail") or {}).get("turns", []))

    def __bool__(self) -> bool:
        return bool(self.sessions or self.turns or self.before)

    def covers(self, session_id: str, ts: str | None, dedupe_key: str) -> bool:
        return (
            session_id in self.sessions
            or bool(self.before and ts and ts < self.before)
            or turn_of(dedupe_key) in self.turns
        )
