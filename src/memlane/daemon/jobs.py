"""The daemon's background jobs, all run by its one loop (``embed_worker.Worker``, a thread of the daemon).

Two kinds:

- **per project, every round** (``ProjectJob``): a bounded slice of work for one project (``step(mem) -> int``,
  how much it did), run for every known project after that project's embedding step. ``ProjectionJob`` keeps
  the derived tables (``memlane/derived.py``: the knowledge model, and what other features register there) up
  to date with the event log; ``GraduationJob`` then settles the learning loop (usage from the injection
  records and fetches, the LLM extractor's answers, levels promoted and demoted). The loop sleeps 50 ms after
  a round with work and 2 s after an idle one, and the daemon does not go idle while a round finds work.
  ``EndlessJob`` keeps endless mode's working set, continuity scores and consolidated memories up to date
  (``memlane/endless``), consolidating when due.
- **upkeep, when due** (``Job``: a ``name``, an ``interval_s`` and ``run(cfg) -> str | None``, a line for the log
  when it did something): ``PruneStores`` keeps every project's store within ``storage.max_size_mb``
  (``memlane.retention``); ``CleanOutbox`` removes embedding jobs done more than ``DONE_KEPT_DAYS`` ago
  (vector-outbox-v2 §9.3); ``BackupStores`` backs up each store that has new events, at most every
  ``store.backup_interval_min`` (``store.backup``: SQLite's online backup, 0600, rotated), what ``doctor
  --repair`` restores lost events from. ``Upkeep`` decides which are due; the loop asks it once a round, the
  first time a minute after start (the model warms and the backlog gets embedded first). ``ExtractInsights``
  runs the optional LLM insight extractor (off unless configured) within its daily budget; ``EndlessKeyFacts``
  asks the same model, within the same budget, for the key facts of endless mode's consolidated memories.

Every job waits, before each slice, while a request is in flight (``Gate``), as the embedding does: a hook's
search is never queued behind it. None of them runs on a hook's path. ``/api/health`` reports each one.

Adding one: a ``ProjectJob`` subclass returned by ``default_jobs``, or a ``Job`` subclass listed in ``JOBS``.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, ClassVar

from memlane import config, project
from memlane.daemon.embed_worker import Gate
from memlane.logs import log

if TYPE_CHECKING:
    from memlane.memory import Memory

FIRST_RUN_S = 60.0  # after start: the model warms and the backlog gets embedded first


# ---- per project, every round ----------------------------------------------------------------------------------


class ProjectJob:
    """One kind of per-project background work (see the module note)."""

    name: ClassVar[str] = ""

    def __init__(self, gate: Gate | None = None, stop: threading.Event | None = None) -> None:
        self.gate = gate
        self.stop = stop or threading.Event()

    def step(self, mem: Memory) -> int:
        """Do up to one slice of work for ``mem``'s project; how many items were done (0: nothing to do)."""
        raise NotImplementedError

    def quiet(self) -> None:
        """Wait while a request is in flight (raises ``Stopping`` when the daemon stops)."""
        if self.gate is not None:
            self.gate.wait_quiet(self.stop)


class ProjectionJob(ProjectJob):
    """Keeps every project's derived tables up to date with its event log, a batch at a time."""

    name = "projection"
    BATCH = 25  # events per transaction: ~20 ms of work at 100k events, so the write lock is never held long
    BUDGET_S = 0.3  # per project per round: every project gets its turn, and the loop stays responsive

    def step(self, mem: Memory) -> int:
        from memlane import derived

        if mem.store.ephemeral:
            return 0
        done = 0
        deadline = time.monotonic() + self.BUDGET_S
        while not self.stop.is_set() and time.monotonic() < deadline:
            self.quiet()
            progress = derived.catch_up(mem.store, max_events=self.BATCH)
            done += progress.projected
            if progress.done or progress.projected == 0:
                break
        return done


class GraduationJob(ProjectJob):
    """The learning loop's settle (``knowledge/learning.py``): folds in each prompt's injection record, the
    fetches and the LLM extractor's answers, and promotes or demotes every memory and insight whose uses,
    sources, replacement or age changed (``knowledge/graduation.py``). Runs once the log is projected."""

    name = "graduation"
    BATCHES = 4  # transactions per project per round (each folds up to 500 records or judges up to 2,000 rows)

    def step(self, mem: Memory) -> int:
        from memlane import derived

        if mem.store.ephemeral:
            return 0
        self.quiet()
        return derived.settle(mem.store, limit=self.BATCHES)


