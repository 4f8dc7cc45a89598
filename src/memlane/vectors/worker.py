"""The outbox worker: the single writer of vectors (transactional outbox, reference specs/vector-outbox-v2).

- One worker per project at a time: an exclusive, non-blocking ``flock`` on ``vectors/worker.lock``;
  a second worker reports "busy" and leaves.
- Jobs are claimed in batches (``pending`` → ``processing``), embedded chunk by chunk, upserted,
  and marked ``done`` — each step idempotent, so a crash anywhere only means a re-run.
- A failing batch is retried with exponential backoff (``next_attempt_at``) and marked ``failed``
  after ``vectors.max_attempts``; ``retry_failed`` puts failed jobs back.
- Each claim records its claimant (``host:pid:start``); jobs of a claimant that is gone (kill -9) are
  recovered at once, and any job left ``processing`` longer than ``vectors.stuck_after_s`` too.
- A change of embedding model re-queues every event and drops the old model's tables.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from memlane import atomic, paths, proc
from memlane.embed.passages import passages
from memlane.store.keys import now_iso
from memlane.store.schema import indexed
from memlane.vectors.index import VectorIndex, other_tables

TYPE_CHECKING = False
if TYPE_CHECKING:
    # The worker is handed a Memory; memory.py reaches vectors/ (forget), so no run-time import back.
    from memlane.memory import Memory


@dataclass
class ProcessReport:
    processed: int = 0
    chunks: int = 0
    failed: int = 0
    retried: int = 0
    recovered: int = 0
    remaining: int = 0
    busy: bool = False
    model_changed: bool = False
    errors: list[str] = field(default_factory=list)


def _iso(delta_s: float = 0.0) -> str:
    moment = datetime.now(UTC) + timedelta(seconds=delta_s)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class WorkerLock:
    def __init__(self, project_id: str) -> None:
        directory = paths.vectors_dir(project_id)
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = directory / "worker.lock"
        self.fd: int | None = None

    def acquire(self) -> bool:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            os.close(self.fd)
            self.fd = None
            return False

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def _model_state(memory: Memory, embedder: Any) -> bool:
    """Record the model in use; on a change, re-queue everything and drop the old tables."""
    state_path = paths.vectors_dir(memory.project.id) / "model.json"
    try:
        previous = json.loads(state_path.read_text()).get("version")
    except (OSError, ValueError):
        previous = None
    if previous == embedder.version:
        return False
    if previous is not None:
        memory.store.outbox_reset_all()
        import lancedb

        conn = lancedb.connect(str(paths.vectors_dir(memory.project.id)))
        for name in other_tables(memory.project.id, keep=_table(embedder)):
            conn.drop_table(name)
    atomic.write_text(state_path, json.dumps({"version": embedder.version, "dim": embedder.dim, "since": now_iso()}))
    return previous is not None


def _table(embedder: Any) -> str:
    from memlane.vectors.index import table_name

    return table_name(embedder.version)


def _recover_stuck(memory: Memory) -> int:
    """Put back jobs whose claimant is gone (at once), or that stayed claimed past ``stuck_after_s``.

    Called with the worker lock held, so no live worker on this host can be mid-batch; the claimant
    check still matters for a claim whose host cannot be checked (a store on a shared disk), which
    only the timeout can release.
    """
    cutoff = _iso(-memory.config.vectors.stuck_after_s)
    return memory.store.outbox_recover(lambda c: c is None or proc.claimant_gone(c), cutoff)


def _claim(memory: Memory, size: int) -> list[str]:
    return memory.store.outbox_claim(size, proc.identity())


def _embed_batch(memory: Memory, index: VectorIndex, embedder: Any, ids: list[str]) -> int:
    events = memory.store.by_ids(ids)
    _drop_unsearched(memory, index, [e.id for e in events if not indexed(e.type, e.content)])
    events = [e for e in events if indexed(e.type, e.content)]
    pieces: list[tuple[Any, int, str]] = []
    for event in events:
        for n, chunk in enumerate(passages(event.type, event.content, embedder)):
            pieces.append((event, n, chunk))
    vectors = embedder.embed_passages([p[2] for p in pieces]) if pieces else []
    index.upsert(
        [
            {"event_id": e.id, "chunk": n, "vector": v, "type": e.type, "session_id": e.session_id, "ts": e.ts}
            for (e, n, _), v in zip(pieces, vectors, strict=True)
        ]
    )
    memory.store.outbox_complete(ids)
    return len(pieces)


def _drop_unsearched(memory: Memory, index: VectorIndex, ids: list[str]) -> None:
    """Bookkeeping (session markers, PreCompact's line) gets no vectors; a job for one is from a store before
    schema 9, which embedded them: drop what it has in the index (then the job) instead of embedding it."""
    if ids:
        index.delete(ids)
        memory.store.outbox_drop(ids)


def _fail(memory: Memory, ids: list[str], error: str) -> tuple[int, int]:
    """Back off, or give up after max_attempts. Returns (failed for good, to retry)."""
    return memory.store.outbox_fail(
        ids, error, memory.config.vectors.max_attempts, lambda attempts: _iso(min(2**attempts, 3600))
    )


def pending_count(memory: Memory) -> int:
    return memory.store.outbox_pending_count()


def process_outbox(
    memory: Memory,
    embedder: Any = None,
    *,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ProcessReport:
    """Drain (up to ``limit`` jobs of) the project's outbox into its vector index."""
    report = ProcessReport()
    if memory.store.ephemeral:
        return report  # a project with no store: no lock file, no vectors folder, no model to load
    if embedder is None:
        from memlane.embed import get_embedder

        embedder = get_embedder(memory.config.embedding)
    lock = WorkerLock(memory.project.id)
    if not lock.acquire():
        report.busy = True
        return report
    try:
        report.model_changed = _model_state(memory, embedder)
        report.recovered = _recover_stuck(memory)
        index = VectorIndex(memory.project.id, embedder.version, embedder.dim, memory.config.vectors)
        total = pending_count(memory) if limit is None else min(limit, pending_count(memory))
        batch = memory.config.vectors.batch_size
        while limit is None or report.processed + report.failed + report.retried < limit:
            size = batch if limit is None else min(batch, limit - report.processed - report.failed - report.retried)
            ids = _claim(memory, size)
            if not ids:
                break
            try:
                report.chunks += _embed_batch(memory, index, embedder, ids)
                report.processed += len(ids)
            except Exception as exc:  # noqa: BLE001 - record on the jobs, keep the worker alive
                failed, retry = _fail(memory, ids, f"{type(exc).__name__}: {exc}")
                report.failed += failed
                report.retried += retry
                report.errors.append(f"{type(exc).__name__}: {exc}")
                break  # back off: the next run (after next_attempt_at) tries again
            if progress:
                progress(report.processed, total)
        if report.processed:
            index.ensure_index()
        report.remaining = pending_count(memory)
    finally:
        lock.release()
    return report


def retry_failed(memory: Memory) -> int:
    return memory.store.outbox_retry_failed()


@dataclass
class ReconcileReport:
    events: int = 0
    vectors: int = 0
    missing: int = 0
    orphans: int = 0
    fixed: bool = False


def reconcile(memory: Memory, embedder: Any, *, fix: bool) -> ReconcileReport:
    """Compare events with the current model's vectors: re-queue events without vectors, drop orphans."""
    index = VectorIndex(memory.project.id, embedder.version, embedder.dim, memory.config.vectors)
    have = index.event_ids()
    events = memory.store.embeddable_event_ids()
    queued = memory.store.outbox_queued_ids()
    missing = sorted(events - have - queued)
    orphans = sorted(have - events)
    report = ReconcileReport(len(events), len(have), len(missing), len(orphans))
    if fix:
        memory.store.outbox_requeue(missing)
        index.delete(orphans)
        report.fixed = True
    return report


def rebuild(memory: Memory, embedder: Any) -> int:
    """Drop the current model's vectors and queue every event again."""
    index = VectorIndex(memory.project.id, embedder.version, embedder.dim, memory.config.vectors)
    index.drop()
    return memory.store.outbox_requeue_every_event()


def status(memory: Memory, embedder: Any = None) -> dict[str, Any]:
    outbox = memory.store.outbox_status_counts()
    errors = memory.store.outbox_failed_errors(5)
    out: dict[str, Any] = {"project_id": memory.project.id, "outbox": outbox, "failed_errors": errors}
    out["queue"] = memory.store.outbox_metrics()  # average time, last done, oldest waiting
    state_path = paths.vectors_dir(memory.project.id) / "model.json"
    try:
        out["model"] = json.loads(state_path.read_text())
    except (OSError, ValueError):
        out["model"] = None
    if embedder is not None:
        index = VectorIndex(memory.project.id, embedder.version, embedder.dim, memory.config.vectors)
        out.update(vectors=index.count(), indexed=index.has_index(), table=index.name, current_model=embedder.version)
    return out
