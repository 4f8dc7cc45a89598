"""Helpers shared by the MCP and plugin tests: a project store filled through the real hooks."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from conftest import PAYLOADS
from memlane import hooks
from memlane.memory import Memory
from memlane.store.db import NewEvent

SECOND = "0b1e7c55-2f7a-4c0e-9d1a-5e0c2a9b7f31"
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token shape, split so scanners stay quiet
REPO = Path(__file__).resolve().parents[2]


def payload(name: str, **overrides: Any) -> dict[str, Any]:
    data = json.loads((PAYLOADS / name).read_text())
    data.update(overrides)
    return data


def deliver(event: str, data: dict[str, Any]) -> str:
    return hooks.handle(event, json.dumps(data).encode())


def fill(proj: Path) -> dict[str, Any]:
    """Two sessions through the real hooks (the second never ends), a failed tool run and an event that
    reached the store unfiltered (as from an older version), so privacy on output can be checked."""
    cwd = str(proj)
    for name in sorted(p.name for p in PAYLOADS.glob("*.json")):
        data = payload(name, cwd=cwd)
        if name.startswith("12-"):
            continue  # the second session has no SessionEnd: an open thread
        if name[:2] >= "07":
            data["session_id"] = SECOND  # a second session, which never ends: an open thread
        if name.startswith("08-"):
            data["prompt"] = "Add retries to the payment webhook handler (marker ocelot)"
        deliver(data["hook_event_name"], data)
    with Memory.open(cwd) as mem:
        sessions = [s["id"] for s in mem.sessions()]
        second = SECOND
        mem.store.append(
            [
                NewEvent(
                    "tool_observation",
                    second,
                    "Bash: pytest tests/test_webhook.py\nFAILED test_retry - AssertionError: expected 3 attempts",
                    "t-fail",
                    {"tool_name": "Bash", "success": False, "error": "exit 1: AssertionError expected 3 attempts"},
                ),
                NewEvent(
                    "agent_response", second, f"Set GITHUB_TOKEN={SECRET} in the CI settings (marker ibis)", "t-secret"
                ),
            ]
        )
        events = mem.history(limit=100, oldest_first=True)
    return {"sessions": sessions, "events": events, "second": second}


def registered(module: str) -> bool:
    """Whether the main CLI registers a command module (read from its source: tests may add groups in-process)."""
    import memlane.cli.main

    return module in Path(memlane.cli.main.__file__).read_text(encoding="utf-8")


def server_command() -> list[str]:
    """How to start ``memlane mcp``: through the main CLI once the group is registered there."""
    if registered("mcp_cmd"):
        return [sys.executable, "-m", "memlane", "mcp"]
    return [sys.executable, "-m", "memlane.mcp"]


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "MEMLANE_HOME", "MEMLANE_DAEMON_AUTOSTART", "VIRTUAL_ENV")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["PYTHONPATH"] = str(REPO / "src")
    return {**env, **(extra or {})}


def memlane_executable(tmp_path: Path) -> str:
    """A ``memlane`` executable with the ``mcp`` and ``plugin`` commands: the installed script once they are
    registered in the CLI, else a wrapper that registers them first (same entry point, same hook path)."""
    from memlane.mcp.install import memlane_command

    if registered("mcp_cmd") and registered("plugin_cmd"):
        return memlane_command()
    wrapper = tmp_path / "bin" / "memlane"
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    code = (
        "from memlane.cli.main import cli\n"
        "from memlane.cli.mcp_cmd import mcp_group\n"
        "from memlane.cli.plugin_cmd import plugin_group\n"
        "for group in (mcp_group, plugin_group):\n"
        "    cli.commands.setdefault(group.name, group)\n"
        "from memlane.entry import main\n"
        "main()\n"
    )
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} -c '{code}' \"$@\"\n")
    wrapper.chmod(0o755)
    return str(wrapper)
