"""Stop catches up on the tool calls whose async PostToolUse/PostToolUseFailure hook never ran.

Driven by a real two-turn Claude Code session (tests/fixtures/claude-code/catchup/): turn 1 ran a Bash
command that succeeded, turn 2 one that failed (exit 3). The fixture holds the hook payloads Claude Code
sent and the transcript as it stood when the second Stop ran; the first Stop saw its first
``STOP_1_BYTES`` bytes (Claude Code only appends).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import CLAUDE_CODE, run_hook_process
from memlane import project
from memlane.store import Store

Hook = Callable[..., str]
CATCHUP = CLAUDE_CODE / "catchup"
SESSION = "395bd0cd-f1db-4fae-bd85-6a4d2e748e64"
STOP_1_BYTES = 147574
SUCCESS_ID = "toolu_bb8a8531d59d4f9bb824479a"
FAILURE_ID = "toolu_06583ad1168243b09b2fdec4"


def fixture(name: str, **overrides: Any) -> dict[str, Any]:
    data = json.loads((CATCHUP / name).read_text())
    data.update(overrides)
    return dict(data)


def transcript(tmp_path: Path, at_stop: int, edit: Callable[[str], str] | None = None) -> Path:
    """The session's transcript as Stop ``at_stop`` read it, in a private copy."""
    data = (CATCHUP / f"{SESSION}.jsonl").read_bytes()
    if at_stop == 1:
        data = data[:STOP_1_BYTES]
    text = data.decode()
    path = tmp_path / "claude" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(edit(text) if edit else text)
    return path


def stop(n: int, path: Path) -> dict[str, Any]:
    return fixture(f"Stop-{n}.json", transcript_path=str(path))


def tools(proj: Path) -> list[Any]:
    p = project.identify(proj)
    with Store(p.db_path, p.id) as s:
        return list(s.history(types=["tool_observation"], limit=1000, oldest_first=True))


def by_call(proj: Path, tool_use_id: str) -> list[Any]:
    return [e for e in tools(proj) if e.metadata.get("tool_use_id") == tool_use_id]


def hooks_log(memlane_home: Path) -> str:
    log = memlane_home / "logs" / "hooks.log"
    return log.read_text() if log.exists() else ""


def test_stop_stores_a_successful_call_the_async_hook_never_ran(hook: Hook, proj: Path, tmp_path: Path) -> None:
    hook("Stop", stop(1, transcript(tmp_path, 1)))
    (call,) = tools(proj)  # the turn had one call: it is there, once, although PostToolUse never ran
    assert call.metadata["tool_use_id"] == SUCCESS_ID
    assert call.metadata["recovered"] == "transcript"
    assert call.metadata["success"] is True and call.metadata["exit_code"] == 0
    assert "catchup-narwhal" in call.content

    hook("PostToolUse", fixture("PostToolUse.json"))  # the late async hook adds no second copy
    hook("Stop", stop(1, transcript(tmp_path, 1)))  # nor does Stop delivered again
    assert [e.id for e in tools(proj)] == [call.id]


def test_stop_stores_a_failed_call_as_the_failure_hook_would(hook: Hook, proj: Path, tmp_path: Path) -> None:
    path = transcript(tmp_path, 2)
    hook("Stop", stop(2, path))
    (failed,) = tools(proj)  # only turn 2's call: turn 1 is not the turn that just ended
    assert failed.metadata["tool_use_id"] == FAILURE_ID
    assert failed.metadata["success"] is False and failed.metadata["exit_code"] == 3
    assert failed.metadata["error"] == "Exit code 3"
    assert "catchup-okapi" in failed.content and "boom on stderr" in failed.content

    hook("PostToolUseFailure", fixture("PostToolUseFailure.json"))
    assert [e.id for e in tools(proj)] == [failed.id]


