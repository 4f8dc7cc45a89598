"""Endless mode's tables' SQL (schema 90): marks, session spans and continuity, the working set snapshot,
consolidated memories with their sources and search index, the consolidation queue, and the project's mode.

``memlane.endless`` decides what goes in them; this module only reads and writes rows. Every table here is
derived from ``events`` (``memlane rebuild`` empties and refills them); the one setting kept here is the
project's mode (``meta``: ``endless.mode``), which a rebuild leaves alone, and the one log the answers of a
configured LLM for a memory's key facts (``llm_consolidations``, schema 91), which a rebuild reuses.

Stdlib only and cheap to import: ``Store`` includes this class, and the hooks import ``Store`` (SessionStart
reads the mode, and in the daemon the working set).
"""

from __future__ import annotations

from memlane.store.events import EventStore
from memlane.store.rows import dumps as _dumps
from memlane.store.rows import loads as _loads
from memlane.store.rows import marks as _marks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

# What ``drop_endless`` empties (child tables first). The mode (``meta``) is a setting, not derived: it stays.
ENDLESS_TABLES = (
    "consolidated_sources",
    "consolidated_memories",
    "endless_dirty",
    "working_set",
    "endless_sessions",
    "endless_marks",
    "endless_state",
)
MODE_KEY = "endless.mode"
MARK_COLUMNS = "event_id, idx, seq, session_id, ts, kind, key, role, fact"
WS_COLUMNS = "rank, kind, key, title, event_id, first_ts, last_ts, touches, sessions, status, score, detail"
CM_COLUMNS = "id, kind, key, title, summary, facts, confidence, sessions, sources, first_ts, last_ts"
CM_LLM_COLUMNS = "llm_input, llm_answer"  # schema 91: '' and NULL for an extractive memory (not shown then)
SESSION_COLUMNS = "session_id, started, last_ts, prev_session_id, score, transition, detail"


