"""The embedding outbox: the jobs ``vectors/worker.py`` claims, completes, fails, recovers and re-queues.

Owns every statement against ``outbox`` except the row ``append`` adds with its event and the one
``redact`` re-queues (both inside those transactions). The worker decides policy (who is gone, when to
retry, how many attempts); these methods are the transactions it needs, each one ``write()``.
"""

from __future__ import annotations

import os
import sqlite3

from memlane.store import keys, schema
from memlane.store.connection import StoreConnection

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

_RESET = "status = 'pending', attempts = 0, next_attempt_at = NULL, error = NULL"
FAILED_ALERT = 10  # failed jobs from which `doctor` fails instead of warning (vector-outbox-v2 §9.2)
DONE_KEPT_DAYS = 7  # done jobs older than this are removed by the daemon's cleanup (§9.3)


def metrics(db: sqlite3.Connection) -> dict[str, Any]:
    """Outbox monitoring (vector-outbox-v2 §9.1): jobs per status, the average time from queued to embedded
    over the done jobs still kept, when the last one was done, and the oldest job still waiting.

    A function of a connection, not a method: ``store.peek`` reads it through a read-only one (status, doctor).
    """
    counts = dict(db.execute("SELECT status, COUNT(*) FROM outbox GROUP BY status").fetchall())
    avg, last = db.execute(
        "SELECT AVG((julianday(updated_at) - julianday(created_at)) * 86400000.0), MAX(updated_at)"
        " FROM outbox WHERE status = 'done'"
    ).fetchone()
    (oldest,) = db.execute("SELECT MIN(created_at) FROM outbox WHERE status IN ('pending', 'processing')").fetchone()
    return {
        "pending": int(counts.get("pending", 0)),
        "processing": int(counts.get("processing", 0)),
        "failed": int(counts.get("failed", 0)),
        "done": int(counts.get("done", 0)),
        "avg_ms": round(float(avg), 1) if avg is not None else None,
        "last_done_at": last,
        "oldest_waiting_since": oldest,
    }


