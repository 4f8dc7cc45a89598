"""The command ``memlane install`` registers: ``<python> -I -S …/memlane/hook_launcher.py <Event>``, run through a
shell as Claude Code runs it, with no ``site`` and no PYTHONPATH; capture-only events finish in a detached child."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from conftest import PAYLOADS, TRANSCRIPTS, payload
from memlane import install as inst
from memlane import project
from memlane.capture import detach
from memlane.plugin import guard
from memlane.store import keys
from memlane.store.db import Event, Store


def launch(event: str, data: dict[str, object], command: str | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # memlane must come from the launcher alone
    return subprocess.run(
        f"{command or inst.hook_command()} {event}",
        shell=True,
        input=json.dumps(data).encode(),
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )


def stored(proj: Path) -> list[Event]:
    db = project.identify(str(proj)).db_file
    if not os.path.exists(db):
        return []
    store = Store(db, project.identify(str(proj)).id)
    try:
        return store.history(limit=-1, oldest_first=True)
    finally:
        store.close()


def wait_until(check, timeout: float = 30.0):  # type: ignore[no-untyped-def]
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    return check()


def test_installed_command_runs_python_without_site_on_the_launcher() -> None:
    words = inst.hook_command().split()
    if os.path.basename(words[0]).startswith(inst.RELAY_PREFIX):  # the C relay runs this command after it
        words = words[1:]
    assert words[1:3] == ["-I", "-S"] and words[3].endswith(os.path.join("memlane", "hook_launcher.py"))
    assert os.path.isfile(words[3]) and inst.program_exists(f"{inst.hook_command()} Stop")


def test_prompt_hook_answers_in_its_own_process(proj: Path) -> None:
    """UserPromptSubmit returns context, so it is not detached: the prompt is stored when the process ends."""
    first = launch("UserPromptSubmit", payload("02-UserPromptSubmit.json", cwd=str(proj)))
    assert first.returncode == 0 and first.stderr == b""
    assert [e.type for e in stored(proj)] == ["user_prompt"]
    again = payload("02-UserPromptSubmit.json", cwd=str(proj), session_id="s2", prompt_id="p2")
    out = launch("UserPromptSubmit", again)
    context = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "zebrafinch" in context  # the first session's prompt came back


def test_the_previous_releases_command_still_works(proj: Path) -> None:
    """Settings written by the release before (``python -S``, without ``-I``): sys.path[0] is then the launcher's
    own folder, which the launcher swaps for the one above it."""
    older = inst.hook_command().replace(" -I -S ", " -S ")
    assert older != inst.hook_command()
    done = launch("UserPromptSubmit", payload("02-UserPromptSubmit.json", cwd=str(proj)), older)
    assert done.returncode == 0 and done.stderr == b""
    assert [e.type for e in stored(proj)] == ["user_prompt"]


def test_capture_hook_is_stored_by_its_detached_child_at_the_hooks_time(proj: Path) -> None:
    data = payload("04-PostToolUse.json", cwd=str(proj))
    before = keys.now_iso()
    done = launch("PostToolUse", data)
    returned = keys.now_iso()
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    events = wait_until(lambda: [e for e in stored(proj) if e.type == "tool_observation"])
    assert len(events) == 1 and "narwhal" in events[0].content
    assert before <= events[0].ts <= returned  # when Claude Code ran the hook, not when the child wrote


def test_session_end_waits_for_the_stop_before_it(proj: Path, tmp_path: Path) -> None:
    """Stop's child waits (up to 1 s) for a transcript that lacks the turn's answer; SessionEnd, delivered
    right after, must still summarize a session that holds that answer and the recovered tool call."""
    lines = (TRANSCRIPTS / "6f8a962b-e546-4507-8ff4-23e5a2f295f8.jsonl").read_text().splitlines()
    transcript = tmp_path / "turn.jsonl"
    transcript.write_text("\n".join(lines[:26]) + "\n")  # up to the tool result: no answer line yet
    common = {"cwd": str(proj), "transcript_path": str(transcript)}
    launch("UserPromptSubmit", payload("02-UserPromptSubmit.json", **common))
    assert launch("Stop", payload("05-Stop.json", **common)).returncode == 0
    assert launch("SessionEnd", payload("06-SessionEnd.json", **common)).returncode == 0
    summary = wait_until(lambda: [e for e in stored(proj) if e.type == "session_summary"])
    assert summary and "Outcome: Fixed: the pool now releases connections" in summary[0].content
    types = [e.type for e in stored(proj)]
    assert types.index("agent_response") < types.index("session_end")
    assert types.count("tool_observation") == 1  # recovered by Stop from the transcript


def test_session_id_is_read_without_a_json_parser() -> None:
    raw = (PAYLOADS / "05-Stop.json").read_bytes()
    assert detach.session_of(raw) == json.loads(raw)["session_id"]
    assert detach.session_of(b'{"session_id": "abc", "x": 1}') == "abc"
    assert detach.session_of(b"not json") == detach.session_of(b'{"session_id": 5}') == ""
    assert detach.lock_path("abc") == detach.lock_path("abc") != detach.lock_path("abd")


def test_reinstall_replaces_old_memlane_hook_commands(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    theirs = {"type": "command", "command": "prettier --write"}
    path.parent.mkdir()
    path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [theirs]}]}}))
    inst.install(path, command="/old/venv/bin/memlane hook")  # what earlier releases registered
    change = inst.install(path)
    assert change.changed and change.removed == len(inst.HOOKS)
    commands = inst.installed_events(path)
    assert set(commands) == set(inst.HOOKS)
    assert all(c == f"{inst.hook_command()} {event}" for event, c in commands.items())
    assert guard._events_in(str(path)) == set(inst.HOOKS)  # the plugin's hooks step aside for these too
    assert not inst.install(path).changed  # idempotent
    assert inst.uninstall(path).removed == len(inst.HOOKS)
    assert json.loads(path.read_text()) == {"hooks": {"Stop": [{"hooks": [theirs]}]}}


def test_status_names_the_program_of_either_command_form() -> None:
    assert inst.program_of("/v/bin/memlane hook Stop") == "/v/bin/memlane"
    assert inst.program_of("memlane hook Stop --plugin") == "memlane"
    assert inst.program_of(f"{inst.hook_command()} Stop") == inst.hook_command()
    assert not inst.program_exists("/nowhere/python -S /nowhere/memlane/hook_launcher.py Stop")
