"""Capture fidelity (issue 17): failed tools and subagents are captured like successes, and odd or huge
inputs are stored with what can be read instead of being dropped."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import CLAUDE_CODE, FAILURE, payload, run_hook_process
from memlane import config, install, privacy, project
from memlane.plugin.build import hooks_config
from memlane.store import Store

Hook = Callable[..., str]


def events(proj: Path, type_: str | None = None) -> list[Any]:
    p = project.identify(proj)
    with Store(p.db_path, p.id) as s:
        return s.history(types=[type_] if type_ else None, limit=10000, oldest_first=True)


def more(name: str, **overrides: Any) -> dict[str, Any]:
    return {**json.loads((CLAUDE_CODE / "more" / name).read_text()), **overrides}


def failure_payload(**overrides: Any) -> dict[str, Any]:
    data = json.loads((FAILURE / "PostToolUseFailure.json").read_text())
    data.update(overrides)
    return data


def test_failed_bash_is_captured_with_exit_code_and_output(hook: Hook, proj: Path) -> None:
    assert hook("PostToolUseFailure", failure_payload()) == ""
    (obs,) = events(proj, "tool_observation")
    assert obs.metadata["tool_name"] == "Bash"
    assert obs.metadata["command"] == "echo 'FAILED test_x - failmark-capybara'; exit 3"
    assert obs.metadata["exit_code"] == 3
    assert obs.metadata["success"] is False
    assert obs.metadata["error"] == "Exit code 3"
    assert obs.metadata["tool_use_id"] == "toolu_a79b710d992c44e1b8073478"
    assert obs.metadata["duration_ms"] == 37
    assert obs.content == (
        "Bash: echo 'FAILED test_x - failmark-capybara'; exit 3\nExit code 3\nFAILED test_x - failmark-capybara"
    )


def test_failure_redelivered_is_stored_once(hook: Hook, proj: Path) -> None:
    hook("PostToolUseFailure", failure_payload())
    hook("PostToolUseFailure", failure_payload())
    assert len(events(proj, "tool_observation")) == 1


def test_failed_non_bash_tool_and_interrupt(hook: Hook, proj: Path) -> None:
    hook(
        "PostToolUseFailure",
        failure_payload(
            tool_name="Read",
            tool_input={"file_path": "/src/missing.py"},
            tool_use_id="toolu_read",
            error="File does not exist.",
        ),
    )
    hook("PostToolUseFailure", failure_payload(tool_use_id="toolu_int", error="Interrupted", is_interrupt=True))
    read, bash = events(proj, "tool_observation")
    assert read.metadata["success"] is False and read.metadata["error"] == "File does not exist."
    assert read.metadata["file_path"] == "/src/missing.py"
    assert bash.metadata["interrupted"] is True and bash.metadata["success"] is False


def test_failure_through_the_real_process(proj: Path) -> None:
    result = run_hook_process("PostToolUseFailure", failure_payload(cwd=str(proj)))
    assert result.returncode == 0 and result.stdout == b""
    (obs,) = events(proj, "tool_observation")
    assert obs.metadata["exit_code"] == 3


def test_subagent_stop_keeps_the_subagents_answer(hook: Hook, proj: Path) -> None:
    # Real 2.1.328 payloads: the Agent tool returns at once ("async_launched"); the answer comes later.
    hook("PostToolUse", more("PostToolUse-Agent-async.json"))
    hook("SubagentStop", more("SubagentStop-agent.json", last_assistant_message="The leak is in pool.py:88 (yak)."))
    hook("SubagentStop", more("SubagentStop-agent.json", last_assistant_message="The leak is in pool.py:88 (yak)."))
    (sub,) = events(proj, "agent_response")
    assert sub.content == "The leak is in pool.py:88 (yak)."
    assert sub.metadata["kind"] == "subagent"
    assert sub.metadata["agent_type"] == "general-purpose"
    assert sub.metadata["agent_id"] == "a12e0cbcbe6dfed2d"
    (launch,) = events(proj, "tool_observation")
    assert launch.metadata["tool_name"] == "Agent" and "async_launched" in launch.content


def test_compaction_helpers_are_not_stored_twice(hook: Hook, proj: Path) -> None:
    hook("PreCompact", more("PreCompact-manual.json"))
    hook("SubagentStop", more("SubagentStop-compact.json"))
    assert events(proj, "agent_response") == []
    (marker,) = events(proj, "compaction")
    assert marker.content == "Context compaction (manual)"


def test_install_and_plugin_register_the_memory_events() -> None:
    assert {"PostToolUseFailure", "SubagentStop"} <= set(install.HOOKS)
    assert install.HOOKS["PostToolUseFailure"]["matcher"] == "*"
    shipped = json.loads((Path(install.__file__).parent / "plugin" / "hooks" / "hooks.json").read_text())
    assert shipped == hooks_config()
    from memlane import hooks

    assert set(install.HOOKS) == set(hooks.EVENTS)


# ---- odd and huge inputs: stored, never dropped ----------------------------------------------------


def test_webfetch_url_with_a_password(hook: Hook, proj: Path) -> None:
    hook(
        "PostToolUse",
        payload(
            "04-PostToolUse.json",
            tool_name="WebFetch",
            tool_input={"url": "https://deploy:PASSw0rd-lemur@internal.example.com/status", "prompt": "status?"},
            tool_response={"code": 200, "result": "all green"},
        ),
    )
    (obs,) = events(proj, "tool_observation")
    assert "PASSw0rd-lemur" not in obs.content and "PASSw0rd-lemur" not in json.dumps(obs.metadata)
    assert "all green" in obs.content
    assert obs.metadata["url"].startswith("https://deploy:")
    assert obs.metadata["url_host"] == "internal.example.com"


def deep(levels: int, leaf: dict[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = leaf
    for _ in range(levels):
        value = {"k": value}
    return value


def test_tool_input_nested_900_deep(hook: Hook, proj: Path) -> None:
    hook(
        "PostToolUse",
        payload("04-PostToolUse.json", tool_name="mcp__x__y", tool_input=deep(900, {"q": "ok"}), tool_response="done"),
    )
    (obs,) = events(proj, "tool_observation")
    assert obs.content.startswith('mcp__x__y: {"k": {"k":') and obs.content.endswith("done")


def test_privacy_filter_redacts_at_any_depth() -> None:
    cfg = config.Config().privacy
    value = deep(5000, {"password": "hunter2-hunter2", "note": "token sk-ant-api03-" + "aB3x9Qz7" * 11})
    filtered, result = privacy.filter_value(value, cfg)
    for _ in range(5000):
        filtered = filtered["k"]
    assert filtered["password"] == cfg.secret_marker
    assert "sk-ant-api03" not in filtered["note"]
    assert result.secrets_redacted == 2
    # lists, tuples and key order are kept
    out, _ = privacy.filter_value({"b": [1, ("x", {"token": "abc123abc123"})], "a": None}, cfg)
    assert list(out) == ["b", "a"] and out["b"][0] == 1 and out["b"][1][1]["token"] == cfg.secret_marker


@pytest.mark.parametrize("cwd", [12, ["/x"], {"path": "/x"}, None])
def test_cwd_that_is_not_a_string(
    hook: Hook, proj: Path, monkeypatch: pytest.MonkeyPatch, cwd: Any, memlane_home: Path
) -> None:
    monkeypatch.chdir(proj)  # Claude Code runs hooks in the session's directory
    from memlane import hooks

    raw = json.dumps({**payload("02-UserPromptSubmit.json"), "cwd": cwd}).encode()
    hooks.handle("UserPromptSubmit", raw)
    (prompt,) = events(proj, "user_prompt")
    assert prompt.content.endswith("(marker zebrafinch)")
    assert prompt.metadata["cwd"] == str(proj)


def test_prompt_over_20_mb_is_trimmed_with_a_marker(hook: Hook, proj: Path) -> None:
    big = "start-axolotl " + "y" * 21_000_000 + " end-pangolin"
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt=big))
    (prompt,) = events(proj, "user_prompt")
    limit = config.Config().capture.max_content_chars
    assert prompt.content.startswith("start-axolotl ") and prompt.content.endswith(" end-pangolin")
    assert "characters omitted" in prompt.content
    assert len(prompt.content) <= limit + 100


# Real 2.1.328 payloads of one `claude -p` run whose Agent call ran in the background (tests/fixtures/README.md).
SUBAGENT = CLAUDE_CODE / "subagent"


def subagent(name: str, proj: Path, **overrides: Any) -> dict[str, Any]:
    return {**json.loads((SUBAGENT / name).read_text()), "cwd": str(proj), **overrides}


def test_a_task_notification_is_the_subagents_answer_not_a_user_prompt(
    hook: Hook, proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When a background subagent stops, Claude Code submits a <task-notification> block as the next prompt.
    Nobody typed it: it is stored as the subagent's answer, and no retrieval runs for it."""
    from memlane import hooks

    asked: list[str] = []
    real = hooks.prompt_context
    monkeypatch.setattr(hooks, "prompt_context", lambda *a, **k: asked.append(a[5]) or real(*a, **k))
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    assert len(asked) == 1  # a typed prompt asks for memories
    assert hook("UserPromptSubmit", subagent("UserPromptSubmit-task-notification.json", proj)) == ""
    assert len(asked) == 1, asked
    prompts = events(proj, "user_prompt")
    assert [("task-notification" in e.content) for e in prompts] == [False]
    (answer,) = events(proj, "agent_response")
    assert answer.content == "Main: done (lynx)."
    assert answer.metadata["kind"] == "subagent" and answer.metadata["agent_id"] == "a07b959ebc86c8321"
    assert answer.metadata["source"] == "task-notification"


