"""The daemon's background jobs: small classes that the worker thread's one loop (``embed_worker.Worker``) runs
for each known project in turn, after embedding that project's outbox.

A job does a bounded piece of work per call (``step``) and says how much it did; the loop sleeps 50 ms after a
round with work and 2 s after an idle one, and the daemon does not go idle while a round finds work. Jobs never
run on a hook's path. Between slices of work a job waits while a request is in flight (``Gate``), as the
embedding does, so a hook's search is not queued behind it.

Adding one (the learning loop's graduation, endless mode's consolidation, team sync): subclass ``Job``, give it a
``name`` and a ``step``, and return it from ``default_jobs`` below. ``/api/health`` reports each job's counts.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from memlane.config import Config
    from memlane.daemon.embed_worker import Gate
    from memlane.memory import Memory


class Job:
    """One kind of background work (see the module note)."""

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


class ProjectionJob(Job):
    """Keeps every project's derived tables (``memlane/derived.py``: the knowledge model, and whatever other
    owners register there) up to date with its event log, a batch at a time."""

    name = "projection"
    BATCH = 100  # events per transaction: a hook's write never waits long for it
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


def default_jobs(cfg: Config, gate: Gate | None = None, stop: threading.Event | None = None) -> list[Job]:
    """The jobs the daemon runs, in order, for each project after its embedding step."""
    del cfg  # jobs read their settings from the project's config when they need any
    return [ProjectionJob(gate, stop)]
