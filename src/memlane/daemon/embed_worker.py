"""The daemon's embedding worker: a low-priority thread that drains every project's outbox with the daemon's model.

It used to be a child process with its own model runtime and LanceDB: 611 MB resident for the pair after 10k
events (benchmarks/daemon_memory.py), against a goal of 350 MB. As a thread it embeds with the very embedder
the search path uses (``Engine.embedder``: one model per user) and keeps what the child process guaranteed:

- Searches stay responsive. Its forward passes run on a thread of their own at nice 10 (Linux nices threads
  one by one), so the scheduler gives a request's thread the CPU first. Only that thread: a thread inherits
  its creator's nice value, and LanceDB's pools, which searches use too, are started by
  whichever thread first needs them, so the loop itself (SQLite, LanceDB writes) keeps the daemon's. It
  embeds in slices of ``SLICE`` texts and, before each slice, waits while any request is in flight
  (``Gate``), so a hook's query is not queued behind a batch. With the numpy runtime its passes bypass the
  encoder's lock (``embed_passages_concurrent``), so a query never waits for a pass already started either.
- One writer of vectors per project: ``process_outbox`` still takes the project's ``WorkerLock`` (a flock,
  so ``memlane process`` in another process sees "busy").
- Claimant liveness: claims name the daemon process (``host:pid:start``); when it is killed they are taken
  back at once by the next worker. On a clean stop the thread gives its claims back itself.
- Clean shutdown: the daemon's stop event aborts the batch between slices; ``serve`` joins the thread.
- The daemon does not go idle while the worker embeds: every slice counts as activity.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memlane.logs import log

if TYPE_CHECKING:
    from memlane.config import Config
    from memlane.daemon.jobs import ProjectJob, Upkeep
    from memlane.embed import Embedder

STEP = 32  # events per project per step: the outbox lock is re-taken between steps, projects take turns
SLICE = 8  # texts per forward call; a request arriving mid-slice waits for none of it, but the CPU is shared
NICE = 10
MOST_WAIT_S = 2.0  # under a steady stream of requests the backlog still moves, one slice per this long
PAUSE_MOST_S = 0.5  # a pass paused mid-way (between layers) for a request waits at most this long per layer


# A BaseException: process_outbox's ``except Exception`` must not record a shutdown as a failed attempt.
class Stopping(BaseException):
    """The daemon is stopping: abandon the batch between two slices (its claims are given back)."""


class Gate:
    """Requests in flight. The worker starts a slice only when there are none (or after ``MOST_WAIT_S``)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = 0

    @contextmanager
    def request(self) -> Iterator[None]:
        with self._cond:
            self._busy += 1
        try:
            yield
        finally:
            with self._cond:
                self._busy -= 1
                self._cond.notify_all()

    def hold(self, future: Future[Any]) -> None:
        """Count ``future`` as a request in flight until it is done (a query embedding started ahead of its
        request: ``/api/prepare``)."""
        with self._cond:
            self._busy += 1

        def done(_: Future[Any]) -> None:
            with self._cond:
                self._busy -= 1
                self._cond.notify_all()

        future.add_done_callback(done)

    @property
    def busy(self) -> int:
        return self._busy

    def wait_quiet(self, stop: threading.Event, most_s: float = MOST_WAIT_S) -> None:
        deadline = time.monotonic() + most_s
        with self._cond:
            while self._busy and not stop.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 0.1))  # and look at the stop event now and then
        if stop.is_set():
            raise Stopping


