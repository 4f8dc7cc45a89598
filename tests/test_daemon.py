"""The daemon as a real process: auth, Host/Origin checks, single instance, port clash, hook use, stop."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import payload
from memlane.daemon import client, state


def start_daemon(port: int = 0, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "memlane", "serve", "--port", str(port), "--quiet", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),
    )


@pytest.fixture
def daemon(memlane_home: Path) -> Iterator[dict]:  # type: ignore[type-arg]
    proc = start_daemon(0, "--no-worker")
    for _ in range(200):
        info = state.read_info()
        if info:
            break
        time.sleep(0.05)
    else:
        proc.kill()
        raise AssertionError(proc.stderr.read().decode() if proc.stderr else "daemon did not start")
    yield {**info, "proc": proc}
    proc.terminate()
    proc.wait(timeout=20)


def request(
    port: int,
    path: str,
    *,
    token: str | None,
    host: str | None = None,
    origin: str | None = None,
    body: dict | None = None,
) -> tuple[int, dict]:  # type: ignore[type-arg]
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        method="POST" if body is not None else "GET",
        data=json.dumps(body).encode() if body is not None else None,
    )
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if host:
        req.add_header("Host", host)
    if origin:
        req.add_header("Origin", origin)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def test_token_host_and_origin_are_enforced(daemon: dict) -> None:  # type: ignore[type-arg]
    port, token = daemon["port"], state.read_token()
    assert oct(os.stat(state.token_file()).st_mode)[-3:] == "600"
    assert request(port, "/api/health", token=None)[0] == 401
    assert request(port, "/api/health", token="wrong")[0] == 401
    assert request(port, "/api/health", token=token, host="evil.example:80")[0] == 403
    assert request(port, "/api/health", token=token, origin="http://evil.example")[0] == 403
    status, body = request(port, "/api/health", token=token, origin=f"http://localhost:{port}")
    assert status == 200 and body["ok"] and body["pid"] == daemon["pid"]


def test_listens_on_loopback_only(daemon: dict) -> None:  # type: ignore[type-arg]
    out = subprocess.run(["ss", "-ltnp"], capture_output=True, text=True, check=False).stdout
    lines = [line for line in out.splitlines() if f":{daemon['port']} " in line]
    assert lines and all("127.0.0.1:" in line for line in lines)


def test_search_and_validation_errors(daemon: dict, hook, proj: Path) -> None:  # type: ignore[no-untyped-def, type-arg]
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    port, token = daemon["port"], state.read_token()
    status, body = request(port, "/api/search", token=token, body={"cwd": str(proj), "query": "connection pool"})
    assert status == 200 and "zebrafinch" in body["results"][0]["content"]
    assert body["results"][0]["citation"].startswith("mem:")
    assert request(port, "/api/search", token=token, body={"cwd": str(proj)})[0] == 400
    assert request(port, "/api/search", token=token, body={"cwd": str(proj), "query": "x", "limit": 0})[0] == 400
    assert request(port, "/api/search", token=token, body={"query": "x"})[0] == 400
    status, body = request(port, "/api/search", token=token, body={"project_id": "nope-1", "query": "x"})
    assert status == 400 and "unknown project" in body["error"]


def test_second_instance_refused_with_clear_message(daemon: dict) -> None:  # type: ignore[type-arg]
    second = start_daemon(0, "--no-worker")
    _, err = second.communicate(timeout=60)
    assert second.returncode == 1 and b"already running" in err and b"Traceback" not in err


def test_port_in_use_is_a_clear_message(memlane_home: Path) -> None:
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    port = blocker.getsockname()[1]
    proc = start_daemon(port, "--no-worker")
    _, err = proc.communicate(timeout=60)
    blocker.close()
    assert proc.returncode == 1 and b"already in use" in err and b"daemon.port" in err


def test_hook_client_uses_daemon_and_falls_back_when_down(daemon: dict, hook, proj: Path) -> None:  # type: ignore[no-untyped-def, type-arg]
    assert client.call("/api/health", None, 2000, method="GET")["ok"]
    daemon["proc"].terminate()
    daemon["proc"].wait(timeout=20)
    assert client.call("/api/health", None, 200, method="GET") is None
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    out = hook(
        "UserPromptSubmit",
        payload("02-UserPromptSubmit.json", prompt_id="n2", prompt="connection pool times out again"),
    )
    assert "[mem:" in json.loads(out)["hookSpecificOutput"]["additionalContext"]


def test_cli_status_and_stop(daemon: dict, proj: Path) -> None:  # type: ignore[type-arg]
    from click.testing import CliRunner

    from memlane.cli.main import cli

    out = CliRunner().invoke(cli, ["daemon", "status", "--json"]).output
    assert json.loads(out)["running"] is True
    result = CliRunner().invoke(cli, ["daemon", "stop"])
    assert "stopped" in result.output
    assert daemon["proc"].wait(timeout=20) == 0
    assert state.read_info() is None


def test_idle_shutdown(memlane_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_DAEMON_IDLE_TIMEOUT_S", "1")
    proc = start_daemon(0, "--no-worker")
    assert proc.wait(timeout=60) == 0
    assert state.read_info() is None


def test_worker_child_embeds_backlog_and_dies_with_daemon(memlane_home: Path, hook, proj: Path) -> None:  # type: ignore[no-untyped-def]
    """The embedding worker is a separate, nice'd process: it drains the outbox and never outlives the daemon."""
    from memlane.memory import Memory
    from memlane.vectors.worker import pending_count

    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    proc = start_daemon(0)
    try:
        worker: dict = {}  # type: ignore[type-arg]
        for _ in range(600):  # two model loads on a slow CI machine
            health = client.call("/api/health", None, 2000, method="GET") or {}
            worker = health.get("worker", {})
            if worker.get("processed", 0) >= 1:
                break
            time.sleep(0.2)
        assert worker.get("processed", 0) >= 1 and worker["last_error"] is None, worker
        child = int(worker["pid"])
        assert child != proc.pid and os.getpriority(os.PRIO_PROCESS, child) >= 10
        with Memory.open(proj) as mem:
            assert pending_count(mem) == 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    for _ in range(100):
        if not Path(f"/proc/{child}").exists():
            break
        time.sleep(0.1)
    assert not Path(f"/proc/{child}").exists()


def test_worker_child_that_cannot_start_says_why(memlane_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_EMBEDDING_MODEL", '"/nonexistent/model"')
    done = subprocess.run(
        [sys.executable, "-m", "memlane.daemon.embed_worker"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "cannot start" in json.loads(done.stdout.splitlines()[-1])["error"]
