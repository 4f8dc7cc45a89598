"""Import fidelity (issue 17): bad files never stop an import, partial imports are never "unchanged",
mid-turn files store only what is final, order by time, one start and one summary per session."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from history_fixtures import REAL_SESSION, real_transcript

from conftest import CODEX_SESSIONS, PAYLOADS
from memlane import hooks, project
from memlane.cli.main import cli
from memlane.importers import Importer, Options, Report, discover
from memlane.memory import Memory
from memlane.store.db import NewEvent

BUGFIX = "01a205ca-fcb3-70c0-bbee-e6a95ffd4147"
LEGACY = "01a205ca-e417-7802-af8a-ec67d2413775"


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    claude_dir, codex_dir = tmp_path / "claude-config", tmp_path / "codex-home"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_dir))
    monkeypatch.setenv("CODEX_HOME", str(codex_dir))
    return claude_dir, codex_dir


def rollout_text(session: str, root: Path) -> str:
    (path,) = CODEX_SESSIONS.rglob(f"rollout-*-{session}.jsonl")
    text = path.read_text()
    for name in ("shop", "notes"):
        text = text.replace(f"/home/dev/src/{name}", str(root))
    return text


def put_rollout(codex_dir: Path, session: str, root: Path, lines: slice | None = None, name: str = "") -> Path:
    text = rollout_text(session, root)
    if lines is not None:
        text = "".join(text.splitlines(keepends=True)[lines])
    dest = codex_dir / "sessions" / "2026" / "11" / "23" / (name or f"rollout-2026-11-23T00-25-18-{session}.jsonl")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    return dest


def run_import(root: Path, sources: tuple[str, ...] = ("claude", "codex"), **opts: Any) -> Report:
    options = Options(sources, **opts)
    proj = project.identify(root)
    with Importer(proj, options) as importer:
        return importer.run(discover(proj, options))


def memlane(proj: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["-C", str(proj), *args])
    return result.exit_code, result.output


def stored(root: Path, session: str | None = None) -> list[Any]:
    with Memory.open(root) as mem:
        return mem.history(session=session, limit=100000, oldest_first=True)


# ---- unreadable files -----------------------------------------------------------------------------


def test_unreadable_codex_files_are_skipped_with_a_line_each(proj: Path, homes: tuple[Path, Path]) -> None:
    _, codex_dir = homes
    put_rollout(codex_dir, BUGFIX, proj)
    day = codex_dir / "sessions" / "2026" / "11" / "23"
    (day / "rollout-dangling.jsonl").symlink_to(day / "gone.jsonl")
    (day / "rollout-loop.jsonl").symlink_to(day / "rollout-loop.jsonl")
    code, out = memlane(proj, "import", "--no-embed", "--source", "codex")
    assert code == 0, out
    assert "2 unreadable file(s) skipped" in out
    flat = " ".join(out.split())
    assert "rollout-dangling.jsonl: cannot be read" in flat
    assert "rollout-loop.jsonl: cannot be read" in flat
    assert sum(e.type == "user_prompt" for e in stored(proj)) == 2  # the readable rollout was imported


def test_unreadable_claude_file_does_not_cost_its_folder(proj: Path, homes: tuple[Path, Path]) -> None:
    claude_dir, _ = homes
    path = real_transcript(claude_dir, proj)
    (path.parent / "dangling.jsonl").symlink_to(path.parent / "missing.jsonl")
    (path.parent / "loop.jsonl").symlink_to(path.parent / "loop.jsonl")
    report = run_import(proj, ("claude",))
    assert Counter(f.status for f in report.files) == {"imported": 1, "unreadable": 2}
    assert sum(e.type == "user_prompt" for e in stored(proj)) == 2


def test_symlinked_codex_folders_are_searched_once(proj: Path, homes: tuple[Path, Path], tmp_path: Path) -> None:
    _, codex_dir = homes
    elsewhere = tmp_path / "other-disk"
    put_rollout(elsewhere, BUGFIX, proj)  # elsewhere/sessions/2026/11/23/rollout-….jsonl
    (codex_dir / "sessions").mkdir(parents=True)
    (codex_dir / "sessions" / "2026").symlink_to(elsewhere / "sessions" / "2026", target_is_directory=True)
    (elsewhere / "sessions" / "2026" / "again").symlink_to(elsewhere / "sessions" / "2026")  # a loop
    report = run_import(proj, ("codex",))
    assert [f.status for f in report.files] == ["imported"]
    assert report.files[0].session_id == BUGFIX


# ---- what --dry-run, validate and --session do ------------------------------------------------------


def test_dry_run_and_validate_create_no_store(proj: Path, homes: tuple[Path, Path]) -> None:
    claude_dir, codex_dir = homes
    real_transcript(claude_dir, proj)
    put_rollout(codex_dir, BUGFIX, proj)
    db = project.identify(proj).db_path
    code, out = memlane(proj, "import", "--dry-run")
    assert code == 0, out
    assert "would import" in out
    code, out = memlane(proj, "import", "validate")
    assert code == 0, out
    assert "to import" in out
    assert not db.exists()
    assert not db.parent.exists()


def test_dry_run_reads_an_existing_store(proj: Path, homes: tuple[Path, Path]) -> None:
    claude_dir, _ = homes
    real_transcript(claude_dir, proj)
    run_import(proj, ("claude",))
    report = run_import(proj, ("claude",), dry_run=True)
    assert report.files[0].status == "dry-run" and report.total("new") == 0


def test_session_option_reads_a_renamed_rollout_as_codex(proj: Path, homes: tuple[Path, Path], tmp_path: Path) -> None:
    renamed = tmp_path / "saved" / "cart-fix.jsonl"
    renamed.parent.mkdir()
    renamed.write_text(rollout_text(BUGFIX, proj))
    code, out = memlane(proj, "import", "--no-embed", "--session", str(renamed), "--json")
    assert code == 0, out
    data = json.loads(out)
    assert [d["source"] for d in data["details"]] == ["codex"]
    assert data["details"][0]["types"]["tool_observation"] == 7


# ---- the ledger ---------------------------------------------------------------------------------------


def test_since_import_is_not_recorded_as_complete(proj: Path, homes: tuple[Path, Path]) -> None:
    _, codex_dir = homes
    put_rollout(codex_dir, BUGFIX, proj)
    first = run_import(proj, ("codex",), since="2026-11-23T00:25:20.000Z")  # the resumed turn only
    assert first.files[0].status == "imported"
    assert [e.content[:4] for e in stored(proj) if e.type == "user_prompt"] == ["Good"]
    again = run_import(proj, ("codex",))
    assert again.files[0].status == "imported"  # not "unchanged": the first turn was left out
    assert [e.content[:4] for e in stored(proj) if e.type == "user_prompt"] == ["Fix ", "Good"]
    assert run_import(proj, ("codex",)).files[0].status == "unchanged"


# ---- mid-turn files -----------------------------------------------------------------------------------


def test_claude_mid_turn_import_then_complete(proj: Path, homes: tuple[Path, Path]) -> None:
    claude_dir, _ = homes
    path = real_transcript(claude_dir, proj)
    full = path.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(full) if '"tool_result"' in line) + 1  # the first tool result
    path.write_text("".join(full[:cut]))
    code, out = memlane(proj, "import", "--no-embed", "--source", "claude")
    assert code == 0, out
    assert "1 session(s) end mid-turn (still running?)" in " ".join(out.split())
    answers = [e for e in stored(proj) if e.type == "agent_response"]
    assert [e.metadata.get("kind") for e in answers] == ["interim"]  # the note before the call, no "final"
    with Memory.open(proj) as mem:
        assert mem.store.session(REAL_SESSION)["ended_at"] is None  # type: ignore[index]

    path.write_text("".join(full))
    run_import(proj, ("claude",))
    events = [e for e in stored(proj) if e.type not in ("session_start", "session_end", "session_summary")]
    assert Counter(e.type for e in events) == {"user_prompt": 2, "tool_observation": 2, "agent_response": 4}
    assert len({(e.type, e.content) for e in events}) == len(events)


def test_codex_format_is_decided_per_line(proj: Path, homes: tuple[Path, Path]) -> None:
    """A 0.63 rollout resumed by 0.169: the old part writes each prompt twice (response item and
    event_msg), the new part once. Deciding once per file lost the second prompt."""
    _, codex_dir = homes
    old = rollout_text(LEGACY, proj).splitlines(keepends=True)
    new = rollout_text(BUGFIX, proj).splitlines(keepends=True)
    resumed = next(i for i, line in enumerate(new) if line.startswith('{"timestamp":"2026-11-23T00:25:22'))
    dest = put_rollout(codex_dir, LEGACY, proj)
    dest.write_text("".join(old + new[resumed:]))
    report = run_import(proj, ("codex",))
    assert report.files[0].types["user_prompt"] == 2
    prompts = [e.content for e in stored(proj) if e.type == "user_prompt"]
    assert prompts[0].startswith("Make `python3 -m notes` work") and prompts[1].startswith("Good. Add regression")


# ---- order, starts and summaries ----------------------------------------------------------------------


def test_history_is_in_time_order_not_insertion_order(proj: Path, homes: tuple[Path, Path]) -> None:
    claude_dir, _ = homes
    hooks.handle(
        "UserPromptSubmit",
        json.dumps({**json.loads((PAYLOADS / "02-UserPromptSubmit.json").read_text()), "session_id": "live-now",
                    "cwd": str(proj)}).encode(),
    )  # fmt: skip
    real_transcript(claude_dir, proj)  # a session from 2026-11-22, imported after
    run_import(proj, ("claude",))
    code, out = memlane(proj, "history", "--json", "--limit", "3")
    assert code == 0, out
    newest = json.loads(out)
    assert newest[0]["session_id"] == "live-now"
    with Memory.open(proj) as mem:
        old = [e for e in mem.history(session=REAL_SESSION, limit=1000, oldest_first=True)]
    assert [e.ts for e in old] == sorted(e.ts for e in old)
    assert old[0].type == "session_start" and old[-1].type in ("session_end", "session_summary")


def test_timeline_is_in_time_order(proj: Path) -> None:
    """An import adds a turn's interim texts after its final answer; the timeline reads by time."""
    with Memory.open(proj) as mem:
        mem.store.append(
            [
                NewEvent("user_prompt", "s", "ask", "1", {}, ts="2026-01-01T00:00:01.000Z"),
                NewEvent("agent_response", "s", "final", "4", {}, ts="2026-01-01T00:00:04.000Z"),
                NewEvent("session_end", "s", "end", "5", {}, ts="2026-01-01T00:00:05.000Z"),
                NewEvent("agent_response", "s", "interim", "2", {}, ts="2026-01-01T00:00:02.000Z"),
                NewEvent("tool_observation", "s", "Bash: x", "3", {}, ts="2026-01-01T00:00:03.000Z"),
            ]
        )
        (middle,) = mem.history(session="s", types=["tool_observation"], limit=1)
        around = mem.timeline(middle.id, before=2, after=2)
    assert [e.content for e in around] == ["ask", "interim", "Bash: x", "final", "end"]


