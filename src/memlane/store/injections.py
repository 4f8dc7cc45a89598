"""What each prompt was told: the injection log (``injections``), one row per prompt memlane answered.

Not derived state: it records what memlane decided at the time (with the model, configuration and
memories of that moment), so ``rebuild`` keeps it. It holds ids, citations and scores, never content;
forgetting the prompt removes its row (``ON DELETE CASCADE``). The dashboard's "what Claude was told" and
the benchmarks read it through ``Memory.injections``; the learning loop folds it in as uses
(``injections_after``: each memory of the full tier *injected*, of the index tier *listed*, docs/learning.md).
"""

from __future__ import annotations

import json

from memlane.store import keys
from memlane.store.connection import StoreConnection

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
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

    def injection_records(self, prompt_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The records of these prompts (those that have one), each with its ``ts``."""
        if not prompt_ids:
            return {}
        marks = ",".join("?" * len(prompt_ids))
        rows = self.db.execute(
            f"SELECT prompt_id, ts, record FROM injections WHERE prompt_id IN ({marks})", list(prompt_ids)
        )
        return {r[0]: {**json.loads(r[2]), "ts": r[1]} for r in rows}

    def prompts_shown(self, event_id: str, limit: int = 20) -> list[str]:
        """Ids of the prompts whose record shows ``event_id`` in either tier, newest first."""
        needle = f'"id":{json.dumps(event_id)}'  # the rows' compact JSON; left_out rows are checked below
        out: list[str] = []
        for prompt_id, record in self.db.execute(
            "SELECT prompt_id, record FROM injections WHERE instr(record, ?) > 0 ORDER BY ts DESC", (needle,)
        ):
            shown = json.loads(record)
            if any(row.get("id") == event_id for row in shown.get("full", []) + shown.get("index", [])):
                out.append(prompt_id)
                if len(out) >= limit:
                    break
        return out

    def injections_after(self, rowid: int, limit: int = 500) -> list[dict[str, Any]]:
        """Rows written after ``rowid``, in that order (the learning loop folds them in as uses): a record
        replaced for the same prompt comes again with its new rowid. A record that does not parse is empty."""
        rows = self.db.execute(
            "SELECT rowid, prompt_id, session_id, ts, record FROM injections WHERE rowid > ? ORDER BY rowid LIMIT ?",
            (rowid, limit),
        ).fetchall()
        out = []
        for r in rows:
            try:
                record = json.loads(r[4])
            except ValueError:
                record = {}
            out.append({"rowid": r[0], "prompt_id": r[1], "session_id": r[2], "ts": r[3],
                        "record": record if isinstance(record, dict) else {}})  # fmt: skip
        return out

    def injection_counts(self) -> dict[str, int]:
        """Prompts, prompts with an injection record, and prompts that were shown memories (either tier)."""
        prompts = self.db.execute("SELECT COUNT(*) FROM events WHERE type = 'user_prompt'").fetchone()[0]
        row = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(json_array_length(record, '$.full')"
            " + json_array_length(record, '$.index') > 0), 0) FROM injections"
        ).fetchone()
        return {"prompts": int(prompts), "recorded": int(row[0]), "injected": int(row[1])}
