"""Replacing a file atomically: readers (people, editors, hooks, the daemon) see the old file or the new
one, never half of either — the one way memlane writes a file someone else reads.

The new content goes to a temp file in the same folder (same file system, so the rename is atomic), is
fsynced, renamed over the target, and the folder is fsynced so the rename itself survives a crash. On
any failure the temp file is removed and the target is untouched. Permissions: ``mode`` when given (set
when the temp file is created, so a private file is never readable by others, even briefly), else the
existing file's, else the usual default for a new file (0666 less the umask).

Standard library only: the hook path writes through this.
"""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager

TYPE_CHECKING = False  # typing itself costs milliseconds of hook start-up
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import IO, Any

PRIVATE = 0o600


def write_bytes(path: str | os.PathLike[str], data: bytes, mode: int | None = None) -> None:
    with replacing(path, mode, binary=True) as fh:
        fh.write(data)


def write_text(path: str | os.PathLike[str], text: str, mode: int | None = None) -> None:
    """UTF-8, newlines written as given."""
    with replacing(path, mode) as fh:
        fh.write(text)


@contextmanager
def replacing(path: str | os.PathLike[str], mode: int | None = None, *, binary: bool = False) -> Iterator[IO[Any]]:
    """A file object whose content replaces ``path`` when the block ends without an exception."""
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    tmp = os.path.join(directory, f".{os.path.basename(target)}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    if mode is None:
        mode = _mode_of(target)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)  # the umask applied at creation; the mode asked for (or kept) wins
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(directory)


def _mode_of(path: str) -> int | None:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


def _fsync_dir(directory: str) -> None:
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # some platforms cannot open folders; the rename itself is done
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
