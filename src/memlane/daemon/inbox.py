"""Capture-only hooks handed to the daemon (``daemon.warm.hand_off``): stored after the answer, in delivery order.

A capture-only hook (PostToolUse, Stop, SessionEnd, ...) run in its own process spends ~50 ms of CPU
importing memlane and opening the store, three or more times a turn, beside Claude Code's own work. With the
daemon up, the hook process forwards the payload instead; the daemon queues it and answers at once (Stop's
transcript catch-up may wait for Claude Code to finish writing the turn), then stores it.

The payload stays in memory, as it does in the detached child that stores it otherwise (``capture.detach``):
it is raw, before the privacy filter, so it is never written to disk. A daemon that stops (``memlane daemon
stop``, a signal, its idle timeout, which waits for an empty queue) stores what it has queued first, for up to
``DRAIN_S``; a daemon killed outright loses what it held, as a killed child would.

Order: one session's deliveries are stored one at a time, in the order they arrived (SessionEnd's summary must
see the answer Stop stored), on a small pool of low-priority threads; sessions do not wait for each other.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from memlane.capture.detach import session_of
from memlane.daemon.embed_worker import lower_thread_priority
from memlane.logs import log

THREADS = 2
DRAIN_S = 10.0


@dataclass
class Delivery:
    """One hook delivery as the hook process sent it."""

    event: str
    raw: bytes
    cwd: str | None  # the hook process's working directory
    delivered: float | None  # when Claude Code ran the hook (seconds since the epoch)


class Inbox:
    """Per-session queues of deliveries, each drained in order by one task at a time."""

    def __init__(
        self, store: Callable[[Delivery], None], touch: Callable[[], None], before: Callable[[], None] | None = None
    ) -> None:
        self._store = store
        self._touch = touch
        self._before = before  # called before each delivery is stored (the daemon: let requests go first)
        self._lock = threading.Lock()
        self._queues: dict[str, deque[Delivery]] = {}
        self._pool = ThreadPoolExecutor(THREADS, thread_name_prefix="inbox", initializer=lower_thread_priority)
        self._closing = False

    @property
    def pending(self) -> int:
        with self._lock:
            return sum(len(q) for q in self._queues.values())

    def accept(self, delivery: Delivery) -> bool:
        """Queue ``delivery``; False once the daemon is stopping (the hook then stores it itself)."""
        session = session_of(delivery.raw)
        with self._lock:
            if self._closing:
                return False
            queue = self._queues.get(session)
            if queue is not None:
                queue.append(delivery)  # the session's running task takes it after the ones before it
                return True
            self._queues[session] = deque([delivery])
        self._pool.submit(self._drain, session)
        return True

    def _drain(self, session: str) -> None:
        while True:
            with self._lock:
                queue = self._queues[session]
                if not queue:
                    del self._queues[session]
                    return
                delivery = queue[0]
            try:
                if self._before is not None:
                    self._before()
                self._store(delivery)
            except BaseException as exc:  # noqa: BLE001 - hooks.respond logs its own failures; this is a bug
                log("daemon", "error", f"inbox: {delivery.event} not stored: {exc!r}")
            finally:
                self._touch()
                with self._lock:
                    queue.popleft()

    def close(self, drain_s: float = 0.0) -> int:
        """Take no more deliveries; store those queued for up to ``drain_s``. How many were left unstored."""
        with self._lock:
            self._closing = True
        end = time.monotonic() + drain_s
        while self.pending and time.monotonic() < end:
            time.sleep(0.02)
        left = self.pending
        if left:
            log("daemon", "error", f"inbox: stopping with {left} hook delivery(ies) not stored")
        self._pool.shutdown(wait=False, cancel_futures=True)
        return left
