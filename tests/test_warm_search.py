"""One warm model per user: CLI search and MCP tools ask the running daemon instead of loading the model."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import payload, wait_for_daemon
from memlane import embed
from memlane.cli.main import cli
from memlane.daemon import state


def search_json(proj: Path, query: str) -> list[dict]:  # type: ignore[type-arg]
    result = CliRunner().invoke(cli, ["-C", str(proj), "search", query, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]  # stderr may carry a "not embedded yet" note


@pytest.fixture
def no_local_model(monkeypatch: pytest.MonkeyPatch) -> dict:  # type: ignore[type-arg]
    """The process-wide embedder cache, emptied: whatever model this process loads shows up in it."""
    cache: dict = {}  # type: ignore[type-arg]
    monkeypatch.setattr(embed, "_cache", cache)
    return cache


def test_cli_search_is_answered_by_the_daemon(daemon: dict, hook, proj: Path, no_local_model: dict) -> None:  # type: ignore[no-untyped-def, type-arg]
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    rows = search_json(proj, "connection pool")
    assert "zebrafinch" in json.dumps(rows[0])
    assert no_local_model == {}  # the daemon's model answered; none was loaded here


def test_cli_search_without_daemon_loads_the_model_here(hook, proj: Path, no_local_model: dict) -> None:  # type: ignore[no-untyped-def, type-arg]
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    rows = search_json(proj, "connection pool")
    assert "zebrafinch" in json.dumps(rows[0])
    assert len(no_local_model) == 1
    assert state.read_info() is None  # autostart is off in tests: nothing was started


def test_cli_search_starts_no_daemon_by_default(  # type: ignore[no-untyped-def]
    hook, proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search is a read: even with SessionStart's autostart on, it leaves no process behind."""
    from memlane.daemon import spawn

    started: list[int] = []
    monkeypatch.setattr(spawn, "start_detached", lambda *a, **k: started.append(1) or 1)
    monkeypatch.setenv("MEMLANE_DAEMON_AUTOSTART", "true")
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    assert "zebrafinch" in json.dumps(search_json(proj, "connection pool")[0])
    assert started == [] and state.read_info() is None


def test_cli_search_starts_the_daemon_for_next_time_when_allowed(  # type: ignore[no-untyped-def]
    hook, proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_DAEMON_SEARCH_STARTS", "true")
    with socket.socket() as sock:  # the default port may be taken by a real daemon on this machine
        sock.bind(("127.0.0.1", 0))
        monkeypatch.setenv("MEMLANE_DAEMON_PORT", str(sock.getsockname()[1]))
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    assert "zebrafinch" in json.dumps(search_json(proj, "connection pool")[0])
    info = wait_for_daemon()
    try:
        assert info["pid"] != os.getpid()
    finally:
        os.kill(int(info["pid"]), signal.SIGTERM)
        for _ in range(300):
            if not Path(f"/proc/{info['pid']}").exists() or state.read_info() is None:
                break
            time.sleep(0.1)


def test_mcp_search_is_answered_by_the_daemon(daemon: dict, hook, proj: Path, no_local_model: dict) -> None:  # type: ignore[no-untyped-def, type-arg]
    from memlane import config
    from memlane.mcp.tools import MemoryTools
    from memlane.retrieval.engine import Engine

    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    engine = Engine(config.load(), via_daemon=True)
    tools = MemoryTools(config.load(), engine, default_project=str(proj))
    reply = tools.search("connection pool")
    assert "zebrafinch" in reply.text
    assert engine.daemon_answers == 1
    assert no_local_model == {}


def test_vector_commands_use_the_daemons_model(daemon: dict, hook, proj: Path, no_local_model: dict) -> None:  # type: ignore[no-untyped-def, type-arg]
    from memlane.config import EmbeddingConfig
    from memlane.embed import BertEmbedder

    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    result = CliRunner().invoke(cli, ["-C", str(proj), "process", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["processed"] >= 1
    assert no_local_model == {}
    result = CliRunner().invoke(cli, ["-C", str(proj), "vectors", "status", "--json"], catch_exceptions=False)
    status = json.loads(result.output)
    assert status["vectors"] >= 1 and status["current_model"] == BertEmbedder(EmbeddingConfig()).version
    assert no_local_model == {}


def test_import_that_finds_nothing_loads_no_model(proj: Path, no_local_model: dict) -> None:  # type: ignore[type-arg]
    from memlane.cli.vectors import embed_pending
    from memlane.memory import Memory

    with Memory.open(proj) as mem:
        assert embed_pending(mem, quiet=True).processed == 0
    assert no_local_model == {}
