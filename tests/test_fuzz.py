"""Every parser of outside input, fuzzed with hypothesis at a small fixed budget.

Each parser has a contract: it returns, or raises its own user-facing error — never anything else.
Examples are derandomised so the suite is repeatable; crashes found here are pinned as regression
tests at the bottom of this file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane import config, hooks
from memlane.capture import transcript
from memlane.config import Config

# MEMLANE_FUZZ_EXAMPLES=2000 explores with fresh random examples; the suite runs a fixed, repeatable 40.
_EXAMPLES = int(os.environ.get("MEMLANE_FUZZ_EXAMPLES", "0") or 0)
FUZZ = settings(
    max_examples=_EXAMPLES or 40,
    deadline=None,
    derandomize=not _EXAMPLES,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=20,
)

# Keys a real payload or transcript line has, so fuzzed values reach the code behind them.
HOOK_KEYS = (
    "prompt",
    "prompt_id",
    "tool_name",
    "tool_input",
    "tool_response",
    "tool_use_id",
    "source",
    "reason",
    "trigger",
    "custom_instructions",
    "last_assistant_message",
    "stop_hook_active",
    "permission_mode",
    "duration_ms",
    "hook_event_name",
)


def _hook_payload(proj: Path) -> st.SearchStrategy[dict[str, Any]]:
    fuzzed = st.dictionaries(st.sampled_from(HOOK_KEYS), json_values, max_size=6)
    tools = st.fixed_dictionaries(
        {
            "tool_name": st.sampled_from(["Bash", "Read", "Edit", "Write", "Grep", "WebFetch", "mcp__x__y", ""]),
            "tool_input": json_values,
            "tool_response": json_values,
        }
    )
    # cwd and transcript_path: mostly real, sometimes anything (a number, a NUL, a folder that is gone).
    odd_paths = json_values | st.sampled_from(["", "\x00", "relative/dir", "/nonexistent/x", "/dev/null", "/"])
    return st.builds(
        lambda base, extra, sid, cwd, tp: {
            **base,
            **extra,
            "session_id": sid,
            "cwd": cwd or str(proj),
            **({"transcript_path": tp} if tp else {}),
        },
        fuzzed,
        st.one_of(st.just({}), tools),
        st.text(min_size=1, max_size=20),
        st.one_of(st.none(), st.none(), odd_paths),
        st.one_of(st.none(), odd_paths),
    )


@FUZZ
@given(data=st.data(), event=st.sampled_from(hooks.EVENTS))
def test_hook_entry_never_crashes(data: st.DataObject, event: str, proj: Path) -> None:
    from memlane.capture import spool

    payload = data.draw(_hook_payload(proj))
    try:
        out = hooks.handle(event, json.dumps(payload).encode())
    except hooks.HookInputError:
        return
    if out:
        json.loads(out)  # whatever it prints is valid JSON for Claude Code
    # With no fault injected nothing may be spooled: a spooled event here means the store refused it.
    assert spool.pending() == [] and spool.leftovers()["bad"] == []


@FUZZ
@given(raw=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_hook_entry_rejects_garbage_bytes_cleanly(raw: bytes) -> None:
    try:
        hooks.handle("PostToolUse", raw)
    except hooks.HookInputError:
        pass


def _transcript_lines() -> st.SearchStrategy[list[str]]:
    content = st.one_of(
        st.text(max_size=40),
        st.lists(
            st.fixed_dictionaries(
                {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "image", "x"])},
                optional={
                    "text": json_values,
                    "id": json_values,
                    "name": json_values,
                    "input": json_values,
                    "content": json_values,
                    "tool_use_id": json_values,
                    "is_error": json_values,
                },
            ),
            max_size=3,
        ),
        json_values,
    )
    line = st.fixed_dictionaries(
        {"type": st.sampled_from(["user", "assistant", "system", "summary", "attachment", "queue-operation", 7])},
        optional={
            "message": st.fixed_dictionaries({"role": json_values, "content": content}) | json_values,
            "timestamp": st.sampled_from(["2026-11-22T14:12:30.823Z", "yesterday", ""]) | json_values,
            "sessionId": json_values,
            "uuid": json_values,
            "cwd": json_values,
            "isSidechain": json_values,
            "isCompactSummary": json_values,
            "toolUseResult": json_values,
            "isMeta": json_values,
        },
    ).map(json.dumps)
    return st.lists(line | st.text(max_size=30), max_size=8)


@FUZZ
@given(lines=_transcript_lines())
def test_claude_transcript_parser_never_crashes(lines: list[str], tmp_path: Path) -> None:
    from memlane.importers import claude

    path = tmp_path / "fuzz-session.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    claude.parse(str(path), Config())
    transcript.final_text(str(path))
    transcript.read_tail(str(path))


def _rollout_lines() -> st.SearchStrategy[list[str]]:
    kinds = st.sampled_from(["session_meta", "response_item", "event_msg", "turn_context", "compacted", "x"])
    item_types = st.sampled_from(
        [
            "message",
            "function_call",
            "function_call_output",
            "local_shell_call",
            "custom_tool_call",
            "custom_tool_call_output",
            "reasoning",
            "user_message",
            "agent_message",
        ]
    )
    payload = st.fixed_dictionaries(
        {"type": item_types},
        optional={
            "role": json_values,
            "content": json_values,
            "name": json_values,
            "arguments": json_values,
            "call_id": json_values,
            "output": json_values,
            "message": json_values,
            "cwd": json_values,
            "id": json_values,
            "action": json_values,
            "input": json_values,
        },
    )
    line = st.fixed_dictionaries(
        {"type": kinds, "payload": payload | json_values},
        optional={"timestamp": st.sampled_from(["2026-11-22T14:12:30.823Z", "nope"]) | json_values},
    ).map(json.dumps)
    return st.lists(line | st.text(max_size=30), max_size=8)


@FUZZ
@given(lines=_rollout_lines())
def test_codex_rollout_parser_never_crashes(lines: list[str], tmp_path: Path) -> None:
    from memlane.importers import codex

    path = tmp_path / "rollout-2026-11-22T14-12-30-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    codex.parse(str(path), Config())


region_text = st.lists(
    st.sampled_from(
        [
            "<!-- MEMORY_START: notes -->",
            "<!-- MEMORY_END: notes -->",
            "<!-- MEMORY_START: -->",
            "<!-- MEMORY_END: other -->",
            "<!-- MEMORY_START: a b -->",
            "# Heading",
            "## Sub",
            "@docs/a.md",
            "`@docs/b.md` - why",
            "```",
            "~~~python",
            "```py",
            "- item",
            "",
            "  ",
            "text",
            "\t<!-- MEMORY_END:notes-->",
        ]
    )
    | st.text(max_size=20),
    max_size=15,
).map(lambda lines: "\n".join(lines))


@FUZZ
@given(text=region_text, crlf=st.booleans())
def test_claude_md_regions_parser_round_trips(text: str, crlf: bool) -> None:
    from memlane.regions.document import parse

    if crlf:
        text = text.replace("\n", "\r\n")
    doc = parse(text)
    assert doc.render() == text  # the parser's own promise
    doc.to_dict()


@FUZZ
@given(
    data=json_values
    | st.fixed_dictionaries(
        {"version": st.sampled_from(["1.1", "1.0", "0", None, 3, "9.9"])},
        optional={
            "features": json_values,
            "tasks": json_values,
            "decisions": json_values,
            "phase": json_values,
            "lastUpdated": json_values,
            "domains": json_values,
        },
    )
)
def test_progress_json_validation_never_crashes(data: Any) -> None:
    from memlane.workflow import progress
    from memlane.workflow.store import WorkflowError

    try:
        progress.validate(progress.migrate(data))
    except WorkflowError:
        pass


toml_values = st.one_of(
    st.integers(-(2**40), 2**40).map(str),
    st.booleans().map(lambda b: str(b).lower()),
    st.text(max_size=10).map(json.dumps),
    st.sampled_from(["[1, 2]", '["a"]', "{ x = 1 }", "1.5", "nan", "inf", "-0", "1979-05-27", '""']),
)
config_keys = st.sampled_from(
    [
        "capture.enabled",
        "capture.max_content_chars",
        "injection.max_chars",
        "injection.enabled",
        "store.busy_timeout_ms",
        "daemon.port",
        "logging.level",
        "privacy.extra_patterns",
        "embedding.model",
        "vectors.batch_size",
        "nope.x",
        "capture.nope",
        "retrieval.cross_project",
        "workflow.enabled",
    ]
)


@FUZZ
@given(
    pairs=st.lists(st.tuples(config_keys, toml_values), max_size=6),
    junk=st.sampled_from(["", "[capture", "= 1", "x = ", "\x00", "[[capture]]\na=1", "capture = 3"]),
)
def test_config_toml_loading_never_crashes(pairs: list[tuple[str, str]], junk: str, tmp_path: Path) -> None:
    sections: dict[str, list[str]] = {}
    for key, value in pairs:
        section, name = key.split(".")
        sections.setdefault(section, []).append(f"{name} = {value}")
    text = "\n".join(f"[{s}]\n" + "\n".join(dict.fromkeys(lines)) for s, lines in sections.items()) + "\n" + junk
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    try:
        config.load(path, environ={})
    except config.ConfigError:
        pass


# ---- regressions found by the fuzzers above ---------------------------------------------------------------


@pytest.mark.parametrize("cwd", [123, ["a"], "\x00", "/nonexistent/gone", True, {"x": 1}])
def test_regression_odd_cwd_is_captured_not_crashed(cwd: Any, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by test_hook_entry_never_crashes: a non-string cwd (TypeError) or one with a NUL (ValueError)
    crashed the hook and the event was lost; a folder that is gone got a store of its own."""
    from memlane.memory import Memory

    monkeypatch.chdir(proj)  # where Claude Code starts the hook: the project
    payload = {"session_id": "s", "cwd": cwd, "prompt": "the zebrafinch prompt", "prompt_id": "p"}
    hooks.handle("UserPromptSubmit", json.dumps(payload).encode())
    with Memory.open(proj, create=False) as mem:
        assert [e.content for e in mem.store.history()] == ["the zebrafinch prompt"]
    assert [p.name.split("-")[0] for p in (Path(os.environ["MEMLANE_HOME"]) / "projects").iterdir()] == ["shop"]


