"""Something built from one store's text for its searches (a loanword lexicon, the speakers' names), kept per
project in the process that searches and built off the search path.

The first search that wants it starts the build on a thread and waits ``BUILD_WAIT_S`` for it: a small store's is
ready by then, a large one's is not and that search goes on without it (as before it existed), never held up by
the build. It is built again once its store has grown by ``STALE_GROWTH``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

# A few thousand words or turns take milliseconds; 50,000 words take ~2 s.
BUILD_WAIT_S = 0.05
STALE_GROWTH = 0.1


class PerStore(Generic[T]):
    """``build(store)`` per project key, built on a thread and again when the store has grown (see the module)."""

    def __init__(self, build: Callable[[object], T | None], what: str) -> None:
        self._build_one = build
        self.what = what  # for the log line of a failed build
        self._lock = threading.Lock()
        self._built: dict[str, tuple[T, int]] = {}
        self._building: set[str] = set()

    def get(self, key: str, store: object, wait: bool = False) -> T | None:
        size = int(getattr(store, "size_estimate", lambda: 0)())
        with self._lock:
            built = self._built.get(key)
            fresh = built is not None and size <= built[1] * (1 + STALE_GROWTH)
            if fresh or key in self._building:
                return built[0] if built else None
            self._building.add(key)
        if wait:
            self._build(key, store, size)
        else:
            worker = threading.Thread(target=self._build, args=(key, store, size), name=f"memlane-{self.what}")
            worker.daemon = True
            worker.start()
            worker.join(BUILD_WAIT_S)
        with self._lock:
            built = self._built.get(key)
        return built[0] if built else None

    def _build(self, key: str, store: object, size: int) -> None:
        try:
            value = self._build_one(store)
        except Exception as exc:  # noqa: BLE001 - without it the store is searched as before
            from memlane.logs import log

            log("retrieval", "warning", f"{self.what} not built: {exc!r}")
            value = None
        with self._lock:
            self._building.discard(key)
            if value is not None:
                self._built[key] = (value, size)
