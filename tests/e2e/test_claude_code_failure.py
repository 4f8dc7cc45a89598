"""End to end: a Bash command that fails, run by the real Claude Code CLI, is in memory with its exit code
and output (PostToolUseFailure), and importing the session's transcript afterwards adds no second copy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.conftest import serve_stub, wait_for

pytestmark = pytest.mark.e2e

FAILING = "echo 'FAILED test_cart - okapi-rounding'; echo 'boom on stderr' >&2; exit 3"


@pytest.fixture
def failing_stub(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "turns": [{"text": "Running the tests.", "tool": "Bash", "input": {"command": FAILING}}],
                "final": ["The cart test fails with exit code 3 (okapi)."],
            }
        )
    )
    with serve_stub(tmp_path, script) as running:
        yield running


def test_failed_bash_through_the_real_cli(claude_bin: Path, failing_stub: tuple[int, Path], tmp_path: Path) -> None:
    port, _ = failing_stub
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
        "MEMLANE_DAEMON_AUTOSTART": "false",
    }

    def memlane(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memlane", *args], env=env, cwd=project, capture_output=True, text=True, timeout=120
        )

    assert memlane("install").returncode == 0
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert "PostToolUseFailure" in settings["hooks"]
    proc = subprocess.run(
        [str(claude_bin), "-p", "run the cart tests", "--allowedTools", "Bash", "--output-format", "json"],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]

    def failures() -> list[dict]:  # type: ignore[type-arg]
        out = memlane("history", "--json", "--limit", "1000", "--type", "tool_observation")
        events = json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else []
        return [e for e in events if e["metadata"].get("success") is False]

    assert wait_for(lambda: len(failures()) == 1), memlane("history", "--json").stdout[-3000:]
    (failed,) = failures()
    assert failed["metadata"]["exit_code"] == 3
    assert failed["metadata"]["command"] == FAILING
    assert "okapi-rounding" in failed["content"]
    assert "boom on stderr" in failed["content"]

    # The transcript Claude Code wrote for this session, imported now, adds no second copy of the failure.
    imported = memlane("import", "--source", "claude", "--no-embed", "--json")
    assert imported.returncode == 0, imported.stderr
    assert len(failures()) == 1
    found = memlane("search", "okapi-rounding", "--text-only", "--json")
    assert found.returncode == 0 and "okapi-rounding" in found.stdout
