"""The tools in-process (SDK client over memory streams): file access, budgets, truncation, HTTP transport."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp_support import fill, server_command, server_env

from mcp import Client
from memlane import config
from memlane.context.pack import Section, fit_sections
from memlane.mcp.server import build_server
from memlane.memory import Memory
from memlane.store.db import NewEvent

_AUDIT: list[tuple[str, str]] = []
_AUDITING: list[bool] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _AUDITING and event in ("open", "os.listdir", "os.scandir", "sqlite3.connect"):
        target = args[0] if args else None
        if isinstance(target, str | bytes | os.PathLike):
            path = os.fsdecode(target)
            if path.startswith("file:"):  # sqlite URI: file:<path>?mode=ro
                path = path[5:].split("?")[0]
            _AUDIT.append((event, path))


sys.addaudithook(_audit)


@pytest.fixture
def store(proj: Path) -> dict[str, Any]:
    return fill(proj)


def call(server: Any, body: Callable[[Client], Awaitable[Any]]) -> Any:
    out: list[Any] = []

    async def main() -> None:
        async with Client(server) as client:
            out.append(await body(client))

    anyio.run(main)
    return out[0]


async def text(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    return str(result.content[0].text)  # type: ignore[union-attr]


def _library(path: str) -> bool:
    """Python's own files (lazy imports during a call), not data."""
    roots = {sys.prefix, sys.base_prefix, str(Path(__file__).resolve().parents[2] / "src")}
    return path.endswith((".py", ".pyc", ".so", ".pth")) or any(path.startswith(r) for r in roots)


def test_tools_read_only_the_memory_store(store: dict[str, Any], proj: Path, memlane_home: Path) -> None:
    (proj / "secrets.env").write_text("API_KEY=do-not-read\n")
    server = build_server(default_project=str(proj), semantic=False)
    cite = store["events"][3].cite

    async def body(client: Client) -> Any:
        _AUDITING.append(True)
        try:
            return [
                await text(client, "mem-search", query="pool timeout"),
                await text(client, "mem-timeline", ref=cite),
                await text(client, "mem-details", refs=[cite]),
                await text(client, "mem-source", citation=cite),
                await text(client, "mem-context-pack", task="pool"),
                await text(client, "mem-stats"),
                await text(client, "mem-projects"),
            ]
        finally:
            _AUDITING.clear()

    _AUDIT.clear()
    call(server, body)
    touched = [(e, p) for e, p in _AUDIT if not _library(p)]
    assert any(p.startswith(str(memlane_home)) for _e, p in touched)  # the audit hook does see the store
    outside = [(e, p) for e, p in touched if not os.path.realpath(p).startswith(os.path.realpath(memlane_home))]
    assert outside == []


def test_context_pack_stays_within_budget_and_shares_it(proj: Path) -> None:
    with Memory.open(str(proj)) as mem:
        for s in range(8):
            mem.store.append(
                [
                    NewEvent(
                        "user_prompt", f"session-{s}", f"Work on the billing export step {s} " + "detail " * 40, f"p{s}"
                    )
                ]
            )
    server = build_server(default_project=str(proj), semantic=False)
    for budget in (200, 700, 1500, 6000):
        pack = call(server, lambda c, b=budget: text(c, "mem-context-pack", task="billing export", max_chars=b))
        assert len(pack) <= budget
        assert "\n- [mem:" in pack or budget < 400
        for line in pack.splitlines():
            assert not line.endswith("…") or len(line) > 100  # lines are dropped whole, never cut
    pack = call(server, lambda c: text(c, "mem-context-pack", task="billing export", max_chars=1500))
    assert "## Open threads" in pack and "## Memories relevant" in pack  # neither section starves the other


def test_fit_sections_drops_whole_lines_by_priority() -> None:
    sections = [
        Section("## A", [f"a{i} " + "x" * 40 for i in range(10)], 1),
        Section("## B", [f"b{i} " + "y" * 40 for i in range(10)], 0),
        Section("## C", [], 2),
    ]
    text, counts = fit_sections("head", sections, 400)
    assert len(text) <= 400 and counts["## C"] == 0
    assert counts["## A"] >= 3 and counts["## B"] >= counts["## A"]
    assert all(len(line) in (4, 43, 44) or line.startswith("## ") for line in text.splitlines())


def test_details_cut_long_text_and_accept_ids(proj: Path) -> None:
    with Memory.open(str(proj)) as mem:
        mem.store.append([NewEvent("tool_observation", "s1", "line\n" * 5000, "t1", {"tool_name": "Read"})])
        event = mem.history(limit=1)[0]
    server = build_server(default_project=str(proj), semantic=False)
    out = call(server, lambda c: text(c, "mem-details", refs=[event.id], max_chars=500))
    assert f"## [{event.cite}] tool observation" in out
    assert "[24500 more characters; raise max_chars to see them]" in out and len(out) < 900
    out = call(server, lambda c: text(c, "mem-details", refs=[event.id[:12], event.cite]))
    assert out.count("## [mem:") == 1  # the same event asked for twice is shown once


def test_project_can_be_named_by_id(store: dict[str, Any], proj: Path, tmp_path: Path) -> None:
    server = build_server(default_project=str(tmp_path), semantic=False)
    project_id = store["events"][0].project_id
    out = call(server, lambda c: text(c, "mem-stats", project=project_id))
    assert f"project id {project_id}" in out


def test_privacy_rules_from_config_apply_to_output(store: dict[str, Any], proj: Path) -> None:
    cfg = config.load()
    cfg.privacy.extra_patterns = [r"zebrafinch"]
    server = build_server(cfg, default_project=str(proj), semantic=False)
    out = call(server, lambda c: text(c, "mem-search", query="DB connection pool"))
    assert "zebrafinch" not in out and "[REDACTED]" in out


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_streamable_http_on_loopback_with_token(store: dict[str, Any], proj: Path, memlane_home: Path) -> None:
    port = _free_port()
    cmd = [*server_command(), "--transport", "http", "--port", str(port), "--text-only"]
    proc = subprocess.Popen(cmd, cwd=proj, env=server_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                status = httpx2.get(url, timeout=1).status_code
                break
            except httpx2.TransportError:
                assert proc.poll() is None, proc.stderr.read().decode()  # type: ignore[union-attr]
                time.sleep(0.2)
        else:
            pytest.fail("HTTP server did not start")
        assert status == 401  # no token
        token = (memlane_home / "daemon.token").read_text().strip()
        wrong_host = httpx2.get(url, headers={"Host": "evil.example", "Authorization": f"Bearer {token}"}, timeout=5)
        assert wrong_host.status_code == 403  # DNS rebinding guard

        async def main() -> str:
            headers = {"Authorization": f"Bearer {token}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=30) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                return await text(client, "mem-search", query="pool timeout", limit=3)

        out: list[str] = []

        async def run() -> None:
            out.append(await main())

        anyio.run(run)
        assert out[0].startswith('3 memories for "pool timeout" in shop') and re.search(r"\[mem:\w{6}\]", out[0])
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        stderr = proc.stderr.read().decode()  # type: ignore[union-attr]
    assert f"memlane MCP server on {url}" in stderr


def test_damaged_store_is_a_clear_tool_error(store: dict[str, Any], proj: Path) -> None:
    with Memory.open(str(proj)) as mem:
        db = mem.project.db_path
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    server = build_server(default_project=str(proj), semantic=False)

    async def body(client: Client) -> Any:
        return await client.call_tool("mem-stats", {})

    result = call(server, body)
    assert result.is_error
    message = result.content[0].text
    assert "the memory store could not be read" in message and "memlane doctor" in message
