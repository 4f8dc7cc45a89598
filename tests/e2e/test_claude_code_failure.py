"""End to end: a Bash command that fails, run by the real Claude Code CLI, is in memory with its exit code
and output as soon as `claude -p` returns (PostToolUseFailure, or Stop's catch-up when that async hook did not
finish), and importing the session's transcript afterwards adds no second copy."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e.conftest import CliSession, serve_stub

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
    cli = CliSession(tmp_path, port)
    home, project, env, memlane = cli.home, cli.project, cli.env, cli.memlane

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

    # No waiting: PostToolUseFailure runs async and `claude -p` may exit before it finishes (under load it
    # is killed), but the synchronous Stop hook has already stored every call of the turn from the transcript.
    assert len(failures()) == 1, memlane("history", "--json").stdout[-3000:]
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


def test_calls_whose_async_hooks_are_killed_are_recovered_by_stop(claude_bin: Path, tmp_path: Path) -> None:
    """The async capture hooks are made slow (``sleep 5`` before ``memlane hook``), so `claude -p` always exits
    before they finish and kills them, as it does under load: every tool call must come from Stop."""
    script = tmp_path / "script.json"
    ok = "echo 'E   TimeoutError: pool exhausted (lemur-timeout)'"
    script.write_text(
        json.dumps(
            {
                "turns": [
                    {"text": "Running the pool tests.", "tool": "Bash", "input": {"command": ok}},
                    {"text": "Running the cart tests.", "tool": "Bash", "input": {"command": FAILING}},
                ],
                "final": ["The pool times out (lemur).", "The cart test fails with exit code 3 (okapi)."],
            }
        )
    )
    with serve_stub(tmp_path, script) as (port, _):
        cli = CliSession(tmp_path, port)
        home, project, env, memlane = cli.home, cli.project, cli.env, cli.memlane

        assert memlane("install").returncode == 0
        settings_file = home / ".claude" / "settings.json"
        settings = json.loads(settings_file.read_text())
        for event in ("PostToolUse", "PostToolUseFailure"):
            for group in settings["hooks"][event]:
                for entry in group["hooks"]:
                    assert entry["async"] is True
                    entry["command"] = "sleep 5; " + entry["command"]
        settings_file.write_text(json.dumps(settings))

        def calls() -> list[dict]:  # type: ignore[type-arg]
            out = memlane("history", "--json", "--limit", "1000", "--type", "tool_observation")
            assert out.returncode == 0, out.stderr
            return json.loads(out.stdout) if out.stdout.strip() else []

        for prompt, extra in (("run the pool tests", []), ("now the cart tests", ["--continue"])):
            proc = subprocess.run(
                [str(claude_bin), "-p", prompt, *extra, "--allowedTools", "Bash", "--output-format", "json"],
                env=env,
                cwd=project,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert proc.returncode == 0, proc.stderr[-2000:]

    stored = sorted(calls(), key=lambda e: e["ts"])  # right away: the killed hooks stored nothing, Stop both calls
    log = tmp_path / "memlane" / "logs" / "hooks.log"
    assert [e["metadata"]["command"] for e in stored] == [ok, FAILING], (stored, log.read_text()[-3000:])
    assert all(e["metadata"]["recovered"] == "transcript" for e in stored)
    passed, failed = stored
    assert passed["metadata"]["success"] is True and "lemur-timeout" in passed["content"]
    assert failed["metadata"]["success"] is False and failed["metadata"]["exit_code"] == 3
    assert "okapi-rounding" in failed["content"] and "boom on stderr" in failed["content"]
    imported = memlane("import", "--source", "claude", "--no-embed", "--json")
    assert imported.returncode == 0, imported.stderr
    assert len(calls()) == 2  # importing the transcript adds no second copy either
