"""The live stream against a real daemon process: rows stored by real hook processes arrive as SSE events with
their seq as id, a reconnect with Last-Event-ID resumes exactly where it left off, and `memlane dashboard`
starts the daemon and prints a link that logs a browser in."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import payload, run_hook_process, wait_for_daemon
from memlane.memory import Memory


@pytest.fixture
def served(memlane_home: Path, proj: Path) -> Iterator[dict[str, Any]]:
    """`memlane dashboard --no-open` (which starts the daemon) and the cookie its link gives."""
    proj.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "MEMLANE_EMBEDDING_PROVIDER": "openai", "MEMLANE_DASHBOARD_LIVE_POLL_MS": "100"}
    with Memory.open(proj):
        pass
    out = subprocess.run(
        [sys.executable, "-m", "memlane", "-C", str(proj), "dashboard", "--no-open"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    info = wait_for_daemon()
    try:
        assert out.returncode == 0, out.stderr
        url = out.stdout.strip().split()[-1]
        assert url.startswith(f"http://127.0.0.1:{info['port']}/login?code=")
        conn = http.client.HTTPConnection("127.0.0.1", info["port"], timeout=10)
        conn.request("GET", url.split(str(info["port"]), 1)[1])
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 303
        cookies = [v.split(";")[0] for k, v in resp.getheaders() if k.lower() == "set-cookie"]
        yield {**info, "cookie": "; ".join(cookies), "env": env}
    finally:
        subprocess.run(
            [sys.executable, "-m", "memlane", "daemon", "stop"], env=env, timeout=60, check=False, capture_output=True
        )


def read_events(
    port: int, cookie: str, want: int, headers: dict[str, str] | None = None, query: str = ""
) -> list[tuple[int, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request("GET", f"/stream{query}", headers={"Cookie": cookie, "Accept": "text/event-stream", **(headers or {})})
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("content-type").startswith("text/event-stream")
    events: list[tuple[int, str]] = []
    seq, data = None, []
    deadline = time.monotonic() + 20
    while len(events) < want and time.monotonic() < deadline:
        line = resp.fp.readline().decode().rstrip("\n")
        if line.startswith("id: "):
            seq = int(line[4:])
        elif line.startswith("data: "):
            data.append(line[6:])
        elif line == "" and seq is not None:
            events.append((seq, "\n".join(data)))
            seq, data = None, []
    conn.close()
    return events


def test_a_real_hook_event_arrives_live_and_a_reconnect_resumes(served: dict[str, Any], proj: Path) -> None:
    port, cookie = served["port"], served["cookie"]
    with Memory.open(proj) as mem:
        start = mem.latest_seq()
    prompt = payload(
        "02-UserPromptSubmit.json", cwd=str(proj), prompt="live stream check: the <b>bold</b> pool timeout"
    )
    assert run_hook_process("UserPromptSubmit", prompt, served["env"]).returncode == 0
    first = read_events(port, cookie, 1, query=f"?after={start}")
    assert len(first) == 1
    seq, html = first[0]
    assert "live stream check" in html and "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold" not in html
    # Two more rows while no one listens; a reconnect with Last-Event-ID gets exactly those.
    for n in (2, 3):
        more = payload(
            "02-UserPromptSubmit.json", cwd=str(proj), prompt=f"second wave prompt number {n}", prompt_id=f"p{n}"
        )
        assert run_hook_process("UserPromptSubmit", more, served["env"]).returncode == 0
    resumed = read_events(port, cookie, 2, headers={"Last-Event-ID": str(seq)}, query="?after=0")
    assert [s for s, _ in resumed] == sorted(s for s, _ in resumed) and all(s > seq for s, _ in resumed)
    assert "number 2" in resumed[0][1] and "number 3" in resumed[1][1]


def test_the_stream_needs_the_cookie(served: dict[str, Any]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", served["port"], timeout=10)
    conn.request("GET", "/stream")
    assert conn.getresponse().status == 401


def test_the_stream_refuses_an_unknown_type(served: dict[str, Any]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", served["port"], timeout=10)
    conn.request("GET", "/stream?type=nope", headers={"Cookie": served["cookie"]})
    resp = conn.getresponse()
    assert resp.status == 400 and b"unknown event type" in resp.read()


def test_dashboard_without_memory_still_gives_a_link(memlane_home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MEMLANE_EMBEDDING_PROVIDER": "openai"}
    try:
        out = subprocess.run(
            [sys.executable, "-m", "memlane", "-C", str(tmp_path), "dashboard", "--no-open"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert out.returncode == 0 and "/login?code=" in out.stdout
        assert "one-time" in out.stderr
    finally:
        subprocess.run(
            [sys.executable, "-m", "memlane", "daemon", "stop"], env=env, timeout=60, check=False, capture_output=True
        )
