"""End to end with the real Claude Code CLI (npm) and the scripted model stub: memlane as an MCP server
(`memlane mcp install --client claude-code`) and as a plugin installed from a local marketplace."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp_support import fill, memlane_executable

from e2e.conftest import claude_bin, serve_stub  # noqa: F401 - claude_bin is a fixture
from memlane.memory import Memory

pytestmark = pytest.mark.e2e
START = "memlane: where this project left off"


@contextmanager
def stub(tmp_path: Path, script: dict[str, Any]) -> Iterator[tuple[int, Path]]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    with serve_stub(tmp_path, path) as running:
        yield running


def claude(binary: Path, port: int, project: Path, prompt: str, tools: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    env |= {
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    proc = subprocess.run([str(binary), "-p", prompt, "--allowedTools", tools, "--output-format", "json"], env=env,
                          cwd=project, capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    return dict(json.loads(proc.stdout))


def run(*cmd: str, cwd: Path) -> str:
    proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    return proc.stdout


def requests(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line)["body"] for line in log.read_text().splitlines()]


def tool_results(log: Path) -> list[str]:
    """Each tool result the model was sent, once, in order. Every request repeats the conversation so far, and
    the result is not always its last message: an MCP server that connects late (a loaded machine) makes
    Claude Code append a system message listing the newly available tools after it."""
    out: dict[str, str] = {}
    for body in requests(log):
        for message in body.get("messages") or []:
            blocks = message.get("content")
            for block in blocks if isinstance(blocks, list) else []:
                if block.get("type") == "tool_result" and block.get("tool_use_id") not in out:
                    content = block["content"]
                    text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
                    out[block.get("tool_use_id")] = text
    return list(out.values())


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_claude_code_calls_mem_search_over_mcp(claude_bin: Path, project: Path, tmp_path: Path) -> None:  # noqa: F811
    fill(project)
    exe = memlane_executable(tmp_path)
    out = run(exe, "mcp", "install", "--client", "claude-code", "--command", exe, cwd=project)
    assert "Added the memlane MCP server to claude-code config" in out
    script = {
        "turns": [{"text": "Checking memory.", "tool": "mcp__memlane__mem-search", "input": {"query": "pool timeout"}}],
        "final": ["The pool fix is in memory (kestrel)."],
    }
    with stub(tmp_path, script) as (port, log):
        result = claude(claude_bin, port, project, "what happened with the pool timeout?",
                        "Bash mcp__memlane__mem-search")  # fmt: skip
    assert result["result"] == "The pool fix is in memory (kestrel)."
    (answer,) = tool_results(log)
    assert answer.startswith('5 memories for "pool timeout" in shop') or 'memories for "pool timeout"' in answer
    assert "quokka" in answer and "[mem:" in answer
    # The server's instructions reach the model: in the first request, or, when the server connected late (a
    # loaded machine), in the system message that announces its tools.
    system = json.dumps(requests(log))
    assert "## memlane" in system and "1. mem-search" in system


def test_plugin_installed_from_a_local_marketplace(claude_bin: Path, project: Path, tmp_path: Path) -> None:  # noqa: F811
    exe = memlane_executable(tmp_path)
    market = tmp_path / "market"
    run(exe, "plugin", "build", str(market), "--command", exe, cwd=project)
    assert "Validation passed" in run(str(claude_bin), "plugin", "validate", str(market / "memlane"), cwd=project)
    assert "Validation passed" in run(str(claude_bin), "plugin", "validate", str(market), cwd=project)
    run(str(claude_bin), "plugin", "marketplace", "add", str(market), cwd=project)
    run(str(claude_bin), "plugin", "install", "memlane@memlane-local", cwd=project)
    assert "memlane@memlane-local" in run(str(claude_bin), "plugin", "list", cwd=project)

    script = {
        "turns": [
            {"text": "Running the tests.", "tool": "Bash", "input": {"command": "echo 'pool test failed (hawk)'"}},
            {"text": "Checking memory.", "tool": "mcp__plugin_memlane_memlane__mem-search", "input": {"query": "hawk"}},
        ],
        "final": ["Fixed the pool (osprey).", "Memory has it (kestrel)."],
    }
    tools = "Bash mcp__plugin_memlane_memlane__mem-search"
    with stub(tmp_path, script) as (port, log):
        assert claude(claude_bin, port, project, "fix the pool timeout", tools)["result"] == "Fixed the pool (osprey)."

        # No waiting: the turn is in memory when `claude -p` returns. The prompt and the answer come from
        # synchronous hooks; the Bash call from the async PostToolUse or, when `claude -p` exited before that
        # finished, from Stop's catch-up. (SessionEnd is async and may be cut short: not asserted here.)
        with Memory.open(str(project)) as mem:
            by_type = mem.stats()["by_type"]
            calls = [e.content for e in mem.history(types=["tool_observation"])]
        assert {"user_prompt", "tool_observation", "agent_response"} <= set(by_type), by_type
        assert len([c for c in calls if "pool test failed (hawk)" in c]) == 1, calls
        second = claude(claude_bin, port, project, "what do we know about hawk?", tools)
    assert second["result"] == "Memory has it (kestrel)."
    searched = [r for r in tool_results(log) if "memories for" in r]
    assert searched and "pool test failed (hawk)" in searched[0]
    last = json.dumps(requests(log)[-1])
    assert last.count(START) == 1  # SessionStart context from the plugin's hook, once


def test_plugin_and_memlane_install_never_double_register(claude_bin: Path, project: Path, tmp_path: Path) -> None:  # noqa: F811
    exe = memlane_executable(tmp_path)
    market = tmp_path / "market"
    run(exe, "plugin", "build", str(market), "--command", exe, cwd=project)
    run(str(claude_bin), "plugin", "marketplace", "add", str(market), cwd=project)
    run(str(claude_bin), "plugin", "install", "memlane@memlane-local", cwd=project)
    run(exe, "install", cwd=project)  # settings hooks too
    fill(project)
    with stub(tmp_path, {"turns": [], "final": ["ok (finch)"]}) as (port, log):
        claude(claude_bin, port, project, "the pool timeout is back", "Bash")
    body = json.dumps(requests(log)[-1])
    assert body.count(START) == 1
    assert body.count("memlane: relevant memory from earlier sessions") == 1
    with Memory.open(str(project)) as mem:
        prompts = [e for e in mem.history(types=["user_prompt"]) if e.content == "the pool timeout is back"]
    assert len(prompts) == 1
