"""Events: append (deduped, with its outbox job and session counters), replace derived events, and reads
(by id/citation/seq/dedupe key, history, neighbours, exchanges, a session's files, sessions, stats).

Owns the ``events`` and ``sessions`` tables' SQL apart from full-text (``fulltext.py``), forget/redact
(``forget.py``) and what imports left (``imports.py``). ``_recount_session`` is here because forget and
``replace_derived`` both need it.
"""

from __future__ import annotations

import json
import re

from memlane.store import keys, schema
from memlane.store.connection import StoreConnection, db_size
from memlane.store.records import (
    EVENT_COLUMNS,
    FILE_FIELDS,
    SESSIONLESS_TYPES,
    AppendResult,
    Event,
    NewEvent,
    event_from_row,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable, Iterator, Sequence
    from typing import Any


class EventStore(StoreConnection):
    """Appends and reads of events and sessions."""

    # ---- appends -------------------------------------------------------------------------------

    def append(self, events: Iterable[NewEvent]) -> AppendResult:
        """Store events once each (by dedupe key), with outbox jobs and session counters."""
        with self.write() as db:
            return self._insert_all(db, events)

    def replace_derived(self, old_ids: Sequence[str], events: Iterable[NewEvent]) -> AppendResult:
        """Swap derived events (a session's summary or its import markers) for new ones in one transaction.

        Unlike ``forget`` this is routine upkeep, not a purge: no tombstone and no index rewrite, so a
        hook can afford it. Only for events rebuilt from the session's own events.
        """
        with self.write() as db:
            self._delete_ids(db, old_ids)
            return self._insert_all(db, events)

    def _insert_all(self, db: sqlite3.Connection, events: Iterable[NewEvent]) -> AppendResult:
        result = AppendResult()
        for event in events:
            event_id = self._insert(db, event)
            if event_id is None:
                result.duplicates += 1
            else:
                result.inserted.append(event_id)
        return result

    def _delete_ids(self, db: sqlite3.Connection, ids: Sequence[str]) -> None:
        """Delete events by id (FTS rows via triggers, outbox via cascade) and recount their sessions."""
        sessions: set[str] = set()
        for start in range(0, len(ids), 500):  # SQLite binds at most 999 parameters per statement
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            sessions.update(
                r[0] for r in db.execute(f"SELECT DISTINCT session_id FROM events WHERE id IN ({marks})", chunk)
            )
            db.execute(f"DELETE FROM events WHERE id IN ({marks})", chunk)
        for sid in sessions:
            self._recount_session(db, sid)

    def _insert(self, db: sqlite3.Connection, event: NewEvent) -> str | None:
        dedupe = event.key()
        if db.execute("SELECT 1 FROM events WHERE dedupe_key = ?", (dedupe,)).fetchone():
            return None
        ts = event.ts or keys.now_iso()
        if event.type == "tool_observation" and "tool_index" not in event.metadata:
            event.metadata.update(self._tool_position(db, event.session_id))
        event_id = keys.new_event_id()
        citation = next(
            c
            for c in keys.citation_candidates(event_id, self.citation_length)
            if not db.execute("SELECT 1 FROM events WHERE citation = ?", (c,)).fetchone()
        )
        db.execute(
            "INSERT INTO events (id, citation, type, session_id, project_id, ts, content, canonical_key,"
            " dedupe_key, has_cjk, metadata) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                event_id,
                citation,
                event.type,
                event.session_id,
                self.project_id,
                ts,
                event.content,
                keys.canonical_key(event.content),
                dedupe,
                int(keys.has_cjk(event.content)),
                json.dumps(event.metadata, ensure_ascii=False),
            ),
        )
        if schema.indexed(event.type, event.content):  # bookkeeping gets no vectors (schema 9)
            now = keys.now_iso()
            db.execute(
                "INSERT INTO outbox (event_id, status, created_at, updated_at) VALUES (?, 'pending', ?, ?)",
                (event_id, now, now),
            )
        if event.type not in SESSIONLESS_TYPES:
            self._touch_session(db, event, ts)
        return event_id

    @staticmethod
    def _tool_position(db: sqlite3.Connection, session_id: str) -> dict[str, int]:
        """Where a tool call sits (the PostToolUse schema's promptIndex/toolIndex): ``prompt_index``, the
        position of the session's latest prompt (1 = its first; 0 = none stored yet), and ``tool_index``, the
        call's position among the tool calls stored since that prompt (1 = the first). Counted in the
        append's transaction, in the order calls are stored; two indexed reads over the session's tail."""
        row = db.execute(
            "SELECT seq FROM events WHERE session_id = ? AND +type = 'user_prompt' ORDER BY seq DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        since = row[0] if row else 0
        prompts = None
        if row:
            prompts = db.execute("SELECT prompt_count FROM sessions WHERE id = ?", (session_id,)).fetchone()
        tools = db.execute(
            "SELECT COUNT(*) FROM events WHERE session_id = ? AND seq > ? AND +type = 'tool_observation'",
            (session_id, since),
        ).fetchone()[0]
        return {"prompt_index": int(prompts[0]) if prompts else 0, "tool_index": int(tools) + 1}

    def _touch_session(self, db: sqlite3.Connection, event: NewEvent, ts: str) -> None:
        meta = event.metadata
        db.execute(
            "INSERT INTO sessions (id, project_id, started_at, last_activity, cwd, transcript_path,"
            " event_count, prompt_count) VALUES (?,?,?,?,?,?,1,?)"
            " ON CONFLICT(id) DO UPDATE SET event_count = event_count + 1,"
            " prompt_count = prompt_count + excluded.prompt_count,"
            " started_at = min(started_at, excluded.started_at),"
            " last_activity = max(last_activity, excluded.last_activity),"
            " cwd = coalesce(cwd, excluded.cwd), transcript_path = coalesce(transcript_path, excluded.transcript_path)",
            (
                event.session_id,
                self.project_id,
                ts,
                ts,
                _str_or_none(meta.get("cwd")),  # metadata comes from outside: only text goes in these columns
                _str_or_none(meta.get("transcript_path")),
                int(event.type == "user_prompt"),
            ),
        )
        if event.type == "session_start":
            db.execute(
                "UPDATE sessions SET source = ? WHERE id = ?", (_str_or_none(meta.get("source")), event.session_id)
            )
        elif event.type == "session_end":
            db.execute(
                "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?",
                (ts, _str_or_none(meta.get("reason")), event.session_id),
            )
        elif event.type == "session_summary":
            db.execute("UPDATE sessions SET summary = ? WHERE id = ?", (event.content, event.session_id))

    # ---- reads ---------------------------------------------------------------------------------

    def generation(self) -> tuple[int, int]:
        """A value that changes whenever an event is stored, forgotten or redacted (the last event's seq and
        the last tombstone's id; both O(1)): caches of what was read key on it (``retrieval.disclosure``)."""
        seq = self.db.execute("SELECT MAX(seq) FROM events").fetchone()[0]
        tomb = self.db.execute("SELECT MAX(id) FROM tombstones").fetchone()[0]
        return int(seq or 0), int(tomb or 0)

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM events").fetchone()[0])

    def recent_type_counts(self, limit: int) -> dict[str, int]:
        """How many of the latest ``limit`` events are of each type (the store's shape, ``engine.shaped_config``)."""
        rows = self.db.execute(
            "SELECT type, COUNT(*) FROM (SELECT type FROM events ORDER BY seq DESC LIMIT ?) GROUP BY type", (limit,)
        )
        return {str(t): int(n) for t, n in rows}

    def ids_by_dedupe_keys(self, dedupe_keys: Sequence[str]) -> list[str]:
        """The stored ids of events with these dedupe keys, in the keys' order (absent ones left out)."""
        return [
            r[0] for key in dedupe_keys for r in self.db.execute("SELECT id FROM events WHERE dedupe_key = ?", (key,))
        ]

    def unsummarized_sessions(self, exclude: str, limit: int) -> list[str]:
        """Ids of other sessions with prompts but neither an end nor a summary, most recently active first."""
        rows = self.db.execute(
            "SELECT id FROM sessions WHERE id != ? AND ended_at IS NULL AND summary IS NULL AND prompt_count > 0"
            " ORDER BY last_activity DESC LIMIT ?",
            (exclude, limit),
        )
        return [r[0] for r in rows]

    def has_dedupe_key(self, dedupe_key: str) -> bool:
        return self.db.execute("SELECT 1 FROM events WHERE dedupe_key = ?", (dedupe_key,)).fetchone() is not None

    def session_tool_file_paths(self, session_id: str, scan: int) -> list[object]:
        """``metadata.file_path`` of the session's latest ``scan`` tool observations, newest first (any JSON
        value, or None: metadata comes from outside)."""
        # ``+type``: no index on type here, so SQLite walks the session's own (session_id, seq) index
        # instead of every tool observation of the project (8 ms at 20k events → 0.05 ms).
        rows = self.db.execute(
            "SELECT json_extract(metadata, '$.file_path') FROM events "
            "WHERE session_id = ? AND +type = 'tool_observation' ORDER BY seq DESC LIMIT ?",
            (session_id, scan),
        )
        return [r[0] for r in rows]

    def stored_tool_use_ids(self, session_id: str, tool_use_ids: Sequence[str], scan: int) -> set[str]:
        """Which of ``tool_use_ids`` the session's latest ``scan`` tool observations record (any content)."""
        wanted = set(tool_use_ids)
        if not wanted:
            return set()
        # ``+type`` keeps SQLite on the (session_id, seq) index, as above.
        rows = self.db.execute(
            "SELECT json_extract(metadata, '$.tool_use_id') FROM events "
            "WHERE session_id = ? AND +type = 'tool_observation' ORDER BY seq DESC LIMIT ?",
            (session_id, scan),
        )
        return {str(r[0]) for r in rows if r[0] in wanted}

    def embeddable_event_ids(self) -> set[str]:
        """Ids of the events that get vectors (bookkeeping, like session start/end markers, does not)."""
        return {r[0] for r in self.db.execute(f"SELECT id FROM events WHERE NOT {schema.bookkeeping_sql()}")}

    def get(self, ref: str) -> Event | None:
        """An event by id, unique id prefix (≥ 8 chars) or citation (``mem:abc123``)."""
        ref = ref.strip()
        citation = keys.parse_citation(ref)
        if citation:
            row = self.db.execute(f"SELECT {EVENT_COLUMNS} FROM events WHERE citation = ?", (citation,)).fetchone()
            if row:
                return event_from_row(row)
        row = self.db.execute(f"SELECT {EVENT_COLUMNS} FROM events WHERE id = ?", (ref,)).fetchone()
        if row:
            return event_from_row(row)
        if len(ref) >= 8 and re.fullmatch(r"[0-9a-f]+", ref):
            rows = self.db.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE id >= ? AND id < ? LIMIT 2", (ref, ref + "g")
            ).fetchall()
            if len(rows) == 1:
                return event_from_row(rows[0])
        return None

    def by_ids(self, ids: Sequence[str]) -> list[Event]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(f"SELECT {EVENT_COLUMNS} FROM events WHERE id IN ({marks})", list(ids)).fetchall()
        found = {r[1]: event_from_row(r) for r in rows}
        return [found[i] for i in ids if i in found]

    def by_seqs(self, seqs: Sequence[int]) -> dict[int, Event]:
        if not seqs:
            return {}
        out: dict[int, Event] = {}
        for start in range(0, len(seqs), 500):
            chunk = list(seqs[start : start + 500])
            marks = ",".join("?" * len(chunk))
            for row in self.db.execute(f"SELECT {EVENT_COLUMNS} FROM events WHERE seq IN ({marks})", chunk):
                out[row[0]] = event_from_row(row)
        return out

    def history(
        self,
        *,
        session: str | None = None,
        types: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = 50,
        oldest_first: bool = False,
        tool: str | None = None,
        file: str | None = None,
        failed: bool = False,
    ) -> list[Event]:
        """Events newest first (``oldest_first`` reverses), filtered; ``tool``/``file``/``failed`` list tool
        calls (``records.TOOL_FILTERS``)."""
        where, args = self._filters(
            session=session, types=types, since=since, until=until, tool=tool, file=file, failed=failed
        )
        order = "ASC" if oldest_first else "DESC"
        # By the event's own time, not insertion: an import adds old sessions (and a session's interim
        # texts) after newer events; seq only breaks ties.
        rows = self.db.execute(
            f"SELECT {EVENT_COLUMNS} FROM events {where} ORDER BY ts {order}, seq {order} LIMIT ?", [*args, limit]
        ).fetchall()
        return [event_from_row(r) for r in rows]

    def iter_events(self, batch: int = 1000) -> Iterator[Event]:
        last = 0
        while True:
            rows = self.db.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?", (last, batch)
            ).fetchall()
            if not rows:
                return
            for row in rows:
                yield event_from_row(row)
            last = rows[-1][0]

    def exchange_prompts(self, events: Sequence[Event]) -> dict[str, Event]:
        """For each event, the user prompt that opened its exchange (the latest prompt of its session
        at or before it), keyed by the event's id. Events with no prompt before them are left out."""
        out: dict[str, Event] = {}
        for event in events:
            # `+type`: keeps the planner on events_session (session, seq); on the (type, seq) index it walks
            # every earlier prompt of every session (80 ms at 100k events, the hooks' fallback pays it).
            row = self.db.execute(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ? AND seq <= ? AND +type = 'user_prompt' "
                "ORDER BY seq DESC LIMIT 1",
                (event.session_id, event.seq),
            ).fetchone()
            if row is not None:
                out[event.id] = event_from_row(row)
        return out

    def replies(self, events: Sequence[Event]) -> dict[str, Event]:
        """For each prompt or answer, the turn that replied to it, keyed by the event's id: a prompt's is the last
        answer of its exchange (before the session's next prompt; an agent often says something on the way),
        an answer's is the next turn of its session when that is a prompt (the user answering it)."""
        out: dict[str, Event] = {}
        for event in events:
            if event.type == "user_prompt":
                row = self.db.execute(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ? AND seq > ? AND +type = 'agent_response'"
                    " AND seq < COALESCE((SELECT MIN(seq) FROM events WHERE session_id = ? AND seq > ?"
                    " AND +type = 'user_prompt'), 9223372036854775807) ORDER BY seq DESC LIMIT 1",
                    (event.session_id, event.seq, event.session_id, event.seq),
                ).fetchone()
            else:
                row = self.db.execute(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ? AND seq > ? "
                    "AND +type IN ('user_prompt', 'agent_response') ORDER BY seq LIMIT 1",
                    (event.session_id, event.seq),
                ).fetchone()
            if row is not None and (reply := event_from_row(row)).type != event.type:
                out[event.id] = reply
        return out

    def neighbours(self, event: Event, before: int = 3, after: int = 3) -> list[Event]:
        """Events of the same session around ``event``, in time order (then insertion), including it."""
        prev = self.db.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ? AND (ts < ? OR (ts = ? AND seq < ?))"
            " ORDER BY ts DESC, seq DESC LIMIT ?",
            (event.session_id, event.ts, event.ts, event.seq, before),
        ).fetchall()
        nxt = self.db.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ? AND (ts > ? OR (ts = ? AND seq > ?))"
            " ORDER BY ts, seq LIMIT ?",
            (event.session_id, event.ts, event.ts, event.seq, after),
        ).fetchall()
        return [*(event_from_row(r) for r in reversed(prev)), event, *(event_from_row(r) for r in nxt)]

    @staticmethod
    def _filters(
        *,
        session: str | None = None,
        types: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        alias: str = "",
        tool: str | None = None,
        file: str | None = None,
        failed: bool = False,
    ) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        args: list[Any] = []
        p = f"{alias}." if alias else ""
        if tool or file or failed:  # tool history (records.TOOL_FILTERS): tool calls only
            types = ["tool_observation"]
        if tool:
            clauses.append(f"json_extract({p}metadata, '$.tool_name') = ? COLLATE NOCASE")
            args.append(tool)
        if failed:
            clauses.append(f"json_extract({p}metadata, '$.success') = 0")
        if file:
            like = "%" + file.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            fields = " OR ".join(f"json_extract({p}metadata, '$.{f}') LIKE ? ESCAPE '\\'" for f in FILE_FIELDS)
            clauses.append(f"({fields})")
            args.extend([like] * len(FILE_FIELDS))
        if session:
            clauses.append(f"{p}session_id = ?")
            args.append(session)
        if types:
            clauses.append(f"{p}type IN ({','.join('?' * len(types))})")
            args.extend(types)
        if since:
            clauses.append(f"{p}ts >= ?")
            args.append(since)
        if until:
            clauses.append(f"{p}ts < ?")
            args.append(until)
        return ("WHERE " + " AND ".join(clauses)) if clauses else "", args

    def sessions(self, limit: int = 20) -> list[dict[str, Any]]:
        cur = self.db.execute(
            "SELECT id, started_at, last_activity, ended_at, end_reason, source, cwd, event_count,"
            " prompt_count, summary FROM sessions ORDER BY last_activity DESC LIMIT ?",
            (limit,),
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def session(self, session_id: str) -> dict[str, Any] | None:
        cur = self.db.execute("SELECT * FROM sessions WHERE id = ?", (session_id,))
        row = cur.fetchone()
        return dict(zip([d[0] for d in cur.description], row, strict=True)) if row else None

    def stats(self) -> dict[str, Any]:
        db = self.db
        by_type = dict(db.execute("SELECT type, COUNT(*) FROM events GROUP BY type ORDER BY 2 DESC").fetchall())
        privacy = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(json_extract(metadata, '$.privacy.private_sections')), 0),"
            " COALESCE(SUM(json_extract(metadata, '$.privacy.secrets_redacted')), 0),"
            " COALESCE(SUM(json_extract(metadata, '$.privacy.chars_filtered')), 0),"
            " COALESCE(SUM(json_extract(metadata, '$.privacy.unclosed_tags')), 0),"
            " COALESCE(SUM(json_extract(metadata, '$.privacy.anonymized')), 0)"
            # instr first: most events have no privacy stamp, and a text search is far cheaper than parsing
            # every event's JSON (100k events: ~80 → ~25 ms).
            " FROM events WHERE instr(metadata, '\"privacy\"') > 0 AND json_extract(metadata, '$.privacy') IS NOT NULL"
        ).fetchone()
        outbox = dict(db.execute("SELECT status, COUNT(*) FROM outbox GROUP BY status").fetchall())
        first, last = db.execute("SELECT MIN(ts), MAX(ts) FROM events").fetchone()
        return {
            "project_id": self.project_id,
            "events": sum(by_type.values()),
            "sessions": db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
            "by_type": by_type,
            "first_activity": first,
            "last_activity": last,
            "privacy": {
                "events_filtered": privacy[0],
                "private_sections": privacy[1],
                "secrets_redacted": privacy[2],
                "chars_filtered": privacy[3],
                "unclosed_tags": privacy[4],  # private tags never closed: the text after each was kept
                "anonymized": privacy[5],
            },
            "outbox": outbox,
            "tombstones": db.execute("SELECT COUNT(*) FROM tombstones").fetchone()[0],
            "db_bytes": db_size(self.file),
        }

    def clear_sessions(self) -> None:
        """Empty the sessions table (``memlane rebuild`` replays the events into it)."""
        self.db.execute("DELETE FROM sessions")

    def replay_sessions(self, events: Iterable[Event]) -> None:
        """Count events into their sessions as ``append`` does (inside the caller's transaction)."""
        for event in events:
            if event.type not in SESSIONLESS_TYPES:
                new = NewEvent(event.type, event.session_id, event.content, metadata=event.metadata, ts=event.ts)
                self._touch_session(self.db, new, event.ts)

    def _recount_session(self, db: sqlite3.Connection, session_id: str) -> None:
        count, prompts = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(type = 'user_prompt'), 0) FROM events WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        if count == 0:
            db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            return
        summary = db.execute(
            "SELECT content FROM events WHERE session_id = ? AND type = 'session_summary' ORDER BY seq DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        db.execute(
            "UPDATE sessions SET event_count = ?, prompt_count = ?, summary = ? WHERE id = ?",
            (count, prompts, summary[0] if summary else None, session_id),
        )


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None
