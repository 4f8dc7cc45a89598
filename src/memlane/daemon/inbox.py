"""Capture-only hooks handed to the daemon (``daemon.warm.hand_off``): kept on disk, stored in delivery order.

A capture-only hook (PostToolUse, Stop, SessionEnd, ...) run in its own process spends ~50 ms of CPU
importing memlane and opening the store, three or more times a turn, beside Claude Code's own work. With the
daemon up, the hook process forwards the payload instead; the daemon writes it to ``inbox/`` (one file, renamed
into place) and only then answers, so an accepted delivery survives a crash of the daemon: the files left are
stored the next time it starts (``recover``). The answer does not wait for the store: Stop's transcript
catch-up may wait for Claude Code to finish writing the turn.

Order: one session's deliveries are stored one at a time, in the order they arrived (SessionEnd's summary must
see the answer Stop stored), on a small pool of low-priority threads; sessions do not wait for each other.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from memlane import paths
from memlane.capture.detach import session_of
from memlane.daemon.embed_worker import lower_thread_priority
from memlane.logs import log

FOLDER = "inbox"
THREADS = 2


class Delivery:
    """One hook delivery as the hook process sent it."""

    def __init__(self, event: str, raw: bytes, cwd: str | None, delivered: float | None, path: str = "") -> None:
        self.event = event
        self.raw = raw
        self.cwd = cwd
        self.delivered = delivered
        self.path = path

    def save(self) -> None:
        """Write it to the inbox (a temporary file renamed into place: never half a delivery)."""
        folder = paths.ensure_dir(paths.join(FOLDER))
        name = f"{time.time_ns():020d}-{os.getpid()}-{threading.get_native_id()}.hook"
        head = json.dumps({"event": self.event, "cwd": self.cwd, "delivered": self.delivered}).encode()
        tmp = os.path.join(folder, f".{name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, head + b"\n" + self.raw)
        finally:
            os.close(fd)
        self.path = os.path.join(folder, name)
        os.replace(tmp, self.path)

    @classmethod
    def load(cls, path: str) -> Delivery:
        with open(path, "rb") as fh:
            head, _, raw = fh.read().partition(b"\n")
        meta = json.loads(head)
        return cls(str(meta["event"]), raw, meta.get("cwd"), meta.get("delivered"), path)

    def done(self) -> None:
        try:
            os.remove(self.path)
        except OSError:
            pass


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

    def accept(self, delivery: Delivery) -> None:
        """Save ``delivery``, then queue it (raises OSError when it cannot be saved: the hook runs itself)."""
        delivery.save()
        self._queue(delivery)

    def _queue(self, delivery: Delivery) -> None:
        session = session_of(delivery.raw)
        with self._lock:
            queue = self._queues.get(session)
            if queue is not None:
                queue.append(delivery)  # the session's running task takes it after the ones before it
                return
            if self._closing:
                return  # saved: the next daemon stores it (``recover``)
            self._queues[session] = deque([delivery])
        self._pool.submit(self._drain, session)

    def _drain(self, session: str) -> None:
        while True:
            with self._lock:
                queue = self._queues[session]
                if not queue or self._closing:  # closing: what is left stays in the inbox for the next start
                    del self._queues[session]
                    return
                delivery = queue[0]
            try:
                if self._before is not None:
                    self._before()
                self._store(delivery)
            except BaseException as exc:  # noqa: BLE001 - the file stays for the next start; the queue goes on
                log("daemon", "error", f"inbox: {delivery.event} not stored: {exc!r}; kept in {delivery.path}")
            else:
                delivery.done()
            finally:
                self._touch()
                with self._lock:
                    queue.popleft()

    def recover(self) -> int:
        """Queue the deliveries a stopped daemon accepted and did not store; how many."""
        folder = paths.join(FOLDER)
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".hook"))
        except OSError:
            return 0
        found = 0
        for name in names:
            try:
                self._queue(Delivery.load(os.path.join(folder, name)))
                found += 1
            except (OSError, ValueError, KeyError) as exc:
                log("daemon", "error", f"inbox: {name} unreadable ({exc!r}); left in place")
        if found:
            log("daemon", "info", f"inbox: storing {found} hook delivery(ies) left by an earlier daemon")
        return found

    def close(self, wait: bool = True) -> None:
        """Stop taking deliveries off the queues (a store under way finishes); the rest stays on disk."""
        self._closing = True
        self._pool.shutdown(wait=wait, cancel_futures=True)