def test_import_then_hooks_keep_one_start_and_one_summary(proj: Path, homes: tuple[Path, Path]) -> None:
    claude_dir, _ = homes
    real_transcript(claude_dir, proj)
    run_import(proj, ("claude",))
    for name in ("01-SessionStart.json", "06-SessionEnd.json"):
        data = json.loads((PAYLOADS / name).read_text())
        event = data["hook_event_name"]
        hooks.handle(event, json.dumps({**data, "cwd": str(proj)}).encode())
    kinds = Counter(e.type for e in stored(proj, REAL_SESSION))
    assert kinds["session_start"] == 1
    assert kinds["session_end"] == 1
    assert kinds["session_summary"] == 1
    # and the other way round: hooks first, then the import adds no second start or summary
    run_import(proj, ("claude",), force=True)
    kinds = Counter(e.type for e in stored(proj, REAL_SESSION))
    assert kinds["session_start"] == 1 and kinds["session_end"] == 1 and kinds["session_summary"] == 1


def test_summary_uses_every_event_of_a_long_session(proj: Path) -> None:
    from memlane.capture.summary import refresh

    events = [
        NewEvent("tool_observation", "long", f"Bash: step {i}", f"t{i}", {"tool_name": "Bash", "command": "true"},
                 ts=f"2026-01-01T00:{i // 1000:02d}:{i % 60:02d}.{i % 1000:03d}Z")
        for i in range(5200)
    ]  # fmt: skip
    events.append(
        NewEvent("tool_observation", "long", "Edit: late.py", "late", {"tool_name": "Edit", "file_path": "late.py"},
                 ts="2026-01-01T01:00:00.000Z")
    )  # fmt: skip
    with Memory.open(proj) as mem:
        mem.store.append(events)
        assert refresh(mem.store, "long", "end", {})
        (summary,) = mem.store.history(session="long", types=["session_summary"], limit=5)
    assert "Files changed: late.py" in summary.content


