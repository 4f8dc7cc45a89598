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


def test_hook_never_gets_its_own_prompt_back(daemon: dict, hook, proj: Path) -> None:  # type: ignore[no-untyped-def, type-arg]
    """The hook stores the prompt, then asks the daemon excluding it: the prompt never comes back as its own
    memory; the route refuses an exclusion list of the wrong shape in one line."""
    from memlane import project
    from memlane.store.db import Store

    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt="the connection pool times out under load"))
    ask = payload("02-UserPromptSubmit.json", prompt_id="n2", prompt="connection pool times out under load again")
    out = json.loads(hook("UserPromptSubmit", ask))["hookSpecificOutput"]["additionalContext"]
    memories = [line for line in out.splitlines() if line.startswith("- [mem:")]
    assert any("the connection pool times out under load" in line for line in memories), out
    assert not any("under load again" in line for line in memories), out

    def memory_lines(body: dict) -> list[str]:  # type: ignore[type-arg]
        status, found = request(daemon["port"], "/api/inject", token=state.read_token(), body=body)
        assert status == 200, found
        return [line for line in found["context"].splitlines() if line.startswith("- [mem:")]

    body = {"cwd": str(proj), "prompt": ask["prompt"], "session_id": ask["session_id"]}
    assert any("under load again" in line for line in memory_lines(body))  # stored, so found unless excluded
    proj_ = project.identify(str(proj))
    with Store(proj_.db_file, proj_.id) as store:
        (asked,) = [e.id for e in store.history(limit=10) if "under load again" in e.content]
    lines = memory_lines({**body, "exclude_ids": [asked]})
    assert lines and not any("under load again" in line for line in lines)
    status, found = request(daemon["port"], "/api/inject", token=state.read_token(), body={**body, "exclude_ids": "x"})
    assert status == 400 and "exclude_ids" in json.dumps(found)


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


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def test_worker_thread_embeds_backlog_in_the_daemon_and_stops_with_it(memlane_home: Path, hook, proj: Path) -> None:  # type: ignore[no-untyped-def]
    """The embedding worker is a nice'd thread of the daemon using its model: it drains the outbox, starts no
    process (one model per user), and the daemon exits cleanly when told to."""
    from memlane.memory import Memory
    from memlane.vectors.worker import pending_count

    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    proc = start_daemon(0)
    try:
        worker: dict = {}  # type: ignore[type-arg]
        for _ in range(600):  # a model load on a slow CI machine
            health = client.call("/api/health", None, 2000, method="GET") or {}
            worker = health.get("worker", {})
            if worker.get("processed", 0) >= 1:
                break
            time.sleep(0.2)
        assert worker.get("processed", 0) >= 1 and worker["last_error"] is None, worker
        thread = int(worker["thread"])
        assert thread != proc.pid and Path(f"/proc/{proc.pid}/task/{thread}").exists(), "a thread of the daemon"
        assert worker["niced"] and os.getpriority(os.PRIO_PROCESS, thread) >= 10
        # Only the worker thread: not the request threads, nor the LanceDB and tokenizer pools that searches use
        # too (a thread inherits its creator's nice value, so they must not be started from the worker first).
        ours = os.getpriority(os.PRIO_PROCESS, os.getpid())
        niced = {
            int(t.name): (t / "comm").read_text().strip()
            for t in Path(f"/proc/{proc.pid}/task").iterdir()
            if int(t.name) != thread and os.getpriority(os.PRIO_PROCESS, int(t.name)) != ours
        }
        assert niced == {}, sorted(niced.values())
        assert _children(proc.pid) == [], "no worker process"
        with Memory.open(proj) as mem:
            assert pending_count(mem) == 0
        # Search still answers with the worker idle and the shared model (the same object both use).
        out = client.call("/api/search", {"cwd": str(proj), "query": "connection pool"}, 30_000)
        assert out is not None and "results" in out
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def test_worker_without_a_model_says_why(memlane_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model that cannot load: the daemon still serves full-text, and health says why nothing is embedded."""
    monkeypatch.setenv("MEMLANE_EMBEDDING_MODEL", '"/nonexistent/model"')
    proc = start_daemon(0)
    try:
        worker: dict = {}  # type: ignore[type-arg]
        for _ in range(300):
            health = client.call("/api/health", None, 2000, method="GET") or {}
            worker = health.get("worker", {})
            if worker.get("last_error"):
                break
            time.sleep(0.1)
        assert "no embedding model" in str(worker.get("last_error")), worker
        assert health["model_error"]
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


class _Recorder:
    """An embedder that records when each slice starts (the gate's effect), without a model."""

    dim = 3
    version = "fake@1"

    def __init__(self) -> None:
        self.calls: list[tuple[float, int]] = []

    def embed_passages(self, texts: list[str]):  # type: ignore[no-untyped-def]
        import numpy as np

        self.calls.append((time.monotonic(), len(texts)))
        return np.ones((len(texts), self.dim), dtype=np.float32)


def test_worker_slices_wait_for_requests_in_flight() -> None:
    """A request in flight holds the worker's next slice back (so a hook's query is not queued behind a batch);
    a daemon stop ends the batch between slices."""
    import threading

    from memlane.daemon.embed_worker import SLICE, BackgroundEmbedder, Gate, Stopping

    gate, stop, inner = Gate(), threading.Event(), _Recorder()
    embedder = BackgroundEmbedder(inner, gate, stop, lambda: None)  # type: ignore[arg-type]
    assert embedder.version == "fake@1"
    out = embedder.embed_passages(["t"] * (2 * SLICE + 1))
    assert out.shape == (2 * SLICE + 1, 3) and [n for _, n in inner.calls] == [SLICE, SLICE, 1]

    inner.calls.clear()
    released = 0.0
    with gate.request():
        worker = threading.Thread(target=embedder.embed_passages, args=(["t"] * SLICE,))
        worker.start()
        time.sleep(0.5)
        assert inner.calls == [], "a slice started while a request was in flight"
        released = time.monotonic()
    worker.join(timeout=5)
    assert len(inner.calls) == 1 and inner.calls[0][0] >= released

    inner.calls.clear()
    failures: list[BaseException] = []

    def run() -> None:
        try:
            embedder.embed_passages(["t"] * SLICE)
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            failures.append(exc)

    with gate.request():
        worker = threading.Thread(target=run)
        worker.start()
        time.sleep(0.2)
        stop.set()
        worker.join(timeout=5)
    assert not worker.is_alive() and inner.calls == [] and isinstance(failures[0], Stopping)


def test_a_steady_stream_of_requests_does_not_starve_the_worker() -> None:
    import threading

    from memlane.daemon.embed_worker import Gate

    gate, stop = Gate(), threading.Event()
    with gate.request():
        started = time.monotonic()
        gate.wait_quiet(stop, most_s=0.3)
        assert 0.25 <= time.monotonic() - started < 3


class _Layered(_Recorder):
    """A runtime whose passes call ``pause`` between layers, as the numpy one does (three layers here)."""

    def __init__(self) -> None:
        super().__init__()
        self.layers: list[float] = []

    def embed_passages_concurrent(self, texts: list[str], pause=None):  # type: ignore[no-untyped-def]
        for _ in range(3):
            if pause is not None:
                pause()
            self.layers.append(time.monotonic())
        return self.embed_passages(texts)


def test_a_pass_under_way_waits_between_layers_while_a_request_is_in_flight() -> None:
    """Niceness does not keep a pass out of a query's way (it holds the GIL when descheduled), so a pass that
    started before the request waits at its next layer until the request is answered."""
    import threading

    from memlane.daemon.embed_worker import BackgroundEmbedder, Gate

    gate, stop, inner = Gate(), threading.Event(), _Layered()
    in_pass, taken = threading.Event(), threading.Event()
    embedder = BackgroundEmbedder(inner, gate, stop, lambda: None)  # type: ignore[arg-type]
    real_pause = embedder._pause

    def first_layer() -> None:  # the pass has started (no request then); a request comes in before layer 1
        in_pass.set()
        assert taken.wait(5)
        real_pause()

    embedder._pause = first_layer  # type: ignore[method-assign]
    worker = threading.Thread(target=embedder.embed_passages, args=(["t"],))
    worker.start()
    assert in_pass.wait(5)
    with gate.request():
        taken.set()
        time.sleep(0.3)
        assert inner.layers == [], "a layer ran while a request was in flight"
        released = time.monotonic()
    worker.join(timeout=5)
    assert len(inner.layers) == 3 and inner.layers[0] >= released


def test_a_prepared_query_holds_the_gate_until_its_embedding_is_done() -> None:
    """``/api/prepare`` answers at once, but the query it started embeds after that: the worker's passes wait
    for it as for any request in flight."""
    from concurrent.futures import Future

    from memlane.daemon.embed_worker import Gate

    gate = Gate()
    future: Future[int] = Future()
    gate.hold(future)
    assert gate.busy == 1
    future.set_result(1)
    assert gate.busy == 0
