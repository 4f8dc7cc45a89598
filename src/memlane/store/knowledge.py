"""The knowledge tables' SQL (schema 10): projection offsets, entries, entities and aliases, edges, task history,
memory resolutions. ``memlane.knowledge`` decides what goes in them; this module only reads and writes rows.

Every table here is derived from ``events`` (``memlane rebuild`` empties and refills them). Writes are made by
a projector inside one ``store.write()`` transaction together with its offset, so a batch is either wholly
projected or not at all. ``replacements`` is the read the prompt path uses: two indexed lookups for ~20 ids.

Stdlib only and cheap to import: ``Store`` includes this class, and the hooks import ``Store``.
"""

from __future__ import annotations

from memlane.store.events import EventStore
from memlane.store.records import EVENT_COLUMNS, Event, event_from_row
from memlane.store.rows import dumps as _dumps
from memlane.store.rows import loads as _loads
from memlane.store.rows import marks as _marks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

# What ``drop_knowledge`` empties: every table the knowledge projector owns (child tables first).
KNOWLEDGE_TABLES = ("memory_current", "resolutions", "task_history", "edges", "entity_aliases", "entities", "entries")
ENTRY_COLUMNS = (
    "id, entry_type, title, body, canonical_key, stage, status, superseded_by, evidence, evidence_aligned,"
    " event_id, session_id, ts"
)
ENTITY_COLUMNS = (
    "id, entity_type, canonical_key, title, title_norm, stage, status, state, first_event_id, last_event_id,"
    " created_ts, updated_ts"
)
EDGE_COLUMNS = "id, src_type, src_id, rel_type, dst_type, dst_id, meta, event_id, ts"


def _row(names: str, row: Sequence[Any], json_fields: tuple[str, ...]) -> dict[str, Any]:
    out = dict(zip([n.strip() for n in names.split(",")], row, strict=True))
    for field in json_fields:
        out[field] = _loads(out[field], [] if field == "evidence" else {})
    return out


