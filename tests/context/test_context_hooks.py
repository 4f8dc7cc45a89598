"""The hooks' injections go through the composer: blocks, refresh on rule edits, budgets, lean imports."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import payload
from memlane.context.compose import PERSISTENT_TITLE, VOLATILE_TITLE

Hook = Callable[..., str]


def context_of(out: str) -> str:
    return str(json.loads(out)["hookSpecificOutput"]["additionalContext"]) if out else ""


@pytest.fixture
def rules(proj: Path) -> Path:
    (proj / ".git" / "HEAD").write_text("ref: refs/heads/fix/pool\n")
    (proj / "AGENTS.md").write_text("Run the pool tests with `pytest -k pool` (rule marker heron).\n")
    (proj / "CLAUDE.md").write_text("Claude Code loads me itself (marker kestrel).\n")
    return proj


def first_session(hook: Hook) -> None:
    for name in ("01-SessionStart.json", "02-UserPromptSubmit.json", "04-PostToolUse.json", "05-Stop.json"):
        data = payload(name)
        hook(data["hook_event_name"], data)


def test_session_start_injects_rules_state_and_recent_work(hook: Hook, rules: Path) -> None:
    first_session(hook)
    text = context_of(hook("SessionStart", payload("07-SessionStart.json", session_id="s2")))
    assert text.startswith("memlane: where this project left off")
    assert text.index(PERSISTENT_TITLE) < text.index(VOLATILE_TITLE) < text.index("## Recent work")
    assert "heron" in text and "kestrel" not in text  # CLAUDE.md is Claude Code's own
    assert "gitBranch: fix/pool" in text and f"workingDirectory: {rules.resolve()}" in text
    assert "zebrafinch" in text.split("## Recent work")[1]


def test_new_project_without_rules_or_memory_injects_nothing(hook: Hook) -> None:
    assert hook("SessionStart", payload("01-SessionStart.json")) == ""


def test_prompt_injection_repeats_rules_only_after_an_edit(hook: Hook, rules: Path) -> None:
    first_session(hook)
    hook("SessionStart", payload("07-SessionStart.json", session_id="s2"))
    ask = payload("08-UserPromptSubmit.json", session_id="s2", prompt="the connection pool timeout is back again")
    text = context_of(hook("UserPromptSubmit", ask))
    assert text.startswith("memlane: relevant memory") and "[mem:" in text
    assert PERSISTENT_TITLE not in text and VOLATILE_TITLE in text
    (rules / "AGENTS.md").write_text("Pool size is 20 now (rule marker egret).\n")
    text = context_of(hook("UserPromptSubmit", {**ask, "prompt_id": "p2"}))
    assert PERSISTENT_TITLE in text and "egret" in text and "[mem:" in text
    text = context_of(hook("UserPromptSubmit", {**ask, "prompt_id": "p3"}))
    assert PERSISTENT_TITLE not in text  # said once


def test_rule_edit_alone_is_injected_without_memories(hook: Hook, rules: Path) -> None:
    hook("SessionStart", payload("01-SessionStart.json"))
    quiet = payload("02-UserPromptSubmit.json", prompt="what colour should the logo be?")
    assert hook("UserPromptSubmit", quiet) == ""
    (rules / "AGENTS.md").write_text("Logo colours live in docs/brand.md (rule marker ibis).\n")
    text = context_of(hook("UserPromptSubmit", {**quiet, "prompt_id": "q2", "prompt": "rename the settings page"}))
    assert text.startswith("memlane: the project's rules") and "ibis" in text


def test_files_touched_by_tools_show_in_the_volatile_block(hook: Hook, rules: Path) -> None:
    first_session(hook)
    edit = payload(
        "04-PostToolUse.json",
        tool_name="Edit",
        tool_use_id="t-edit",
        tool_input={"file_path": str(rules / "src" / "pool.py"), "old_string": "10", "new_string": "20"},
        tool_response={"filePath": str(rules / "src" / "pool.py"), "structuredPatch": []},
    )
    hook("PostToolUse", edit)
    ask = payload("02-UserPromptSubmit.json", prompt_id="p9", prompt="connection pool timeout again, check it")
    text = context_of(hook("UserPromptSubmit", ask))
    assert 'filesTouched: ["src/pool.py"]' in text


def test_huge_rules_stay_within_the_injection_budget(hook: Hook, rules: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (rules / "AGENTS.md").write_text("\n".join(f"rule {i}: " + "be careful " * 20 for i in range(500)))
    first_session(hook)
    text = context_of(hook("SessionStart", payload("07-SessionStart.json", session_id="s2")))
    assert len(text) <= 4000 and "… [+" in text and "zebrafinch" in text
    monkeypatch.setenv("MEMLANE_INJECTION_MAX_CHARS", "50000")
    text = context_of(hook("SessionStart", payload("07-SessionStart.json", session_id="s3")))
    assert len(text) <= 9500


def test_volatile_set_by_the_cli_reaches_the_hook_without_daemon(hook: Hook, rules: Path) -> None:
    from memlane.context import AppContextService

    AppContextService.for_path(str(rules)).volatile_file().put("currentTask", "migrate the pool to asyncpg")
    first_session(hook)
    text = context_of(hook("SessionStart", payload("07-SessionStart.json", session_id="s2")))
    assert "currentTask: migrate the pool to asyncpg" in text


def test_context_disabled_gives_the_old_body_only(hook: Hook, rules: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_CONTEXT_ENABLED", "false")
    first_session(hook)
    text = context_of(hook("SessionStart", payload("07-SessionStart.json", session_id="s2")))
    assert "heron" not in text and VOLATILE_TITLE not in text and "zebrafinch" in text


def test_hook_import_path_stays_lean() -> None:
    code = (
        "import sys, memlane.hooks, memlane.context.gather, memlane.context.compose;"
        "print([m for m in ('dataclasses', 'typing', 'pathlib', 'hashlib', 'threading') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