@pytest.mark.parametrize("first", ["SubagentStop", "UserPromptSubmit"])
def test_subagent_stop_and_its_task_notification_store_the_answer_once(hook: Hook, proj: Path, first: str) -> None:
    deliveries = {
        "SubagentStop": subagent("SubagentStop.json", proj),
        "UserPromptSubmit": subagent("UserPromptSubmit-task-notification.json", proj),
    }
    for event in sorted(deliveries, key=lambda e: e != first):
        hook(event, deliveries[event])
    (answer,) = events(proj, "agent_response")
    assert answer.content == "Main: done (lynx)." and answer.metadata["kind"] == "subagent"


def test_a_resumed_subagents_new_answer_is_stored_too(hook: Hook, proj: Path) -> None:
    notice = subagent("UserPromptSubmit-task-notification.json", proj)
    hook("UserPromptSubmit", notice)
    later = notice["prompt"].replace("Main: done (lynx).", "Second pass: the pool leak is fixed (mole).")
    hook("UserPromptSubmit", {**notice, "prompt": later, "prompt_id": "p-later"})
    assert [e.content for e in events(proj, "agent_response")] == [
        "Main: done (lynx).",
        "Second pass: the pool leak is fixed (mole).",
    ]


def test_subagent_tool_calls_are_captured_with_their_agent(hook: Hook, proj: Path) -> None:
    hook("PostToolUse", subagent("PostToolUse-subagent-Bash.json", proj))
    hook("PostToolUseFailure", subagent("PostToolUseFailure-subagent.json", proj))
    ok, failed = events(proj, "tool_observation")
    assert "walrus" in ok.content and ok.metadata.get("success") is not False
    assert "ibex" in failed.content and failed.metadata["exit_code"] == 3


def test_import_reads_a_task_notification_line_as_the_subagents_answer(tmp_path: Path) -> None:
    from memlane.importers import claude

    line = (SUBAGENT / "transcript-task-notification-line.jsonl").read_text()
    path = tmp_path / "37fdb389-7919-40e2-a1ae-3421e1e7acaf.jsonl"
    path.write_text(line)
    parsed = claude.parse(str(path), config.load())
    assert [(e.type, e.content, e.metadata.get("kind")) for e in parsed.events] == [
        ("agent_response", "Main: done (lynx).", "subagent")
    ]
