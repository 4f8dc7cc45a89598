"""Claude Code history import: the real captured transcript and synthetic ones with every line type."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from history_fixtures import (
    REAL_SESSION,
    RICH_COUNTS,
    ClaudeSession,
    encode,
    real_transcript,
    rich_claude_session,
)

from conftest import TRANSCRIPTS, payload
from memlane import project
from memlane.importers import Importer, ImportError_, Options, Report, discover
from memlane.memory import Memory


@pytest.fixture
def claude_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(path))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    return path


def run_import(root: Path, **opts: Any) -> Report:
    options = Options(**{"sources": ["claude"], **opts})
    proj = project.identify(root)
    with Importer(proj, options) as importer:
        return importer.run(discover(proj, options))


def events_of(root: Path) -> list[Any]:
    with Memory.open(root) as mem:
        return mem.history(limit=100000, oldest_first=True)


def types(root: Path) -> Counter[str]:
    return Counter(e.type for e in events_of(root))


def test_real_transcript_imports_once_with_original_times(proj: Path, claude_dir: Path) -> None:
    real_transcript(claude_dir, proj)
    report = run_import(proj)
    assert report.as_dict()["files"] == {"imported": 1}
    got = types(proj)
    # 2 prompts, 2 Bash observations, 2 final answers + 2 interim texts, plus the import's start and end
    # markers (an imported session is not left open) and summary.
    assert got == {
        "user_prompt": 2,
        "tool_observation": 2,
        "agent_response": 4,
        "session_start": 1,
        "session_end": 1,
        "session_summary": 1,
    }
    events = events_of(proj)
    assert {e.session_id for e in events} == {REAL_SESSION}
    lines = [json.loads(x) for x in (TRANSCRIPTS / f"{REAL_SESSION}.jsonl").read_text().splitlines()]
    prompt_times = [
        x["timestamp"] for x in lines if x.get("type") == "user" and isinstance(x["message"]["content"], str)
    ]
    assert [e.ts for e in events if e.type == "user_prompt"] == prompt_times
    narwhal = next(e for e in events if e.type == "tool_observation" and "narwhal" in e.content)
    assert narwhal.metadata["tool_name"] == "Bash" and narwhal.metadata["exit_code"] == 0
    assert narwhal.metadata["imported"] == "claude"

    second = run_import(proj)
    assert second.as_dict()["files"] == {"unchanged": 1} and second.total("new") == 0
    forced = run_import(proj, force=True)
    assert forced.as_dict()["files"] == {"imported": 1}
    assert types(proj) == got, "--force re-imports cleanly: same events, nothing doubled"


def test_import_after_live_capture_adds_only_what_hooks_never_see(
    proj: Path, claude_dir: Path, hook: Callable[..., str]
) -> None:
    for name in ("01-SessionStart.json", "02-UserPromptSubmit.json", "04-PostToolUse.json", "05-Stop.json"):
        hook(payload(name)["hook_event_name"], payload(name))
    before = types(proj)
    real_transcript(claude_dir, proj)
    report = run_import(proj)
    after = types(proj)
    added = after - before
    # First turn: prompt, Bash result and final answer were captured by the hooks; only the interim text is new.
    # Second turn was never delivered to the hooks here, so all of it is new.
    assert after["user_prompt"] == 2 and after["tool_observation"] == 2
    assert added == {"agent_response": 3, "user_prompt": 1, "tool_observation": 1}
    assert report.total("present") == 3
    assert after["session_start"] == 1, "the hooks own the session's markers"


def test_every_line_and_block_type(proj: Path, claude_dir: Path) -> None:
    session = rich_claude_session("s-rich-0001", proj)
    session.write(claude_dir)
    report = run_import(proj)
    result = report.files[0]
    assert result.status == "imported"
    assert result.types == RICH_COUNTS
    assert result.bad_lines == 3 and len(result.bad_line_numbers) == 3
    assert result.unpaired_tools == 1
    assert result.skipped["thinking block"] == 1
    assert result.skipped["sidechain"] == 2
    assert result.skipped["meta"] == 1
    assert result.skipped["queue-operation"] == 1 and result.skipped["attachment"] == 1
    events = events_of(proj)
    text = "\n".join(e.content for e in events)
    assert "chain of thought" not in text, "thinking blocks are never imported"
    assert "Docs say retry once" not in text, "sidechains are skipped by default"
    obs = {e.metadata.get("tool_use_id"): e for e in events if e.type == "tool_observation"}
    assert obs["toolu_read1"].metadata["file_path"].endswith("payments.py")
    assert obs["toolu_err1"].metadata["success"] is False
    assert "src/cart.py" in obs["toolu_glob1"].content, "parallel results pair by tool_use_id"
    summary = [e for e in events if e.type == "compaction"]
    assert summary and "ERR_PAYMENT_402" in summary[0].content and summary[0].metadata["kind"] == "summary"


def test_sidechains_when_asked(proj: Path, claude_dir: Path) -> None:
    rich_claude_session("s-rich-0002", proj).write(claude_dir)
    run_import(proj, sidechains=True)
    events = events_of(proj)
    side = [e for e in events if e.metadata.get("sidechain")]
    assert side and "Search the docs" in side[0].content
    assert any("Docs say retry once" in e.content for e in events)


def test_privacy_applies_to_imported_history(proj: Path, claude_dir: Path, memlane_home: Path) -> None:
    rich_claude_session("s-rich-0003", proj).write(claude_dir)
    run_import(proj)
    text = "\n".join(e.content + json.dumps(e.metadata) for e in events_of(proj))
    assert "my card 4111" not in text
    assert "sk-live-abcdefghijklmnopqrstuvwx" not in text and "AKIAIOSFODNN7EXAMPLE" not in text
    for path in memlane_home.rglob("*"):
        if path.is_file():
            raw = path.read_bytes()
            assert b"my card 4111" not in raw and b"AKIAIOSFODNN7EXAMPLE" not in raw, path


def test_lossy_folder_names_never_mix_projects(tmp_path: Path, claude_dir: Path) -> None:
    # /x/a-b and /x/a/b encode to the same folder name; the cwd inside each file decides.
    one = tmp_path / "x" / "a-b"
    two = tmp_path / "x" / "a" / "b"
    for root in (one, two):
        (root / ".git").mkdir(parents=True)
    assert encode(one) == encode(two)
    ClaudeSession("s-one", one).write(claude_dir)
    first = ClaudeSession("s-one", one)
    first.prompt("work in a-b (lynx)")
    first.text("done a-b")
    first.write(claude_dir)
    second = ClaudeSession("s-two", two)
    second.prompt("work in a/b (puffin)")
    second.text("done a/b")
    second.write(claude_dir)

    report = run_import(one)
    statuses = {f.session_id or os.path.basename(f.path): f.status for f in report.files}
    assert sorted(statuses.values()) == ["imported", "other-project"]
    assert "lynx" in " ".join(e.content for e in events_of(one))
    assert "puffin" not in " ".join(e.content for e in events_of(one))

    run_import(one, every=True)
    assert "puffin" in " ".join(e.content for e in events_of(two)), "--all files each session under its own project"
    assert "puffin" not in " ".join(e.content for e in events_of(one))


def test_sessions_started_in_a_subfolder_belong_to_the_project(proj: Path, claude_dir: Path) -> None:
    sub = proj / "services" / "api"
    sub.mkdir(parents=True)
    s = ClaudeSession("s-sub", sub)
    s.prompt("fix the api service (walrus)")
    s.write(claude_dir)
    run_import(proj)
    assert any("walrus" in e.content for e in events_of(proj))


def test_dry_run_writes_nothing(proj: Path, claude_dir: Path) -> None:
    rich_claude_session("s-dry", proj).write(claude_dir)
    report = run_import(proj, dry_run=True)
    # The import's own count (docs/import.md): the conversation + start and end markers + the summary
    assert report.files[0].status == "dry-run" and report.total("new") == sum(RICH_COUNTS.values()) + 3
    assert events_of(proj) == []
    with Memory.open(proj) as mem:
        assert mem.store.db.execute("SELECT COUNT(*) FROM imports").fetchone()[0] == 0


def test_limit_and_since(proj: Path, claude_dir: Path) -> None:
    old = ClaudeSession("s-old", proj, start="2025-01-01")
    old.prompt("ancient prompt")
    path = old.write(claude_dir)
    os.utime(path, (1_600_000_000, 1_600_000_000))
    new = ClaudeSession("s-new", proj, start="2026-11-01")
    new.prompt("recent prompt")
    new.write(claude_dir)
    report = run_import(proj, since="2026-01-01T00:00:00.000Z")
    assert Counter(f.status for f in report.files) == {"imported": 1, "old": 1}
    report = run_import(proj, limit=1, force=True)
    assert Counter(f.status for f in report.files) == {"imported": 1, "over-limit": 1}


def test_session_file_of_another_project_is_refused(proj: Path, tmp_path: Path, claude_dir: Path) -> None:
    other = tmp_path / "elsewhere"
    (other / ".git").mkdir(parents=True)
    s = ClaudeSession("s-else", other)
    s.prompt("not yours")
    path = s.write(claude_dir)
    with pytest.raises(ImportError_, match="recorded in"):
        run_import(proj, session_files=[str(path)])
    assert events_of(proj) == []


def test_file_without_cwd_is_left_alone(proj: Path, claude_dir: Path) -> None:
    folder = claude_dir / "projects" / encode(proj)
    folder.mkdir(parents=True)
    (folder / "s-nocwd.jsonl").write_text(json.dumps({"type": "summary", "summary": "x"}) + "\n")
    report = run_import(proj)
    assert report.files[0].status == "unconfirmed"
    assert events_of(proj) == []


def test_appended_session_imports_only_the_new_lines(proj: Path, claude_dir: Path) -> None:
    s = ClaudeSession("s-grow", proj)
    s.prompt("first question (ibis)")
    s.text("first answer")
    s.write(claude_dir)
    run_import(proj)
    first = types(proj)
    s.prompt("second question (kiwi)")
    s.text("second answer")
    s.write(claude_dir)
    report = run_import(proj)
    assert report.files[0].status == "imported"
    after = types(proj)
    assert after["user_prompt"] == first["user_prompt"] + 1
    assert after["session_summary"] == 1, "the import's summary is replaced, not stacked"
    summary = next(e for e in events_of(proj) if e.type == "session_summary")
    assert "kiwi" in summary.content


def test_standing_preferences_in_imported_prompts_are_learned(proj: Path, claude_dir: Path) -> None:
    from memlane.context import preferences
    from memlane.context.scope import ContextScope, PersistenceKind
    from memlane.context.store import project_store

    session = ClaudeSession("s-prefs-0001", proj)
    session.prompt("Always use pnpm, not npm. <private>never share key 4111</private> Add lodash.")
    session.text("Added lodash with pnpm.")
    session.write(claude_dir)
    run_import(proj, dry_run=True)
    pid = project.identify(proj).id
    store = project_store(pid, ContextScope.APP, PersistenceKind.PERSISTENT)
    assert preferences.KEY not in store.snapshot(), "a dry run learns nothing"
    run_import(proj)
    learned = preferences.parse(store.snapshot().get(preferences.KEY))
    assert [text for text, _ in learned] == ["Always use pnpm, not npm."]