# ---- exit codes from every output form ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "output", "exit_code", "text"),
    [
        # Codex 0.169 exec_command (plain text)
        ("Bash", "Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 1\nOriginal token count: 2\n"
                 "Output:\nFAIL: test_x\n", 1, "FAIL: test_x\n"),
        # Codex 0.63 shell_command and 0.169 apply_patch (plain text)
        ("Bash", "Exit code: 2\nWall time: 0 seconds\nOutput:\nno such file\n", 2, "no such file\n"),
        # Codex 0.63 apply_patch / older shell: JSON in a string
        ("Bash", '{"output": "boom\\n", "metadata": {"exit_code": 7, "duration_seconds": 0.1}}', 7, "boom\n"),
        # a command still running when exec_command returned: no status, not "0"
        ("Bash", "Chunk ID: 1\nWall time: 10.0 seconds\nProcess running with session ID 3\nOriginal token count: 1\n"
                 "Output:\nlistening\n", None, "listening\n"),
        # a line that only looks like a status, below the header, is output
        ("Bash", "Exit code: 0\nWall time: 0 seconds\nOutput:\nProcess exited with code 9\n", 0,
         "Process exited with code 9\n"),
        # Codex write_stdin polling a running command
        ("write_stdin", "Chunk ID: 2\nWall time: 1.0 seconds\nProcess exited with code 4\nOriginal token count: 1\n"
                        "Output:\ndone\n", 4, "done\n"),
    ],
)  # fmt: skip
def test_codex_output_forms(tool: str, output: str, exit_code: int | None, text: str) -> None:
    from memlane.capture import observe
    from memlane.config import Config
    from memlane.importers.codex import _response

    response = _response(tool, output, {"command": "x"})
    obs = observe.observe(tool, {"command": "x"}, response, Config().capture)
    assert obs.metadata["exit_code"] == exit_code
    assert obs.metadata["success"] is (exit_code in (0, None))
    assert obs.output == text


@pytest.mark.parametrize(
    "response",
    [
        "Error: Exit code 3\nFAILED test_x",  # transcript toolUseResult
        {"content": "Exit code 3\nFAILED test_x", "is_error": True},  # PostToolUseFailure / is_error block
        {"content": "Error: Exit code 3\nFAILED test_x", "is_error": True},
    ],
)
def test_claude_failure_forms_store_the_same_observation(response: Any) -> None:
    from memlane.capture import observe
    from memlane.config import Config

    obs = observe.observe("Bash", {"command": "pytest"}, response, Config().capture)
    assert obs.metadata["exit_code"] == 3 and obs.metadata["success"] is False
    assert obs.metadata["error"] == "Exit code 3"
    assert obs.content() == "Bash: pytest\nExit code 3\nFAILED test_x"
