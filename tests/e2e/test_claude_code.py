"""End to end with the real Claude Code CLI (npm) against the scripted model stub.

`memlane install` into a temp HOME, two `claude -p` prompts in one project (the second with
--continue), then: prompts, tool observations and answers were captured, and the second prompt's
injected memory reached the model (the stub's request log).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from e2e.conftest import wait_for

pytestmark = pytest.mark.e2e


def memlane(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memlane", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_claude_code_capture_and_injection(claude_bin: Path, stub: tuple[int, Path], tmp_path: Path) -> None:
    port, request_log = stub
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "shop"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "MEMLANE_HOME": str(tmp_path / "memlane"),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    result = memlane("install", env=env, cwd=project)
    assert result.returncode == 0, result.stderr
    assert (home / ".claude" / "settings.json").exists()

    def claude(prompt: str, *extra: str) -> dict:  # type: ignore[type-arg]
        proc = subprocess.run(
            [str(claude_bin), "-p", prompt, "--allowedTools", "Bash", "--output-format", "json", *extra],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout)

    claude("The DB connection pool times out under load, please fix it (marker zebrafinch)")

    def history() -> list[dict]:  # type: ignore[type-arg]
        out = memlane("history", "--json", "--limit", "1000", env=env, cwd=project)
        return json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else []

    assert wait_for(lambda: {"user_prompt", "tool_observation", "agent_response"} <= {e["type"] for e in history()})
    requests_before = len(request_log.read_text().splitlines())
    claude("The connection pool timeout is back. What did we change for the pool timeout?", "--continue")
    assert wait_for(lambda: sum(e["type"] == "user_prompt" for e in history()) == 2)

    events = history()
    prompts = [e["content"] for e in events if e["type"] == "user_prompt"]
    assert any("zebrafinch" in p for p in prompts)
    tools = [e for e in events if e["type"] == "tool_observation"]
    assert any("narwhal" in t["content"] and t["metadata"]["tool_name"] == "Bash" for t in tools)
    assert any("quokka" in e["content"] for e in events if e["type"] == "agent_response")

    # What the model saw for the second prompt: memlane's injected memory of the first one.
    later = "\n".join(request_log.read_text().splitlines()[requests_before:])
    assert "memlane: relevant memory" in later and "[mem:" in later
    assert "zebrafinch" in later or "narwhal" in later or "quokka" in later
