"""Processes that die or linger: a killed daemon's claims, `daemon stop`, idle exit with a backlog, file modes."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
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


def _backlog(proj: Path, n: int) -> None:
    """Long events (a few hundred tokens each), so a batch takes the worker seconds, not milliseconds."""
    words = [
        "connection",
        "pool",
        "timeout",
        "retry",
        "backoff",
        "worker",
        "queue",
        "deploy",
        "schema",
        "index",
        "latency",
        "cache",
    ]
    with Memory.open(proj) as mem:
        mem.store.append(
            NewEvent("agent_response", "s", " ".join(words[(i + k) % len(words)] for k in range(220)), f"t{i}")
            for i in range(n)
        )


def _claims(proj: Path) -> list[str]:
    with Memory.open(proj, create=False) as mem:
        return [
            r[0] for r in mem.store.db.execute("SELECT claimed_by FROM outbox WHERE status = 'processing'").fetchall()
        ]


def _serve(*extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "memlane", "serve", "--port", "0", "--quiet", *extra],
        env=os.environ.copy(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait_for_claims(proj: Path, daemon: subprocess.Popen[bytes]) -> list[str]:
    for _ in range(1200):  # the model loads first
        claims = _claims(proj)
        if claims:
            return claims
        assert daemon.poll() is None, "daemon exited"
        time.sleep(0.05)
    raise AssertionError("the worker never claimed a batch")


def test_a_killed_daemons_claims_are_recovered_at_once(memlane_home: Path, proj: Path) -> None:
    """The worker is a thread, so its claims name the daemon process; kill -9 the daemon mid-batch and the
    next worker takes them back at once (liveness, not the stuck_after_s timeout)."""
    _backlog(proj, 200)
    daemon = _serve()
    try:
        claims = _wait_for_claims(proj, daemon)
        assert set(claims) == {proc.identity(daemon.pid)}, "claimed by the daemon process itself"
        with Memory.open(proj, create=False) as mem:
            assert worker._recover_stuck(mem) == 0, "a live daemon keeps its claims"
    finally:
        daemon.kill()
        daemon.wait()
    with Memory.open(proj, create=False) as mem:
        assert mem.config.vectors.stuck_after_s >= 60  # so only liveness can explain a recovery
        assert worker._recover_stuck(mem) == len(claims)
    assert "processing" not in _status(proj)


def test_a_stopped_daemon_gives_back_its_claims_without_counting_an_attempt(memlane_home: Path, proj: Path) -> None:
    """SIGTERM mid-batch: the worker stops between slices, the daemon exits promptly, the jobs are pending
    again with no attempt recorded (a shutdown is not a failure), and nothing stays claimed."""
    _backlog(proj, 200)
    daemon = _serve()
    try:
        _wait_for_claims(proj, daemon)
        started = time.monotonic()
        daemon.terminate()
        assert daemon.wait(timeout=15) == 0
        assert time.monotonic() - started < 12, "the worker did not stop between slices"
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    assert _claims(proj) == []
    with Memory.open(proj, create=False) as mem:
        rows = mem.store.db.execute("SELECT status, attempts FROM outbox WHERE status != 'done'").fetchall()
    assert rows and all(status == "pending" and attempts == 0 for status, attempts in rows)


def test_idle_shutdown_waits_for_the_worker(memlane_home: Path, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No requests for longer than idle_timeout_s, but a backlog being embedded: the daemon stays up until the
    outbox is drained, then goes idle and exits."""
    from memlane.vectors.worker import pending_count

    _backlog(proj, 24)
    monkeypatch.setenv("MEMLANE_DAEMON_IDLE_TIMEOUT_S", "1")
    daemon = _serve()
    try:
        _wait_for_claims(proj, daemon)
        time.sleep(3)  # three idle timeouts without a request
        with Memory.open(proj, create=False) as mem:
            left = pending_count(mem)
        assert daemon.poll() is None or left == 0, f"went idle with {left} job(s) left"
        assert daemon.wait(timeout=600) == 0
        with Memory.open(proj, create=False) as mem:
            assert pending_count(mem) == 0, "exited before the backlog was embedded"
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()


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
