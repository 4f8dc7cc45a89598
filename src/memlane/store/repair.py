"""Diagnose and recover a damaged memory.db (corrupt pages, truncation, an empty file).

Recovery never edits the damaged file. It salvages rows into a scratch database — with SQLite's own
``.recover`` (the ``sqlite3`` command-line shell) when it is installed, else a Python copy that reads
each table row range by row range and skips what cannot be read — then builds a brand-new store with
memlane's schema from the salvaged rows: events (whose insert triggers rebuild both full-text
indexes), sessions, tombstones and the embedding outbox, where every event
without a surviving job gets a new pending one so its vector is (re)computed. The new file replaces
memory.db and the damaged one is kept beside it as ``memory.db.damaged-<time>``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sqlite3
import subprocess
import time
from dataclasses import dataclass, field

from memlane.store import keys, schema
from memlane.store.db import REPAIR_SUFFIX, Store, is_damage
from memlane.store.records import SESSIONLESS_TYPES

# Tables copied from the salvage, in order (events first: outbox rows reference them). Not the import
# ledger: it would tell `memlane import` that history files whose events sat on lost pages are done,
# while without it a re-import restores them (dedupe keys make the rest a no-op).
_TABLES = ("events", "sessions", "tombstones", "meta", "outbox")
_RECOVER_TIMEOUT_S = 600
_MAX_SKIPS = 60  # probing past unreadable rows doubles its stride: 60 doublings pass any 64-bit rowid


@dataclass
class Diagnosis:
    ok: bool
    detail: str


@dataclass
class RepairReport:
    path: str
    method: str = ""
    kept_as: str = ""
    rows: dict[str, int] = field(default_factory=dict)
    requeued: int = 0
    integrity: str = ""

    def line(self) -> str:
        copied = ", ".join(f"{n} {t}" for t, n in self.rows.items() if n) or "no rows"
        return (
            f"recovered {copied} with {self.method}; {self.requeued} embedding job(s) requeued; "
            f"integrity {self.integrity}; damaged file kept as {os.path.basename(self.kept_as)}"
        )


def diagnose(path: str) -> Diagnosis:
    """Read-only check of one store: empty file, unreadable header, or ``PRAGMA quick_check``."""
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        return Diagnosis(False, f"cannot stat: {exc.strerror or exc}")
    if size == 0:
        return Diagnosis(False, "empty file (0 bytes): not a store")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = conn.execute("PRAGMA quick_check(5)").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return Diagnosis(False, str(exc).splitlines()[0])
    result = "; ".join(str(r[0]) for r in rows)
    return Diagnosis(result == "ok", result[:300])


def _salvage_with_cli(damaged: str, scratch: str) -> bool:
    """``sqlite3 damaged .recover | sqlite3 scratch``; False when the shell is missing or fails outright."""
    shell = shutil.which("sqlite3")
    if shell is None:
        return False
    try:
        dump = subprocess.run(
            [shell, damaged, ".recover"], capture_output=True, timeout=_RECOVER_TIMEOUT_S, check=False
        ).stdout
        if not dump:
            return False
        subprocess.run([shell, scratch], input=dump, capture_output=True, timeout=_RECOVER_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return _readable(scratch, "events")


def _readable(path: str, table: str) -> bool:
    try:
        conn = sqlite3.connect(path)
        try:
            conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
        finally:
            conn.close()
        return True
    except sqlite3.DatabaseError:
        return False


def _salvage_with_python(damaged: str, scratch: str) -> None:
    """Copy every readable row of memlane's tables, in rowid order, skipping over unreadable ranges."""
    src = sqlite3.connect(f"file:{damaged}?mode=ro", uri=True)
    dst = sqlite3.connect(scratch, isolation_level=None)
    try:
        for table in _TABLES:
            try:
                cur = src.execute(f"SELECT * FROM {table} LIMIT 0")
            except sqlite3.DatabaseError:
                continue  # the schema entry itself is unreadable
            columns = [d[0] for d in cur.description]
            dst.execute(f"CREATE TABLE IF NOT EXISTS {table} (_rowid INTEGER PRIMARY KEY, {', '.join(columns)})")
            _copy_rows(src, dst, table, len(columns))
    finally:
        src.close()
        dst.close()


def _copy_rows(src: sqlite3.Connection, dst: sqlite3.Connection, table: str, ncols: int) -> None:
    marks = ",".join("?" * (ncols + 1))
    last, step, skips = 0, 1, 0
    dst.execute("BEGIN")
    while skips < _MAX_SKIPS:
        try:
            for row in src.execute(f"SELECT rowid, * FROM {table} WHERE rowid > ? ORDER BY rowid", (last,)):
                dst.execute(f"INSERT OR IGNORE INTO {table} VALUES ({marks})", row)
                last, step = row[0], 1
            break
        except (sqlite3.DatabaseError, OverflowError):
            # A damaged page hides a range of rowids: probe past it, further each time.
            last += step
            step *= 2
            skips += 1
    dst.execute("COMMIT")


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    schema_name, _, name = table.rpartition(".")
    prefix = f"{schema_name}." if schema_name else ""
    try:
        return [r[1] for r in conn.execute(f"PRAGMA {prefix}table_info({name})")]
    except sqlite3.DatabaseError:
        return []


