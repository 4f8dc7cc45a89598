"""Online backups of a project's store: what `doctor --repair` restores events from when pages are lost.

The daemon takes them (``daemon.jobs.BackupStores``), with SQLite's backup API: a consistent snapshot read in one
step while hooks keep writing (WAL), into ``projects/<id>/backups/memory-<UTC time>-s<newest event>.db``,
created 0600 in a 0700 folder, written as a temp file and renamed into place, so a backup is whole or absent. Only the
newest ``store.backups_kept`` stay. A store that fails the damage check is never backed up: a damaged copy
would push out the good ones.

Backups hold what the store holds, so privacy applies to them too: ``forget`` and ``privacy scan --redact``
delete every backup of the project (``drop``); the next one is taken from the purged store.
"""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import closing
from datetime import UTC, datetime

from memlane.store.health import probe

FOLDER = "backups"
PREFIX = "memory-"
SUFFIX = ".db"


def folder(db_file: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(db_file)), FOLDER)


def existing(db_file: str) -> list[str]:
    """The store's backups, newest first."""
    where = folder(db_file)
    try:
        names = [n for n in os.listdir(where) if n.startswith(PREFIX) and n.endswith(SUFFIX)]
    except OSError:
        return []
    return [os.path.join(where, n) for n in sorted(names, reverse=True)]


def _seq_of(path: str) -> int | None:
    """The newest event a backup holds, from its name (``memory-<time>-s<seq>.db``)."""
    stem = os.path.basename(path)[len(PREFIX) : -len(SUFFIX)]
    _, _, seq = stem.rpartition("-s")
    return int(seq) if seq.isdigit() else None


def _newest_event(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0])


def due(db_file: str, interval_s: float, now: float | None = None) -> bool:
    """Whether the store has events its newest backup lacks and that backup is older than ``interval_s``.

    Judged by the newest event (``max(seq)``, one indexed read), not by file times: closing the last
    connection checkpoints the WAL into the file, so a store "changes" on disk without a new event.
    """
    if interval_s <= 0 or not os.path.exists(db_file):
        return False
    try:
        with closing(sqlite3.connect(f"file:{db_file}?mode=ro", uri=True, timeout=5)) as conn:
            newest = _newest_event(conn)
    except sqlite3.Error:
        return False
    backups = existing(db_file)
    if not backups:
        return newest > 0
    try:
        age = (now if now is not None else time.time()) - os.stat(backups[0]).st_mtime
    except OSError:
        return False
    return newest != _seq_of(backups[0]) and age >= interval_s


def take(db_file: str, keep: int) -> str | None:
    """Back the store up now; returns the backup's path, or None when the store is damaged (not copied).

    Rotates: only the newest ``keep`` backups stay. Raises ``sqlite3.Error``/``OSError`` when the copy fails.
    """
    where = folder(db_file)
    os.makedirs(where, mode=0o700, exist_ok=True)
    os.chmod(where, 0o700)
    tmp = os.path.join(where, f".{PREFIX}{os.getpid()}-{os.urandom(4).hex()}.tmp")
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        with closing(sqlite3.connect(db_file, timeout=5)) as src:
            if probe(src):
                return None
            with closing(sqlite3.connect(tmp)) as dst:
                src.backup(dst)  # one step: a consistent snapshot; writers go on in the WAL meanwhile
                dst.execute("PRAGMA journal_mode = DELETE")  # a self-contained file: no -wal/-shm beside it
                newest = _newest_event(dst)
        os.chmod(tmp, 0o600)
        target = _name(where, newest)
        os.replace(tmp, target)
    finally:
        for leftover in (tmp, tmp + "-journal", tmp + "-wal", tmp + "-shm"):
            try:
                os.unlink(leftover)
            except OSError:
                pass
    for old in existing(db_file)[max(keep, 1) :]:
        try:
            os.unlink(old)
        except OSError:
            pass
    return target


def _name(where: str, newest: int) -> str:
    """``memory-<UTC time to the microsecond>-s<newest event>.db``: names sort as the backups were taken."""
    while True:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = os.path.join(where, f"{PREFIX}{stamp}-s{newest}{SUFFIX}")
        if not os.path.exists(target):
            return target


def drop(db_file: str) -> int:
    """Delete every backup of the store (after a forget or a redaction); returns how many."""
    removed = 0
    for path in existing(db_file):
        try:
            os.unlink(path)
            removed += 1
        except OSError:
            pass
    return removed


def readable(path: str) -> bool:
    """A backup that opens, passes ``quick_check`` and the damage check: one to restore from."""
    try:
        with closing(sqlite3.connect(f"file:{path}?immutable=1", uri=True)) as conn:
            ok = conn.execute("PRAGMA quick_check(1)").fetchone()[0] == "ok"
            return ok and probe(conn) is None
    except sqlite3.Error:
        return False
