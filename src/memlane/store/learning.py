"""The learning loop's SQL (schema 40): fetches, memory usage, levels, insights and their sources, recurring errors,
the graduation job's state and the LLM extractor's answers. ``memlane.knowledge`` decides what goes in them.

Two tables are logs, not derived state (``rebuild`` keeps them): ``memory_fetches`` (who opened a memory in full)
and ``llm_extractions`` (what a configured model answered). Everything else is emptied by ``drop_learning`` and
refilled from the events and those logs. Write methods run inside the caller's ``write()`` transaction, except
``record_fetch``, which is its own.

Stdlib only and cheap to import: ``Store`` includes this class, and the hooks import ``Store``.
"""

from __future__ import annotations

import json

from memlane.store import keys
from memlane.store.events import EventStore
from memlane.store.rows import marks as _marks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

# Derived tables the learning projector owns (children first). The logs are not among them.
LEARNING_TABLES = (
    "insight_sources",
    "insights",
    "memory_levels",
    "memory_usage",
    "learning_errors",
    "learning_state",
    "learning_dirty",
)
USAGE_KINDS = ("injected", "listed", "fetched", "cited")
LEVEL_COLUMNS = (
    "event_id, level, injected, listed, fetched, cited, access, sessions, cross_session, confidence, replaced,"
    " last_used, demote_at, reason"
)
INSIGHT_COLUMNS = (
    "id, insight_type, canonical_key, content, origin, confidence, evidence_aligned, anchor_id, support, first_ts,"
    " last_ts, detail, level, access, sessions, cross_session, used_confidence, replaced, last_used, demote_at, reason"
)
SOURCE_COLUMNS = "insight_id, event_id, role, method, span_start, span_end, confidence"


def _cols(names: str) -> list[str]:
    return [n.strip() for n in names.split(",")]


def _chunks(items: Sequence[Any], size: int = 500) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