def _rebuild(scratch: str, target: str, project_id: str, report: RepairReport) -> None:
    """A fresh store at ``target`` filled from the salvaged rows of ``scratch``."""
    with Store(target, project_id) as store:
        db = store.db
        db.execute("ATTACH DATABASE ? AS salvage", (scratch,))
        with store.write():
            for table in _TABLES:
                wanted = _columns(db, f"main.{table}")
                have = set(_columns(db, f"salvage.{table}"))
                cols = [c for c in wanted if c in have]
                if not cols:
                    report.rows[table] = 0
                    continue
                select = ", ".join(cols)
                if table == "events":
                    # Rows missing a required field are fragments .recover could not fully read.
                    where = " WHERE id IS NOT NULL AND content IS NOT NULL AND dedupe_key IS NOT NULL"
                elif table == "outbox":
                    where = " WHERE event_id IN (SELECT id FROM main.events)"
                else:
                    where = ""
                # rowcount, not total_changes: the events triggers' FTS inserts count as changes too
                names = ", ".join(cols)
                sql = f"INSERT OR IGNORE INTO main.{table} ({names}) SELECT {select} FROM salvage.{table}{where}"
                cur = db.execute(sql)
                report.rows[table] = max(cur.rowcount, 0)
            now = keys.now_iso()
            cur = db.execute(
                "INSERT INTO outbox (event_id, status, created_at, updated_at)"
                " SELECT id, 'pending', ?, ? FROM events WHERE id NOT IN (SELECT event_id FROM outbox)"
                f" AND NOT {schema.bookkeeping_sql()}",
                (now, now),
            )
            report.requeued = max(cur.rowcount, 0)
            _recount_sessions(db)
            # Jobs that were claimed when the store broke belong to no one now; a bookkeeping event's job (a
            # store from before schema 9) is pending again so the worker drops its vectors, as migration 9 does.
            db.execute(
                "UPDATE outbox SET status = 'pending' WHERE status NOT IN ('pending', 'done', 'failed')"
                f" OR event_id IN (SELECT id FROM events WHERE {schema.bookkeeping_sql()})"
            )
        db.execute("DETACH DATABASE salvage")
        report.integrity = str(db.execute("PRAGMA integrity_check").fetchone()[0])


def _recount_sessions(db: sqlite3.Connection) -> None:
    """Session rows agree with the events that survived (and exist for every session that has some)."""
    db.execute(
        "INSERT OR IGNORE INTO sessions (id, project_id, started_at, last_activity, event_count, prompt_count)"
        " SELECT session_id, MIN(project_id), MIN(ts), MAX(ts), 0, 0 FROM events"
        f" WHERE type NOT IN ({', '.join(repr(t) for t in SESSIONLESS_TYPES)}) GROUP BY session_id"
    )
    db.execute(
        "UPDATE sessions SET event_count = (SELECT COUNT(*) FROM events e WHERE e.session_id = sessions.id),"
        " prompt_count = (SELECT COUNT(*) FROM events e WHERE e.session_id = sessions.id AND e.type = 'user_prompt')"
    )
    db.execute("DELETE FROM sessions WHERE event_count = 0")


def _move_aside(path: str, stamp: str) -> str:
    kept = f"{path}.damaged-{stamp}"
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.replace(path + suffix, kept + suffix)
    return kept


class _RepairLock:
    """Keeps writers off the damaged file while it is salvaged and swapped.

    New openers see the locked ``.repairing`` marker and spool their events (``Store`` checks it); a
    process that already had the file open is held off by a write transaction on it, when the damaged
    file still allows one.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = -1
        self.conn: sqlite3.Connection | None = None

    def __enter__(self) -> _RepairLock:
        self.fd = os.open(self.path + REPAIR_SUFFIX, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        try:
            self.conn = sqlite3.connect(self.path, timeout=5, isolation_level=None)
            self.conn.execute("BEGIN IMMEDIATE")  # waits for a write in flight to finish
        except sqlite3.Error:
            self.release_db()  # too damaged to lock: the marker alone has to do
        return self

    def release_db(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def __exit__(self, *exc: object) -> None:
        self.release_db()
        try:
            os.unlink(self.path + REPAIR_SUFFIX)
        except OSError:
            pass
        os.close(self.fd)


def recover(path: str, project_id: str, *, use_cli: bool = True) -> RepairReport:
    """Recover the store at ``path`` into a new file that takes its place; the old one is kept aside."""
    with _RepairLock(path) as lock:
        return _recover(path, project_id, use_cli, lock)


def _recover(path: str, project_id: str, use_cli: bool, lock: _RepairLock) -> RepairReport:
    report = RepairReport(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    scratch = f"{path}.salvage-{stamp}"
    rebuilt = f"{path}.rebuilt-{stamp}"
    try:
        if os.path.getsize(path) == 0:
            report.method = "nothing (the file was empty)"
        elif use_cli and _salvage_with_cli(path, scratch):
            report.method = "sqlite3 .recover"
        else:
            for leftover in (scratch, scratch + "-journal"):
                if os.path.exists(leftover):
                    os.unlink(leftover)
            _salvage_with_python(path, scratch)
            report.method = "a row-by-row copy"
        if not os.path.exists(scratch):
            sqlite3.connect(scratch).close()
        _rebuild(scratch, rebuilt, project_id, report)
        lock.release_db()  # closing our connection must not recreate -wal/-shm after they moved
        report.kept_as = _move_aside(path, stamp)
        os.replace(rebuilt, path)
    finally:
        for leftover in (scratch, scratch + "-journal", rebuilt + "-wal", rebuilt + "-shm"):
            try:
                os.unlink(leftover)
            except OSError:
                pass
    return report


__all__ = ["Diagnosis", "RepairReport", "diagnose", "is_damage", "recover"]
