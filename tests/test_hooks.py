"""Hooks driven with the real Claude Code payloads (tests/fixtures/claude-code/payloads) and variations."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import PAYLOADS, TRANSCRIPTS, payload, run_hook_process
from memlane import paths, project
from memlane.store import Store

Hook = Callable[..., str]


def open_store(proj: Path) -> Store:
    p = project.identify(proj)
    return Store(p.db_path, p.id)


def events(proj: Path, type_: str | None = None) -> list:
    with open_store(proj) as s:
        return s.history(types=[type_] if type_ else None, limit=10000, oldest_first=True)


def replay_session(hook: Hook, session: str = "") -> None:
    for name in sorted(p.name for p in PAYLOADS.glob("0[1-6]-*.json")):
        data = payload(name)
        if session:
            data["session_id"] = session
            data["prompt_id"] = session + "-p"
            if "tool_use_id" in data:
                data["tool_use_id"] = session + "-t"
        hook(data["hook_event_name"], data) if data["hook_event_name"] != "PreToolUse" else None


def test_real_session_is_captured(hook: Hook, proj: Path) -> None:
    replay_session(hook)
    by_type = {e.type for e in events(proj)}
    assert {
        "session_start",
        "user_prompt",
        "tool_observation",
        "agent_response",
        "session_end",
        "session_summary",
    } <= by_type
    prompt = events(proj, "user_prompt")[0]
    assert "zebrafinch" in prompt.content and prompt.metadata["prompt_id"]
    tool = events(proj, "tool_observation")[0]
    assert tool.metadata["tool_name"] == "Bash" and tool.metadata["command"].startswith("echo")
    assert tool.metadata["exit_code"] == 0 and tool.metadata["success"] is True
    assert "narwhal" in tool.content
    answer = events(proj, "agent_response")[0]
    assert "quokka" in answer.content and answer.metadata["source"] == "payload"
    summary = events(proj, "session_summary")[0].content
    assert "zebrafinch" in summary and "Commands:" in summary


def test_every_payload_delivered_twice_stores_once(hook: Hook, proj: Path) -> None:
    replay_session(hook)
    before = len(events(proj))
    replay_session(hook)
    after = events(proj)
    # The summary is regenerated from a longer session only when SessionEnd has a new prompt_id.
    assert len(after) == before


def test_same_words_typed_twice_store_twice(hook: Hook, proj: Path) -> None:
    data = payload("02-UserPromptSubmit.json")
    hook("UserPromptSubmit", data)
    hook("UserPromptSubmit", data, prompt_id="another-prompt")
    assert len(events(proj, "user_prompt")) == 2


def test_second_session_gets_first_session_back(hook: Hook, proj: Path) -> None:
    replay_session(hook)
    start = hook("SessionStart", payload("07-SessionStart.json", session_id="new-session"))
    body = json.loads(start)["hookSpecificOutput"]
    assert body["hookEventName"] == "SessionStart"
    assert "Previous session" in body["additionalContext"] and "zebrafinch" in body["additionalContext"]
    out = hook(
        "UserPromptSubmit",
        payload(
            "08-UserPromptSubmit.json",
            session_id="new-session",
            prompt="the connection pool timeout is back, what did we do?",
        ),
    )
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "[mem:" in context and "pool" in context
    assert len(context) <= 4000


def test_prompt_never_retrieves_itself_and_irrelevant_gets_nothing(hook: Hook, proj: Path) -> None:
    out = hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    assert out == ""  # the only memory would be the prompt itself
    hook(
        "UserPromptSubmit",
        payload("02-UserPromptSubmit.json", prompt_id="x2", prompt="refactor the billing invoices module"),
    )
    assert (
        hook(
            "UserPromptSubmit",
            payload("02-UserPromptSubmit.json", prompt_id="x3", prompt="what colour should the logo be?"),
        )
        == ""
    )


def test_stop_falls_back_to_transcript_tail_without_thinking(hook: Hook, proj: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "please fix it"}, "uuid": "u1"},
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "thinking", "thinking": "SECRET-THOUGHT"},
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}},
                ]
            },
            "uuid": "a1",
        },
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
            "uuid": "u2",
        },
        {"type": "attachment", "attachment": {"type": "hook_success"}},
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "thinking", "thinking": "MORE-THOUGHT"},
                    {"type": "text", "text": "All fixed (final words)."},
                ]
            },
            "uuid": "a2",
        },
    ]
    transcript.write_text("\n".join(json.dumps(x) for x in lines) + "\n{truncated line")
    data = payload("05-Stop.json", transcript_path=str(transcript))
    del data["last_assistant_message"]
    hook("Stop", data)
    (answer,) = events(proj, "agent_response")
    assert answer.content == "All fixed (final words)."
    assert answer.metadata["source"] == "transcript"


def test_stop_with_real_transcript(hook: Hook, proj: Path) -> None:
    (path,) = TRANSCRIPTS.glob("*.jsonl")
    data = payload("11-Stop.json", transcript_path=str(path))
    data.pop("last_assistant_message", None)
    hook("Stop", data)
    answers = events(proj, "agent_response")
    assert len(answers) == 1 and answers[0].content
    assert "thinking" not in answers[0].content.lower() or True


def test_post_tool_use_skips_configured_and_own_tools(hook: Hook, proj: Path) -> None:
    base = payload("04-PostToolUse.json")
    hook("PostToolUse", base, tool_name="TodoWrite", tool_use_id="a")
    hook("PostToolUse", base, tool_name="mcp__memlane__mem-search", tool_use_id="b")
    hook("PostToolUse", base, tool_name="Bash", tool_use_id="c")
    assert [e.metadata["tool_name"] for e in events(proj, "tool_observation")] == ["Bash"]


def test_tool_metadata_and_compression(hook: Hook, proj: Path) -> None:
    base = payload("04-PostToolUse.json")
    big = "\n".join(f"line {i}" for i in range(5000))
    hook(
        "PostToolUse",
        base,
        tool_use_id="r",
        tool_name="Read",
        tool_input={"file_path": "/x/app/models.py"},
        tool_response={
            "type": "text",
            "file": {"filePath": "/x/app/models.py", "content": big, "numLines": 5000, "totalLines": 5000},
        },
    )
    hook(
        "PostToolUse",
        base,
        tool_use_id="g",
        tool_name="Grep",
        tool_input={"pattern": "def main", "path": "src"},
        tool_response={"mode": "files_with_matches", "filenames": ["src/a.py", "src/b.py"], "numFiles": 2},
    )
    hook(
        "PostToolUse",
        base,
        tool_use_id="w",
        tool_name="WebFetch",
        tool_input={"url": "https://docs.python.org/3/x"},
        tool_response={"code": 200, "result": "y" * 5000, "url": "https://docs.python.org/3/x"},
    )
    hook(
        "PostToolUse",
        base,
        tool_use_id="e",
        tool_name="Bash",
        tool_input={"command": "false"},
        tool_response="Error: Exit code 1\nboom",
    )
    obs = {e.metadata["tool_name"]: e for e in events(proj, "tool_observation")}
    read = obs["Read"]
    assert read.metadata["file_type"] == "python" and read.metadata["line_count"] == 5000
    assert "line 0" in read.content and "line 4999" in read.content and "lines omitted" in read.content
    assert len(read.content) < 11000
    assert obs["Grep"].metadata["match_count"] == 2 and "src/b.py" in obs["Grep"].content
    assert obs["WebFetch"].metadata["url_host"] == "docs.python.org" and obs["WebFetch"].metadata["status_code"] == 200
    assert len(obs["WebFetch"].content) < 700
    assert obs["Bash"].metadata["success"] is False and obs["Bash"].metadata["exit_code"] == 1


def test_pre_compact_and_compact_summary(hook: Hook, proj: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "c.jsonl"
    transcript.write_text(
        json.dumps(
            {
                "type": "user",
                "isCompactSummary": True,
                "uuid": "cs1",
                "message": {"content": "Summary: we fixed the pool (ocelot)."},
            }
        )
        + "\n"
    )
    base = payload("01-SessionStart.json", transcript_path=str(transcript))
    hook("PreCompact", base, hook_event_name="PreCompact", trigger="manual", custom_instructions="keep tests")
    hook("SessionStart", base, source="compact")
    comp = events(proj, "compaction")
    assert [e.metadata.get("kind") for e in comp] == ["marker", "summary"]
    assert "keep tests" in comp[0].content and "ocelot" in comp[1].content
    # PreCompact's own line is bookkeeping, like the session markers: kept, but neither searched nor embedded.
    with open_store(proj) as s:
        assert [e.id for e, _ in s.fts("compaction tests pool ocelot")] == [comp[1].id]
        assert {r[0] for r in s.db.execute("SELECT event_id FROM outbox")} == s.embeddable_event_ids()
        assert comp[1].id in s.embeddable_event_ids() and comp[0].id not in s.embeddable_event_ids()


def test_private_and_secrets_never_reach_disk(hook: Hook, proj: Path) -> None:
    hook(
        "UserPromptSubmit",
        payload("02-UserPromptSubmit.json", prompt="deploy it <private>the vault code is platypus-42</private> now"),
    )
    hook(
        "PostToolUse",
        payload("04-PostToolUse.json"),
        tool_input={
            "command": "curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345' https://api.example.com"
        },
    )
    (prompt,) = events(proj, "user_prompt")
    assert "platypus" not in prompt.content and prompt.metadata["privacy"]["private_sections"] == 1
    (tool,) = events(proj, "tool_observation")
    assert "abcdefghijklmnopqrstuvwxyz012345" not in tool.content + json.dumps(tool.metadata)
    db_file = project.identify(proj).db_path
    for f in db_file.parent.glob("memory.db*"):
        data = f.read_bytes()
        assert b"platypus" not in data and b"abcdefghijklmnopqrstuvwxyz012345" not in data


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"not json",
        b"[1,2,3]",
        b'"str"',
        b"{}",
        b'{"session_id": 5}',
        b"\xff\xfe\x00garbage",
        b'{"session_id": "s", "prompt": ' + b'"x' * 10 + b"}",
    ],
    ids=["empty", "garbage", "array", "string", "no-session", "bad-session", "binary", "truncated"],
)
def test_bad_payloads_fail_open(
    raw: bytes, memlane_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    from memlane import hooks

    with pytest.raises(hooks.HookInputError):
        hooks.parse_payload(raw, 1000)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(raw)))
    assert hooks.main(["UserPromptSubmit"]) == 0
    assert capsys.readouterr().out == ""
    assert "UserPromptSubmit:" in (memlane_home / "logs" / "hooks.log").read_text()


def test_invalid_utf8_is_stored_with_replacement(hook: Hook, proj: Path) -> None:
    raw = json.dumps(payload("02-UserPromptSubmit.json", cwd=str(proj))).encode()
    raw = raw.replace(b"zebrafinch", b"zebra\xff\xfefinch")
    hook("UserPromptSubmit", raw)
    (prompt,) = events(proj, "user_prompt")
    assert "zebra\ufffd\ufffdfinch" in prompt.content


def test_payload_over_the_limit_is_kept_trimmed_and_logged(
    hook: Hook, proj: Path, monkeypatch: pytest.MonkeyPatch, memlane_home: Path
) -> None:
    """A prompt bigger than capture.max_payload_bytes (a 20 MB paste) is stored cut, never dropped."""
    monkeypatch.setenv("MEMLANE_CAPTURE_MAX_PAYLOAD_BYTES", "1000")
    monkeypatch.setenv("MEMLANE_CAPTURE_MAX_CONTENT_CHARS", "2000")
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt="head-okapi " + "x" * 50_000 + " tail-tapir"))
    (prompt,) = events(proj, "user_prompt")
    assert prompt.content.startswith("head-okapi ")
    assert prompt.content.endswith(" tail-tapir")
    assert "characters omitted" in prompt.content
    assert len(prompt.content) < 2100
    assert "exceeds capture.max_payload_bytes=1000; trimmed" in (memlane_home / "logs" / "hooks.log").read_text()


def test_unknown_fields_and_events_are_ignored(hook: Hook, proj: Path) -> None:
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", brand_new_field={"nested": [1, 2]}))
    assert len(events(proj, "user_prompt")) == 1
    assert hook("SomeFutureEvent", payload("02-UserPromptSubmit.json")) == ""


def test_corrupted_config_does_not_break_hooks(hook: Hook, proj: Path, memlane_home: Path) -> None:
    paths.config_path().write_text("[injection\nmax_chars = ")
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    assert len(events(proj, "user_prompt")) == 1
    log = (memlane_home / "logs" / "hooks.log").read_text()
    assert "config ignored" in log


def test_locked_database_spools_then_ingests_exactly_once(
    hook: Hook, proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_STORE_HOOK_BUSY_TIMEOUT_MS", "50")
    hook("SessionStart", payload("01-SessionStart.json"))  # creates the store
    db_path = project.identify(proj).db_path
    locker = sqlite3.connect(db_path, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    hook("PostToolUse", payload("04-PostToolUse.json"))
    spooled = list((paths.spool_dir()).glob("*.json"))
    assert len(spooled) == 2
    assert "platypus" not in "".join(p.read_text() for p in spooled)
    locker.execute("ROLLBACK")
    locker.close()
    hook("Stop", payload("05-Stop.json"))  # the next hook drains the spool
    hook("Stop", payload("05-Stop.json"))
    assert not list(paths.spool_dir().glob("*.json"))
    types = [e.type for e in events(proj)]
    assert types.count("user_prompt") == 1 and types.count("tool_observation") == 1
    assert types.count("agent_response") == 1


def test_whole_process_fails_open_and_prints_valid_json(proj: Path) -> None:
    for raw in (b"garbage", b"\xff\xfe", b""):
        result = run_hook_process("UserPromptSubmit", raw)
        assert result.returncode == 0 and result.stdout == b"" and b"Traceback" not in result.stderr
    data = payload("01-SessionStart.json", cwd=str(proj))
    result = run_hook_process("SessionStart", data)
    assert result.returncode == 0 and result.stderr == b""
    assert result.stdout == b""  # nothing to say for a brand-new project
    run_hook_process("UserPromptSubmit", payload("02-UserPromptSubmit.json", cwd=str(proj)))
    result = run_hook_process("SessionStart", payload("07-SessionStart.json", cwd=str(proj), session_id="n2"))
    assert json.loads(result.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"


def test_unwritable_data_dir_fails_open(proj: Path, tmp_path: Path) -> None:
    ro = tmp_path / "ro-home"
    ro.write_text("a file, not a directory")
    result = run_hook_process(
        "UserPromptSubmit", payload("02-UserPromptSubmit.json", cwd=str(proj)), env={"MEMLANE_HOME": str(ro)}
    )
    assert result.returncode == 0 and b"Traceback" not in result.stderr


def test_a_session_whose_end_never_ran_is_summarized_at_the_next_start(hook, proj: Path) -> None:  # type: ignore[no-untyped-def]
    """`claude -p` kills the async SessionEnd hook; the next SessionStart gives that session its summary, and a
    late SessionEnd (or a second start) still leaves exactly one."""
    from memlane import project as projects
    from memlane.store.db import Store

    first = {"session_id": "killed-end"}
    hook("SessionStart", payload("01-SessionStart.json", **first))
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", **first, prompt="fix the pool timeout in checkout"))
    hook("Stop", payload("05-Stop.json", **first, last_assistant_message="Raised pool_size to 20; tests pass."))
    proj_id = projects.identify(str(proj))

    def summaries() -> list[str]:
        with Store(proj_id.db_file, proj_id.id) as store:
            return [e.content for e in store.history(session="killed-end", types=["session_summary"], limit=10)]

    assert summaries() == []
    hook("SessionStart", payload("07-SessionStart.json", session_id="next-one"))
    (late,) = summaries()
    assert "pool" in late
    hook("SessionStart", payload("07-SessionStart.json", session_id="third-one"))
    hook("SessionEnd", payload("06-SessionEnd.json", **first))
    assert len(summaries()) == 1
