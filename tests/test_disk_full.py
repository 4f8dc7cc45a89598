"""A full disk loses nothing: the fallback spool takes the events, and they are replayed exactly once."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlane import paths
from memlane.capture import spool
from memlane.cli.main import cli
from memlane.memory import Memory
from memlane.store.db import Store


@pytest.fixture
def fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "runtime" / "memlane" / "spool"
    monkeypatch.setenv("MEMLANE_FALLBACK_SPOOL", str(where))
    return where


def _prompt(hook: Callable[..., str], i: int) -> None:
    data = {"session_id": "s-full", "hook_event_name": "UserPromptSubmit", "prompt": f"prompt number {i}"}
    hook("UserPromptSubmit", {**data, "prompt_id": f"p{i}"})


def _stored(proj: Path) -> list[str]:
    with Memory.open(proj, create=False) as mem:
        return [e.content for e in mem.store.history(types=["user_prompt"], limit=1000, oldest_first=True)]


def _log() -> str:
    path = paths.logs_dir() / "hooks.log"
    return path.read_text() if path.exists() else ""


def test_full_disk_spools_to_the_fallback_and_replays_once(
    hook: Callable[..., str], proj: Path, fallback: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _prompt(hook, 0)  # the store exists before the disk fills

    def full_append(self: Store, events: object) -> object:
        raise sqlite3.OperationalError("database or disk is full")

    real_write = spool._write_file

    def full_primary(directory: str, name: str, body: dict[str, object]) -> str:
        if directory == spool.spool_dir():
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(directory, name, body)

    with monkeypatch.context() as m:
        m.setattr(Store, "append", full_append)
        m.setattr(spool, "_write_file", full_primary)
        for i in range(1, 14):
            _prompt(hook, i)
        assert len(list(fallback.glob("*.json"))) == 13
        assert not list(paths.spool_dir().glob("*"))
    assert f"to {fallback}" in _log()
    assert "to None" not in _log()
    # Space is back: the next hook ingests everything, once.
    _prompt(hook, 14)
    _prompt(hook, 14)  # a redelivery
    # (the hook stores its own event before it drains the spool, so order by content)
    assert sorted(_stored(proj)) == sorted(f"prompt number {i}" for i in range(15))
    assert not list(fallback.glob("*"))


def test_neither_spool_writable_is_logged_without_a_fake_path(
    hook: Callable[..., str], proj: Path, fallback: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _prompt(hook, 0)

    def full(*args: object) -> str:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Store, "append", lambda self, events: (_ for _ in ()).throw(sqlite3.OperationalError("full")))
    monkeypatch.setattr(spool, "_write_file", full)
    _prompt(hook, 1)
    text = _log()
    assert "spool write failed, 1 event(s) lost" in text and str(fallback) in text
    assert "to None" not in text


def test_a_failed_write_leaves_no_temp_file(fallback: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memlane.store.db import NewEvent

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    assert spool.write("p-1", "/x", [NewEvent("user_prompt", "s", "hello", "t")], "test") is None
    for directory in spool.directories():
        assert [n for n in os.listdir(directory) if n.endswith(".tmp")] == []


def test_doctor_reports_and_cleans_leftovers(hook: Callable[..., str], proj: Path, fallback: Path) -> None:
    from memlane.store.db import NewEvent

    _prompt(hook, 0)
    paths.ensure_dir(fallback)
    stale = fallback / ".p--1-2-3.tmp"
    stale.write_text('{"half": ')
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    fresh = fallback / ".p--4-5-6.tmp"  # a write in progress right now: not touched
    fresh.write_text("{")
    from memlane import project

    pid = project.identify(proj).id
    spool._write_file(str(fallback), f"{pid}--{time.time_ns()}-1-ab", {"project_id": pid, "events": [
        NewEvent("user_prompt", "s-x", "from memory", "t").to_json()
    ]})  # fmt: skip
    result = CliRunner().invoke(cli, ["-C", str(proj), "doctor", "--json"])
    spool_check = next(c for c in json.loads(result.output) if c["name"] == "spool")
    assert not spool_check["ok"]
    assert "1 spooled file(s) waiting" in spool_check["detail"]
    assert "in memory" in spool_check["detail"]
    assert "1 leftover temp file(s)" in spool_check["detail"]
    result = CliRunner().invoke(cli, ["-C", str(proj), "doctor", "--repair"])
    assert "removed 1 temp file(s)" in result.output
    assert "1 new event(s)" in result.output
    assert not stale.exists() and fresh.exists()
    with Memory.open(proj, create=False) as mem:
        assert [e.content for e in mem.store.history(session="s-x")] == ["from memory"]


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A real 8 MB filesystem (tmpfs), when this user may mount one; skipped otherwise."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", str(mount)], check=False)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill_disk(where: Path) -> Path:
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 512, 1):  # down to the last byte
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                continue
    finally:
        os.close(fd)
    return filler


def test_really_full_disk_loses_nothing(
    tiny_fs: Path, proj: Path, fallback: Path, monkeypatch: pytest.MonkeyPatch, hook: Callable[..., str]
) -> None:
    monkeypatch.setenv("MEMLANE_HOME", str(tiny_fs / "home"))
    _prompt(hook, 0)
    filler = _fill_disk(tiny_fs)
    for i in range(1, 14):
        _prompt(hook, i)
    assert len(list(fallback.glob("*.json"))) >= 1
    filler.unlink()  # space returns
    _prompt(hook, 14)
    # (the hook stores its own event before it drains the spool, so order by content)
    assert sorted(_stored(proj)) == sorted(f"prompt number {i}" for i in range(15))
    assert spool.pending() == []
    assert [n for d in spool.directories() if os.path.isdir(d) for n in os.listdir(d)] == []
    with Store(paths.db_path(Memory.open(proj, create=False).project.id), "x") as store:
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
