"""The server driven by a third-party MCP client from the npm registry: the MCP Inspector CLI.

    npx -y @modelcontextprotocol/inspector --cli -e MEMLANE_HOME=… <python> -m memlane.mcp --text-only \
        --method tools/list | tools/call --tool-name mem-search --tool-arg query=…

Skipped (with the reason) when npx is missing or the package cannot be fetched. ``MEMLANE_INSPECTOR``
overrides the package spec (e.g. ``@modelcontextprotocol/inspector@2.12.0``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp_support import fill, server_command

INSPECTOR = os.environ.get("MEMLANE_INSPECTOR", "@modelcontextprotocol/inspector")
# Read before the fixtures point HOME at a temp dir, so npx reuses the user's npm cache.
NPM_CACHE = os.environ.get("npm_config_cache") or os.path.join(os.path.expanduser("~"), ".npm")  # noqa: SIM112
OFFLINE = ("ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "ECONNREFUSED", "ECONNRESET", "E404", "E403", "network", "proxy")


def inspector(proj: Path, *args: str) -> dict[str, Any]:
    if not shutil.which("npx"):
        pytest.skip("npx is not installed: cannot run the MCP Inspector CLI")
    command = [
        "npx", "-y", INSPECTOR, "--cli", "-e", f"MEMLANE_HOME={os.environ['MEMLANE_HOME']}",
        *server_command(), "--text-only", *args,
    ]  # fmt: skip
    env = {**os.environ, "npm_config_cache": NPM_CACHE, "npm_config_update_notifier": "false"}
    try:
        proc = subprocess.run(command, cwd=proj, env=env, capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip(f"{INSPECTOR} did not finish in 10 minutes (registry unreachable?)")
    out = proc.stdout.strip()
    if not out.startswith("{"):
        if any(mark in proc.stderr for mark in OFFLINE):
            pytest.skip(f"cannot fetch {INSPECTOR} from the npm registry: {proc.stderr.strip()[-300:]}")
        pytest.fail(f"inspector failed ({proc.returncode}): {proc.stderr[-2000:]}\n{out[-2000:]}")
    data, _end = json.JSONDecoder().raw_decode(out)  # newer versions print an error object after an isError result
    return dict(data)


@pytest.fixture
def store(proj: Path) -> dict[str, Any]:
    return fill(proj)


def test_inspector_lists_and_calls_tools(store: dict[str, Any], proj: Path) -> None:
    listed = inspector(proj, "--method", "tools/list")
    names = {t["name"] for t in listed["tools"]}
    assert names == {"mem-search", "mem-timeline", "mem-details", "mem-source", "mem-context-pack", "mem-stats",
                     "mem-projects", "mem-tasks", "mem-insights"}  # fmt: skip
    search = next(t for t in listed["tools"] if t["name"] == "mem-search")
    # The query may be left out for tool history (tool, file, failed); an empty search is refused by the tool.
    assert "required" not in search["inputSchema"] and {"query", "tool", "file", "failed"} <= set(
        search["inputSchema"]["properties"]
    )

    found = inspector(proj, "--method", "tools/call", "--tool-name", "mem-search", "--tool-arg", "query=pool timeout",
                      "--tool-arg", "limit=3")  # fmt: skip
    assert found["isError"] is False
    text = found["content"][0]["text"]
    assert text.startswith('3 memories for "pool timeout" in shop')
    cite = text.split("[", 2)[1].split("]")[0]

    details = inspector(proj, "--method", "tools/call", "--tool-name", "mem-details", "--tool-arg",
                        f'refs=["{cite}"]')  # fmt: skip
    assert details["isError"] is False and f"## [{cite}]" in details["content"][0]["text"]

    missing = inspector(proj, "--method", "tools/call", "--tool-name", "mem-timeline", "--tool-arg", "ref=mem:zzzzzz")
    assert missing["isError"] is True
    assert "unknown memory 'mem:zzzzzz'" in missing["content"][0]["text"]
