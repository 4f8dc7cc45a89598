"""What history imports left in the store: the once-only ledger (``imports``) and the events an import
made (``metadata.imported``), which live hooks and re-imports replace.

Owns the SQL of ``importers/run.py`` and of the hooks' marker swap; the import policy stays there.
"""

from __future__ import annotations

from memlane.store import keys
from memlane.store.connection import StoreConnection


class ImportsStore(StoreConnection):
    """The import ledger and imported events."""

    def import_ledger_entry(self, source: str, path: str) -> tuple[int, int] | None:
        """(size, mtime_ns) the file had when it was last imported whole, or None."""
        row = self.db.execute("SELECT size, mtime_ns FROM imports WHERE source = ? AND path = ?", (source, path))
        found = row.fetchone()
        return (found[0], found[1]) if found else None

    def record_import(
        self, source: str, path: str, session_id: str | None, size: int, mtime_ns: int, events: int
    ) -> None:
        """Note a whole file as imported (replacing an earlier entry for it)."""
        with self.write() as tx:
            tx.execute(
                "INSERT OR REPLACE INTO imports (source, path, session_id, size, mtime_ns, events, imported_at)"
                " VALUES (?,?,?,?,?,?,?)",
                (source, path, session_id, size, mtime_ns, events, keys.now_iso()),
            )

    def imported_markers(self, session_id: str, event_type: str) -> list[tuple[str, str]]:
        """(id, ts) of the session's ``event_type`` events an import made (metadata ``imported`` set)."""
        return [
            (r[0], r[1])
            for r in self.db.execute(
                "SELECT id, ts FROM events WHERE session_id = ? AND type = ?"
                " AND json_extract(metadata, '$.imported') IS NOT NULL",
                (session_id, event_type),
            )
        ]

    def imported_event_ids(self, session_id: str | None, source: str) -> list[str]:
        """Ids of the session's events that an import from ``source`` stored."""
        return [
            r[0]
            for r in self.db.execute(
                "SELECT id FROM events WHERE session_id = ? AND json_extract(metadata, '$.imported') = ?",
                (session_id, source),
            )
        ]

    def captured_live(self, session_id: str) -> bool:
        """The hooks recorded this session (a start marker no import made): they own its markers and summary."""
        row = self.db.execute(
            "SELECT 1 FROM events WHERE session_id = ? AND type = 'session_start'"
            " AND json_extract(metadata, '$.imported') IS NULL LIMIT 1",
            (session_id,),
        ).fetchone()
        return row is not None

    def session_event_count(self, session_id: str) -> int:
        row = self.db.execute("SELECT COUNT(*) FROM events WHERE session_id = ?", (session_id,)).fetchone()
        return int(row[0])

    def copy_session_from(self, db_file: str, session_id: str) -> None:
        """Copy one session's events and session row, and every tombstone, from the store at ``db_file``
        (opened read-only, never migrated) into this one: the scratch copy an import's dry run runs in."""
        self.db.execute("ATTACH DATABASE ? AS src", (f"file:{db_file}?mode=ro",))
        try:
            with self.write() as tx:
                for table, where, args in (
                    ("events", "session_id = ?", (session_id,)),
                    ("sessions", "id = ?", (session_id,)),
                    ("tombstones", "1", ()),
                ):
                    mine = [r[1] for r in tx.execute(f"PRAGMA main.table_info({table})")]
                    theirs = {r[1] for r in tx.execute(f"PRAGMA src.table_info({table})")}
                    cols = ", ".join(c for c in mine if c in theirs)
                    if cols:
                        tx.execute(
                            f"INSERT OR IGNORE INTO main.{table} ({cols}) SELECT {cols} FROM src.{table} WHERE {where}",
                            args,
                        )
        finally:
            self.db.execute("DETACH DATABASE src")