def metrics_of(file: str | os.PathLike[str]) -> dict[str, Any] | None:
    """``metrics`` of a store file read-only (``store.peek``); ``{"error": …}`` when it cannot be read."""
    from memlane.store import peek

    try:
        return peek.outbox_metrics(file)
    except sqlite3.Error as exc:
        return {"error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}


class OutboxStore(StoreConnection):
    """Outbox jobs (one per event): pending → processing → done, or failed after retries."""

    def outbox_claim(self, size: int, claimant: str) -> list[str]:
        """Mark up to ``size`` due pending jobs ``processing`` for ``claimant``; their event ids, oldest first."""
        now = keys.now_iso()
        with self.write() as db:
            ids = [
                r[0]
                for r in db.execute(
                    "SELECT event_id FROM outbox WHERE status = 'pending'"
                    " AND (next_attempt_at IS NULL OR next_attempt_at <= ?)"
                    " ORDER BY rowid LIMIT ?",
                    (now, size),
                )
            ]
            if ids:
                db.execute(
                    f"UPDATE outbox SET status = 'processing', claimed_by = ?, updated_at = ? WHERE event_id IN "
                    f"({','.join('?' * len(ids))})",
                    [claimant, now, *ids],
                )
        return ids

    def outbox_complete(self, ids: Sequence[str]) -> None:
        with self.write() as db:
            db.execute(
                f"UPDATE outbox SET status = 'done', updated_at = ?, error = NULL WHERE event_id IN "
                f"({','.join('?' * len(ids))})",
                [keys.now_iso(), *ids],
            )

    def outbox_fail(
        self, ids: Sequence[str], error: str, max_attempts: int, retry_at: Callable[[int], str]
    ) -> tuple[int, int]:
        """Count an attempt on each job: ``failed`` at ``max_attempts``, else pending again from
        ``retry_at(attempts)``. Returns (failed for good, to retry)."""
        failed = retry = 0
        with self.write() as db:
            for event_id in ids:
                row = db.execute("SELECT attempts FROM outbox WHERE event_id = ?", (event_id,)).fetchone()
                if row is None:
                    continue
                attempts = int(row[0]) + 1
                if attempts >= max_attempts:
                    db.execute(
                        "UPDATE outbox SET status = 'failed', attempts = ?, updated_at = ?, error = ?"
                        " WHERE event_id = ?",
                        (attempts, keys.now_iso(), error[:500], event_id),
                    )
                    failed += 1
                else:
                    db.execute(
                        "UPDATE outbox SET status = 'pending', attempts = ?, updated_at = ?, error = ?, "
                        "next_attempt_at = ? WHERE event_id = ?",
                        (attempts, keys.now_iso(), error[:500], retry_at(attempts), event_id),
                    )
                    retry += 1
        return failed, retry

    def outbox_recover(self, gone: Callable[[str | None], bool], cutoff: str) -> int:
        """Put ``processing`` jobs back to pending when ``gone(claimant)`` or last touched before ``cutoff``."""
        with self.write() as db:
            claimants = [r[0] for r in db.execute("SELECT DISTINCT claimed_by FROM outbox WHERE status = 'processing'")]
            recovered = 0
            for claimant in (c for c in claimants if gone(c)):
                recovered += db.execute(
                    "UPDATE outbox SET status = 'pending', claimed_by = NULL, updated_at = ?"
                    " WHERE status = 'processing' AND claimed_by IS ?",
                    (keys.now_iso(), claimant),
                ).rowcount
            recovered += db.execute(
                "UPDATE outbox SET status = 'pending', claimed_by = NULL, updated_at = ?"
                " WHERE status = 'processing' AND updated_at < ?",
                (keys.now_iso(), cutoff),
            ).rowcount
            return recovered

    def outbox_pending_count(self) -> int:
        """Jobs not finished yet (pending or being processed)."""
        return int(
            self.db.execute("SELECT COUNT(*) FROM outbox WHERE status IN ('pending', 'processing')").fetchone()[0]
        )

    def outbox_queued_ids(self) -> set[str]:
        """Event ids with a pending or processing job."""
        return {r[0] for r in self.db.execute("SELECT event_id FROM outbox WHERE status IN ('pending', 'processing')")}

    def outbox_metrics(self) -> dict[str, Any]:
        return metrics(self.db)

    def outbox_cleanup_done(self, older_than: str) -> int:
        """Remove done jobs last touched before ``older_than`` (an ISO time); how many. A done job owes
        nothing: the vectors are in the index, and ``vectors reconcile`` compares events with vectors."""
        with self.write() as db:
            return db.execute("DELETE FROM outbox WHERE status = 'done' AND updated_at < ?", (older_than,)).rowcount

    def outbox_status_counts(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT status, COUNT(*) FROM outbox GROUP BY status").fetchall())

    def outbox_failed_errors(self, limit: int = 5) -> list[str]:
        return [
            r[0] for r in self.db.execute("SELECT DISTINCT error FROM outbox WHERE status = 'failed' LIMIT ?", (limit,))
        ]

    def outbox_retry_failed(self) -> int:
        """Failed jobs back to pending with a fresh attempt count; how many."""
        with self.write() as db:
            return db.execute(
                f"UPDATE outbox SET {_RESET}, updated_at = ? WHERE status = 'failed'", (keys.now_iso(),)
            ).rowcount

    def outbox_reset_all(self) -> int:
        """Every job back to pending (a new embedding model needs every vector again); how many."""
        with self.write() as db:
            return db.execute(f"UPDATE outbox SET {_RESET}").rowcount

    def outbox_requeue(self, event_ids: Sequence[str]) -> None:
        """A pending job for each event, whatever its job's state was."""
        now = keys.now_iso()
        with self.write() as db:
            for event_id in event_ids:
                db.execute(
                    "INSERT INTO outbox (event_id, status, created_at, updated_at) VALUES (?, 'pending', ?, ?)"
                    " ON CONFLICT(event_id) DO UPDATE SET status = 'pending', attempts = 0, next_attempt_at = NULL",
                    (event_id, now, now),
                )

    def outbox_drop(self, event_ids: Sequence[str]) -> None:
        """Remove jobs that owe nothing: their events get no vectors."""
        with self.write() as db:
            for start in range(0, len(event_ids), 500):  # SQLite binds at most 999 parameters per statement
                chunk = list(event_ids[start : start + 500])
                db.execute(f"DELETE FROM outbox WHERE event_id IN ({','.join('?' * len(chunk))})", chunk)

    def outbox_requeue_every_event(self) -> int:
        """A job for every searchable event (adding missing ones), all pending; how many jobs were reset."""
        now = keys.now_iso()
        with self.write() as db:
            db.execute(
                "INSERT OR IGNORE INTO outbox (event_id, status, created_at, updated_at) "
                f"SELECT id, 'pending', ?, ? FROM events WHERE NOT {schema.bookkeeping_sql()}",
                (now, now),
            )
            return db.execute(f"UPDATE outbox SET {_RESET}").rowcount
