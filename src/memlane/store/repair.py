"""Diagnose and recover a damaged memory.db (corrupt pages, truncation, an empty file).

Recovery never edits the damaged file. It salvages rows into a scratch database — with SQLite's own
``.recover`` (the ``sqlite3`` command-line shell) when it is installed, else a Python copy that reads
each table row range by row range and skips what cannot be read — then builds a brand-new store with
memlane's schema from the salvaged rows: events (whose insert triggers rebuild both full-text
indexes), sessions, tombstones and the embedding outbox, where every event
without a surviving job gets a new pending one so its vector is (re)computed. Events the damaged pages
took with them come next from the store's backups (``store.backup``, taken by the daemon), newest first,
never one a forget removed. The new file replaces memory.db and the damaged one is kept beside it as
``memory.db.damaged-<time>``. The caller (``memlane doctor --repair``) then imports the project's Claude
Code transcripts and Codex rollouts again, which hold the same sessions under the same dedupe keys.

A small store's events table is often one page, its root: when that page is lost no salvage can read a
row back, and the backups and history files are where the events are.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memlane.store import backup, keys, pagewalk, schema
from memlane.store.db import EVENT_TYPES, REPAIR_SUFFIX, Store, is_damage
from memlane.store.forget import Forgotten
from memlane.store.health import probe
from memlane.store.records import SESSIONLESS_TYPES

# Tables copied from the salvage, in order (events first: outbox rows reference them). Not the import
# ledger: it would tell `memlane import` that history files whose events sat on lost pages are done,
# while without it a re-import restores them (dedupe keys make the rest a no-op).
_TABLES = ("events", "sessions", "tombstones", "meta", "outbox")
_RECOVER_TIMEOUT_S = 600
_MAX_BACKUPS = 8  # attached at once beside the salvage (SQLite allows 10)
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
    # Where the events came from, in the order they were taken: "the damaged file (sqlite3 .recover)",
    # "backup memory-….db", and (added by the caller, which imports history) "Claude Code transcripts".
    sources: dict[str, int] = field(default_factory=dict)

    def line(self) -> str:
        events = sum(self.sources.values())
        where = "; ".join(f"{n} from {source}" for source, n in self.sources.items())
        lost = "" if events else " (nothing held them: no readable page, backup or history file)"
        return (
            f"recovered {events} event(s){lost}: {where}; {self.requeued} embedding job(s) requeued; "
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
            lost = probe(conn)  # the clearest words for a lost page, when it is one
            rows = conn.execute("PRAGMA quick_check(5)").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return Diagnosis(False, str(exc).splitlines()[0])
    lines = [str(r[0]) for r in rows if not str(r[0]).startswith("*** in database")]
    result = "; ".join(lines) or "ok"
    if lost:
        return Diagnosis(False, lost if result == "ok" else f"{lost}; {result}"[:300])
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


def _rebuild(
    scratch: str, target: str, project_id: str, report: RepairReport, backups: list[str], damaged: str
) -> None:
    """A fresh store at ``target`` filled from the salvaged rows of ``scratch``, then from the pages of the
    ``damaged`` file that SQLite could not reach, then from ``backups``."""
    with Store(target, project_id) as store:
        db = store.db
        db.execute("ATTACH DATABASE ? AS salvage", (scratch,))
        names = []
        for n, path in enumerate(backups[:_MAX_BACKUPS]):  # attached outside the transaction, as SQLite wants
            db.execute(f"ATTACH DATABASE ? AS backup{n}", (f"file:{path}?immutable=1",))
            names.append((f"backup{n}", path))
        with store.write():
            _copy_salvage(db, report)
            _copy_pages(db, damaged, report)
            for name, path in names:
                _merge_backup(db, name, os.path.basename(path), report)
            _requeue(db, report)
        for name in ["salvage", *(n for n, _ in names)]:
            db.execute(f"DETACH DATABASE {name}")
        report.integrity = str(db.execute("PRAGMA integrity_check").fetchone()[0])


def _copy_salvage(db: sqlite3.Connection, report: RepairReport) -> None:
    """Every row the salvage read from the damaged file, table by table."""
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
    report.sources[f"the damaged file ({report.method})"] = report.rows.get("events", 0)


def _is_id(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 32 and all(c in "0123456789abcdef" for c in value)


_SHAPES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "tombstones": lambda r: (
        r["scope"] in ("event", "session", "before", "project", "redact", "reimport")
        and isinstance(r["ts"], str)
        and isinstance(r["detail"], str)
    ),
    "events": lambda r: (
        _is_id(r["id"])
        and r["type"] in EVENT_TYPES
        and isinstance(r["session_id"], str)
        and isinstance(r["ts"], str)
        and isinstance(r["content"], str)
        and isinstance(r["dedupe_key"], str)
    ),
    "outbox": lambda r: _is_id(r["event_id"]) and r["status"] in ("pending", "processing", "done", "failed"),
}


def _copy_pages(db: sqlite3.Connection, damaged: str, report: RepairReport) -> None:
    """Rows the salvage could not reach (a lost root or interior page hides whole leaves from SQLite), read
    from the damaged file's leaf pages (``store.pagewalk``). Never a forgotten event, nor a redacted one (a
    stale copy on a free page may predate the redaction); a later re-import brings those back filtered."""
    shapes = {t: (_columns(db, f"main.{t}"), test) for t, test in _SHAPES.items()}
    found = pagewalk.rows_like(damaged, shapes)
    for row in found["tombstones"]:
        row.pop("id", None)  # numbered anew; the same record twice is one
        db.execute(
            "INSERT INTO main.tombstones (ts, scope, selector, event_count, detail) SELECT ?, ?, ?, ?, ?"
            " WHERE NOT EXISTS (SELECT 1 FROM main.tombstones WHERE ts = ? AND scope = ? AND selector = ?)",
            (row["ts"], row["scope"], row["selector"], row.get("event_count") or 0, row["detail"],
             row["ts"], row["scope"], row["selector"]),
        )  # fmt: skip
    stones = _tombstones(db, "main")
    forgotten = Forgotten(stones)
    redacted = {str(i) for t in stones if t["scope"] == "redact" for i in t["detail"].get("ids", [])}
    added = 0
    for row in found["events"]:
        if row["id"] in forgotten.ids or row["id"] in redacted:
            continue
        if forgotten.covers(row["session_id"], row["ts"], row["dedupe_key"]):
            continue
        cols = [c for c in row if row[c] is not None]
        cur = db.execute(
            f"INSERT OR IGNORE INTO main.events ({', '.join(cols)}) VALUES ({','.join('?' * len(cols))})",
            [row[c] for c in cols],
        )
        added += max(cur.rowcount, 0)
    for row in found["outbox"]:
        cols = [c for c in row if row[c] is not None]
        db.execute(
            f"INSERT OR IGNORE INTO main.outbox ({', '.join(cols)}) SELECT {','.join('?' * len(cols))}"
            " WHERE EXISTS (SELECT 1 FROM main.events WHERE id = ?)",
            [*(row[c] for c in cols), row["event_id"]],
        )
    report.sources["the damaged file's pages, read one by one"] = added


def _merge_backup(db: sqlite3.Connection, alias: str, label: str, report: RepairReport) -> None:
    """Events (and their sessions, tombstones and embedding jobs) of one backup that the store lacks.

    A backup never brings back what a forget removed: events named by any tombstone (the salvage's or the
    backup's) are left out, and forgets delete backups anyway (``store.backup``).
    """
    theirs = {(t["ts"], t["scope"], t["selector"]) for t in _tombstones(db, alias)}
    # A redaction the backup predates: its copies of those events still hold what was redacted.
    unredacted = {
        str(i)
        for t in _tombstones(db, "main")
        if t["scope"] == "redact" and (t["ts"], t["scope"], t["selector"]) not in theirs
        for i in t["detail"].get("ids", [])
    }
    db.execute(
        "INSERT INTO main.tombstones (ts, scope, selector, event_count, detail)"
        f" SELECT ts, scope, selector, event_count, detail FROM {alias}.tombstones b WHERE NOT EXISTS"
        " (SELECT 1 FROM main.tombstones m WHERE m.ts = b.ts AND m.scope = b.scope AND m.selector = b.selector)"
    )
    forgotten = Forgotten(_tombstones(db, "main"))
    # seq too: AUTOINCREMENT never reuses one, so a backup's event has the number it had in the store
    cols = [c for c in _columns(db, "main.events") if c in set(_columns(db, f"{alias}.events"))]
    names = ", ".join(cols)
    added = 0
    rows = db.execute(f"SELECT {names} FROM {alias}.events ORDER BY seq").fetchall()
    at = {c: i for i, c in enumerate(cols)}
    for row in rows:
        if forgotten.covers(row[at["session_id"]], row[at["ts"]], row[at["dedupe_key"]]):
            continue
        if row[at["id"]] in forgotten.ids or row[at["id"]] in unredacted:
            continue
        cur = db.execute(f"INSERT OR IGNORE INTO main.events ({names}) VALUES ({','.join('?' * len(cols))})", row)
        added += max(cur.rowcount, 0)
    report.sources[f"backup {label}"] = added
    for table in ("sessions", "outbox"):
        mine = [c for c in _columns(db, f"main.{table}") if c in set(_columns(db, f"{alias}.{table}"))]
        where = " WHERE event_id IN (SELECT id FROM main.events)" if table == "outbox" else ""
        if mine:
            listed = ", ".join(mine)
            db.execute(f"INSERT OR IGNORE INTO main.{table} ({listed}) SELECT {listed} FROM {alias}.{table}{where}")


def _tombstones(db: sqlite3.Connection, schema_name: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if not _columns(db, f"{schema_name}.tombstones"):
        return out
    for ts, scope, selector, detail in db.execute(f"SELECT ts, scope, selector, detail FROM {schema_name}.tombstones"):
        try:
            parsed = json.loads(detail or "{}")
        except ValueError:
            parsed = {}
        out.append({"ts": ts, "scope": scope, "selector": selector, "detail": parsed})
    return out


def _requeue(db: sqlite3.Connection, report: RepairReport) -> None:
    """Jobs for every event without one; session rows recounted; claimed jobs of a dead worker released;
    a citation for every event read without one (a row older than citations, or a fragment)."""
    taken = {r[0] for r in db.execute("SELECT citation FROM events WHERE citation IS NOT NULL")}
    for seq, event_id in db.execute("SELECT seq, id FROM events WHERE citation IS NULL").fetchall():
        cite = next(c for c in keys.citation_candidates(event_id) if c not in taken)
        taken.add(cite)
        db.execute("UPDATE events SET citation = ? WHERE seq = ?", (cite, seq))
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


def recover(path: str, project_id: str, *, use_cli: bool = True, backups: bool = True) -> RepairReport:
    """Recover the store at ``path`` into a new file that takes its place; the old one is kept aside.

    Events come from the damaged file first (what its pages still hold), then from the store's backups,
    newest first (``backups``: those that pass their own checks); ``report.sources`` says how many from each.
    """
    with _RepairLock(path) as lock:
        found = [b for b in backup.existing(path) if backup.readable(b)] if backups else []
        return _recover(path, project_id, use_cli, lock, found)


def _recover(path: str, project_id: str, use_cli: bool, lock: _RepairLock, backups: list[str]) -> RepairReport:
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
        _rebuild(scratch, rebuilt, project_id, report, backups, path)
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