class KnowledgeStore(EventStore):
    """Rows of the knowledge tables. Write methods run inside the caller's ``write()`` transaction."""

    # ---- projection offsets --------------------------------------------------------------------

    def projection_offset(self, name: str) -> tuple[int, int] | None:
        """(last seq read, projector version) of ``name``, or None if it never ran."""
        row = self.db.execute("SELECT last_seq, version FROM projection_offsets WHERE name = ?", (name,)).fetchone()
        return (int(row[0]), int(row[1])) if row else None

    def set_projection_offset(self, name: str, last_seq: int, version: int, now: str) -> None:
        self.db.execute(
            "INSERT INTO projection_offsets (name, last_seq, version, updated_at) VALUES (?,?,?,?)"
            " ON CONFLICT(name) DO UPDATE SET last_seq = excluded.last_seq, version = excluded.version,"
            " updated_at = excluded.updated_at",
            (name, last_seq, version, now),
        )

    def delete_projection_offset(self, name: str) -> None:
        self.db.execute("DELETE FROM projection_offsets WHERE name = ?", (name,))

    def projection_offsets(self) -> dict[str, dict[str, Any]]:
        rows = self.db.execute("SELECT name, last_seq, version, updated_at FROM projection_offsets ORDER BY name")
        return {r[0]: {"last_seq": r[1], "version": r[2], "updated_at": r[3]} for r in rows}

    def last_seq(self) -> int:
        return int(self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0])

    def events_after(self, seq: int, limit: int) -> list[Event]:
        rows = self.db.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?", (seq, limit)
        ).fetchall()
        return [event_from_row(r) for r in rows]

    def count_after(self, seq: int) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM events WHERE seq > ?", (seq,)).fetchone()[0])

    def drop_knowledge(self) -> None:
        """Empty every knowledge table (the caller resets the projector's offset in the same transaction)."""
        for table in KNOWLEDGE_TABLES:
            self.db.execute(f"DELETE FROM {table}")

    # ---- exchanges -----------------------------------------------------------------------------

    def exchange_of(self, event: Event) -> str:
        """The id of the user prompt that opened ``event``'s exchange (the event's own id if none came before)."""
        if event.type == "user_prompt":
            return event.id
        row = self.db.execute(
            "SELECT id FROM events WHERE session_id = ? AND seq <= ? AND +type = 'user_prompt'"
            " ORDER BY seq DESC LIMIT 1",
            (event.session_id, event.seq),
        ).fetchone()
        return str(row[0]) if row else event.id

    def exchange_members(self, exchange_id: str) -> list[tuple[str, int, str, str]]:
        """(id, seq, type, ts) of the events of an exchange: its prompt and what followed it in the session up to
        the next prompt. An exchange without a prompt is its one event."""
        head = self.db.execute("SELECT seq, session_id, type, ts FROM events WHERE id = ?", (exchange_id,)).fetchone()
        if head is None:
            return []
        seq, session_id, kind, ts = head
        if kind != "user_prompt":
            return [(exchange_id, int(seq), str(kind), str(ts))]
        nxt = self.db.execute(
            "SELECT seq FROM events WHERE session_id = ? AND seq > ? AND +type = 'user_prompt' ORDER BY seq LIMIT 1",
            (session_id, seq),
        ).fetchone()
        end = int(nxt[0]) if nxt else None
        rows = self.db.execute(
            "SELECT id, seq, type, ts FROM events WHERE session_id = ? AND seq >= ?"
            + (" AND seq < ?" if end is not None else "")
            + " ORDER BY seq",
            (session_id, seq, end) if end is not None else (session_id, seq),
        )
        return [(str(r[0]), int(r[1]), str(r[2]), str(r[3])) for r in rows]

    # ---- entries -------------------------------------------------------------------------------

    def put_entry(self, entry: dict[str, Any]) -> None:
        """Insert or replace an entry (ids are derived from the source event: re-projecting changes nothing)."""
        self.db.execute(
            f"INSERT OR REPLACE INTO entries ({ENTRY_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                entry["id"],
                entry["entry_type"],
                entry["title"],
                _dumps(entry.get("body") or {}),
                entry.get("canonical_key"),
                entry.get("stage", "raw"),
                entry.get("status", "active"),
                entry.get("superseded_by"),
                _dumps(entry.get("evidence") or []),
                int(bool(entry.get("evidence_aligned"))),
                entry["event_id"],
                entry["session_id"],
                entry["ts"],
            ),
        )

    def entry(self, entry_id: str) -> dict[str, Any] | None:
        row = self.db.execute(f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id = ?", (entry_id,)).fetchone()
        return _row(ENTRY_COLUMNS, row, ("body", "evidence")) if row else None

    def entries_of_event(self, event_id: str) -> list[dict[str, Any]]:
        rows = self.db.execute(f"SELECT {ENTRY_COLUMNS} FROM entries WHERE event_id = ? ORDER BY id", (event_id,))
        return [_row(ENTRY_COLUMNS, r, ("body", "evidence")) for r in rows]

    def entries_by_key(
        self,
        key: str,
        types: Sequence[str],
        *,
        before: str | None = None,
        after: str | None = None,
        status: str | None = None,
    ) -> list[dict[str, Any]]:
        """Entries with this canonical key and one of ``types``, oldest first, optionally strictly before/after a
        time or with one status."""
        sql = f"SELECT {ENTRY_COLUMNS} FROM entries WHERE canonical_key = ? AND entry_type IN ({_marks(len(types))})"
        args: list[Any] = [key, *types]
        if status is not None:
            sql += " AND status = ?"
            args.append(status)
        if before is not None:
            sql += " AND ts < ?"
            args.append(before)
        if after is not None:
            sql += " AND ts > ?"
            args.append(after)
        rows = self.db.execute(sql + " ORDER BY ts, id", args)
        return [_row(ENTRY_COLUMNS, r, ("body", "evidence")) for r in rows]

    def entries_of_type(self, entry_type: str, *, before: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """The latest entries of a type, newest first (dated strictly before ``before``, if given)."""
        rows = self.db.execute(
            f"SELECT {ENTRY_COLUMNS} FROM entries WHERE entry_type = ?"
            + (" AND ts < ?" if before is not None else "")
            + " ORDER BY ts DESC, id LIMIT ?",
            (entry_type, before, limit) if before is not None else (entry_type, limit),
        )
        return [_row(ENTRY_COLUMNS, r, ("body", "evidence")) for r in rows]

    def set_entries_status(self, event_id: str, status: str, superseded_by: str | None) -> None:
        self.db.execute(
            "UPDATE entries SET status = ?, superseded_by = ? WHERE event_id = ?", (status, superseded_by, event_id)
        )

    def set_entry_stage(self, entry_id: str, stage: str) -> None:
        self.db.execute("UPDATE entries SET stage = ? WHERE id = ?", (stage, entry_id))

    # ---- entities ------------------------------------------------------------------------------

    def entity(self, entity_id: str) -> dict[str, Any] | None:
        row = self.db.execute(f"SELECT {ENTITY_COLUMNS} FROM entities WHERE id = ?", (entity_id,)).fetchone()
        return _row(ENTITY_COLUMNS, row, ("state",)) if row else None

    def entity_by_key(self, entity_type: str, key: str) -> dict[str, Any] | None:
        """The entity a canonical key names: its own key, or one of its aliases."""
        row = self.db.execute(
            f"SELECT {ENTITY_COLUMNS} FROM entities WHERE entity_type = ? AND canonical_key = ?", (entity_type, key)
        ).fetchone()
        if row is None:
            alias = self.db.execute(
                "SELECT entity_id FROM entity_aliases WHERE entity_type = ? AND canonical_key = ?", (entity_type, key)
            ).fetchone()
            return self.entity(str(alias[0])) if alias else None
        return _row(ENTITY_COLUMNS, row, ("state",))

    def entities_by_prefix(self, prefix: str, entity_type: str) -> list[dict[str, Any]]:
        rows = self.db.execute(
            f"SELECT {ENTITY_COLUMNS} FROM entities WHERE entity_type = ? AND id >= ? AND id < ? ORDER BY id LIMIT 2",
            (entity_type, prefix, prefix + "\uffff"),
        )
        return [_row(ENTITY_COLUMNS, r, ("state",)) for r in rows]

    def entities(
        self, entity_type: str, *, statuses: Sequence[str] | None = None, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """Entities of a type, most recently updated first; ``statuses`` filters on the ``status`` column."""
        sql = f"SELECT {ENTITY_COLUMNS} FROM entities WHERE entity_type = ?"
        args: list[Any] = [entity_type]
        if statuses:
            sql += f" AND status IN ({_marks(len(statuses))})"
            args.extend(statuses)
        rows = self.db.execute(sql + " ORDER BY updated_ts DESC, id LIMIT ?", [*args, limit])
        return [_row(ENTITY_COLUMNS, r, ("state",)) for r in rows]

    def put_entity(self, entity: dict[str, Any]) -> None:
        self.db.execute(
            # An upsert, not INSERT OR REPLACE: replacing the row would delete it first, and with it (ON DELETE
            # CASCADE) the entity's aliases and task history.
            f"INSERT INTO entities ({ENTITY_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT(id) DO UPDATE SET entity_type = excluded.entity_type, canonical_key = excluded.canonical_key,"
            " title = excluded.title, title_norm = excluded.title_norm, stage = excluded.stage,"
            " status = excluded.status, state = excluded.state, first_event_id = excluded.first_event_id,"
            " last_event_id = excluded.last_event_id, created_ts = excluded.created_ts,"
            " updated_ts = excluded.updated_ts",
            (
                entity["id"],
                entity["entity_type"],
                entity["canonical_key"],
                entity["title"],
                entity["title_norm"],
                entity.get("stage", "raw"),
                entity.get("status", "active"),
                _dumps(entity.get("state") or {}),
                entity.get("first_event_id"),
                entity.get("last_event_id"),
                entity["created_ts"],
                entity["updated_ts"],
            ),
        )
        self.db.execute(
            "INSERT OR IGNORE INTO entity_aliases (entity_type, canonical_key, entity_id, is_primary) VALUES (?,?,?,1)",
            (entity["entity_type"], entity["canonical_key"], entity["id"]),
        )

    def add_alias(self, entity_type: str, key: str, entity_id: str) -> None:
        self.db.execute(
            "INSERT OR IGNORE INTO entity_aliases (entity_type, canonical_key, entity_id, is_primary) VALUES (?,?,?,0)",
            (entity_type, key, entity_id),
        )

    def aliases(self, entity_id: str) -> list[str]:
        rows = self.db.execute(
            "SELECT canonical_key FROM entity_aliases WHERE entity_id = ? ORDER BY is_primary DESC, canonical_key",
            (entity_id,),
        )
        return [r[0] for r in rows]

    # ---- edges ---------------------------------------------------------------------------------

    def add_edge(
        self,
        src: tuple[str, str],
        rel: str,
        dst: tuple[str, str],
        *,
        meta: dict[str, Any] | None = None,
        event_id: str | None = None,
        ts: str,
    ) -> bool:
        """Add an edge once (the same src, rel and dst again is ignored); True if it is new."""
        cur = self.db.execute(
            "INSERT OR IGNORE INTO edges (src_type, src_id, rel_type, dst_type, dst_id, meta, event_id, ts)"
            " VALUES (?,?,?,?,?,?,?,?)",
            (src[0], src[1], rel, dst[0], dst[1], _dumps(meta or {}), event_id, ts),
        )
        return cur.rowcount > 0

    def edge_exists(self, src: tuple[str, str], rel: str, dst: tuple[str, str]) -> bool:
        return (
            self.db.execute(
                "SELECT 1 FROM edges WHERE src_type = ? AND src_id = ? AND rel_type = ?"
                " AND dst_type = ? AND dst_id = ?",
                (src[0], src[1], rel, dst[0], dst[1]),
            ).fetchone()
            is not None
        )

    def edges_from(self, src_id: str, rel: str | None = None) -> list[dict[str, Any]]:
        sql, args = f"SELECT {EDGE_COLUMNS} FROM edges WHERE src_id = ?", [src_id]
        if rel is not None:
            sql, args = sql + " AND rel_type = ?", [*args, rel]
        return [_row(EDGE_COLUMNS, r, ("meta",)) for r in self.db.execute(sql + " ORDER BY ts, id", args)]

    def edges_to(self, dst_id: str, rel: str | None = None) -> list[dict[str, Any]]:
        sql, args = f"SELECT {EDGE_COLUMNS} FROM edges WHERE dst_id = ?", [dst_id]
        if rel is not None:
            sql, args = sql + " AND rel_type = ?", [*args, rel]
        return [_row(EDGE_COLUMNS, r, ("meta",)) for r in self.db.execute(sql + " ORDER BY ts, id", args)]

    def delete_edges_from(self, src_id: str, rel: str) -> int:
        return int(self.db.execute("DELETE FROM edges WHERE src_id = ? AND rel_type = ?", (src_id, rel)).rowcount)

    def replace_edges_from(
        self,
        src: tuple[str, str],
        rel: str,
        dsts: Iterable[tuple[tuple[str, str], dict[str, Any]]],
        *,
        event_id: str,
        ts: str,
    ) -> None:
        """``mode=replace``: the source's edges of this relation become exactly ``dsts``."""
        self.delete_edges_from(src[1], rel)
        for dst, meta in dsts:
            self.add_edge(src, rel, dst, meta=meta, event_id=event_id, ts=ts)

    def effective_blockers(self, task_id: str) -> list[dict[str, Any]]:
        """``v_task_blockers_effective`` for one task, with each effective blocker's entity row."""
        rows = self.db.execute(
            "SELECT blocker_id, blocker_type, effective_blocker_id, effective_blocker_type, meta"
            " FROM v_task_blockers_effective WHERE task_id = ? ORDER BY effective_blocker_id",
            (task_id,),
        ).fetchall()
        out = []
        for blocker_id, _btype, effective_id, _etype, meta in rows:
            out.append(
                {
                    "blocker_id": blocker_id,
                    "effective_id": effective_id,
                    "resolved": effective_id != blocker_id,
                    "meta": _loads(meta, {}),
                    "entity": self.entity(effective_id),
                }
            )
        return out

    def tasks_blocked_by(self, entity_id: str) -> list[str]:
        """Tasks whose effective blockers include ``entity_id``."""
        rows = self.db.execute(
            "SELECT DISTINCT task_id FROM v_task_blockers_effective WHERE effective_blocker_id = ? ORDER BY task_id",
            (entity_id,),
        )
        return [r[0] for r in rows]

    def lineage(
        self, entry_id: str, rels: Sequence[str] = ("supersedes", "derived_from"), depth: int = 10
    ) -> list[tuple[str, int]]:
        """(entry id, depth) of ``entry_id`` and the entries it supersedes or derives from, transitively."""
        rows = self.db.execute(
            f"""WITH RECURSIVE lineage(id, depth) AS (
                SELECT ?, 0
                UNION
                SELECT e.dst_id, l.depth + 1 FROM edges e JOIN lineage l ON e.src_id = l.id
                WHERE e.src_type = 'entry' AND e.dst_type = 'entry' AND e.rel_type IN ({_marks(len(rels))})
                  AND l.depth < ?
            ) SELECT id, MIN(depth) FROM lineage GROUP BY id ORDER BY 2, 1""",
            (entry_id, *rels, depth),
        )
        return [(r[0], int(r[1])) for r in rows]

    def descendants(self, entry_id: str, rel: str = "supersedes", depth: int = 10) -> list[tuple[str, int]]:
        """(entry id, depth) of the entries that supersede ``entry_id``, transitively (the other direction)."""
        rows = self.db.execute(
            """WITH RECURSIVE later(id, depth) AS (
                SELECT ?, 0
                UNION
                SELECT e.src_id, l.depth + 1 FROM edges e JOIN later l ON e.dst_id = l.id
                WHERE e.src_type = 'entry' AND e.dst_type = 'entry' AND e.rel_type = ? AND l.depth < ?
            ) SELECT id, MIN(depth) FROM later GROUP BY id ORDER BY 2, 1""",
            (entry_id, rel, depth),
        )
        return [(r[0], int(r[1])) for r in rows]

    # ---- task history --------------------------------------------------------------------------

    def add_task_history(self, task_id: str, seq: int, idx: int, row: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO task_history"
            " (task_id, seq, idx, event_id, ts, kind, from_status, to_status, detail)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            (
                task_id,
                seq,
                idx,
                row["event_id"],
                row["ts"],
                row["kind"],
                row.get("from_status"),
                row.get("to_status"),
                _dumps(row.get("detail") or {}),
            ),
        )

    def task_counts(self) -> dict[str, int]:
        """Tasks by status (the status lives in the folded state)."""
        rows = self.db.execute(
            "SELECT COALESCE(json_extract(state, '$.status'), 'pending'), COUNT(*) FROM entities"
            " WHERE entity_type = 'task' GROUP BY 1 ORDER BY 1"
        )
        return {str(k): int(n) for k, n in rows}

    def task_history(self, task_id: str) -> list[dict[str, Any]]:
        cols = "seq, idx, event_id, ts, kind, from_status, to_status, detail"
        rows = self.db.execute(f"SELECT {cols} FROM task_history WHERE task_id = ? ORDER BY seq, idx", (task_id,))
        return [_row(cols, r, ("detail",)) for r in rows]

    def next_history_idx(self, task_id: str, seq: int) -> int:
        row = self.db.execute(
            "SELECT COALESCE(MAX(idx) + 1, 0) FROM task_history WHERE task_id = ? AND seq = ?", (task_id, seq)
        ).fetchone()
        return int(row[0])

    # ---- memory resolutions --------------------------------------------------------------------

    def add_resolution(
        self,
        old_id: str,
        new_id: str,
        rule: str,
        *,
        direct: bool,
        partial: bool,
        old_exchange: str,
        entry_id: str | None,
        detail: dict[str, Any] | None,
        ts: str,
    ) -> bool:
        cur = self.db.execute(
            "INSERT OR IGNORE INTO resolutions"
            " (old_id, new_id, rule, direct, partial, old_exchange, entry_id, detail, ts)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            (old_id, new_id, rule, int(direct), int(partial), old_exchange, entry_id, _dumps(detail or {}), ts),
        )
        return cur.rowcount > 0

    def delete_resolutions_by(self, new_id: str, rule: str) -> list[str]:
        """Remove what ``new_id`` resolved by ``rule`` (a revert re-deciding what it reverts); the old ids."""
        olds = [
            r[0]
            for r in self.db.execute("SELECT old_id FROM resolutions WHERE new_id = ? AND rule = ?", (new_id, rule))
        ]
        self.db.execute("DELETE FROM resolutions WHERE new_id = ? AND rule = ?", (new_id, rule))
        return olds

    _RESOLUTION_COLUMNS = "old_id, new_id, rule, direct, partial, old_exchange, entry_id, detail, ts"

    def resolutions_of(self, event_id: str) -> list[dict[str, Any]]:
        """Every resolution that replaced ``event_id`` (wholly or partly), latest first."""
        cols = self._RESOLUTION_COLUMNS
        rows = self.db.execute(
            f"SELECT {cols} FROM resolutions WHERE old_id = ? ORDER BY partial, ts DESC, new_id, rule", (event_id,)
        )
        return [_row(cols, r, ("detail",)) for r in rows]

    def exchange_resolutions(self, exchange_id: str) -> list[dict[str, Any]]:
        """The resolutions that replaced memories of an exchange, one per (new event, rule)."""
        cols = self._RESOLUTION_COLUMNS
        rows = self.db.execute(
            f"SELECT {cols} FROM resolutions WHERE old_exchange = ? AND direct = 1 ORDER BY ts, new_id, rule",
            (exchange_id,),
        )
        return [_row(cols, r, ("detail",)) for r in rows]

    def resolutions_made(self, new_id: str) -> list[str]:
        """The events ``new_id`` replaced."""
        return [r[0] for r in self.db.execute("SELECT DISTINCT old_id FROM resolutions WHERE new_id = ?", (new_id,))]

    def replacements(self, event_ids: Sequence[str], *, partial: bool = False) -> dict[str, str]:
        """The effective view for a few memories: each replaced one → the memory that replaces it now.

        Chains are followed (a setting changed twice maps to the last change). Of two replacements of one memory
        the latest wins (ties: the larger id), except that a package command loses to a decision or an edit (it
        says less). With ``partial``, memories only partly replaced (one of several things they say) are included
        too. Ids that nothing replaced are left out. One indexed read of ``memory_current`` (the projector keeps
        it), two with ``partial``: what the prompt path can afford for its ~20 hits.
        """
        ids = list(dict.fromkeys(event_ids))
        out: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self.db.execute(
                f"SELECT event_id, current_id FROM memory_current WHERE event_id IN ({_marks(len(chunk))})", chunk
            )
            out.update((r[0], r[1]) for r in rows)
        if partial:
            rest = [i for i in ids if i not in out]
            hops = self._best_hops(rest, partial=True)
            if hops:
                now = self.replacements(list(set(hops.values())))
                out.update((old, now.get(hop, hop)) for old, hop in hops.items())
        return out

    def _best_hops(self, ids: Sequence[str], *, partial: bool) -> dict[str, str]:
        """Each id's best replacement (latest; a command last), wholly replacing ones only unless ``partial``."""
        found: dict[str, tuple[int, str, str]] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            rows = self.db.execute(
                f"SELECT old_id, new_id, ts, rule FROM resolutions WHERE old_id IN ({_marks(len(chunk))})"
                + ("" if partial else " AND partial = 0"),
                chunk,
            )
            for old, new, ts, rule in rows:
                rank = (int(rule != "command"), ts, new)
                if old not in found or rank > found[old]:
                    found[old] = rank
        return {old: rank[2] for old, rank in found.items()}

    def relink(self, event_ids: Sequence[str]) -> None:
        """Bring ``memory_current`` up to date for memories whose resolutions changed, and for every memory whose
        chain goes through them (found by ``hop_id``). A pure function of the resolutions, so the order in which
        they arrived does not matter."""
        hops = self._best_hops(event_ids, partial=False)
        for event_id in event_ids:
            hop = hops.get(event_id)
            if hop is None:
                self.db.execute("DELETE FROM memory_current WHERE event_id = ?", (event_id,))
                current = event_id
            else:
                row = self.db.execute("SELECT current_id FROM memory_current WHERE event_id = ?", (hop,)).fetchone()
                current = row[0] if row else hop
                self.db.execute(
                    "INSERT INTO memory_current (event_id, hop_id, current_id) VALUES (?,?,?) ON CONFLICT(event_id)"
                    " DO UPDATE SET hop_id = excluded.hop_id, current_id = excluded.current_id",
                    (event_id, hop, current),
                )
            pending = [(event_id, current)]
            while pending:  # everything whose best replacement is this one now ends where it ends
                node, end = pending.pop()
                for (before,) in self.db.execute(
                    "SELECT event_id FROM memory_current WHERE hop_id = ? AND current_id != ?", (node, end)
                ).fetchall():
                    self.db.execute("UPDATE memory_current SET current_id = ? WHERE event_id = ?", (end, before))
                    pending.append((before, end))

    def resolution_counts(self) -> dict[str, int]:
        rows = self.db.execute("SELECT rule, COUNT(DISTINCT old_id) FROM resolutions GROUP BY rule ORDER BY rule")
        return {r[0]: int(r[1]) for r in rows}

    def knowledge_counts(self) -> dict[str, Any]:
        db = self.db
        return {
            "entries": dict(db.execute("SELECT entry_type, COUNT(*) FROM entries GROUP BY 1 ORDER BY 1").fetchall()),
            "entities": dict(db.execute("SELECT entity_type, COUNT(*) FROM entities GROUP BY 1 ORDER BY 1").fetchall()),
            "edges": int(db.execute("SELECT COUNT(*) FROM edges").fetchone()[0]),
            "superseded": int(
                db.execute("SELECT COUNT(DISTINCT old_id) FROM resolutions WHERE partial = 0").fetchone()[0]
            ),
            "partly_superseded": int(
                db.execute(
                    "SELECT COUNT(DISTINCT old_id) FROM resolutions r WHERE partial = 1"
                    " AND NOT EXISTS (SELECT 1 FROM resolutions x WHERE x.old_id = r.old_id AND x.partial = 0)"
                ).fetchone()[0]
            ),
        }

    # ---- lookups for the resolution rules ------------------------------------------------------

    def removed_code_fragments(self) -> set[str]:
        """Code fragments some edit took out, except those too common to say what a memory is about."""
        rows = self.db.execute(
            "SELECT title FROM entities WHERE entity_type = 'code' AND json_extract(state, '$.common') IS NOT 1"
        )
        return {r[0] for r in rows}

    def wholly_replaced(self, event_id: str) -> bool:
        row = self.db.execute("SELECT 1 FROM resolutions WHERE old_id = ? AND partial = 0 LIMIT 1", (event_id,))
        return row.fetchone() is not None

    def events_with_phrase(
        self, words: Sequence[str], *, below_seq: int, before: str, limit: int
    ) -> list[Event] | None:
        """Events stored before ``below_seq`` and dated before ``before`` whose word index holds ``words`` in a
        row (a phrase); None if there are more than ``limit`` (too common to say which code a memory is about).

        Only events stored earlier: a projector sees the log as it was when the event came, so projecting it
        again from scratch (``memlane rebuild``) finds the same ones.
        """
        if not words:
            return []
        phrase = '"' + " ".join(w.replace('"', '""') for w in words) + '"'
        cols = ", ".join("e." + c.strip() for c in EVENT_COLUMNS.split(","))
        rows = self.db.execute(
            f"SELECT {cols} FROM events_fts JOIN events e ON e.seq = events_fts.rowid"
            " WHERE events_fts MATCH ? AND e.seq < ? AND e.ts < ? ORDER BY e.seq LIMIT ?",
            (phrase, below_seq, before, limit + 1),
        ).fetchall()
        if len(rows) > limit:
            return None
        return [event_from_row(r) for r in rows]
