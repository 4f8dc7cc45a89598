"""An exclusive lock between processes on one file, re-entrant within a process. Stdlib only (hook path).

Used wherever a read-modify-write of a file people or hooks share must not lose an update: a
workflow memory, a project's persistent context. ``fcntl.flock`` on POSIX, ``msvcrt.locking`` on
Windows; flock locks belong to the open file, so the same process taking it twice would deadlock,
hence the depth count per thread (another thread opens its own descriptor and waits, as another
process would).
"""

from __future__ import annotations

import os
import time
from _thread import get_ident

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

_held: dict[tuple[str, int], list[int]] = {}  # (lock path, thread) -> [fd, depth]


class FileLock:
    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> FileLock:
        key = (self.path, get_ident())
        held = _held.get(key)
        if held is not None:
            held[1] += 1
            return self
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            _acquire(fd)
        except BaseException:
            os.close(fd)
            raise
        _held[key] = [fd, 1]
        return self

    def __exit__(self, *exc: object) -> None:
        key = (self.path, get_ident())
        held = _held[key]
        held[1] -= 1
        if held[1] == 0:
            del _held[key]
            _release(held[0])
            os.close(held[0])


def _acquire(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    import msvcrt  # pragma: no cover - Windows

    while True:  # pragma: no cover
        try:
            msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined,unused-ignore]
            return
        except OSError:
            time.sleep(0.05)


def _release(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return
    import msvcrt  # pragma: no cover - Windows

    os.lseek(fd, 0, os.SEEK_SET)  # pragma: no cover
    msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined,unused-ignore]  # pragma: no cover
