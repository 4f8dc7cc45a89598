"""Upkeep the daemon runs beside embedding: small job classes, each with its own interval.

- ``PruneStores`` keeps every project's store within ``storage.max_size_mb`` (``memlane.retention``);
- ``CleanOutbox`` removes embedding jobs done more than ``DONE_KEPT_DAYS`` ago (vector-outbox-v2 §9.3);
- ``BackupStores`` backs up each store that has new events, at most every ``store.backup_interval_min``
  (``store.backup``: SQLite's online backup, 0600, rotated), what ``doctor --repair`` restores lost events from.

A job has a ``name``, an ``interval_s`` and ``run(cfg) -> str | None`` (a line for the log when it did
something). ``Upkeep`` is the loop that runs them, on a thread of its own started by ``server.serve`` with the
embedding worker; before each job it waits, like the worker, for the requests in flight (hooks come first).
Integration: the knowledge branch brings the daemon's one job loop; these classes are written to be
scheduled by it as they are (the same three members), and ``Upkeep`` goes when it comes.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from memlane import config, project
from memlane.daemon.embed_worker import Gate, Stopping
from memlane.logs import log

FIRST_RUN_S = 60.0  # after start: the model warms and the backlog gets embedded first
TICK_S = 30.0


class Job:
    name = ""
    interval_s = 600.0

    def run(self, cfg: config.Config) -> str | None:
        raise NotImplementedError


def _memories(cfg: config.Config) -> Any:
    """Each registered project's memory that has a store (opened one at a time)."""
    from memlane.memory import Memory

    for entry in project.known_projects():
        with Memory.open(project_id=str(entry.get("id")), cfg=cfg, create=None) as mem:
            if not mem.store.ephemeral:
                yield mem


class PruneStores(Job):
    name = "prune"
    interval_s = 600.0

    def run(self, cfg: config.Config) -> str | None:
        if not cfg.storage.max_size_mb:
            return None
        from memlane import retention

        done = []
        for mem in _memories(cfg):
            report = retention.prune(mem)
            if report.pruned or report.reason:
                done.append(f"{mem.project.id}: {report.line()}")
        return "; ".join(done) or None


class CleanOutbox(Job):
    name = "outbox-cleanup"
    interval_s = 3600.0

    def run(self, cfg: config.Config) -> str | None:
        from memlane.store.outbox import DONE_KEPT_DAYS

        cutoff = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - DONE_KEPT_DAYS * 86400))
        removed = {mem.project.id: mem.store.outbox_cleanup_done(cutoff) for mem in _memories(cfg)}
        removed = {k: v for k, v in removed.items() if v}
        if not removed:
            return None
        return "removed done embedding jobs: " + ", ".join(f"{k} {v}" for k, v in removed.items())


class BackupStores(Job):
    """Looks at every store each minute; backs up those with events their newest backup lacks once it is
    ``store.backup_interval_min`` old. By file, not by ``Memory``: a damaged store is skipped (never copied
    over the good backups), not an error that stops the job."""

    name = "backup"
    interval_s = 60.0

    def run(self, cfg: config.Config) -> str | None:
        from memlane import paths
        from memlane.store import backup

        if cfg.store.backup_interval_min <= 0:
            return None
        base = paths.projects_dir()
        made: list[str] = []
        skipped: list[str] = []
        for db in sorted(base.glob("*/memory.db")) if base.is_dir() else []:
            if not backup.due(str(db), cfg.store.backup_interval_min * 60):
                continue
            target = backup.take(str(db), cfg.store.backups_kept)
            (made if target else skipped).append(db.parent.name)
        parts = [f"backed up {', '.join(made)}"] if made else []
        if skipped:
            parts.append(f"not backed up, the store looks damaged (memlane doctor): {', '.join(skipped)}")
        return "; ".join(parts) or None


JOBS: list[type[Job]] = [PruneStores, CleanOutbox, BackupStores]


class Upkeep:
    """Runs ``jobs`` when due until ``stop``; ``state`` (for /api/health) holds each job's last run and result."""

    def __init__(
        self,
        cfg: config.Config,
        stop: threading.Event,
        gate: Gate | None = None,
        jobs: list[Job] | None = None,
        state: dict[str, Any] | None = None,
    ) -> None:
        self.cfg = cfg
        self.stop = stop
        self.gate = gate
        self.jobs = jobs if jobs is not None else [job() for job in JOBS]
        self.state: dict[str, Any] = state if state is not None else {}
        self.due = {job.name: 0.0 for job in self.jobs}

    def run_due(self, now: float | None = None) -> list[str]:
        """Run every job whose time has come; the lines they logged."""
        now = time.monotonic() if now is None else now
        lines = []
        for job in self.jobs:
            if now < self.due[job.name] or self.stop.is_set():
                continue
            self.due[job.name] = now + job.interval_s
            if self.gate is not None:
                self.gate.wait_quiet(self.stop)
            entry: dict[str, Any] = {"last_run": time.time(), "result": None, "error": None}
            try:
                entry["result"] = job.run(self.cfg)
            except Exception as exc:  # noqa: BLE001 - one failing job must not stop the others or the daemon
                entry["error"] = repr(exc)
                log("daemon", "error", f"job {job.name} failed: {exc!r}")
            self.state[job.name] = entry
            if entry["result"]:
                log("daemon", "info", f"job {job.name}: {entry['result']}")
                lines.append(str(entry["result"]))
        return lines

    def run(self) -> None:
        if self.stop.wait(FIRST_RUN_S):
            return
        while not self.stop.is_set():
            try:
                self.run_due()
            except Stopping:
                return
            self.stop.wait(TICK_S)