class EndlessJob(ProjectJob):
    """Keeps endless mode's state up to date with the projected marks (``memlane.endless``): every project's
    continuity scores and working set at most every ``REFRESH_S`` once new marks came in (SessionStart only reads
    the working set), and its consolidation when due (``endless.consolidate_*``: after enough new events, an
    interval, or once the project is idle), within ``BUDGET_S`` a round; what is left stays queued."""

    name = "endless"
    REFRESH_S = 2.0
    BUDGET_S = 0.3

    def __init__(self, gate: Gate | None = None, stop: threading.Event | None = None) -> None:
        super().__init__(gate, stop)
        self.refreshed: dict[str, float] = {}

    def step(self, mem: Memory) -> int:
        from memlane.endless import service, working_set

        store = mem.store
        if store.ephemeral or not hasattr(store, "working_set"):
            return 0
        now = time.monotonic()
        why = service.consolidation_due(store, mem.config)
        if not why and now - self.refreshed.get(mem.project.id, -self.REFRESH_S) < self.REFRESH_S:
            return 0
        if not why and not store.dirty_sessions(1) and not working_set.stale(store, mem.config):
            return 0
        self.quiet()
        done = service.refresh(store, mem.config, consolidate=bool(why), budget_s=self.BUDGET_S)
        self.refreshed[mem.project.id] = time.monotonic()
        if done["consolidated"]:
            left = store.dirty_topic_count()
            log(
                "daemon",
                "info",
                f"endless: {mem.project.id}: consolidated {done['consolidated']} topic(s) ({why})"
                + (f", {left} still queued" if left else ""),
            )
        return done["consolidated"] + done["scored"] + int(done["working_set"])


def default_jobs(cfg: config.Config, gate: Gate | None = None, stop: threading.Event | None = None) -> list[ProjectJob]:
    """The per-project jobs the daemon runs, in order, for each project after its embedding step."""
    del cfg  # jobs read their settings from the project's config when they need any
    return [ProjectionJob(gate, stop), GraduationJob(gate, stop), EndlessJob(gate, stop)]


# ---- upkeep, when due --------------------------------------------------------------------------------------------


class Job:
    """Upkeep over every project, run when ``interval_s`` has passed since its last run."""

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


class ExtractInsights(Job):
    """The optional LLM insight extractor (``knowledge/llm.py``; off unless ``llm.provider`` and ``llm.model`` are
    set): a few calls per project on sessions that ended or went quiet, within the daily budget; when the budget
    is reached it stops and says so in the log (and ``/api/health``)."""

    name = "llm-insights"
    interval_s = 300.0
    CALLS = 2  # per project per run: a call takes seconds, and the loop also embeds

    def run(self, cfg: config.Config) -> str | None:
        from memlane.knowledge import llm

        if not llm.configured(cfg) or not cfg.features.insight_extraction:
            return None
        done = []
        for mem in _memories(cfg):
            report = llm.run(mem.store, mem.config, max_calls=self.CALLS)
            if report.calls or report.stopped:
                done.append(f"{mem.project.id}: {report.line()}")
            if "budget" in report.stopped:
                break
        return "; ".join(done) or None


class EndlessKeyFacts(Job):
    """Endless mode's LLM-assisted key facts (``endless/assist.py``; off unless ``llm.provider`` and ``llm.model``
    are set, and only for projects in endless mode): a few calls per project for the consolidated memories waiting
    for one, within the same daily budget as the insight extractor. When the budget is reached it stops and says
    so in the log (once, not every run) and in ``memlane endless status``."""

    name = "llm-endless"
    interval_s = 300.0
    CALLS = 3  # per project per run: a call takes seconds, and the loop also embeds

    def run(self, cfg: config.Config) -> str | None:
        from memlane.endless import assist, service
        from memlane.knowledge import llm

        if not llm.configured(cfg):
            return None
        done = []
        for mem in _memories(cfg):
            store = mem.store
            mode = service.mode(store, mem.config)[0]
            if assist.why_off(store, mem.config, mode):
                continue
            before = store.endless_state().get("llm_stopped")
            report = assist.run(store, mem.config, mode, max_calls=self.CALLS)
            if report.calls or (report.stopped and report.stopped != before):
                done.append(f"{mem.project.id}: {report.line()}")
            if "budget" in report.stopped:
                break
        return "; ".join(done) or None


JOBS: list[type[Job]] = [PruneStores, CleanOutbox, BackupStores, ExtractInsights, EndlessKeyFacts]


class Upkeep:
    """Which upkeep jobs are due, run by the daemon's loop (``run_due``); ``state`` (for /api/health) holds each
    job's last run and result."""

    def __init__(
        self,
        cfg: config.Config,
        stop: threading.Event,
        gate: Gate | None = None,
        jobs: list[Job] | None = None,
        state: dict[str, Any] | None = None,
        first_run_s: float = 0.0,
    ) -> None:
        self.cfg = cfg
        self.stop = stop
        self.gate = gate
        self.jobs = jobs if jobs is not None else [job() for job in JOBS]
        self.state: dict[str, Any] = state if state is not None else {}
        start = time.monotonic() + first_run_s if first_run_s else 0.0
        self.due = {job.name: start for job in self.jobs}

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
