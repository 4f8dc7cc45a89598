"""The MCP server gets the session's first search ready before it is asked (issue 20: first search ≤ 1 s).

With autostart on and no daemon, starting the server starts the daemon (one warm model per user), and the first
mem-search is answered by it. With autostart off there is no daemon to share: the server loads the model and
opens the index in the background while the client initializes. Real server process, real daemon, real model.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp.client.stdio import StdioServerParameters
from mcp_support import fill, server_command, server_env

from mcp import Client
from memlane.daemon import state

pytestmark = pytest.mark.slow


def first_search(cwd: Path, autostart: str, pause_s: float) -> tuple[str, float]:
    """Start a semantic ``memlane mcp``, initialize, wait ``pause_s`` (the model thinking), then mem-search."""
    cmd = server_command()
    env = server_env({"MEMLANE_DAEMON_AUTOSTART": autostart})
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], cwd=str(cwd), env=env)
    out: list[Any] = []

    async def main() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            await anyio.sleep(pause_s)
            started = time.monotonic()
            result = await client.call_tool("mem-search", {"query": "connection pool timeout"})
            out.append((result.content[0].text, time.monotonic() - started))

    anyio.run(main)
    return out[0]


def initialize_only(cwd: Path, autostart: str) -> None:
    cmd = server_command()
    params = StdioServerParameters(
        command=cmd[0], args=cmd[1:], cwd=str(cwd), env=server_env({"MEMLANE_DAEMON_AUTOSTART": autostart})
    )

    async def main() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            await client.list_tools()
            for _ in range(300):  # the daemon was started at server start; no search has asked for it
                if state.read_info() is not None:
                    return
                await anyio.sleep(0.05)

    anyio.run(main)


def stop_daemon() -> None:
    from memlane.cli.main import cli

    CliRunner().invoke(cli, ["daemon", "stop"])
    for _ in range(200):
        if state.read_info() is None:
            return
        time.sleep(0.05)


def test_server_start_starts_the_daemon_that_answers_the_first_search(proj: Path, memlane_home: Path) -> None:
    fill(proj)
    assert state.read_info() is None
    try:
        initialize_only(proj, "true")
        assert state.read_info() is not None, "starting the MCP server did not start the daemon"
        stop_daemon()
        found, _ = first_search(proj, "true", pause_s=0.0)  # asked at once: waits for the daemon it started
        info = state.read_info()
        assert info is not None, "the MCP server did not start the daemon"
        assert "mem:" in found and "pool" in found.lower()
        pid = int(info["pid"])
        found, _ = first_search(proj, "true", pause_s=0.0)  # a second session shares the same daemon
        assert "mem:" in found and int(state.read_info()["pid"]) == pid  # type: ignore[index]
    finally:
        stop_daemon()
    assert state.read_info() is None


def test_without_autostart_the_server_warms_its_own_model(proj: Path, memlane_home: Path) -> None:
    fill(proj)
    found, _ = first_search(proj, "false", pause_s=0.5)
    assert "mem:" in found and "pool" in found.lower()
    assert state.read_info() is None, "autostart is off: no daemon may be started"
    assert not any(name.startswith("daemon") for name in os.listdir(memlane_home) if name.endswith(".json"))
