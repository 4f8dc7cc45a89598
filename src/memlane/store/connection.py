"""Opening a store: create it atomically, refuse a damaged or under-repair file, migrate, write transactions.

Owns ``StoreConnection`` (the connection, ``write()``, ``close``), ``StoreDamaged`` and how a SQLite
error is recognised as damage. Every other ``store`` module builds on this class; it knows nothing of
events, full-text or the outbox.
"""

from __future__ import annotations

import os
import sqlite3

from memlane.errors import MemlaneError
from memlane.store import schema

TYPE_CHECKING = False  # pathlib costs hook start-up time
if TYPE_CHECKING:
    from pathlib import Path


class _Write:
    """``with store.write():`` — one ``BEGIN IMMEDIATE`` transaction (contextlib costs start-up time)."""

    __slots__ = ("db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            self._rollback()
            return
        try:
            self.db.execute("COMMIT")
        except sqlite3.Error:
            # A COMMIT that fails (disk full, I/O error) can leave the transaction open, and the next
            # BEGIN on this connection would fail with "cannot start a transaction within a transaction".
            self._rollback()
            raise

    def _rollback(self) -> None:
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # SQLite already rolled back (it does on SQLITE_FULL in some states)


class StoreDamaged(MemlaneError, sqlite3.DatabaseError):
    """memory.db cannot be read as a database (corrupt, truncated, empty). The message is one line.

    A ``MemlaneError`` (the message says what to do: ``memlane doctor --repair``) and a
    ``sqlite3.DatabaseError``, so every caller that already fails open on storage errors (hooks spool,
    the daemon answers 503, MCP logs it) handles it without knowing about it.
    """


# SQLITE_CORRUPT and SQLITE_NOTADB: the primary result codes of a damaged file (extended codes add high bits).
_DAMAGE_CODES = (11, 26)


def is_damage(exc: BaseException) -> bool:
    """Whether a SQLite error means the file itself is damaged (as opposed to locked, full, read-only)."""
    if isinstance(exc, StoreDamaged):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _DAMAGE_CODES:
        return True
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "corrupt" in text


def damage_message(file: str, exc: BaseException | str) -> str:
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"memory store {file} is damaged ({reason}); run `memlane doctor --repair`"


def _create(file: str) -> None:
    """Create a new store atomically: build it as a temp file (0600, WAL, migrated), then link it in place.

    Other processes therefore never see a half-made memory.db, so a zero-length memory.db is always
    damage, never "someone is creating it right now". ``link`` fails if another process won the race,
    and theirs is as good as ours.
    """
    directory = os.path.dirname(file) or "."
    os.makedirs(directory, mode=0o700, exist_ok=True)
    tmp = f"{file}.{os.getpid()}-{os.urandom(3).hex()}.new"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # SQLite gives -wal/-shm this mode too
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            schema.migrate(conn)
        finally:
            conn.close()  # the last connection checkpoints and removes the temp -wal
        try:
            os.link(tmp, file)
        except FileExistsError:
            pass
        except OSError:
            # No hard links on this filesystem: rename only when nothing is there (a small race that the
            # old, non-atomic creation always had).
            if not os.path.exists(file):
                os.replace(tmp, file)
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(tmp + suffix)
            except OSError:
                pass


REPAIR_SUFFIX = ".repairing"


def _under_repair(file: str) -> bool:
    """Whether ``doctor --repair`` is rebuilding this store now (it holds an exclusive lock on the marker).

    A marker nobody holds is left by a repair that died, and is ignored. Costs one ``stat`` otherwise.
    """
    marker = file + REPAIR_SUFFIX
    if not os.path.exists(marker):
        return False
    import fcntl

    try:
        fd = os.open(marker, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _private(file: str, mode: int) -> None:
    """Stores made before files were created 0600 are tightened on open (contents are private)."""
    if mode & 0o077:
        for suffix in ("", "-wal", "-shm"):
            try:
                os.chmod(file + suffix, 0o600)
            except OSError:
                pass


class StoreConnection:
    """One project's memory database file and its connection (the base the other store parts extend)."""

    citation_length = 6  # of the citations given to new events (``citations.id_length``, set by who opens it)

    def __init__(
        self, path: str | os.PathLike[str], project_id: str, busy_timeout_ms: int = 5000, *, create: bool = True
    ) -> None:
        """Open the store at ``path``; ``create=False`` raises ``FileNotFoundError`` instead of making one.

        Raises ``StoreDamaged`` (one-line message) when the file is empty or not a readable database.
        """
        self.file = os.fspath(path)
        self.project_id = project_id
        if self.file != ":memory:":
            if _under_repair(self.file):
                # An OperationalError like "database is locked": hooks spool, the CLI says so in one line.
                raise sqlite3.OperationalError(f"memory store {self.file} is being repaired; try again shortly")
            try:
                st = os.stat(self.file)
            except FileNotFoundError:
                if not create:
                    raise
                _create(self.file)
                st = os.stat(self.file)
            if st.st_size == 0:
                raise StoreDamaged(damage_message(self.file, "empty file, 0 bytes"))
            _private(self.file, st.st_mode)
        self.db = sqlite3.connect(self.file, timeout=busy_timeout_ms / 1000, isolation_level=None)
        try:
            self.db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            if self.db.execute("PRAGMA journal_mode").fetchone()[0] not in ("wal", "memory"):
                self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = NORMAL")
            self.db.execute("PRAGMA foreign_keys = ON")
            schema.migrate(self.db)
        except sqlite3.DatabaseError as exc:
            self.db.close()
            if is_damage(exc):
                raise StoreDamaged(damage_message(self.file, exc)) from exc
            raise

    @property
    def ephemeral(self) -> bool:
        """An in-memory stand-in for a project with no store (see ``empty``): nothing to persist for it."""
        return self.file == ":memory:"

    def close(self) -> None:
        self.db.close()

    @property
    def path(self) -> Path:
        from pathlib import Path

        return Path(self.file)

    def write(self) -> _Write:
        return _Write(self.db)


def db_size(path: str) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            total += os.path.getsize(path + suffix)
        except OSError:
            pass
    return total
