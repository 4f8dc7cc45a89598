"""The daemon's online backups of each store (store/backup.py, daemon/jobs.BackupStores): what repair restores from."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
from pathlib import Path

import pytest

from memlane import config
from memlane.daemon.jobs import JOBS, BackupStores, Upkeep
from memlane.memory import Memory
from memlane.store import backup
from memlane.store.db import NewEvent


def _store(proj: Path, n: int = 5, session: str = "s1") -> str:
    with Memory.open(proj) as mem:
        mem.store.append(
            NewEvent("user_prompt", session, f"prompt {i} in {session}", f"{session}-{i}") for i in range(n)
        )
        return mem.store.file


def _count(path: str) -> int:
    with sqlite3.connect(f"file:{path}?immutable=1", uri=True) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])


def test_a_backup_is_a_whole_private_self_contained_copy(proj: Path) -> None:
    db = _store(proj)
    path = backup.take(db, keep=3)
    assert path is not None and path.startswith(backup.folder(db))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(backup.folder(db)).st_mode) == 0o700
    assert not os.path.exists(path + "-wal")  # a file of its own, no WAL beside it
    assert _count(path) == 5 and backup.readable(path)
    assert [n for n in os.listdir(backup.folder(db)) if n.endswith(".tmp")] == []


def test_backups_rotate_keeping_the_newest(proj: Path) -> None:
    db = _store(proj)
    made = [backup.take(db, keep=2) for _ in range(4)]
    assert backup.existing(db) == [made[3], made[2]]


def test_a_damaged_store_is_not_backed_up_over_good_backups(proj: Path) -> None:
    db = _store(proj)
    good = backup.take(db, keep=1)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'events'").fetchone()[0]
    with open(db, "r+b") as fh:
        fh.seek((root - 1) * 4096)
        fh.write(bytes([0x0D, 0, 0, 0, 0, 0x10, 0, 0]) + bytes(4088))  # reads as an empty table
    assert backup.take(db, keep=1) is None
    assert backup.existing(db) == [good]


def test_due_only_when_the_store_has_new_events_and_the_interval_passed(proj: Path) -> None:
    db = _store(proj)
    assert backup.due(db, 3600)  # never backed up
    path = backup.take(db, keep=3)
    assert path is not None and path.endswith("-s5.db")  # named after the newest event it holds
    assert not backup.due(db, 3600)
    old = time.time() - 7200
    os.utime(path, (old, old))
    assert not backup.due(db, 3600)  # older than the interval, but no event since
    _store(proj, 1, "s2")
    assert backup.due(db, 3600)
    assert not backup.due(db, 0)  # 0 = no backups


def test_forget_and_redact_take_the_backups_with_them(proj: Path) -> None:
    db = _store(proj)
    backup.take(db, keep=3)
    with Memory.open(proj, create=False) as mem:
        mem.forget(session="s1")
    assert backup.existing(db) == []


def test_the_job_backs_up_the_stores_with_new_events(proj: Path, tmp_path: Path) -> None:
    cfg = config.load()
    job = BackupStores()
    db = _store(proj)
    other = _store(tmp_path / "other", 2)
    assert job.run(cfg) is not None
    assert len(backup.existing(db)) == len(backup.existing(other)) == 1
    assert job.run(cfg) is None  # no new event since
    _store(proj, 1, "s3")
    assert job.run(cfg) is None  # a new event, but the interval (an hour) has not passed
    for path in backup.existing(db):
        old = time.time() - cfg.store.backup_interval_min * 60 - 5
        os.utime(path, (old, old))
    assert job.run(cfg) == f"backed up {Path(db).parent.name}"
    assert len(backup.existing(db)) == 2 and len(backup.existing(other)) == 1


def test_the_job_is_off_at_interval_zero(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_STORE_BACKUP_INTERVAL_MIN", "0")
    db = _store(proj)
    assert BackupStores().run(config.load()) is None and backup.existing(db) == []


def test_the_daemons_job_loop_runs_it(proj: Path) -> None:
    db = _store(proj)
    stop = threading.Event()
    state: dict[str, object] = {}
    upkeep = Upkeep(config.load(), stop, jobs=[job() for job in JOBS], state=state)
    upkeep.run_due()
    assert len(backup.existing(db)) == 1
    assert state["backup"]["error"] is None and "backed up" in state["backup"]["result"]  # type: ignore[index]


def test_a_redaction_takes_the_backups_with_it(proj: Path) -> None:
    from memlane import privacy_scan

    with Memory.open(proj) as mem:  # stored before today's rules: NewEvent bypasses the capture filter
        secret = "env: GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789"
        mem.store.append([NewEvent("tool_observation", "s1", secret, "x")])
        db = mem.store.file
        assert backup.take(db, keep=3) is not None
        report = privacy_scan.scan(mem)
        assert report.findings and privacy_scan.redact(mem, report) == 1
    assert backup.existing(db) == []
