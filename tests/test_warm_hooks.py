"""SessionStart and UserPromptSubmit run in the daemon when it is up (``daemon.warm``): the installed hook
command forwards the payload and prints the daemon's answer; whenever the daemon cannot answer (down,
another MEMLANE_* environment, stuck, an old daemon without the route) the hook runs in its own process.
Real daemon process, real installed command (``python -I -S hook_launcher.py``), real model."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from conftest import payload, wait_until
from memlane import hooks
from memlane.daemon import client, inbox, state, warm
from memlane.memory import Memory

MEMORIES = [
    "The checkout connection pool times out under load: raise pool_size to 40 in settings.py",
    "Invoices are rendered with WeasyPrint; the PDF fonts live in static/fonts",
]
PROMPT = "why does the checkout pool time out when traffic is high?"


def launch(event: str, data: dict[str, Any], cwd: Path, env: dict[str, str] | None = None) -> str:
    """The command ``memlane install`` registers, run as Claude Code runs it; its stdout."""
    done = subprocess.run(
        _command(event),
        input=json.dumps(data).encode(),
        capture_output=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout.decode()


def _command(event: str) -> list[str]:
    launcher = Path(hooks.__file__).with_name("hook_launcher.py")
    return [sys.executable, "-I", "-S", str(launcher), event]


def hooks_run() -> dict[str, int]:
    health = client.call("/api/health", None, 10_000, method="GET")
    assert health is not None
    return dict(health["hooks"])


@pytest.fixture
def remembered(hook, proj: Path) -> Path:  # type: ignore[no-untyped-def]
    for n, text in enumerate(MEMORIES):
        hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt_id=f"m{n}", prompt=text))
    hook("Stop", payload("05-Stop.json", last_assistant_message="Raised pool_size to 40; the timeouts are gone."))
    return proj


def test_the_daemon_answers_both_hooks_and_stores_once(remembered: Path, daemon) -> None:  # type: ignore[no-untyped-def]
    # The daemon loads its model on the first request that needs it.
    assert client.call("/api/inject", {"cwd": str(remembered), "prompt": "warm up the model"}, 60_000) is not None
    start = payload("01-SessionStart.json", session_id="warm-1", cwd=str(remembered))
    started = launch("SessionStart", start, remembered)
    ask = payload("02-UserPromptSubmit.json", session_id="warm-1", prompt_id="w1", prompt=PROMPT, cwd=str(remembered))
    answered = launch("UserPromptSubmit", ask, remembered)
    assert hooks_run()["SessionStart"] == hooks_run()["UserPromptSubmit"] == 1
    status = subprocess.run([sys.executable, "-m", "memlane", "daemon", "status"], capture_output=True, text=True)
    assert "ran 2 hook(s) (median SessionStart " in status.stdout, status.stdout
    times = client.call("/api/health", None, 10_000, method="GET")["hook_ms_p50"]  # type: ignore[index]
    assert set(times) == {"SessionStart", "UserPromptSubmit"} and all(ms > 0 for ms in times.values())
    assert json.loads(started)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = json.loads(answered)["hookSpecificOutput"]["additionalContext"]
    assert "The checkout connection pool times out" in context  # an index line: the gist is its first 50 characters
    mem = Memory.open(str(remembered))
    assert [e.content for e in mem.store.history(types=["user_prompt"], limit=10)].count(PROMPT) == 1
    assert len([e for e in mem.store.history(types=["session_start"], limit=10) if e.session_id == "warm-1"]) == 1
    # The same start handled again in this process: the same answer (the same code, the same store).
    assert hooks.handle("SessionStart", json.dumps(start).encode()) == started.strip()
    # The prompt's memories are what the daemon's /api/inject gives for it (the hook's own prompt excluded).
    prompt_id = next(e.id for e in mem.store.history(types=["user_prompt"], limit=10) if e.content == PROMPT)
    body = {"cwd": str(remembered), "prompt": PROMPT, "exclude_ids": [prompt_id], "session_id": "warm-1"}
    asked = client.call("/api/inject", {**body, "working_directory": str(remembered)}, 60_000)
    assert asked is not None and asked["context"] == context


def test_the_hooks_own_cwd_stands_in_for_a_missing_one(remembered: Path, daemon) -> None:  # type: ignore[no-untyped-def]
    ask = payload(
        "02-UserPromptSubmit.json", session_id="warm-2", prompt_id="w2", prompt="where do the invoice fonts live?"
    )
    ask.pop("cwd", None)
    launch("UserPromptSubmit", ask, remembered)
    assert hooks_run()["UserPromptSubmit"] == 1
    mem = Memory.open(str(remembered))
    assert any(e.session_id == "warm-2" for e in mem.store.history(types=["user_prompt"], limit=10))


def test_another_environment_runs_the_hook_in_its_own_process(remembered: Path, daemon) -> None:  # type: ignore[no-untyped-def]
    ask = payload("02-UserPromptSubmit.json", session_id="warm-3", prompt_id="w3", prompt=PROMPT, cwd=str(remembered))
    out = launch("UserPromptSubmit", ask, remembered, env={"MEMLANE_INJECTION_ENABLED": "false"})
    assert out == ""  # the hook's own setting held: nothing injected
    assert hooks_run()["UserPromptSubmit"] == 0
    mem = Memory.open(str(remembered))
    assert any(e.session_id == "warm-3" for e in mem.store.history(types=["user_prompt"], limit=10))


def _post(path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    port = state.read_info()["port"]  # type: ignore[index]
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_the_hook_route_checks_what_it_is_given(remembered: Path, daemon) -> None:  # type: ignore[no-untyped-def]
    token = state.read_token()
    env = warm.environment().encode().hex()
    auth = {"Authorization": f"Bearer {token}", "X-Hook-Env": env}
    body = json.dumps(payload("01-SessionStart.json", cwd=str(remembered))).encode()
    assert _post("/api/hook/SessionStart", body, {"X-Hook-Env": env})[0] == 401
    assert _post("/api/hook/PreToolUse", body, auth)[0] == 404  # not a hook memlane registers
    status, answer = _post("/api/hook/SessionStart", body, {**auth, "X-Hook-Cwd": "not hex"})
    assert status == 400 and b"x-hook-cwd" in answer
    status, answer = _post("/api/hook/SessionStart", body, {**auth, "X-Hook-Env": ""})
    assert status == 409
    status, answer = _post("/api/hook/Stop", body, {**auth, "X-Hook-Delivered": "yesterday"})
    assert status == 400 and b"x-hook-delivered" in answer
    # A payload the hook cannot use is its usual logged warning and an empty answer, as in its own process.
    assert _post("/api/hook/UserPromptSubmit", b"not json", auth) == (200, b"")
    assert hooks_run()["SessionStart"] == 0 and hooks_run()["UserPromptSubmit"] == 1


def test_a_stuck_daemon_costs_one_wait_then_hooks_run_themselves(
    memlane_home: Path, proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon that takes the connection and never answers: ``answer`` gives up after its wait, and for the
    next minute hooks do not ask it again."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    state.ensure_token()
    state.write_info({"pid": os.getpid(), "host": "127.0.0.1", "port": silent.getsockname()[1], "started": 0})
    monkeypatch.setattr(warm, "ANSWER_S", 0.3)
    raw = json.dumps(payload("02-UserPromptSubmit.json", prompt=PROMPT, cwd=str(proj))).encode()
    try:
        began = time.monotonic()
        assert warm.answer("UserPromptSubmit", raw) is None
        assert time.monotonic() - began >= 0.3
        assert (memlane_home / warm.SLOW_FILE).exists()
        began = time.monotonic()
        assert warm.answer("UserPromptSubmit", raw) is None
        assert time.monotonic() - began < 0.25
        os.utime(memlane_home / warm.SLOW_FILE, (0, 0))  # a minute later: the daemon is asked again
        began = time.monotonic()
        assert warm.answer("UserPromptSubmit", raw) is None
        assert time.monotonic() - began >= 0.3
    finally:
        silent.close()
        state.clear_info(os.getpid())


def test_answer_declines_without_a_daemon_and_for_other_events(memlane_home: Path, proj: Path) -> None:
    raw = json.dumps(payload("02-UserPromptSubmit.json", cwd=str(proj))).encode()
    assert warm.answer("UserPromptSubmit", raw) is None  # no daemon.json
    assert warm.answer("Stop", raw) is None
    assert warm.answer("UserPromptSubmit", b"x" * (warm.MAX_PAYLOAD_BYTES + 1)) is None


def _turn(proj: Path, session: str, answer: str) -> None:
    """One turn's hooks as Claude Code runs them, through the installed command."""
    common = {"session_id": session, "cwd": str(proj)}
    launch("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt="run the pool tests", **common), proj)
    launch("PostToolUse", payload("04-PostToolUse.json", **common), proj)
    launch("Stop", payload("05-Stop.json", last_assistant_message=answer, **common), proj)
    launch("SessionEnd", payload("06-SessionEnd.json", **common), proj)


def test_capture_hooks_are_handed_to_the_daemon_and_stored_in_order(remembered: Path, daemon) -> None:  # type: ignore[no-untyped-def]
    answer = "The pool tests fail: connections are not released on timeout (quokka)."
    _turn(remembered, "warm-turn", answer)
    wait_until(lambda: hooks_run()["SessionEnd"] == 1, "the daemon did not store the handed-off hooks")
    assert hooks_run()["PostToolUse"] == hooks_run()["Stop"] == 1
    mem = Memory.open(str(remembered))
    mine = [e for e in mem.store.history(limit=50) if e.session_id == "warm-turn"]
    kinds = {e.type for e in mine}
    assert {"user_prompt", "tool_observation", "agent_response", "session_end", "session_summary"} <= kinds
    # SessionEnd's summary was written after Stop's answer was stored: it quotes it.
    summary = next(e for e in mine if e.type == "session_summary")
    assert "quokka" in summary.content
    assert client.call("/api/health", None, 10_000, method="GET")["hooks_queued"] == 0  # type: ignore[index]


def test_a_daemon_that_declines_leaves_capture_to_the_hook(remembered: Path, daemon) -> None:  # type: ignore[no-untyped-def]
    answer = "Stored by its own child"
    stop = payload("05-Stop.json", session_id="own-1", cwd=str(remembered), last_assistant_message=answer)
    launch("Stop", stop, remembered, env={"MEMLANE_LOGGING_LEVEL": "debug"})
    mem = Memory.open(str(remembered))
    wait_until(
        lambda: any(e.session_id == "own-1" for e in mem.store.history(types=["agent_response"], limit=20)),
        "the detached child did not store the answer",
    )
    assert hooks_run()["Stop"] == 0


def test_the_inbox_keeps_each_sessions_order(memlane_home: Path) -> None:
    stored: list[tuple[str, str]] = []
    gate = threading.Event()

    def store(delivery: inbox.Delivery) -> None:
        gate.wait(10)  # the first deliveries wait until all are queued: the queues really fill up
        data = json.loads(delivery.raw)
        stored.append((data["session_id"], delivery.event + data["n"]))

    box = inbox.Inbox(store, lambda: None)
    sent = []
    for n in range(12):
        session = "ab"[n % 2]
        assert box.accept(
            inbox.Delivery("Stop", json.dumps({"session_id": session, "n": f"{n:02d}"}).encode(), None, 1.0)
        )
        sent.append((session, f"Stop{n:02d}"))
    assert box.pending == 12
    gate.set()
    wait_until(lambda: len(stored) == 12, "the deliveries were not stored")
    for session in "ab":
        assert [x for x in stored if x[0] == session] == [x for x in sent if x[0] == session]
    assert box.close() == 0


def test_a_stopping_inbox_stores_its_queue_then_refuses(memlane_home: Path) -> None:
    stored: list[str] = []
    gate = threading.Event()

    def store(delivery: inbox.Delivery) -> None:
        gate.wait(10)
        stored.append(delivery.event)

    box = inbox.Inbox(store, lambda: None)
    for event in ("PostToolUse", "Stop", "SessionEnd"):
        assert box.accept(inbox.Delivery(event, b'{"session_id": "x"}', None, None))
    threading.Timer(0.2, gate.set).start()
    assert box.close(drain_s=10) == 0  # waited for the queue
    assert stored == ["PostToolUse", "Stop", "SessionEnd"]
    assert not box.accept(inbox.Delivery("Stop", b'{"session_id": "x"}', None, None))  # the hook stores it itself


def test_a_delivery_that_fails_does_not_stop_the_queue(memlane_home: Path) -> None:
    stored: list[str] = []

    def store(delivery: inbox.Delivery) -> None:
        if delivery.event == "Stop":
            raise RuntimeError("a bug")
        stored.append(delivery.event)

    box = inbox.Inbox(store, lambda: None)
    for event in ("Stop", "SessionEnd"):
        box.accept(inbox.Delivery(event, b'{"session_id": "x"}', None, None))
    wait_until(lambda: box.pending == 0, "the queue did not move on")
    assert stored == ["SessionEnd"]
    box.close()


def test_a_daemon_stopped_right_after_a_hand_off_stores_it_first(remembered: Path, daemon) -> None:  # type: ignore[no-untyped-def]
    """The delivery waits for a quiet moment before it is stored; a daemon told to stop meanwhile stores it
    before it exits."""
    answer = "Handed over just before the daemon stopped (pangolin)."
    stop = payload("05-Stop.json", session_id="late-1", cwd=str(remembered), last_assistant_message=answer)
    launch("Stop", stop, remembered)
    os.kill(daemon["pid"], signal.SIGTERM)
    wait_until(lambda: state.read_info() is None, "the daemon did not stop")
    mem = Memory.open(str(remembered))
    assert any("pangolin" in e.content for e in mem.store.history(types=["agent_response"], limit=20))


def test_many_hooks_handed_over_at_once_are_stored_exactly_once(remembered: Path, daemon) -> None:  # type: ignore[no-untyped-def]
    """Sixty installed hook processes at once, four sessions, each tool call delivered twice: every call
    stored once."""
    template = payload("04-PostToolUse.json", cwd=str(remembered))
    procs = []
    for n in range(60):
        call = n % 30
        data = dict(template, session_id=f"many-{call % 4}", tool_use_id=f"t{call}", prompt_id=f"p{call % 4}")
        data["tool_input"] = {"command": f"echo call {call}"}
        procs.append(
            subprocess.Popen(
                _command("PostToolUse"),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd=remembered,
            )
        )
        assert procs[-1].stdin is not None
        procs[-1].stdin.write(json.dumps(data).encode())
        procs[-1].stdin.close()
    for proc in procs:
        assert proc.wait(timeout=60) == 0 and proc.stderr is not None and not proc.stderr.read()
    wait_until(lambda: hooks_run()["PostToolUse"] == 60, "not every hand-off was stored")
    mem = Memory.open(str(remembered))
    calls = [e for e in mem.store.history(types=["tool_observation"], limit=500) if e.session_id.startswith("many-")]
    keys = [(e.session_id, e.metadata.get("tool_use_id")) for e in calls]
    assert len(keys) == len(set(keys)) == 30  # 30 distinct calls (session, id), each twice delivered
