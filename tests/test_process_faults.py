"""Processes that die or linger: dead claimants, the worker's parent, `daemon stop`, file modes, stray stores."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlane import paths, proc
from memlane.cli.main import cli
from memlane.memory import Memory
from memlane.store.db import NewEvent
from memlane.vectors import worker

CLAIMER = """
import sys, time
from memlane.memory import Memory
from memlane.vectors import worker
with Memory.open(sys.argv[1]) as mem:
    ids = worker._claim(mem, 100)
print(len(ids), flush=True)
time.sleep(60)  # "embedding": killed here
"""


def _events(proj: Path, n: int = 5) -> None:
    with Memory.open(proj) as mem:
        mem.store.append(NewEvent("user_prompt", "s", f"prompt {i}", f"t{i}") for i in range(n))


def _status(proj: Path) -> dict[str, int]:
    with Memory.open(proj, create=False) as mem:
        return dict(mem.store.db.execute("SELECT status, COUNT(*) FROM outbox GROUP BY status").fetchall())


def test_jobs_of_a_killed_claimant_are_recovered_at_once(proj: Path) -> None:
    _events(proj)
    child = subprocess.Popen([sys.executable, "-c", CLAIMER, str(proj)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "5"
    assert _status(proj) == {"processing": 5}
    with Memory.open(proj, create=False) as mem:
        assert mem.config.vectors.stuck_after_s >= 60  # so only liveness can explain a recovery
        assert worker._recover_stuck(mem) == 0, "a live claimant keeps its jobs"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    with Memory.open(proj, create=False) as mem:
        assert worker._recover_stuck(mem) == 5
    assert _status(proj) == {"pending": 5}


def test_reused_pid_is_not_mistaken_for_the_claimant() -> None:
    me = proc.identity()
    host, pid, started = me.rsplit(":", 2)
    assert not proc.claimant_gone(me)
    if started:  # Linux: same pid, other start time = another process
        assert proc.claimant_gone(f"{host}:{pid}:{int(started) + 1}")
    assert not proc.claimant_gone(f"some-other-host:{pid}:{started}"), "cannot check another host: not gone"
    assert not proc.claimant_gone("garbage")


def test_embedding_worker_exits_when_its_parent_is_killed(tmp_path: Path) -> None:
    """The worker's parent watch, in a real grandchild, with the daemon stand-in killed by SIGKILL."""
    parent = textwrap.dedent(
        """
        import subprocess, sys, time
        code = ("import os, time; from memlane.daemon.embed_worker import _exit_with_parent;"
                "_exit_with_parent(os.getppid(), 0.1); print(os.getpid(), flush=True); time.sleep(60)")
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        print(child.stdout.readline().strip(), flush=True)
        time.sleep(60)
        """
    )
    daemon = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    assert daemon.stdout is not None
    child = int(daemon.stdout.readline())
    assert proc.alive(child)
    daemon.kill()
    daemon.wait()
    for _ in range(50):
        if not proc.alive(child):
            break
        time.sleep(0.1)
    assert not proc.alive(child)


def test_daemon_stop_returns_only_after_the_process_exited(memlane_home: Path) -> None:
    from memlane.daemon import state

    daemon = subprocess.Popen(
        [sys.executable, "-m", "memlane", "serve", "--port", "0", "--quiet", "--no-worker"], env=os.environ.copy()
    )
    try:
        for _ in range(300):
            if state.read_info():
                break
            time.sleep(0.05)
        assert state.read_info(), "daemon did not start"
        assert stat.S_IMODE(os.stat(state.info_file()).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(state.token_file()).st_mode) == 0o600
        result = CliRunner().invoke(cli, ["daemon", "stop"])
        assert "stopped" in result.output
        assert daemon.poll() is not None, "`daemon stop` returned while the daemon was still running"
    finally:
        if daemon.poll() is None:
            daemon.kill()
        daemon.wait()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_store_files_are_private(hook, proj: Path) -> None:  # type: ignore[no-untyped-def]
    from conftest import payload

    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    pdir = next(paths.projects_dir().iterdir())
    with Memory.open(proj) as mem:  # -wal and -shm exist while a connection is open
        mem.store.append([NewEvent("user_prompt", "s", "one more", "t")])
        for name in ("memory.db", "memory.db-wal", "memory.db-shm", "project.json"):
            assert _mode(pdir / name) == 0o600, name


def test_an_old_world_readable_store_is_tightened_on_open(hook, proj: Path) -> None:  # type: ignore[no-untyped-def]
    from conftest import payload

    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    db = next(paths.projects_dir().iterdir()) / "memory.db"
    os.chmod(db, 0o644)
    hook("UserPromptSubmit", payload("08-UserPromptSubmit.json"))
    assert _mode(db) == 0o600


@pytest.mark.parametrize("where", ["relative", "missing", "empty-dir"])
def test_reads_never_create_a_store(tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = {"relative": "some/relative", "missing": str(tmp_path / "nope"), "empty-dir": str(tmp_path)}[where]
    monkeypatch.chdir(tmp_path)
    for args in (["search", "anything", "--text-only"], ["history"], ["stats", "--json"], ["sessions"]):
        result = CliRunner().invoke(cli, ["-C", folder, *args])
        assert "Traceback" not in result.output
    assert not paths.projects_dir().exists() or not any(paths.projects_dir().iterdir())


def test_daemon_search_with_a_bad_cwd_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    from memlane import config
    from memlane.daemon.server import Daemon
    from memlane.memory import MemoryError_

    d = Daemon.__new__(Daemon)  # the route's project resolution only; no model, no server
    d.cfg = config.load()
    for cwd, message in (("rel/dir", "absolute"), (str(tmp_path / "nope"), "not a directory")):
        with pytest.raises(MemoryError_, match=message):
            d.memory({"cwd": cwd})
    with d.memory({"cwd": str(tmp_path)}) as mem:
        assert mem.store.count() == 0
    assert not paths.projects_dir().exists() or not any(paths.projects_dir().iterdir())


def test_daemon_json_is_private(memlane_home: Path) -> None:
    from memlane.daemon import state

    state.write_info({"pid": os.getpid(), "port": 1})
    assert _mode(Path(state.info_file())) == 0o600
    assert json.loads(Path(state.info_file()).read_text())["port"] == 1


def test_embedding_a_project_without_a_store_touches_nothing(tmp_path: Path) -> None:
    """The daemon's worker walks every registered project; one without a store must not get folders."""
    with Memory.open(tmp_path, create=None) as mem:  # as the daemon's worker opens it
        assert mem.store.ephemeral
        report = worker.process_outbox(mem, embedder=None)  # returns before any model is loaded
    assert report.processed == 0 and not report.busy
    assert not paths.projects_dir().exists() or not any(paths.projects_dir().iterdir())
