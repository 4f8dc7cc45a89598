"""Codex rollout import: current and legacy layouts, cwd filtering, pairing, privacy, idempotence."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from history_fixtures import RICH_CODEX_COUNTS, CodexRollout, legacy_codex_rollout, rich_codex_rollout

from memlane import project
from memlane.importers import Importer, Options, Report, discover
from memlane.memory import Memory


@pytest.fixture
def codex_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(path))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "no-claude"))
    return path


def run_import(root: Path, **opts: Any) -> Report:
    options = Options(**{"sources": ["codex"], **opts})
    proj = project.identify(root)
    with Importer(proj, options) as importer:
        return importer.run(discover(proj, options))


def events_of(root: Path) -> list[Any]:
    with Memory.open(root) as mem:
        return mem.history(limit=100000, oldest_first=True)


def test_rollout_with_every_item_type(proj: Path, codex_dir: Path) -> None:
    rich_codex_rollout("019a2d7a-41c4-78b1-b7cc-a45d62a89cd5", proj).write(codex_dir)
    report = run_import(proj)
    result = report.files[0]
    assert result.status == "imported", result.message
    assert result.session_id == "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"
    assert result.types == RICH_CODEX_COUNTS
    assert result.bad_lines == 1 and result.unpaired_tools == 1
    assert result.skipped["reasoning"] == 1

    events = events_of(proj)
    prompts = [e.content for e in events if e.type == "user_prompt"]
    assert len(prompts) == 2 and "flaky inventory sync" in prompts[0]
    assert not any("environment_context" in p for p in prompts), "injected context is not a prompt"
    obs = {e.metadata["tool_use_id"]: e for e in events if e.type == "tool_observation"}
    shell = obs["call_sh1"]
    assert shell.metadata["tool_name"] == "Bash" and shell.metadata["command"] == "pytest tests/test_sync.py -x"
    assert shell.metadata["exit_code"] == 1 and shell.metadata["success"] is False and "otter" in shell.content
    assert "LOCK_TIMEOUT = 30" in obs["call_ap1"].content
    assert obs["call_ls1"].metadata["command"] == "git diff --stat"
    finals = [e.content for e in events if e.type == "agent_response"]
    assert any("beaver" in f for f in finals) and any("docs/sync.md" in f for f in finals)
    assert next(e.ts for e in events if e.type == "user_prompt").startswith("2026-02-10T09:")
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in json.dumps([e.as_dict() for e in events])

    again = run_import(proj)
    assert again.as_dict()["files"] == {"unchanged": 1}
    forced = run_import(proj, force=True)
    # What the store gains, as every count of an import: + the start and end markers and the summary
    assert forced.total("new") == sum(RICH_CODEX_COUNTS.values()) + 3
    assert Counter(e.type for e in events_of(proj)) == Counter(e.type for e in events)


def test_legacy_layout(proj: Path, codex_dir: Path) -> None:
    legacy_codex_rollout(codex_dir, "5973b6c0-94b8-487b-a530-2aeb6098ae0e", proj)
    report = run_import(proj)
    assert report.files[0].status == "imported", report.files[0].message
    events = events_of(proj)
    assert [e.content for e in events if e.type == "user_prompt"] == ["Rename the cart module (old style)"]
    assert any(e.metadata.get("command") == "mv cart.py basket.py" for e in events)
    assert events[0].ts.startswith("2025-05-01T08:00")


def test_rollouts_of_other_projects_are_not_imported(proj: Path, tmp_path: Path, codex_dir: Path) -> None:
    other = tmp_path / "other-repo"
    (other / ".git").mkdir(parents=True)
    mine = CodexRollout("aaaaaaaa-0000-0000-0000-000000000001", proj)
    mine.add("session_meta", {"id": mine.session_id, "cwd": str(proj)})
    mine.add("event_msg", {"type": "user_message", "message": "mine (tapir)"})
    mine.write(codex_dir)
    theirs = CodexRollout("aaaaaaaa-0000-0000-0000-000000000002", other, day="2026-02-11")
    theirs.add("session_meta", {"id": theirs.session_id, "cwd": str(other)})
    theirs.add("event_msg", {"type": "user_message", "message": "theirs (okapi)"})
    theirs.write(codex_dir)
    report = run_import(proj)
    assert Counter(f.status for f in report.files) == {"imported": 1, "other-project": 1}
    text = " ".join(e.content for e in events_of(proj))
    assert "tapir" in text and "okapi" not in text