class BackgroundEmbedder:
    """The shared embedder as the worker uses it: small slices, each after the gate says no request is waiting."""

    def __init__(
        self,
        embedder: Embedder,
        gate: Gate,
        stop: threading.Event,
        on_slice: Callable[[], None],
        niced: ThreadPoolExecutor | None = None,
    ) -> None:
        self.embedder = embedder
        self.niced = niced
        self.gate = gate
        self.stop = stop
        self.on_slice = on_slice
        # The numpy runtime can run a pass beside a query's instead of queueing behind its lock (the daemon keeps
        # BLAS to one thread, so two passes take two cores, not four); other runtimes serialise as before.
        concurrent = getattr(embedder, "embed_passages_concurrent", None)
        self._embed: Callable[[list[str]], Any] = (
            (lambda texts: concurrent(texts, pause=self._pause)) if concurrent else embedder.embed_passages
        )

    def __getattr__(self, name: str) -> Any:  # version, dim, model_id, window, ...
        return getattr(self.embedder, name)

    def chunk(self, text: str) -> list[str]:
        return self.embedder.chunk(text)

    def _pause(self) -> None:
        """Between two layers of a pass: a request that came in since the slice started goes first.

        Niceness alone does not keep a pass out of a query's way on two cores: the worker thread, descheduled
        while it holds the GIL, stalls the query's Python steps between its BLAS calls. Waiting here (on a
        condition, GIL released) takes the pass off the CPU within one layer.
        """
        if self.gate.busy:
            self.gate.wait_quiet(self.stop, PAUSE_MOST_S)

    def embed_passages(self, texts: list[str]) -> Any:
        import numpy as np

        parts = []
        for start in range(0, len(texts), SLICE):
            self.gate.wait_quiet(self.stop)
            self.on_slice()
            part = texts[start : start + SLICE]
            vectors = self.niced.submit(self._embed, part).result() if self.niced else self._embed(part)
            parts.append(np.asarray(vectors, dtype=np.float32))
        return np.concatenate(parts) if parts else np.zeros((0, self.embedder.dim), dtype=np.float32)


def lower_thread_priority() -> bool:
    """Nice the calling thread only (Linux: a thread id is a ``PRIO_PROCESS`` target); False where unsupported.

    Elsewhere a thread id is no ``setpriority`` target (on macOS it could even name another process): no nice.
    """
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
        return True
    except (OSError, AttributeError):
        return False


def _whoami() -> tuple[int, bool]:
    """The embedding thread's id and whether it runs niced (run on that thread)."""
    try:
        return threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, 0) >= NICE
    except OSError:
        return threading.get_native_id(), False


def release_memory() -> None:
    """Hand freed memory back to the OS after a step (the daemon's resident size is the cost a user sees).

    A pass allocates tens of MB of temporaries and glibc keeps freed chunks in per-thread arenas, so without
    this the daemon stays near its peak between backlogs. (``memlane serve`` points Arrow at the same allocator.)
    """
    import ctypes
    import sys

    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass  # not glibc (musl): nothing to trim this way


def give_back_claims(cfg: Config, project_id: str) -> int:
    """Put this process's claims on a project back to pending (a batch abandoned at shutdown; no attempt counted)."""
    from memlane import proc
    from memlane.memory import Memory
    from memlane.store.keys import now_iso

    with Memory.open(project_id=project_id, cfg=cfg, create=None) as mem:
        if mem.store.ephemeral:
            return 0
        with mem.store.write() as db:
            return int(
                db.execute(
                    "UPDATE outbox SET status = 'pending', claimed_by = NULL, updated_at = ?"
                    " WHERE status = 'processing' AND claimed_by = ?",
                    (now_iso(), proc.identity()),
                ).rowcount
            )