class EndlessStore(EventStore):
    """Rows of endless mode's tables. Write methods run inside the caller's ``write()`` transaction."""

    # ---- the project's mode (a setting) -----------------------------------------------------------

    def endless_mode(self) -> str | None:
        """The project's own mode (``session`` or ``endless``), or None when it has none (the config decides)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (MODE_KEY,)).fetchone()
        return str(row[0]) if row else None

    def set_endless_mode(self, mode: str | None) -> None:
        if mode is None:
            self.db.execute("DELETE FROM meta WHERE key = ?", (MODE_KEY,))
        else:
            self.db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (MODE_KEY, mode),
            )

    # ---- bookkeeping ------------------------------------------------------------------------------

    def drop_endless(self) -> None:
        for table in ENDLESS_TABLES:
            self.db.execute(f"DELETE FROM {table}")
        self.db.execute("DELETE FROM consolidated_fts")
        self.db.execute("DELETE FROM consolidated_cjk")

    def endless_state(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self.db.execute("SELECT key, value FROM endless_state")}

    def set_endless_state(self, values: dict[str, Any]) -> None:
        self.db.executemany(
            "INSERT INTO endless_state (key, value) VALUES (?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [(k, str(v)) for k, v in values.items()],
        )

    # ---- marks ------------------------------------------------------------------------------------

    def put_marks(self, rows: Iterable[Sequence[Any]]) -> None:
        """(event_id, idx, seq, session_id, ts, kind, key, role, fact) rows; a row projected again replaces itself."""
        self.db.executemany(
            f"INSERT OR REPLACE INTO endless_marks ({MARK_COLUMNS}) VALUES ({_marks(9)})",
            list(rows),
        )

    def marks_of_session(
        self, session_id: str, kinds: Sequence[str] = (), after_seq: int = 0, before_seq: int | None = None
    ) -> list[dict[str, Any]]:
        sql = f"SELECT {MARK_COLUMNS} FROM endless_marks WHERE session_id = ? AND seq > ?"
        args: list[Any] = [session_id, after_seq]
        if before_seq is not None:
            sql += " AND seq < ?"
            args.append(before_seq)
        if kinds:
            sql += f" AND kind IN ({_marks(len(kinds))})"
            args.extend(kinds)
        return [self._mark(r) for r in self.db.execute(sql + " ORDER BY seq, idx", args)]

    def topic_overview(self, kind: str, key: str) -> dict[str, Any]:
        """A topic's marks in figures: distinct events and sessions, first and last time, the roles seen."""
        row = self.db.execute(
            "SELECT count(DISTINCT event_id), count(DISTINCT session_id), min(ts), max(ts), group_concat(DISTINCT role)"
            " FROM endless_marks WHERE kind = ? AND key = ?",
            (kind, key),
        ).fetchone()
        return {
            "events": int(row[0] or 0),
            "sessions": int(row[1] or 0),
            "first_ts": row[2],
            "last_ts": row[3],
            "roles": set(str(row[4]).split(",")) if row[4] else set(),
        }

    def topic_marks(self, kind: str, key: str, roles: Sequence[str], limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` marks of a topic with one of ``roles``, oldest first."""
        rows = self.db.execute(
            f"SELECT {MARK_COLUMNS} FROM endless_marks WHERE kind = ? AND key = ? AND role IN ({_marks(len(roles))})"
            " ORDER BY ts DESC, seq DESC, idx DESC LIMIT ?",
            (kind, key, *roles, limit),
        )
        return [self._mark(r) for r in reversed(rows.fetchall())]

    def events_marking(self, kind: str, keys: Sequence[str]) -> list[tuple[str, str]]:
        """(event id, key) of every event that marks one of ``keys`` of ``kind``."""
        if not keys:
            return []
        rows = self.db.execute(
            f"SELECT DISTINCT event_id, key FROM endless_marks WHERE kind = ? AND key IN ({_marks(len(keys))})",
            (kind, *keys),
        )
        return [(str(e), str(k)) for e, k in rows]

    def recent_marks(self, since: str, kinds: Sequence[str], limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` marks of ``kinds`` at or after ``since``, newest first."""
        rows = self.db.execute(
            f"SELECT {MARK_COLUMNS} FROM endless_marks WHERE ts >= ? AND kind IN ({_marks(len(kinds))})"
            " ORDER BY ts DESC, seq DESC, idx DESC LIMIT ?",
            (since, *kinds, limit),
        )
        return [self._mark(r) for r in rows]

    def latest_mark_ts(self) -> str | None:
        row = self.db.execute("SELECT max(ts) FROM endless_marks").fetchone()
        return str(row[0]) if row and row[0] else None

    def session_keys(self, session_id: str) -> list[tuple[str, str]]:
        """Each (kind, key) a session's marks name, once."""
        rows = self.db.execute("SELECT DISTINCT kind, key FROM endless_marks WHERE session_id = ?", (session_id,))
        return [(str(k), str(v)) for k, v in rows]

    @staticmethod
    def _mark(row: Sequence[Any]) -> dict[str, Any]:
        return dict(zip([c.strip() for c in MARK_COLUMNS.split(",")], row, strict=True))

    # ---- sessions and continuity ------------------------------------------------------------------

    def endless_session(self, session_id: str) -> dict[str, Any] | None:
        row = self.db.execute(
            f"SELECT {SESSION_COLUMNS} FROM endless_sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        return self._session(row) if row else None

    def touch_endless_session(self, session_id: str, ts: str) -> tuple[str | None, str]:
        """Widen a session's span to ``ts`` and mark it for a new continuity score; (its start before, after)."""
        row = self.db.execute("SELECT started, last_ts FROM endless_sessions WHERE session_id = ?", (session_id,))
        found = row.fetchone()
        if found is None:
            self.db.execute(
                "INSERT INTO endless_sessions (session_id, started, last_ts, dirty) VALUES (?, ?, ?, 1)",
                (session_id, ts, ts),
            )
            return None, ts
        started, last = str(found[0]), str(found[1])
        new_started, new_last = min(started, ts), max(last, ts)
        self.db.execute(
            "UPDATE endless_sessions SET started = ?, last_ts = ?, dirty = 1 WHERE session_id = ?",
            (new_started, new_last, session_id),
        )
        return started, new_started

    def mark_session_dirty(self, session_id: str) -> None:
        self.db.execute("UPDATE endless_sessions SET dirty = 1 WHERE session_id = ?", (session_id,))

    def session_after(self, started: str, session_id: str = "") -> str | None:
        """The session that starts next after (``started``, ``session_id``)."""
        row = self.db.execute(
            "SELECT session_id FROM endless_sessions WHERE (started, session_id) > (?, ?)"
            " ORDER BY started, session_id LIMIT 1",
            (started, session_id),
        ).fetchone()
        return str(row[0]) if row else None

    def session_before(self, started: str, session_id: str) -> dict[str, Any] | None:
        """The session that started last before (``started``, ``session_id``)."""
        row = self.db.execute(
            f"SELECT {SESSION_COLUMNS} FROM endless_sessions WHERE (started, session_id) < (?, ?)"
            " ORDER BY started DESC, session_id DESC LIMIT 1",
            (started, session_id),
        ).fetchone()
        return self._session(row) if row else None

    def dirty_sessions(self, limit: int) -> list[str]:
        rows = self.db.execute("SELECT session_id FROM endless_sessions WHERE dirty = 1 LIMIT ?", (limit,))
        return [str(r[0]) for r in rows]

    def set_continuity(
        self, session_id: str, prev: str | None, score: float | None, transition: str | None, detail: dict[str, Any]
    ) -> None:
        self.db.execute(
            "UPDATE endless_sessions SET prev_session_id = ?, score = ?, transition = ?, detail = ?, dirty = 0"
            " WHERE session_id = ?",
            (prev, score, transition, _dumps(detail), session_id),
        )

    def continuity(self, limit: int = 20, session_id: str | None = None) -> list[dict[str, Any]]:
        """Sessions with their continuity score, latest first (or the one named)."""
        if session_id is not None:
            one = self.endless_session(session_id)
            return [one] if one else []
        rows = self.db.execute(
            f"SELECT {SESSION_COLUMNS} FROM endless_sessions ORDER BY started DESC, session_id DESC LIMIT ?", (limit,)
        )
        return [self._session(r) for r in rows]

    @staticmethod
    def _session(row: Sequence[Any]) -> dict[str, Any]:
        out = dict(zip([c.strip() for c in SESSION_COLUMNS.split(",")], row, strict=True))
        out["detail"] = _loads(out["detail"], {})
        return out

    # ---- the working set --------------------------------------------------------------------------

    def replace_working_set(self, items: Sequence[dict[str, Any]]) -> None:
        self.db.execute("DELETE FROM working_set")
        self.db.executemany(
            f"INSERT INTO working_set ({WS_COLUMNS}) VALUES ({_marks(12)})",
            [
                (
                    rank,
                    i["kind"],
                    i["key"],
                    i["title"],
                    i["event_id"],
                    i["first_ts"],
                    i["last_ts"],
                    i["touches"],
                    i["sessions"],
                    i.get("status", ""),
                    i["score"],
                    _dumps(i.get("detail") or {}),
                )
                for rank, i in enumerate(items, start=1)
            ],
        )

    def working_set(self) -> list[dict[str, Any]]:
        """The working set as last computed, best first, each item with its event's citation."""
        rows = self.db.execute(
            f"SELECT {', '.join('w.' + c.strip() for c in WS_COLUMNS.split(','))}, e.citation"
            " FROM working_set w JOIN events e ON e.id = w.event_id ORDER BY w.rank"
        )
        names = [c.strip() for c in WS_COLUMNS.split(",")] + ["citation"]
        out = []
        for row in rows:
            item = dict(zip(names, row, strict=True))
            item["detail"] = _loads(item["detail"], {})
            item["citation"] = f"mem:{item['citation']}"
            out.append(item)
        return out

    # ---- consolidation ----------------------------------------------------------------------------

    def mark_topics_dirty(self, topics: Iterable[tuple[str, str]]) -> None:
        self.db.executemany("INSERT OR IGNORE INTO endless_dirty (kind, key) VALUES (?, ?)", list(topics))

    def dirty_topics(self, limit: int) -> list[tuple[str, str]]:
        rows = self.db.execute("SELECT kind, key FROM endless_dirty ORDER BY kind, key LIMIT ?", (limit,))
        return [(str(k), str(v)) for k, v in rows]

    def dirty_topic_count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM endless_dirty").fetchone()[0])

    def clear_dirty_topic(self, kind: str, key: str) -> None:
        self.db.execute("DELETE FROM endless_dirty WHERE kind = ? AND key = ?", (kind, key))

    def put_consolidated(self, memory: dict[str, Any]) -> None:
        """Write (or rewrite) one consolidated memory and its search rows; its sources are every event that marks its
        topic (added, never rewritten: a hot file's thousands of sources cost an index scan, not a rewrite)."""
        self.db.execute(
            f"INSERT INTO consolidated_memories ({CM_COLUMNS}, {CM_LLM_COLUMNS}) VALUES ({_marks(13)})"
            " ON CONFLICT(id) DO UPDATE SET title = excluded.title, summary = excluded.summary,"
            " facts = excluded.facts, confidence = excluded.confidence, sessions = excluded.sessions,"
            " sources = excluded.sources, first_ts = excluded.first_ts, last_ts = excluded.last_ts,"
            " llm_input = excluded.llm_input, llm_answer = excluded.llm_answer",
            (
                memory["id"],
                memory["kind"],
                memory["key"],
                memory["title"],
                memory["summary"],
                _dumps(memory["facts"]),
                memory["confidence"],
                memory["sessions"],
                memory["sources"],
                memory["first_ts"],
                memory["last_ts"],
                memory.get("llm_input") or "",
                memory.get("llm_answer"),
            ),
        )
        self.db.execute(
            "INSERT OR IGNORE INTO consolidated_sources (memory_id, event_id)"
            " SELECT DISTINCT ?, event_id FROM endless_marks WHERE kind = ? AND key = ?",
            (memory["id"], memory["kind"], memory["key"]),
        )
        self.db.execute("DELETE FROM consolidated_fts WHERE memory_id = ?", (memory["id"],))
        self.db.execute("DELETE FROM consolidated_cjk WHERE memory_id = ?", (memory["id"],))
        self.db.execute(
            "INSERT INTO consolidated_fts (memory_id, title, summary) VALUES (?, ?, ?)",
            (memory["id"], memory["title"], memory["summary"]),
        )
        if memory.get("cjk"):
            self.db.execute(
                "INSERT INTO consolidated_cjk (memory_id, text) VALUES (?, ?)",
                (memory["id"], memory["title"] + "\n" + memory["summary"]),
            )

    def delete_consolidated(self, memory_id: str) -> None:
        self.db.execute("DELETE FROM consolidated_memories WHERE id = ?", (memory_id,))
        self.db.execute("DELETE FROM consolidated_fts WHERE memory_id = ?", (memory_id,))
        self.db.execute("DELETE FROM consolidated_cjk WHERE memory_id = ?", (memory_id,))

    def consolidated(
        self, ids: Sequence[str] | None = None, *, limit: int = 100, order: str = "last"
    ) -> list[dict[str, Any]]:
        """Consolidated memories (``order``: ``last`` newest first, ``sessions`` most sessions first)."""
        sql = f"SELECT {CM_COLUMNS}, llm_answer FROM consolidated_memories"
        args: list[Any] = []
        if ids is not None:
            if not ids:
                return []
            sql += f" WHERE id IN ({_marks(len(ids))})"
            args.extend(ids)
        by = "sessions DESC, last_ts DESC, id" if order == "sessions" else "last_ts DESC, id"
        rows = self.db.execute(f"{sql} ORDER BY {by} LIMIT ?", (*args, limit))
        return [self._consolidated(r) for r in rows]

    def consolidated_by_topic(self, kind: str, key: str) -> dict[str, Any] | None:
        row = self.db.execute(
            f"SELECT {CM_COLUMNS}, llm_answer FROM consolidated_memories WHERE kind = ? AND key = ?", (kind, key)
        ).fetchone()
        return self._consolidated(row) if row else None

    def consolidated_sources(self, memory_id: str) -> list[str]:
        rows = self.db.execute(
            "SELECT s.event_id FROM consolidated_sources s JOIN events e ON e.id = s.event_id"
            " WHERE s.memory_id = ? ORDER BY e.ts, e.seq",
            (memory_id,),
        )
        return [str(r[0]) for r in rows]

    def consolidated_count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM consolidated_memories").fetchone()[0])

    def search_consolidated(self, words: Sequence[str], trigrams: Sequence[str], limit: int) -> list[str]:
        """Ids of consolidated memories matching any of the quoted ``words`` (BM25 order), then ``trigrams``."""
        found: dict[str, None] = {}
        if words:
            rows = self.db.execute(
                "SELECT memory_id FROM consolidated_fts WHERE consolidated_fts MATCH ? ORDER BY bm25(consolidated_fts)"
                " LIMIT ?",
                (" OR ".join(words), limit),
            )
            found.update((str(r[0]), None) for r in rows)
        if trigrams and len(found) < limit:
            rows = self.db.execute(
                "SELECT memory_id FROM consolidated_cjk WHERE consolidated_cjk MATCH ? ORDER BY bm25(consolidated_cjk)"
                " LIMIT ?",
                (" OR ".join(trigrams), limit),
            )
            found.update((str(r[0]), None) for r in rows)
        return list(found)[:limit]

    @staticmethod
    def _consolidated(row: Sequence[Any]) -> dict[str, Any]:
        """A memory's row; ``llm_answer`` (the id of the answer its key facts come from) only when it has one."""
        out = dict(zip([c.strip() for c in CM_COLUMNS.split(",")] + ["llm_answer"], row, strict=True))
        out["facts"] = _loads(out["facts"], [])
        if out["llm_answer"] is None:
            del out["llm_answer"]
        return out

    # ---- LLM-assisted key facts (schema 91) -------------------------------------------------------

    def has_llm_consolidations(self) -> bool:
        return self.db.execute("SELECT 1 FROM llm_consolidations LIMIT 1").fetchone() is not None

    def llm_consolidation(self, input_hash: str) -> dict[str, Any] | None:
        """The kept answer for one input (its id, provider, model and response), or None."""
        row = self.db.execute(
            "SELECT id, provider, model, response FROM llm_consolidations WHERE input_hash = ?", (input_hash,)
        ).fetchone()
        if row is None:
            return None
        return {"id": int(row[0]), "provider": row[1], "model": row[2], "response": _loads(row[3], {})}

    def llm_consolidations_by_id(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        if not ids:
            return {}
        rows = self.db.execute(
            f"SELECT id, provider, model, ts FROM llm_consolidations WHERE id IN ({_marks(len(ids))})", list(ids)
        )
        return {int(r[0]): {"provider": r[1], "model": r[2], "ts": r[3]} for r in rows}

    def add_llm_consolidation(self, row: dict[str, Any], event_ids: Sequence[str]) -> int:
        """Keep one answer and the events it was given, in order (its own transaction); its id."""
        with self.write() as db:
            cur = db.execute(
                "INSERT OR IGNORE INTO llm_consolidations (input_hash, memory_id, provider, model, response,"
                " input_tokens, output_tokens, cost_usd, ts) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    row["input_hash"],
                    row["memory_id"],
                    row["provider"],
                    row["model"],
                    _dumps(row["response"]),
                    row["input_tokens"],
                    row["output_tokens"],
                    row["cost_usd"],
                    row["ts"],
                ),
            )
            if not cur.rowcount:
                found = db.execute("SELECT id FROM llm_consolidations WHERE input_hash = ?", (row["input_hash"],))
                return int(found.fetchone()[0])
            answer_id = int(cur.lastrowid or 0)
            db.executemany(
                "INSERT OR IGNORE INTO llm_consolidation_events (consolidation_id, event_id, idx)"
                " SELECT ?, id, ? FROM events WHERE id = ?",
                [(answer_id, i, event_id) for i, event_id in enumerate(event_ids)],
            )
            return answer_id

    # A memory waiting for a model: extractive, long-running, with an input (``llm_input``; '-': nothing to ask)
    # that no kept answer is for.
    _WAITING = (
        " FROM consolidated_memories m WHERE m.llm_answer IS NULL AND m.sessions >= ?"
        " AND m.llm_input NOT IN ('', '-')"
        " AND NOT EXISTS (SELECT 1 FROM llm_consolidations c WHERE c.input_hash = m.llm_input)"
    )

    def llm_waiting(self, min_sessions: int, limit: int) -> list[tuple[str, str, str]]:
        """(kind, key, llm_input) of memories waiting for a model, not queued for consolidation again, most sessions
        first, then newest."""
        rows = self.db.execute(
            f"SELECT m.kind, m.key, m.llm_input {self._WAITING}"
            " AND NOT EXISTS (SELECT 1 FROM endless_dirty d WHERE d.kind = m.kind AND d.key = m.key)"
            " ORDER BY m.sessions DESC, m.last_ts DESC, m.id LIMIT ?",
            (min_sessions, limit),
        )
        return [(str(k), str(v), str(h)) for k, v, h in rows]

    def llm_unprepared(self, min_sessions: int, limit: int) -> list[tuple[str, str]]:
        """(kind, key) of long-running memories without an LLM input: consolidated before an LLM was turned on."""
        rows = self.db.execute(
            "SELECT kind, key FROM consolidated_memories WHERE llm_input = '' AND sessions >= ?"
            " ORDER BY sessions DESC, last_ts DESC, id LIMIT ?",
            (min_sessions, limit),
        )
        return [(str(k), str(v)) for k, v in rows]

    def llm_counts(self, min_sessions: int) -> dict[str, int]:
        """Memories whose key facts a model quoted (``assisted``), and the long-running ones still extractive that a
        model has not answered for (``waiting``, those consolidated before an LLM was on among them)."""
        one = self.db.execute
        assisted = one("SELECT count(*) FROM consolidated_memories WHERE llm_answer IS NOT NULL").fetchone()[0]
        waiting = one(f"SELECT count(*) {self._WAITING}", (min_sessions,)).fetchone()[0]
        unprepared = one(
            "SELECT count(*) FROM consolidated_memories WHERE llm_input = '' AND sessions >= ?", (min_sessions,)
        ).fetchone()[0]
        return {"assisted": int(assisted), "waiting": int(waiting) + int(unprepared)}

    def citations(self, event_ids: Sequence[str]) -> dict[str, str]:
        """Event id → its citation (``mem:xxxxxx``) for the ids that still exist."""
        out: dict[str, str] = {}
        ids = list(dict.fromkeys(event_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self.db.execute(f"SELECT id, citation FROM events WHERE id IN ({_marks(len(chunk))})", chunk)
            out.update((str(i), f"mem:{c}") for i, c in rows)
        return out

    def endless_counts(self) -> dict[str, int]:
        one = self.db.execute
        return {
            "marks": int(one("SELECT count(*) FROM endless_marks").fetchone()[0]),
            "sessions": int(one("SELECT count(*) FROM endless_sessions").fetchone()[0]),
            "working_set": int(one("SELECT count(*) FROM working_set").fetchone()[0]),
            "consolidated": self.consolidated_count(),
            "dirty_topics": self.dirty_topic_count(),
        }