@pytest.mark.parametrize(("n", "live"), [(1, "PostToolUse"), (2, "PostToolUseFailure")])
def test_catch_up_builds_what_the_live_hook_builds(
    hook: Hook, proj: Path, tmp_path: Path, n: int, live: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same content and the same metadata as live capture, apart from what only one of them knows."""
    hook("Stop", stop(n, transcript(tmp_path, n)))
    (recovered,) = tools(proj)
    monkeypatch.setenv("MEMLANE_HOME", str(tmp_path / "other-home"))
    hook(live, fixture(f"{live}.json"))
    (captured,) = tools(proj)
    assert recovered.content == captured.content
    only_live = {"duration_ms"}
    only_recovered = {"recovered"}
    differ = {"transcript_path"}  # the test's private copy of the transcript
    assert {k: v for k, v in recovered.metadata.items() if k not in only_recovered | differ} == {
        k: v for k, v in captured.metadata.items() if k not in only_live | differ
    }


def test_a_call_the_live_hook_stored_is_not_recovered(hook: Hook, proj: Path, tmp_path: Path) -> None:
    hook("PostToolUseFailure", fixture("PostToolUseFailure.json"))
    hook("Stop", stop(2, transcript(tmp_path, 2)))
    (failed,) = tools(proj)
    assert "recovered" not in failed.metadata and failed.metadata["duration_ms"] == 28


def test_a_live_copy_that_differs_from_the_transcript_is_not_doubled(hook: Hook, proj: Path, tmp_path: Path) -> None:
    """Should Claude Code ever hand the hook a response that differs from the one it writes to the
    transcript, the call the live hook stored still counts: its ``tool_use_id`` is already recorded."""
    data = fixture("PostToolUse.json")
    data["tool_response"] = {**data["tool_response"], "stdout": "something else entirely"}
    hook("PostToolUse", data)
    hook("Stop", stop(1, transcript(tmp_path, 1)))
    (call,) = tools(proj)
    assert "something else entirely" in call.content


def test_concurrent_late_hooks_and_stops_store_each_call_once(proj: Path, tmp_path: Path) -> None:
    """Real hook processes racing on one store: late async hooks, Stop, and Stop again."""
    path = transcript(tmp_path, 2)
    deliveries = [("Stop", stop(2, path)), ("PostToolUseFailure", fixture("PostToolUseFailure.json"))] * 3
    results: list[int] = []

    def deliver(event: str, data: dict[str, Any]) -> None:
        results.append(run_hook_process(event, {**data, "cwd": str(proj)}).returncode)

    threads = [threading.Thread(target=deliver, args=item) for item in deliveries]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [0] * len(deliveries)
    assert len(by_call(proj, FAILURE_ID)) == 1
    assert len(tools(proj)) == 1


def test_recovered_calls_are_privacy_filtered(hook: Hook, proj: Path, tmp_path: Path) -> None:
    secret = "Bearer abcdefghijklmnopqrstuvwxyz012345"
    said = f"token {secret} and <private>vault code platypus-42</private> end"

    def leak(text: str) -> str:
        return text.replace("pool exhausted (catchup-narwhal)", said)

    assert said in leak((CATCHUP / f"{SESSION}.jsonl").read_text()[:STOP_1_BYTES])
    hook("Stop", stop(1, transcript(tmp_path, 1, leak)))
    (call,) = tools(proj)
    assert call.metadata["recovered"] == "transcript"
    assert "abcdefghijklmnopqrstuvwxyz012345" not in call.content and "platypus" not in call.content
    assert call.metadata["privacy"]["private_sections"] >= 1 and call.metadata["privacy"]["secrets_redacted"] >= 1

    # The live hook, given the same call, builds the same filtered event: no second copy.
    live = json.loads(leak(json.dumps(fixture("PostToolUse.json"))))
    hook("PostToolUse", live)
    assert len(tools(proj)) == 1
    db = project.identify(proj).db_path
    for f in db.parent.glob("memory.db*"):
        data = f.read_bytes()
        assert b"abcdefghijklmnopqrstuvwxyz012345" not in data and b"platypus" not in data


def test_locked_store_spools_the_recovered_calls_then_stores_them_once(
    hook: Hook, proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stop cannot write (another process holds the lock): its catch-up is spooled with its answer, like any
    hook's events, filtered already; the next hook ingests it, and the late live hook adds nothing."""
    import sqlite3

    from memlane import paths

    monkeypatch.setenv("MEMLANE_STORE_HOOK_BUSY_TIMEOUT_MS", "50")
    hook("SessionStart", fixture("Stop-2.json", hook_event_name="SessionStart", source="startup"))
    locker = sqlite3.connect(project.identify(proj).db_path, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    hook("Stop", stop(2, transcript(tmp_path, 2)))
    (spooled,) = paths.spool_dir().glob("*.json")
    assert "catchup-okapi" in spooled.read_text()
    locker.execute("ROLLBACK")
    locker.close()
    hook("PostToolUseFailure", fixture("PostToolUseFailure.json"))  # drains the spool, then stores its own
    assert not list(paths.spool_dir().glob("*.json"))
    (failed,) = tools(proj)
    assert failed.metadata["tool_use_id"] == FAILURE_ID


def test_a_prompt_that_is_not_plain_text_still_bounds_the_turn(hook: Hook, proj: Path, tmp_path: Path) -> None:
    """Turn 2's prompt given with an image: it is not a plain-text prompt line, so the scan stops at the first
    line of an earlier prompt (turn 1's tool result), and turn 1's call is not read again."""

    def with_image(text: str) -> str:
        lines = text.split("\n")
        i = next(n for n, line in enumerate(lines) if '"promptId":"bf5abe03' in line)
        line = json.loads(lines[i])
        image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
        line["message"]["content"] = [{"type": "text", "text": line["message"]["content"]}, image]
        lines[i] = json.dumps(line)
        return "\n".join(lines)

    from memlane.capture import catchup

    path = transcript(tmp_path, 2, with_image)
    calls, _ = catchup.turn_calls(str(path), prompt_id=stop(2, path)["prompt_id"])
    assert [fields["tool_use_id"] for _, fields in calls] == [FAILURE_ID]
    calls, _ = catchup.turn_calls(str(path))  # without a prompt_id: back to turn 1's plain prompt
    assert [fields["tool_use_id"] for _, fields in calls] == [SUCCESS_ID, FAILURE_ID]
    hook("Stop", stop(2, path))
    assert [e.metadata["tool_use_id"] for e in tools(proj)] == [FAILURE_ID]


def test_stop_waits_for_a_transcript_still_being_written(
    hook: Hook, proj: Path, tmp_path: Path, memlane_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stop arrives while the transcript still ends at the turn's tool call (its result and the answer not
    written yet): the catch-up waits for them, up to WAIT_S, instead of missing the call."""
    from memlane.capture import catchup

    monkeypatch.setattr(catchup, "WAIT_S", 30.0)  # generous: the test is about waiting, not how long
    path = transcript(tmp_path, 2)
    full = path.read_bytes()
    cut = full.index(b'"tool_use_id":"' + FAILURE_ID.encode())
    cut = full.rindex(b"\n", 0, cut) + 1  # the start of the tool result's line
    path.write_bytes(full[:cut])
    calls, _ = catchup.turn_calls(str(path))
    assert calls == []  # nothing to recover yet: the result is not written

    import time
    import types

    def sleep(seconds: float) -> None:  # Claude Code writes the rest while Stop waits (the first time only)
        if path.stat().st_size < len(full):
            with open(path, "ab") as fh:
                fh.write(full[cut:])
        time.sleep(seconds)

    monkeypatch.setattr(catchup, "time", types.SimpleNamespace(monotonic=time.monotonic, sleep=sleep))
    hook("Stop", stop(2, path))
    assert [e.metadata["tool_use_id"] for e in tools(proj)] == [FAILURE_ID]
    assert "waited" in hooks_log(memlane_home) and "caught up" in hooks_log(memlane_home)


@pytest.mark.parametrize("kind", ["missing", "directory", "garbage"])
def test_stop_without_a_usable_transcript_fails_open(
    hook: Hook, proj: Path, tmp_path: Path, memlane_home: Path, kind: str
) -> None:
    path = tmp_path / "claude" / f"{SESSION}.jsonl"
    if kind == "directory":
        path.mkdir(parents=True)
    elif kind == "garbage":
        path.parent.mkdir(parents=True)
        path.write_bytes(b'\xff\x00 not json\n{"type": "assistant", "message": 5}\n[1, 2]\n' * 1000)
    hook("Stop", stop(2, path))
    p = project.identify(proj)
    with Store(p.db_path, p.id) as s:
        (answer,) = s.history(types=["agent_response"], limit=10)
    assert "catchup-heron" in answer.content  # the Stop event itself is stored
    assert tools(proj) == []
    if kind != "garbage":
        assert "Stop catch-up skipped" in hooks_log(memlane_home)


def test_a_turn_past_the_scan_limit_is_caught_up_on_its_tail(
    hook: Hook, proj: Path, tmp_path: Path, memlane_home: Path
) -> None:
    """A turn longer than SCAN_LIMIT (here a 9 MB line between the prompt and the call): Stop reads only the
    last SCAN_LIMIT bytes, logs it, and still recovers the call found there."""
    from memlane.capture import catchup

    filler = "y" * (catchup.SCAN_LIMIT + 10**6)
    huge = json.dumps({"type": "attachment", "attachment": {"type": "x", "content": filler}})

    def pad(text: str) -> str:
        lines = text.split("\n")
        turn_2 = [i for i, line in enumerate(lines) if '"promptId":"bf5abe03' in line]
        prompt = min(turn_2)  # the prompt line comes first, the tool result after it
        return "\n".join([*lines[: prompt + 1], huge, *lines[prompt + 1 :]])

    path = transcript(tmp_path, 2, pad)
    assert os.path.getsize(path) > catchup.SCAN_LIMIT
    hook("Stop", stop(2, path))
    assert [e.metadata["tool_use_id"] for e in tools(proj)] == [FAILURE_ID]
    assert "longer than" in hooks_log(memlane_home)


def test_whole_process_stop_recovers_the_call(proj: Path, tmp_path: Path) -> None:
    """As Claude Code runs it: `memlane hook Stop` as a process, exit 0, nothing on stdout."""
    done = run_hook_process("Stop", {**stop(2, transcript(tmp_path, 2)), "cwd": str(proj)})
    assert done.returncode == 0 and done.stdout == b""
    assert len(by_call(proj, FAILURE_ID)) == 1