class Worker:
    """The thread's loop and the state ``/api/health`` reports (``memlane status``, ``doctor`` read it).

    The daemon's one background loop: each round, for every known project, it embeds a step of the outbox (when
    there is a model) and then runs each background job (``daemon/jobs.py``: projection, and what other features
    add there).
    """

    def __init__(
        self,
        cfg: Config,
        embedder: Embedder | None,
        gate: Gate,
        stop: threading.Event,
        touch: Callable[[], None],
        state: dict[str, Any] | None = None,
        jobs: list[ProjectJob] | None = None,
        upkeep: Upkeep | None = None,
    ) -> None:
        self.cfg = cfg
        self.stop = stop
        self.touch = touch
        # One thread at nice 10 for the forward passes (the CPU-heavy part); see the module docstring for why not
        # the loop's own thread.
        self.niced = ThreadPoolExecutor(1, thread_name_prefix="embed-niced", initializer=lower_thread_priority)
        self.embedder = (
            BackgroundEmbedder(embedder, gate, stop, self._slice, self.niced) if embedder is not None else None
        )
        self.jobs = jobs or []  # daemon/jobs.default_jobs: per project, every round
        self.upkeep = upkeep  # daemon/jobs.Upkeep: pruning, outbox cleanup, when due
        self.state: dict[str, Any] = state if state is not None else {}
        self.state.update(processed=0, last_error=None, busy=False, thread=None)
        self.state["jobs"] = {job.name: {"done": 0, "last_error": None} for job in self.jobs}
        # "busy" (reported) means embedding; this also covers a step's set-up. The daemon does not go idle
        # while either is true; both go false only after a step that found nothing to embed.
        self.has_work = False

    def _slice(self) -> None:
        self.state["busy"] = True
        self.touch()  # a backlog being embedded is activity: no idle shutdown mid-way

    def error(self, message: str) -> None:
        self.state["last_error"] = message
        log("daemon", "error", f"worker: {message}")

    def step(self) -> int:
        """One step over every known project; returns how many events were embedded."""
        from memlane import project
        from memlane.memory import Memory
        from memlane.vectors import process_outbox
        from memlane.vectors.worker import pending_count

        done = 0
        for entry in project.known_projects():
            if self.stop.is_set():
                break
            pid = str(entry.get("id"))
            report = None
            try:
                with Memory.open(project_id=pid, cfg=self.cfg, create=None) as mem:
                    if self.embedder is not None:
                        if not mem.store.ephemeral and pending_count(mem):
                            # Work in hand from here, before the first slice: opening the index (importing LanceDB)
                            # and chunking can outlast a short idle timeout, and the daemon must not go idle with work.
                            self.has_work = True
                        report = process_outbox(mem, self.embedder, limit=STEP)
                    done += self._jobs(mem, pid)
            except Stopping:
                given = give_back_claims(self.cfg, pid)
                log("daemon", "info", f"worker stopped mid-batch; {given} job(s) of {pid} back to pending")
                break
            except Exception as exc:  # noqa: BLE001 - one broken project must not stop the others
                self.error(f"{pid}: {exc!r}")
                continue
            if report is None:
                continue
            done += report.processed
            if report.processed:
                self.state["processed"] += report.processed
                self.touch()
            if report.errors:
                self.error(f"{pid}: {report.errors[-1]}")
        return done

    def _jobs(self, mem: Any, pid: str) -> int:
        """Each background job's step for one project; a job that fails is logged and the others still run."""
        done = 0
        for job in self.jobs:
            if self.stop.is_set():
                break
            counts = self.state["jobs"][job.name]
            try:
                count = job.step(mem)
            except Stopping:
                raise
            except Exception as exc:  # noqa: BLE001 - one failing job must not stop the embedding or the others
                counts["last_error"] = f"{pid}: {exc!r}"
                log("daemon", "error", f"job {job.name}: {pid}: {exc!r}")
                continue
            if count:
                counts["done"] += count
                self.has_work = True
                self.touch()
            done += count
        return done

    def run(self) -> None:
        self.state["thread"], self.state["niced"] = self.niced.submit(_whoami).result()
        try:
            self._loop()
        finally:
            self.niced.shutdown(wait=True)
            self.state["busy"] = self.has_work = False

    def _loop(self) -> None:
        while not self.stop.is_set():
            try:
                done = self.step()
                if self.upkeep is not None:
                    self.upkeep.run_due()
            except Stopping:
                break
            except Exception as exc:  # noqa: BLE001 - e.g. the projects registry unreadable: say so, try again later
                self.error(repr(exc))
                done = 0
                self.stop.wait(5.0)
            self.state["busy"] = self.has_work = done > 0
            if done:
                release_memory()
            self.stop.wait(0.05 if done else 2.0)