class LearningStore(EventStore):
    """Rows of the learning tables (see the module note)."""

    # ---- the logs ------------------------------------------------------------------------------------------

    def record_fetch(self, event_ids: Sequence[str], source: str, session_id: str | None) -> int:
        """Note that these memories were opened in full (``source``: mcp, cli, web); one short transaction."""
        ids = [i for i in dict.fromkeys(event_ids) if i]
        if not ids or self.ephemeral:
            return 0
        now = keys.now_iso()
        with self.write() as db:
            db.executemany(
                "INSERT INTO memory_fetches (event_id, session_id, source, ts)"
                " SELECT id, ?, ?, ? FROM events WHERE id = ?",
                [(session_id, source, now, i) for i in ids],
            )
        return len(ids)

    def fetches_after(self, fetch_id: int, limit: int = 1000) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT id, event_id, session_id, source, ts FROM memory_fetches WHERE id > ? ORDER BY id LIMIT ?",
            (fetch_id, limit),
        ).fetchall()
        return [dict(zip(("id", "event_id", "session_id", "source", "ts"), r, strict=True)) for r in rows]

    def last_fetch_id(self) -> int:
        return int(self.db.execute("SELECT COALESCE(MAX(id), 0) FROM memory_fetches").fetchone()[0])

    def add_extraction(self, row: dict[str, Any], event_ids: Sequence[str]) -> int:
        """Keep one LLM answer and the events it may quote from (its own transaction)."""
        with self.write() as db:
            cur = db.execute(
                "INSERT OR IGNORE INTO llm_extractions (session_id, input_hash, last_seq, provider, model, response,"
                " input_tokens, output_tokens, cost_usd, ts) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    row["session_id"],
                    row["input_hash"],
                    row["last_seq"],
                    row["provider"],
                    row["model"],
                    json.dumps(row["response"], ensure_ascii=False, sort_keys=True),
                    row["input_tokens"],
                    row["output_tokens"],
                    row["cost_usd"],
                    row.get("ts") or keys.now_iso(),
                ),
            )
            if not cur.rowcount:
                found = db.execute("SELECT id FROM llm_extractions WHERE input_hash = ?", (row["input_hash"],))
                return int(found.fetchone()[0])
            extraction_id = int(cur.lastrowid or 0)
            db.executemany(
                "INSERT OR IGNORE INTO llm_extraction_events (extraction_id, event_id, idx)"
                " SELECT ?, id, ? FROM events WHERE id = ?",
                [(extraction_id, i, event_id) for i, event_id in enumerate(event_ids)],
            )
            return extraction_id

    def extractions_after(self, extraction_id: int, limit: int = 100) -> list[dict[str, Any]]:
        """LLM answers in the order they were kept, each with the ids of the events it was given (by index)."""
        rows = self.db.execute(
            "SELECT id, session_id, last_seq, provider, model, response, ts FROM llm_extractions WHERE id > ?"
            " ORDER BY id LIMIT ?",
            (extraction_id, limit),
        ).fetchall()
        out = []
        for r in rows:
            events = self.db.execute(
                "SELECT idx, event_id FROM llm_extraction_events WHERE extraction_id = ? ORDER BY idx", (r[0],)
            ).fetchall()
            out.append(
                {
                    "id": r[0],
                    "session_id": r[1],
                    "last_seq": r[2],
                    "provider": r[3],
                    "model": r[4],
                    "response": json.loads(r[5]),
                    "ts": r[6],
                    "events": {int(i): e for i, e in events},
                }
            )
        return out

    def extraction_by_hash(self, input_hash: str) -> int | None:
        row = self.db.execute("SELECT id FROM llm_extractions WHERE input_hash = ?", (input_hash,)).fetchone()
        return int(row[0]) if row else None

    def extracted_through(self) -> dict[str, int]:
        """For each session, the last ``seq`` an LLM answer covered."""
        rows = self.db.execute("SELECT session_id, MAX(last_seq) FROM llm_extractions GROUP BY session_id")
        return {str(s): int(n) for s, n in rows}

    def extraction_candidates(self, quiet_before: str | None, limit: int = 50) -> list[dict[str, Any]]:
        """Sessions with conversation the LLM extractor has not read, latest first: those that ended, or (with
        ``quiet_before``) that have been quiet since then; each with the last ``seq`` already read."""
        done = self.extracted_through()
        rows = self.db.execute(
            "SELECT id, last_activity, ended_at FROM sessions WHERE ended_at IS NOT NULL OR last_activity < ?"
            " ORDER BY last_activity DESC, id LIMIT ?",
            (quiet_before or "\uffff", limit * 4),
        ).fetchall()
        out = []
        for sid, last, ended in rows:
            after = done.get(sid, 0)
            newer = self.db.execute(
                "SELECT 1 FROM events WHERE session_id = ? AND seq > ? AND type IN ('user_prompt', 'agent_response')"
                " LIMIT 1",
                (sid, after),
            ).fetchone()
            if newer:
                out.append({"session_id": sid, "last_activity": last, "ended_at": ended, "after_seq": after})
                if len(out) >= limit:
                    break
        return out

    def session_conversation(self, session_id: str, after_seq: int, limit: int = 2000) -> list[Any]:
        """A session's prompts, answers and tool calls after ``after_seq``, in order."""
        from memlane.store.records import EVENT_COLUMNS, event_from_row

        rows = self.db.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ? AND seq > ?"
            " AND type IN ('user_prompt', 'agent_response', 'tool_observation') ORDER BY seq LIMIT ?",
            (session_id, after_seq, limit),
        ).fetchall()
        return [event_from_row(r) for r in rows]

    def extraction_totals(self, since: str | None = None) -> dict[str, Any]:
        row = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),"
            " COALESCE(SUM(cost_usd), 0) FROM llm_extractions WHERE ts >= ?",
            (since or "",),
        ).fetchone()
        return {"calls": row[0], "input_tokens": row[1], "output_tokens": row[2], "cost_usd": round(row[3], 6)}

    # ---- derived: drop, state ------------------------------------------------------------------------------

    def drop_learning(self) -> None:
        for table in LEARNING_TABLES:
            self.db.execute(f"DELETE FROM {table}")

    def learning_state(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM learning_state").fetchall())

    def set_learning_state(self, values: dict[str, Any]) -> None:
        self.db.executemany(
            "INSERT INTO learning_state (key, value) VALUES (?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [(k, str(v)) for k, v in values.items()],
        )

    def mark_dirty(self, kind: str, ids: Iterable[str]) -> None:
        self.db.executemany("INSERT OR IGNORE INTO learning_dirty (kind, id) VALUES (?, ?)", [(kind, i) for i in ids])

    def take_dirty(self, kind: str, limit: int = 5000) -> list[str]:
        """Up to ``limit`` ids marked for judging again, removed from the mark (inside the caller's transaction)."""
        ids = [r[0] for r in self.db.execute(
            "SELECT id FROM learning_dirty WHERE kind = ? ORDER BY id LIMIT ?", (kind, limit))]  # fmt: skip
        self.db.executemany("DELETE FROM learning_dirty WHERE kind = ? AND id = ?", [(kind, i) for i in ids])
        return ids

    def clock(self) -> str:
        """The project's clock: the newest event's or use's time (levels age by it, not by the wall clock)."""
        row = self.db.execute(
            "SELECT MAX(t) FROM (SELECT MAX(ts) AS t FROM events UNION ALL SELECT MAX(ts) FROM memory_usage)"
        ).fetchone()
        return str(row[0] or "")

    # ---- usage ---------------------------------------------------------------------------------------------

    def add_usage(self, rows: Sequence[tuple[str, str, str, str | None, str, float]]) -> None:
        """``(event id, kind, source id, session id, ts, confidence)`` rows; a use noted twice counts once. Uses of
        events not (or no longer) in the store are skipped."""
        self.db.executemany(
            "INSERT OR IGNORE INTO memory_usage (event_id, kind, source_id, session_id, ts, confidence)"
            " SELECT id, ?, ?, ?, ?, ? FROM events WHERE id = ?",
            [(k, src, sid, ts, conf, eid) for eid, k, src, sid, ts, conf in rows],
        )

    def delete_usage_from(self, source_id: str, kinds: Sequence[str]) -> list[str]:
        """Remove the uses one source made (a prompt's injection record replaced); the memories they were of."""
        marks = _marks(len(kinds))
        ids = [
            r[0]
            for r in self.db.execute(
                f"SELECT event_id FROM memory_usage WHERE source_id = ? AND kind IN ({marks})", (source_id, *kinds)
            )
        ]
        if ids:
            self.db.execute(f"DELETE FROM memory_usage WHERE source_id = ? AND kind IN ({marks})", (source_id, *kinds))
        return ids

    def usage_rows(self, event_ids: Sequence[str]) -> dict[str, list[tuple[str, str | None, str, float]]]:
        """Each event's uses: (kind, session id, ts, confidence)."""
        out: dict[str, list[tuple[str, str | None, str, float]]] = {}
        for chunk in _chunks(list(event_ids)):
            for eid, kind, sid, ts, conf in self.db.execute(
                f"SELECT event_id, kind, session_id, ts, confidence FROM memory_usage WHERE event_id IN"
                f" ({_marks(len(chunk))})",
                list(chunk),
            ):
                out.setdefault(eid, []).append((kind, sid, ts, conf))
        return out

    def citing_sessions(
        self, event_id: str, kinds: Sequence[str] = ("cited",), limit: int = 20
    ) -> list[dict[str, Any]]:
        """Sessions that used a memory in these ways, latest use first: session, uses, first and last time."""
        rows = self.db.execute(
            f"SELECT session_id, COUNT(*), MIN(ts), MAX(ts) FROM memory_usage WHERE event_id = ? AND kind IN"
            f" ({_marks(len(kinds))}) AND session_id IS NOT NULL GROUP BY session_id ORDER BY MAX(ts) DESC LIMIT ?",
            (event_id, *kinds, limit),
        ).fetchall()
        return [{"session_id": s, "uses": n, "first": a, "last": b} for s, n, a, b in rows]

    def usage_counts(self, event_id: str) -> dict[str, int]:
        counts = dict.fromkeys(USAGE_KINDS, 0)
        for kind, n in self.db.execute(
            "SELECT kind, COUNT(*) FROM memory_usage WHERE event_id = ? GROUP BY kind", (event_id,)
        ):
            counts[str(kind)] = int(n)
        return counts

    def popular(self, kinds: Sequence[str], limit: int, session: str | None = None) -> list[dict[str, Any]]:
        """Memories by how often they were used in these ways (most first): id, uses, sessions, last use."""
        where = f"kind IN ({_marks(len(kinds))})"
        args: list[Any] = list(kinds)
        if session:
            where += " AND session_id = ?"
            args.append(session)
        rows = self.db.execute(
            f"SELECT event_id, COUNT(*) AS n, COUNT(DISTINCT session_id), MAX(ts) FROM memory_usage WHERE {where}"
            " GROUP BY event_id ORDER BY n DESC, MAX(ts) DESC, event_id LIMIT ?",
            (*args, limit),
        ).fetchall()
        return [{"event_id": e, "uses": n, "sessions": s, "last_used": t} for e, n, s, t in rows]

    def usage_by_session(self, limit: int = 20) -> list[dict[str, Any]]:
        """Per session (latest first): how many memories it was given, fetched and cited."""
        rows = self.db.execute(
            "SELECT session_id, SUM(kind = 'injected'), SUM(kind = 'listed'), SUM(kind = 'fetched'),"
            " SUM(kind = 'cited'), COUNT(DISTINCT event_id), MAX(ts) FROM memory_usage WHERE session_id IS NOT NULL"
            " GROUP BY session_id ORDER BY MAX(ts) DESC LIMIT ?",
            (limit,),
        ).fetchall()
        names = ("session_id", "injected", "listed", "fetched", "cited", "memories", "last_used")
        return [dict(zip(names, r, strict=True)) for r in rows]

    def usage_totals(self) -> dict[str, int]:
        counts = dict.fromkeys(USAGE_KINDS, 0)
        for kind, n in self.db.execute("SELECT kind, COUNT(*) FROM memory_usage GROUP BY kind"):
            counts[str(kind)] = int(n)
        return counts

    def used_since(self, ts: str) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT DISTINCT event_id FROM memory_usage WHERE ts > ?", (ts,))}

    def event_by_citation_before(self, citation: str, seq: int) -> tuple[str, str] | None:
        """(id, session id) of the event with this citation, if it was stored before ``seq``."""
        row = self.db.execute(
            "SELECT id, session_id FROM events WHERE citation = ? AND seq < ?", (citation, seq)
        ).fetchone()
        return (row[0], row[1]) if row else None

    # ---- levels --------------------------------------------------------------------------------------------

    def put_levels(self, rows: Sequence[dict[str, Any]]) -> None:
        cols = _cols(LEVEL_COLUMNS)
        self.db.executemany(
            f"INSERT OR REPLACE INTO memory_levels ({LEVEL_COLUMNS}) VALUES ({_marks(len(cols))})",
            [tuple(r[c] for c in cols) for r in rows],
        )

    def levels_of(self, event_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        cols = _cols(LEVEL_COLUMNS)
        for chunk in _chunks(list(event_ids)):
            for row in self.db.execute(
                f"SELECT {LEVEL_COLUMNS} FROM memory_levels WHERE event_id IN ({_marks(len(chunk))})", list(chunk)
            ):
                out[row[0]] = dict(zip(cols, row, strict=True))
        return out

    def leveled_ids(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT event_id FROM memory_levels")]

    def levels_due(self, as_of: str) -> list[str]:
        """Memories whose level drops by ``as_of`` unless they are used again."""
        return [r[0] for r in self.db.execute("SELECT event_id FROM memory_levels WHERE demote_at <= ?", (as_of,))]

    def level_counts(self) -> dict[str, dict[int, int]]:
        """How many memories (used ones; the rest are L0) and insights are at each level."""
        events = dict(self.db.execute("SELECT level, COUNT(*) FROM memory_levels GROUP BY level").fetchall())
        insights = dict(self.db.execute("SELECT level, COUNT(*) FROM insights GROUP BY level").fetchall())
        return {
            "events": {int(k): int(v) for k, v in events.items()},
            "insights": {int(k): int(v) for k, v in insights.items()},
        }

    def event_ids_at_level(self, level: int) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT event_id FROM memory_levels WHERE level >= ?", (level,))}

    # ---- insights ------------------------------------------------------------------------------------------

    def put_insight(self, row: dict[str, Any], sources: Sequence[dict[str, Any]]) -> None:
        """Insert or update an insight (its level columns are the graduation job's) and set its sources."""
        self.db.execute(
            "INSERT INTO insights (id, insight_type, canonical_key, content, origin, confidence, evidence_aligned,"
            " anchor_id, support, first_ts, last_ts, detail) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT(id) DO UPDATE SET content = excluded.content, origin = excluded.origin,"
            " confidence = excluded.confidence, evidence_aligned = excluded.evidence_aligned,"
            " anchor_id = excluded.anchor_id, support = excluded.support, first_ts = excluded.first_ts,"
            " last_ts = excluded.last_ts, detail = excluded.detail",
            (
                row["id"],
                row["insight_type"],
                row["canonical_key"],
                row["content"],
                row["origin"],
                row["confidence"],
                int(bool(row["evidence_aligned"])),
                row["anchor_id"],
                row["support"],
                row["first_ts"],
                row["last_ts"],
                json.dumps(row.get("detail") or {}, ensure_ascii=False, sort_keys=True),
            ),
        )
        self.db.execute("DELETE FROM insight_sources WHERE insight_id = ?", (row["id"],))
        self.db.executemany(
            f"INSERT OR IGNORE INTO insight_sources ({SOURCE_COLUMNS}) SELECT ?, id, ?, ?, ?, ?, ? FROM events"
            " WHERE id = ?",
            [
                (row["id"], s["role"], s["method"], s.get("start"), s.get("end"), s["confidence"], s["event_id"])
                for s in sources
            ],
        )

    def set_insight_levels(self, rows: Sequence[dict[str, Any]]) -> None:
        names = ("level", "access", "sessions", "cross_session", "used_confidence", "replaced", "last_used",
                 "demote_at", "reason")  # fmt: skip
        self.db.executemany(
            f"UPDATE insights SET {', '.join(f'{n} = ?' for n in names)} WHERE id = ?",
            [(*(r[n] for n in names), r["id"]) for r in rows],
        )

    def _insights(self, where: str, args: Sequence[Any]) -> list[dict[str, Any]]:
        cols = _cols(INSIGHT_COLUMNS)
        out = []
        for row in self.db.execute(f"SELECT {INSIGHT_COLUMNS} FROM insights {where}", list(args)):
            item = dict(zip(cols, row, strict=True))
            item["detail"] = json.loads(item["detail"] or "{}")
            item["evidence_aligned"] = bool(item["evidence_aligned"])
            out.append(item)
        return out

    def insight(self, insight_id: str) -> dict[str, Any] | None:
        found = self._insights("WHERE id = ?", (insight_id,))
        return found[0] if found else None

    def insight_by_key(self, insight_type: str, key: str) -> dict[str, Any] | None:
        found = self._insights("WHERE insight_type = ? AND canonical_key = ?", (insight_type, key))
        return found[0] if found else None

    def insights_by_prefix(self, prefix: str) -> list[dict[str, Any]]:
        return self._insights("WHERE id >= ? AND id < ? ORDER BY id LIMIT 3", (prefix, prefix + "\uffff"))

    def list_insights(
        self, types: Sequence[str] = (), min_level: int = 0, limit: int = 100, ids: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        where = ["level >= ?"]
        args: list[Any] = [min_level]
        if types:
            where.append(f"insight_type IN ({_marks(len(types))})")
            args.extend(types)
        if ids is not None:
            if not ids:
                return []
            where.append(f"id IN ({_marks(len(ids))})")
            args.extend(ids)
        args.append(limit)
        return self._insights(f"WHERE {' AND '.join(where)} ORDER BY level DESC, last_ts DESC, id LIMIT ?", args)

    def all_insight_ids(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT id FROM insights ORDER BY id")]

    def insight_sources(self, insight_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        cols = _cols(SOURCE_COLUMNS)
        for chunk in _chunks(list(insight_ids)):
            for row in self.db.execute(
                f"SELECT {SOURCE_COLUMNS} FROM insight_sources WHERE insight_id IN ({_marks(len(chunk))})"
                " ORDER BY insight_id, event_id, role",
                list(chunk),
            ):
                item = dict(zip(cols, row, strict=True))
                out.setdefault(item["insight_id"], []).append(item)
        return out

    def insights_of_events(self, event_ids: Sequence[str]) -> dict[str, list[str]]:
        """For each event, the insights it is a source of."""
        out: dict[str, list[str]] = {}
        for chunk in _chunks(list(event_ids)):
            for insight_id, event_id in self.db.execute(
                f"SELECT DISTINCT insight_id, event_id FROM insight_sources WHERE event_id IN ({_marks(len(chunk))})"
                " ORDER BY insight_id",
                list(chunk),
            ):
                out.setdefault(event_id, []).append(insight_id)
        return out

    def insights_due(self, as_of: str) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT id FROM insights WHERE demote_at <= ?", (as_of,))]

    def insight_event_ids(self, level: int) -> set[str]:
        """The source events of insights at ``level`` or above (pruning keeps them)."""
        return {
            r[0]
            for r in self.db.execute(
                "SELECT DISTINCT s.event_id FROM insight_sources s JOIN insights i ON i.id = s.insight_id"
                " WHERE i.level >= ?",
                (level,),
            )
        }

    # ---- recurring errors ----------------------------------------------------------------------------------

    def add_learning_error(self, row: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO learning_errors (event_id, session_id, signature, command_key, line_start,"
            " line_end, fixed_by, seq) VALUES (?,?,?,?,?,?,?,?)",
            (row["event_id"], row["session_id"], row["signature"], row["command_key"], row["line_start"],
             row["line_end"], row.get("fixed_by"), row["seq"]),
        )  # fmt: skip

    def open_learning_errors(self, session_id: str, command_key: str, before_seq: int) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT event_id, signature, seq FROM learning_errors WHERE session_id = ? AND command_key = ?"
            " AND fixed_by IS NULL AND seq < ? ORDER BY seq",
            (session_id, command_key, before_seq),
        ).fetchall()
        return [{"event_id": e, "signature": s, "seq": q} for e, s, q in rows]

    def fix_learning_errors(self, event_ids: Sequence[str], fixed_by: str) -> None:
        self.db.executemany(
            "UPDATE learning_errors SET fixed_by = ? WHERE event_id = ?", [(fixed_by, e) for e in event_ids]
        )

    def learning_errors(self, signature: str) -> list[dict[str, Any]]:
        names = ("event_id", "session_id", "signature", "command_key", "line_start", "line_end", "fixed_by", "seq")
        rows = self.db.execute(
            f"SELECT {', '.join(names)} FROM learning_errors WHERE signature = ? ORDER BY seq", (signature,)
        ).fetchall()
        return [dict(zip(names, r, strict=True)) for r in rows]

    def session_events_between(self, session_id: str, after_seq: int, before_seq: int, limit: int = 200) -> list[Any]:
        from memlane.store.records import EVENT_COLUMNS, event_from_row

        rows = self.db.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE session_id = ? AND seq > ? AND seq < ? ORDER BY seq LIMIT ?",
            (session_id, after_seq, before_seq, limit),
        ).fetchall()
        return [event_from_row(r) for r in rows]

    # ---- what the prompt path reads ------------------------------------------------------------------------

    def learned(self, event_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """For each of these events that has one: its level, and the best insight it is a source of (type,
        level, content, id). Two indexed reads per 500 ids."""
        out: dict[str, dict[str, Any]] = {}
        ids = list(dict.fromkeys(event_ids))
        if not ids or self.ephemeral:
            return out
        for eid, row in self.levels_of(ids).items():
            out[eid] = {"level": row["level"]}
        for chunk in _chunks(ids):
            for eid, iid, itype, ilevel, content, aligned in self.db.execute(
                "SELECT s.event_id, i.id, i.insight_type, i.level, i.content, i.evidence_aligned FROM insight_sources s"
                f" JOIN insights i ON i.id = s.insight_id WHERE s.event_id IN ({_marks(len(chunk))})"
                " ORDER BY i.level DESC, i.last_ts DESC, i.id",
                list(chunk),
            ):
                entry = out.setdefault(eid, {"level": 0})
                if "insight" not in entry:
                    entry["insight"] = {"id": iid, "type": itype, "level": ilevel, "content": content,
                                        "verified": ilevel >= 3 and bool(aligned)}  # fmt: skip
        return out
