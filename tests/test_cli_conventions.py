"""The conventions of well-kept Python CLIs (llm, datasette, sqlite-utils), checked across every command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from conftest import payload
from memlane.cli.main import cli

SRC = Path(__file__).resolve().parents[1] / "src"

# Commands that only read: each must offer --json. (Commands that change things may too.)
READS = {
    "history", "show", "timeline", "search", "sessions", "stats", "projects", "status", "doctor",
    "config show", "config get", "config path", "daemon status", "daemon logs", "plugin path",
    "regions list", "regions show", "regions validate", "workflow list", "workflow status", "workflow search",
    "workflow show", "vectors status", "import validate", "context show", "context learn", "context compose",
    "tasks list", "tasks show",
}  # fmt: skip


def walk(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    yield " ".join(path), command
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            yield from walk(sub, (*path, name))


def test_every_option_has_help() -> None:
    missing = [
        f"memlane {name} {param.opts[0]}".replace("  ", " ")
        for name, command in walk(cli)
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden and not param.help
    ]
    assert missing == []


def test_every_command_has_a_docstring() -> None:
    assert [name for name, command in walk(cli) if not (command.help or "").strip()] == []


def test_every_read_command_takes_json() -> None:
    commands = dict(walk(cli))
    assert set(commands) >= READS, READS - set(commands)
    without = sorted(n for n in READS if not any("--json" in p.opts for p in commands[n].params))
    assert without == []


@pytest.mark.parametrize("name", [name for name, _ in walk(cli)])
def test_dash_h_is_help_everywhere(name: str) -> None:
    result = CliRunner().invoke(cli, [*name.split(), "-h"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: ")


def test_missing_folder_is_one_line_and_creates_nothing(memlane_home: Path) -> None:
    result = CliRunner().invoke(cli, ["-C", "/nonexistent/folder", "history"])
    assert (result.exit_code, result.output) == (1, "Error: -C /nonexistent/folder: no such folder\n")
    assert not (memlane_home / "projects").exists()


NO_MEMORY_READS = [
    ["history"],
    ["stats"],
    ["sessions"],
    ["search", "anything"],
    ["search", "x", "--text-only"],
    ["search", "--failed"],
    ["show", "mem:abcdef"],
    ["timeline", "mem:abcdef"],
    ["export"],
    ["export", "-o", "out.md"],
    ["forget", "--session", "s1", "--dry-run"],
    ["vectors", "status"],
    ["vectors", "reconcile", "--check"],
    ["process"],
    ["context", "learn"],
    ["privacy", "scan"],
]


@pytest.mark.parametrize("args", NO_MEMORY_READS)
def test_no_memory_yet_is_one_line_and_exit_0_for_every_command(proj: Path, args: list[str]) -> None:
    """One definition (README "Exit status"): a project without memory is a state, not an error."""
    result = CliRunner().invoke(cli, ["-C", str(proj), *args])
    assert (result.exit_code, result.output) == (0, f"No memory for this project yet ({proj}).\n")
    as_json = CliRunner().invoke(cli, ["-C", str(proj), *args, "--json"])
    if as_json.exit_code != 2:  # commands without --json
        assert as_json.exit_code == 0
        json.loads(as_json.stdout)  # an empty answer, still JSON


READ_RUNS = [
    *NO_MEMORY_READS,
    ["sessions", "--json"],
    ["projects"],
    ["status"],
    ["status", "--json"],
    ["doctor"],
    ["context", "show"],
    ["context", "show", "--json"],
    ["context", "compose", "--task", "session_start"],
    ["context", "compose", "--task", "prompt_injection", "--prompt", "why does the pool time out?"],
    ["context", "compose", "--task", "llm_task", "--body", "hello"],
    ["workflow", "list"],
    ["workflow", "status"],
    ["workflow", "show"],
    ["workflow", "search", "jwt"],
    ["regions", "list"],
    ["regions", "validate"],
    ["import", "validate"],
    ["import", "--dry-run"],
    ["install", "--dry-run"],
    ["uninstall", "--dry-run"],
    ["mcp", "install", "--client", "codex", "--dry-run"],
    ["config", "show"],
    ["config", "get", "injection.max_chars"],
    ["config", "path"],
    ["daemon", "status"],
    ["daemon", "logs"],
]


def _files(*roots: Path) -> set[str]:
    return {str(p) for root in roots if root.exists() for p in root.rglob("*")}


@pytest.mark.parametrize("args", READ_RUNS, ids=[" ".join(a) for a in READ_RUNS])
def test_reads_leave_nothing_behind(proj: Path, memlane_home: Path, args: list[str]) -> None:
    """No store, no project folder, no relay build, no daemon: a read in an empty folder writes nothing
    (the data folder itself aside, made empty on first use)."""
    home = Path(os.environ["HOME"])
    before = _files(memlane_home, home, proj)
    result = CliRunner().invoke(cli, ["-C", str(proj), *args])
    assert ("Traceback" not in result.output and result.exception is None) or isinstance(result.exception, SystemExit)
    assert _files(memlane_home, home, proj) - before - {str(memlane_home)} == set(), result.output
    assert not (memlane_home / "daemon.json").exists()
    projects = CliRunner().invoke(cli, ["projects", "--json"])
    assert json.loads(projects.stdout) == []


def test_reads_without_memory_give_empty_json(proj: Path) -> None:
    for args in (["history"], ["sessions"], ["search", "pool"]):
        result = CliRunner().invoke(cli, ["-C", str(proj), *args, "--json"])
        assert (result.exit_code, json.loads(result.stdout)) == (0, [])


@pytest.fixture
def captured(hook: Callable[..., str], proj: Path) -> Path:
    hook("SessionStart", payload("01-SessionStart.json"))
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    hook("PostToolUse", payload("04-PostToolUse.json"))
    return proj


def test_projects_json_sizes_are_numbers(captured: Path) -> None:
    rows = json.loads(CliRunner().invoke(cli, ["projects", "--json"]).stdout)
    assert len(rows) == 1 and isinstance(rows[0]["size_bytes"], int) and rows[0]["size_bytes"] > 4096
    assert rows[0]["root"] == str(captured)


def test_search_warns_when_events_are_not_embedded(captured: Path) -> None:
    result = CliRunner().invoke(cli, ["-C", str(captured), "search", "pool", "--json"])
    assert result.exit_code == 0
    # the prompt and the tool call; the session-start marker is never embedded
    assert "2 event(s) not embedded yet; results for them are full-text only" in result.stderr
    json.loads(result.stdout)  # the warning stays out of the JSON
    quiet = CliRunner().invoke(cli, ["-C", str(captured), "search", "pool", "--text-only"])
    assert quiet.stderr == ""


def test_piped_history_is_tab_separated_and_uncut(captured: Path) -> None:
    out = CliRunner().invoke(cli, ["-C", str(captured), "history", "--type", "user_prompt"]).stdout
    lines = out.splitlines()
    prompt = payload("02-UserPromptSubmit.json")["prompt"]
    assert lines[0] == "citation\ttime\ttype\tcontent"
    assert lines[1].split("\t")[2:] == ["user_prompt", " ".join(prompt.split())]
    assert len(lines) == 2


def test_history_is_newest_first_by_time_not_by_insertion(captured: Path) -> None:
    from memlane.memory import Memory
    from memlane.store.db import NewEvent

    with Memory.open(str(captured)) as mem:  # an import of an old session lands after today's events
        mem.store.append([NewEvent("user_prompt", "old-session", "an old prompt", ts="2020-01-01T00:00:00.000Z")])
    rows = json.loads(CliRunner().invoke(cli, ["-C", str(captured), "history", "--json"]).stdout)
    assert rows[-1]["content"] == "an old prompt"
    assert [r["ts"] for r in rows] == sorted((r["ts"] for r in rows), reverse=True)


def _run(*args: str, env: dict[str, str] | None = None, stdin: str = "") -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(SRC), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "memlane", *args], input=stdin, capture_output=True, text=True, env=full, timeout=60
    )


def test_python_dash_m_and_hook_help() -> None:
    result = _run("hook", "--help")
    assert result.returncode == 0 and result.stdout.startswith("Usage: memlane hook [OPTIONS] [EVENT]")
    assert _run("hook", "-h").stdout == result.stdout
    assert _run("--version").stdout.startswith("memlane, version ")


def test_shell_completion_script_and_completions() -> None:
    script = _run(env={"_MEMLANE_COMPLETE": "bash_source"})
    assert script.returncode == 0 and "_memlane_completion" in script.stdout
    words = _run(env={"_MEMLANE_COMPLETE": "bash_complete", "COMP_WORDS": "memlane hist", "COMP_CWORD": "1"})
    assert words.stdout.split() == ["plain,history"]


def test_no_color_and_pipes_have_no_escape_codes(captured: Path) -> None:
    result = _run("-C", str(captured), "stats", env={"NO_COLOR": "1", "FORCE_COLOR": ""})
    assert result.returncode == 0 and "\x1b[" not in result.stdout
    assert "events" in result.stdout


def test_narrow_terminal_stacks_rows_instead_of_cutting_them(captured: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.console import Console

    from memlane.cli import render

    long_text = "the checkout pool keeps timing out because connections are never released " * 3
    buffer = io.StringIO()
    monkeypatch.setattr(render, "console", Console(file=buffer, force_terminal=True, width=80, no_color=True))
    rows = [{"id": "s1", "summary": long_text.strip()}]
    render.dict_table(rows, ["id", "summary"])
    out = buffer.getvalue()
    words = " ".join(out.split())
    assert long_text.strip() in words  # every word, none cut to "…"
    assert max(len(line) for line in out.splitlines()) <= 80

    wide = io.StringIO()
    monkeypatch.setattr(render, "console", Console(file=wide, force_terminal=True, width=160, no_color=True))
    render.dict_table(rows, ["id", "summary"])
    table = wide.getvalue()
    assert table.startswith("┏") and long_text.strip() in " ".join(table.replace("│", " ").split())


def test_bare_memlane_prints_help_and_succeeds() -> None:
    result = CliRunner().invoke(cli, [])
    assert result.exit_code == 0 and result.stdout.startswith("Usage: ")
    assert "Exit status: 0 success; 1 an error" in result.stdout
