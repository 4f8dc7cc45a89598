"""``/workflow-memory <command>`` typed in Claude Code (seed 001 §3.1), answered by memlane's own hook, and
the seed's summary settings (summarization.enabled / maxLength → workflow.summarization / summary_max_length)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from wf_support import cfg, init, meta, raw_progress

from conftest import payload
from memlane import config, project
from memlane.memory import Memory
from memlane.workflow import command, lifecycle, sessions, store

Hook = Callable[..., str]
SID = "6f8a962b-e546-4507-8ff4-23e5a2f295f8"


def ask(hook: Hook, text: str) -> dict[str, object]:
    out = hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"), prompt=text, session_id=SID)
    return json.loads(out)


def said(out: dict[str, object]) -> tuple[str, str]:
    """(what the user is shown, what Claude is given)."""
    context = out["hookSpecificOutput"]["additionalContext"]  # type: ignore[index]
    return str(out["systemMessage"]), str(context)


def test_parse_only_the_command() -> None:
    assert command.parse("/workflow-memory status") == ["status"]
    assert command.parse("  /workflow-memory   search  pool timeout ") == ["search", "pool", "timeout"]
    assert command.parse("/memlane:workflow-memory list") == ["list"]
    assert command.parse("/workflow-memory") == []
    assert command.parse("/workflow-memoryx status") is None
    assert command.parse("/workflow-task-point go") is None
    assert command.parse("please /workflow-memory status") is None
    assert command.parse(None) is None


def test_commands_run_in_the_hook_and_answer_user_and_claude(hook: Hook, proj: Path) -> None:
    memory_id = project.identify(proj).id
    user, claude = said(ask(hook, "/workflow-memory status"))
    assert "has no workflow memory" in user and "/workflow-memory init" in user
    assert "memlane already ran the user's `/workflow-memory status`" in claude and "has no workflow memory" in claude

    user, _ = said(ask(hook, "/workflow-memory init"))
    assert user.startswith("memlane /workflow-memory init:\nCreated workflow memory " + memory_id)
    assert store.exists(memory_id) and store.read_ref(str(proj)) == memory_id

    user, _ = said(ask(hook, "/workflow-memory status"))
    assert f"memory: {memory_id}" in user and "current workflow: -" in user and "project link: symlink" in user

    user, _ = said(ask(hook, "/workflow-memory list"))
    assert user.splitlines()[1].startswith(f"* {memory_id} (shop): 0 session record(s)")

    user, _ = said(ask(hook, "/workflow-memory frobnicate"))
    assert "unknown command 'frobnicate'" in user and "switch ID" in user
    user, _ = said(ask(hook, "/workflow-memory switch nowhere"))
    assert user.endswith("error: no workflow memory 'nowhere' (`/workflow-memory list` shows them)")
    user, _ = said(ask(hook, "/workflow-memory remove"))
    assert "error: give exactly one workflow memory id" in user and store.exists(memory_id)

    # None of it is a memory: the prompts are memlane's own commands, like /memlane:…
    if os.path.exists(project.identify(proj).db_file):
        with Memory.open(str(proj), create=False) as mem:
            assert mem.history(types=["user_prompt"]) == []


def test_workflow_session_commands(hook: Hook, proj: Path) -> None:
    memory_id = init(proj)
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"), prompt="/workflow-task-point go", session_id=SID)
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"), prompt="estimate the AUTH domain", session_id=SID)
    user, _ = said(ask(hook, "/workflow-memory search auth domain"))
    assert "estimate the AUTH domain" in user
    record = Path(sessions.list_files(memory_id)[0]["path"]).read_text()
    assert "/workflow-memory" not in record  # a command to memlane is not part of the workflow's record

    user, _ = said(ask(hook, "/workflow-memory complete"))
    assert user.startswith("memlane /workflow-memory complete:\nWorkflow task-point completed")
    assert raw_progress(memory_id)["setup"]["workflows"]["task-point"]["status"] == "done"
    assert meta(memory_id)["activeSessions"] == {}

    user, _ = said(ask(hook, "/workflow-memory update"))
    assert "memory.md regenerated" in user
    user, _ = said(ask(hook, "/workflow-memory cleanup"))
    assert user.endswith("Removed 0 session record(s) (keep 50 newest, at most 90 days old).")

    other = store.check_id("elsewhere")
    lifecycle.create(other, str(proj), "shop", cfg())
    user, _ = said(ask(hook, "/memlane:workflow-memory switch elsewhere"))
    assert (
        f"now uses workflow memory {other} (symlink); was {memory_id}." in user and store.read_ref(str(proj)) == other
    )
    user, _ = said(ask(hook, f"/workflow-memory remove {memory_id}"))
    assert user.startswith(f"memlane /workflow-memory remove {memory_id}:\nRemoved workflow memory {memory_id}")
    assert not store.exists(memory_id)


def test_off_when_workflow_memory_is_disabled(hook: Hook, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_WORKFLOW_ENABLED", "false")
    user, _ = said(ask(hook, "/workflow-memory init"))
    assert "workflow memory is off (workflow.enabled = false)" in user
    assert not store.exists(project.identify(proj).id)


def test_summary_settings_enabled_and_max_length(proj: Path) -> None:
    """The seed's config.json ``summarization: {enabled, maxLength}``."""
    assert config.WorkflowConfig().summary_max_length == 500
    p = project.identify(proj)
    for enabled, longest in ((True, 80), (True, 2000), (False, 2000)):
        memory_id = f"m-{enabled}-{longest}"
        wcfg = cfg(summarization=enabled, summary_max_length=longest)
        lifecycle.init(p.root_str, p.name, memory_id, wcfg)
        name = lifecycle.start_workflow(memory_id, "task-point", SID, p.root_str, p.name)
        sessions.add_prompt(memory_id, name, "Estimate the AUTH domain. " + "Then the ORDER domain. " * 20)
        sessions.add_response(memory_id, name, "Done: 13 points. " + "More detail. " * 40, ["Read"], 2000)
        lifecycle.complete(memory_id, "task-point", p.root_str, wcfg)
        text = Path(sessions.file_path(memory_id, name)).read_text()
        if not enabled:
            assert "## Summary" not in text
            continue
        summary = text.split("## Summary\n\n", 1)[1].strip()
        assert summary.startswith("- 1 prompt(s), 1 response(s)") and len(summary) <= longest
        assert summary.endswith("…") == (longest == 80)
