"""The real Codex rollouts and Claude Code captures (tests/fixtures) through the importers, compared
with what happened in those sessions (tests/fixtures/README.md and the Codex field guide)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from history_fixtures import encode, write_lines

from conftest import CODEX_SESSIONS, FAILURE
from memlane import hooks, project
from memlane.importers import Importer, Options, Report, discover
from memlane.memory import Memory

DAY = Path("2026") / "11" / "23"
LEGACY = "01a205ca-e417-7802-af8a-ec67d2413775"  # 0.63.0, notes: 2 failing shell_command, 1 apply_patch
QA = "01a205ca-f115-7cf3-849d-2a12b90cfab8"  # 0.169.0, shop: one question, one answer
BUGFIX = "01a205ca-fcb3-70c0-bbee-e6a95ffd4147"  # 0.169.0, shop: bug fix, then `codex exec resume`
TUI = "01a205cb-22fe-78b1-8c8e-453de30c8c9a"  # 0.169.0, notes: interactive, two prompts


def rollout(session: str) -> Path:
    (path,) = (CODEX_SESSIONS / DAY).glob(f"rollout-*-{session}.jsonl")
    return path


@pytest.fixture
def projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    roots = {}
    for name in ("shop", "notes"):
        roots[name] = tmp_path / "work" / name
        (roots[name] / ".git").mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    return roots


def install_rollouts(codex_home: Path, roots: dict[str, Path], lines_of: dict[str, int] | None = None) -> None:
    """The real rollouts, re-homed from /home/dev/src/<name> to the test's projects (nothing else changed);
    ``lines_of`` keeps only the first N lines of a session (a file read while the session is running)."""
    for source in sorted((CODEX_SESSIONS / DAY).glob("*.jsonl")):
        text = source.read_text()
        for name, root in roots.items():
            text = text.replace(f"/home/dev/src/{name}", str(root))
        session = source.stem[-36:]
        if lines_of and session in lines_of:
            text = "".join(text.splitlines(keepends=True)[: lines_of[session]])
        dest = codex_home / "sessions" / DAY / source.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)


def import_codex(root: Path, **opts: Any) -> Report:
    options = Options(**{"sources": ["codex"], "every": True, **opts})
    proj = project.identify(root)
    with Importer(proj, options) as importer:
        return importer.run(discover(proj, options))


def session_events(root: Path, session: str) -> list[Any]:
    with Memory.open(root) as mem:
        return mem.history(session=session, limit=100000, oldest_first=True)


def observations(root: Path, session: str) -> list[Any]:
    return [e for e in session_events(root, session) if e.type == "tool_observation"]


def test_real_codex_rollouts_import_as_they_happened(projects: dict[str, Path], tmp_path: Path) -> None:
    install_rollouts(tmp_path / "codex-home", projects)
    report = import_codex(projects["shop"])
    assert Counter(f.status for f in report.files) == {"imported": 4}
    by_session = {f.session_id: f for f in report.files}
    # Right project: the notes sessions land in the notes store, the shop ones in the shop store.
    assert {s: by_session[s].project for s in (LEGACY, TUI)} == {
        LEGACY: project.identify(projects["notes"]).id,
        TUI: project.identify(projects["notes"]).id,
    }
    assert by_session[QA].project == by_session[BUGFIX].project == project.identify(projects["shop"]).id

    # Counts by type: prompts as typed (0.63 writes each twice, 0.169 once), every tool call, every answer.
    assert by_session[LEGACY].types == {"user_prompt": 1, "tool_observation": 3, "agent_response": 2}
    assert by_session[QA].types == {"user_prompt": 1, "agent_response": 1}
    assert by_session[BUGFIX].types == {"user_prompt": 2, "tool_observation": 7, "agent_response": 5}
    assert by_session[TUI].types == {"user_prompt": 2, "tool_observation": 1, "agent_response": 3}
    assert all(f.bad_lines == 0 and f.unpaired_tools == 0 for f in report.files)


def test_real_codex_exit_codes_and_outputs(projects: dict[str, Path], tmp_path: Path) -> None:
    install_rollouts(tmp_path / "codex-home", projects)
    import_codex(projects["shop"])

    legacy = observations(projects["notes"], LEGACY)
    assert [(e.metadata["tool_name"], e.metadata.get("exit_code")) for e in legacy] == [
        ("Bash", 1),
        ("apply_patch", 0),
        ("Bash", 1),
    ]
    assert [e.metadata["success"] for e in legacy] == [False, True, False]
    assert "No module named notes.__main__" in legacy[0].content
    assert "Traceback (most recent call last)" in legacy[2].content

    bugfix = observations(projects["shop"], BUGFIX)
    bash = [e for e in bugfix if e.metadata["tool_name"] == "Bash"]
    assert [e.metadata["exit_code"] for e in bash] == [0, 1, 0, 0, 0]
    failed = bash[1]
    assert failed.metadata["command"] == "python3 -m unittest discover -s tests -v"
    assert "test_total_rounds_to_cents" in failed.content and "FAIL" in failed.content
    # Codex's header lines are metadata, not output.
    assert not any("Chunk ID:" in e.content or "Wall time:" in e.content for e in bugfix)

    (tui,) = observations(projects["notes"], TUI)
    assert tui.metadata["exit_code"] == 0 and "TODO: paginate long lists" in tui.content


def test_real_codex_patches_name_their_files_and_are_stored_once(projects: dict[str, Path], tmp_path: Path) -> None:
    install_rollouts(tmp_path / "codex-home", projects)
    import_codex(projects["shop"])
    patches = [e for e in observations(projects["shop"], BUGFIX) if e.metadata["tool_name"] == "apply_patch"]
    assert [e.metadata["files"] for e in patches] == [["shop/cart.py"], ["tests/test_cart.py"]]
    assert [e.metadata["file_path"] for e in patches] == ["shop/cart.py", "tests/test_cart.py"]
    assert all(e.content.count("*** Begin Patch") == 1 for e in patches)
    assert "+from decimal import ROUND_HALF_UP, Decimal" in patches[0].content
    (legacy_patch,) = [e for e in observations(projects["notes"], LEGACY) if e.metadata["tool_name"] == "apply_patch"]
    assert legacy_patch.metadata["files"] == ["notes/__main__.py"]

    (summary,) = [e for e in session_events(projects["shop"], BUGFIX) if e.type == "session_summary"]
    assert "Files changed: shop/cart.py, tests/test_cart.py" in summary.content
    assert "python3 -m unittest discover -s tests -v: exit 1" in summary.content or "Errors:" in summary.content


def test_real_codex_resumed_session_is_one_session(projects: dict[str, Path], tmp_path: Path) -> None:
    install_rollouts(tmp_path / "codex-home", projects)
    import_codex(projects["shop"])
    events = session_events(projects["shop"], BUGFIX)
    prompts = [e.content for e in events if e.type == "user_prompt"]
    assert prompts[0].startswith("Fix the cart total rounding bug")
    assert prompts[1].startswith("Good. Add regression tests")
    assert Counter(e.type for e in events)["session_start"] == 1
    assert Counter(e.type for e in events)["session_summary"] == 1


def test_real_codex_session_times(projects: dict[str, Path], tmp_path: Path) -> None:
    """The interactive session was created at 00:25:28.592 (session_meta.timestamp); its first line was
    only written at 00:25:33, when the first prompt was sent."""
    install_rollouts(tmp_path / "codex-home", projects)
    import_codex(projects["shop"])
    with Memory.open(projects["notes"]) as mem:
        info = mem.store.session(TUI)
    assert info is not None
    assert info["started_at"] == "2026-11-23T00:25:28.592Z"
    # An imported session that ended its last turn is closed at its last event, not "open forever".
    assert info["ended_at"] == "2026-11-23T00:25:38.200Z"


def counts(*roots: Path) -> Counter[str]:
    total: Counter[str] = Counter()
    for root in roots:
        with Memory.open(root) as mem:
            total.update(e.type for e in mem.history(limit=100000))
    return total


def test_real_codex_reimport_adds_nothing(projects: dict[str, Path], tmp_path: Path) -> None:
    install_rollouts(tmp_path / "codex-home", projects)
    import_codex(projects["shop"])
    stored = counts(projects["shop"], projects["notes"])
    again = import_codex(projects["shop"])
    assert Counter(f.status for f in again.files) == {"unchanged": 4}
    for path in (tmp_path / "codex-home" / "sessions").rglob("*.jsonl"):
        path.touch()  # a new mtime: every file is read again, and nothing is new
    third = import_codex(projects["shop"])
    assert Counter(f.status for f in third.files) == {"imported": 4}
    assert third.total("new") == 0
    assert counts(projects["shop"], projects["notes"]) == stored


@pytest.mark.parametrize(
    ("session", "cut"),
    [
        (BUGFIX, 22),  # after the failing unittest's output, before the model's next message
        (BUGFIX, 27),  # after the progress note and the apply_patch call, before its output
        (BUGFIX, 39),  # after the turn's final message, before task_complete
        (LEGACY, 12),  # 0.63 (no turn markers): after the first failing shell command's output
    ],
)
def test_mid_turn_import_stores_only_what_is_final(
    projects: dict[str, Path], tmp_path: Path, session: str, cut: int
) -> None:
    root = projects["shop" if session == BUGFIX else "notes"]
    install_rollouts(tmp_path / "codex-home", projects, lines_of={session: cut})
    partial = import_codex(root, session_files=[str(next((tmp_path / "codex-home").rglob(f"*{session}.jsonl")))])
    (result,) = partial.files
    assert result.status == "imported" and "mid-turn" in result.message
    finals = [e for e in session_events(root, session) if e.type == "agent_response" and "kind" not in e.metadata]
    assert finals == []  # nothing claims to be the turn's final answer yet

    install_rollouts(tmp_path / "codex-home", projects)
    import_codex(root, session_files=[str(next((tmp_path / "codex-home").rglob(f"*{session}.jsonl")))])
    complete = [e for e in session_events(root, session) if e.type not in ("session_summary", "session_end")]
    expected = {
        BUGFIX: {"user_prompt": 2, "tool_observation": 7, "agent_response": 5, "session_start": 1},
        LEGACY: {"user_prompt": 1, "tool_observation": 3, "agent_response": 2, "session_start": 1},
    }[session]
    assert Counter(e.type for e in complete) == expected
    assert len({(e.type, e.content) for e in complete}) == len(complete)  # no duplicates
    assert sum(e.type == "session_summary" for e in session_events(root, session)) == 1


def test_real_claude_failed_bash_hook_then_import_is_one_event(
    proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostToolUseFailure (the real payload) and the transcript's real is_error line store one event."""
    claude_dir = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_dir))
    data = json.loads((FAILURE / "PostToolUseFailure.json").read_text())
    failed_line = json.loads((FAILURE / "transcript-failed-bash-line.jsonl").read_text())
    real_cwd = data["cwd"]
    # The capture kept only the result line: rebuild the prompt and the assistant's call it answers
    # from the payload (same ids, input and session), the way Claude Code writes them.
    base = {k: failed_line[k] for k in ("sessionId", "version", "gitBranch", "userType")} | {"cwd": str(proj)}
    prompt = {
        **base,
        "type": "user",
        "uuid": "u-1",
        "promptId": data["prompt_id"],
        "timestamp": "2026-11-23T18:42:39.100Z",
        "message": {"role": "user", "content": "run the tests"},
    }
    call = {
        **base,
        "type": "assistant",
        "uuid": failed_line["parentUuid"],
        "timestamp": "2026-11-23T18:42:39.500Z",
        "message": {
            "role": "assistant",
            "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": data["tool_use_id"], "name": "Bash", "input": data["tool_input"]}],
        },
    }
    failed_line["cwd"] = str(proj)
    path = claude_dir / "projects" / encode(proj) / f"{data['session_id']}.jsonl"
    write_lines(path, [prompt, call, failed_line])

    assert hooks.handle("PostToolUseFailure", json.dumps({**data, "cwd": str(proj)}).encode()) == ""
    options = Options(sources=["claude"])
    target = project.identify(proj)
    with Importer(target, options) as importer:
        report = importer.run(discover(target, options))
    assert report.files[0].status == "imported", report.files[0].message
    (obs,) = [e for e in session_events(proj, data["session_id"]) if e.type == "tool_observation"]
    assert obs.metadata["exit_code"] == 3
    assert obs.metadata["success"] is False
    assert obs.metadata["error"] == "Exit code 3"
    assert obs.metadata["command"] == "echo 'FAILED test_x - failmark-capybara'; exit 3"
    assert "FAILED test_x - failmark-capybara" in obs.content
    assert real_cwd != str(proj)  # the payload really was re-homed