@pytest.mark.parametrize("path", ["\x00", "/dev/stdin", 7])
def test_regression_odd_transcript_path(path: Any, proj: Path) -> None:
    """Found by test_hook_entry_never_crashes: a transcript_path with a NUL raised ValueError in Stop and
    SessionStart(compact); a FIFO or device would have blocked the hook."""
    for event, extra in (("Stop", {}), ("SessionStart", {"source": "compact"})):
        payload = {"session_id": "s", "cwd": str(proj), "transcript_path": path, **extra}
        hooks.handle(event, json.dumps(payload).encode())
    assert transcript.read_tail("\x00") == []


spool_events = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["user_prompt", "tool_observation", "bogus"]) | json_values,
            "session_id": st.text(max_size=5) | json_values,
            "content": st.text(max_size=20) | json_values,
        },
        optional={"turn": json_values, "metadata": json_values, "ts": json_values, "dedupe_key": json_values},
    )
    | json_values,
    max_size=4,
)


@FUZZ
@given(events=spool_events, wrap=st.booleans(), raw=st.none() | st.text(max_size=30))
def test_spool_ingest_never_crashes_and_never_keeps_a_file(
    events: Any, wrap: bool, raw: str | None, proj: Path
) -> None:
    """A spool file is outside input once it is on disk: each one is stored or set aside as .bad, never retried
    forever and never fatal to the hook that drains it."""
    import time

    from memlane import project
    from memlane.capture import spool
    from memlane.memory import Memory

    pid = project.identify(proj).id
    body = json.dumps({"project_id": pid, "events": events} if wrap else events) if raw is None else raw
    directory = Path(spool.spool_dir())
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    (directory / f"{pid}--{time.time_ns()}-1-fz.json").write_text(body, encoding="utf-8")
    with Memory.open(proj) as mem:
        spool.ingest(mem.store, spool.pending(pid))
    assert spool.pending(pid) == []
