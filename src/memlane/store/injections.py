"""What each prompt was told: the injection log (``injections``), one row per prompt memlane answered.

Not derived state: it records what memlane decided at the time (with the model, configuration and
memories of that moment), so ``rebuild`` keeps it. It holds ids, citations and scores, never content;
forgetting the prompt removes its row (``ON DELETE CASCADE``). The dashboard's "what Claude was told",
citation usage and the benchmarks read it through ``Memory.injections``.
"""

from __future__ import annotations

import json

from memlane.store import keys
from memlane.store.connection import StoreConnection

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class InjectionsStore(StoreConnection):
    """The injection log."""

    # The hook that answers a prompt logs what it was told; it must not wait behind another writer for it.
    RECORD_WAIT_MS = 50

    def record_injection(self, prompt_id: str, session_id: str, record: dict[str, Any]) -> None:
        """Keep what ``prompt_id`` was told (a later answer for the same prompt replaces the row).

        Waits at most ``RECORD_WAIT_MS`` for the write lock (raises ``sqlite3.OperationalError`` past it):
        the row is for people and for citation counts, and the prompt's answer must not wait for it.
        """
        wait = self.db.execute("PRAGMA busy_timeout").fetchone()[0]
        self.db.execute(f"PRAGMA busy_timeout = {self.RECORD_WAIT_MS}")
        try:
            with self.write() as tx:
                tx.execute(
                    "INSERT OR REPLACE INTO injections (prompt_id, session_id, ts, record)"
                    " SELECT id, ?, ?, ? FROM events WHERE id = ?",
                    (session_id, keys.now_iso(), json.dumps(record, separators=(",", ":")), prompt_id),
                )
        finally:
            self.db.execute(f"PRAGMA busy_timeout = {int(wait)}")

    def injections(self, limit: int = 20, session: str | None = None) -> list[tuple[str, str, dict[str, Any]]]:
        """(prompt event id, time, record) of the latest answered prompts, newest first."""
        where, args = ("WHERE session_id = ?", [session]) if session else ("", [])
        rows = self.db.execute(
            f"SELECT prompt_id, ts, record FROM injections {where} ORDER BY ts DESC, rowid DESC LIMIT ?",
            [*args, limit],
        )
        return [(r[0], r[1], json.loads(r[2])) for r in rows]

    def injection_of(self, prompt_id: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT record FROM injections WHERE prompt_id = ?", (prompt_id,)).fetchone()
        return json.loads(row[0]) if row else None
