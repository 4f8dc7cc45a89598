"""The C hook relay (``memlane.relay``, ``hook_relay.c``): with the daemon up it forwards the payload and prints
the daemon's answer, as ``daemon.warm`` does from Python; in every other case it runs the command it was given
with the payload, byte for byte, on that command's stdin. Real compiler, real daemon process, real model."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import payload, wait_until
from memlane import install as inst
from memlane import relay
from memlane.daemon import client, state, warm
from memlane.memory import Memory

pytestmark = pytest.mark.skipif(relay.compiler() is None or os.name != "posix", reason="no C compiler on this machine")

PROMPT = "why does the checkout pool time out when traffic is high?"


@pytest.fixture
def binary(memlane_home: Path) -> Path:
    built = relay.path()
    assert built is not None, "the relay did not build"
    assert built.parent == memlane_home / "bin"  # the registered copy outlives the package folder
    return built


def run(command: list[str], data: bytes, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    done = subprocess.run(
        command, input=data, capture_output=True, cwd=cwd, env={**os.environ, **(env or {})}, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done


def installed(event: str) -> list[str]:
    return [*shlex.split(inst.hook_command()), event]


def catcher(out: Path, event: str, binary: Path) -> list[str]:
    """The relay in front of a command that writes what it got on stdin to ``out``: what a fallback receives."""
    return [str(binary), "/bin/sh", "-c", f'cat > "{out}"', event]


def hooks_run() -> dict[str, int]:
    health = client.call("/api/health", None, 10_000, method="GET")
    assert health is not None
    return dict(health["hooks"])


def test_install_registers_the_relay_in_front_of_the_python_hook(binary: Path) -> None:
    words = shlex.split(inst.hook_command())
    assert words[0] == str(binary) and os.path.basename(words[0]).startswith(inst.RELAY_PREFIX)
    assert words[1:3] == [sys.executable, "-I"] and words[-1].endswith(inst.LAUNCHER)
    assert inst.program_exists(f"{inst.hook_command()} Stop")
    assert inst.program_of(f"{inst.hook_command()} Stop") == inst.hook_command()
    assert not inst.program_exists(f"{binary} /nonexistent/python -I -S {words[-1]} Stop")


def test_without_a_compiler_or_when_disabled_the_python_hook_is_registered(
    binary: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(relay.DISABLE_ENV, "0")
    assert not inst.hook_command().startswith(str(binary)) and inst.hook_command().split()[1:3] == ["-I", "-S"]
    monkeypatch.delenv(relay.DISABLE_ENV)
    # No relay built yet for this source (another hash) and no compiler: the plain command.
    monkeypatch.setattr(relay, "binary_name", lambda: "hook-relay-notbuiltyet")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CC", "no-such-compiler")
    assert relay.path() is None
    assert inst.hook_command().split()[1:3] == ["-I", "-S"]


def test_a_binary_that_does_not_run_here_is_rebuilt(
    binary: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    registered, build = tmp_path / "home-bin" / relay.binary_name(), tmp_path / "pkg" / "_relay" / relay.binary_name()
    for path in (registered, build):
        path.parent.mkdir(parents=True)
        path.write_text("#!/bin/sh\necho something else\n")
        path.chmod(0o755)
    monkeypatch.setattr(relay, "candidates", lambda: (registered, build))
    assert relay.path() == registered and relay.works(registered) and relay.works(build)


def test_the_registered_copy_survives_the_package_folder(binary: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An upgrade that replaces the package folder takes its build with it; the settings name the copy in
    the data directory, which still runs."""
    _, build = relay.candidates()
    assert binary != build and relay.works(binary)
    monkeypatch.setattr(relay, "candidates", lambda: (binary, build.with_name("gone")))
    assert relay.path() == binary


def test_a_package_folder_it_cannot_write_builds_in_the_data_directory(
    memlane_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Where ``_relay/`` cannot be made in the package (read-only; here a file stands in its way, which stops
    root too), the relay is compiled straight into the data directory."""
    blocked = tmp_path / "memlane"
    blocked.write_text("not a folder")
    registered = memlane_home / "bin" / "hook-relay-direct"
    monkeypatch.setattr(relay, "candidates", lambda: (registered, blocked / "_relay" / "hook-relay-direct"))
    assert relay.path() == registered and relay.works(registered)


def test_the_daemon_answers_through_the_relay(hook, proj: Path, daemon, binary: Path) -> None:  # type: ignore[no-untyped-def]
    memory = "The checkout connection pool times out under load: raise pool_size to 40 in settings.py"
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt_id="m0", prompt=memory))
    assert client.call("/api/inject", {"cwd": str(proj), "prompt": "warm up the model"}, 60_000) is not None
    start = payload("01-SessionStart.json", session_id="relay-1", cwd=str(proj))
    started = run(installed("SessionStart"), json.dumps(start).encode(), proj)
    assert json.loads(started.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    ask = payload("02-UserPromptSubmit.json", session_id="relay-1", prompt_id="r1", prompt=PROMPT, cwd=str(proj))
    answered = run(installed("UserPromptSubmit"), json.dumps(ask).encode(), proj)
    assert not answered.stderr
    # the memory, as an index line (its gist: the first 50 characters)
    assert (
        "The checkout connection pool times out"
        in json.loads(answered.stdout)["hookSpecificOutput"]["additionalContext"]
    )
    assert hooks_run()["SessionStart"] == hooks_run()["UserPromptSubmit"] == 1
    # The capture hooks are handed over (202) and stored by the daemon, not by a Python process.
    stop = payload("05-Stop.json", session_id="relay-1", cwd=str(proj), last_assistant_message="Raised it (okapi).")
    assert run(installed("Stop"), json.dumps(stop).encode(), proj).stdout == b""
    wait_until(lambda: hooks_run()["Stop"] == 1, "the daemon did not store the handed-off Stop")
    found = Memory.open(str(proj)).store.history(types=["agent_response"], limit=10)
    assert any("okapi" in e.content for e in found)


def test_what_the_relay_sends_is_what_warm_sends(proj: Path, binary: Path, tmp_path: Path) -> None:
    """A listener in place of the daemon records both requests: the same path and the same headers, but
    for the relay's own Host port, its time of delivery, and its User-Agent-free shape."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    state.ensure_token()
    state.write_info({"pid": os.getpid(), "host": "127.0.0.1", "port": listener.getsockname()[1], "started": 0})
    raw = json.dumps(payload("05-Stop.json", cwd=str(proj), last_assistant_message="héllo")).encode() + b"\xff"
    out = tmp_path / "fallback.bin"
    env = {"MEMLANE_ZETA": "1", "MEMLANE_A1": "x", "MEMLANE_A": "y=z"}  # sorted by name, as Python sorts them
    try:
        proc = subprocess.Popen(
            catcher(out, "Stop", binary), stdin=subprocess.PIPE, cwd=proj, env={**os.environ, **env}
        )
        assert proc.stdin is not None
        proc.stdin.write(raw)
        proc.stdin.close()
        conn, _ = listener.accept()
        request = _read_request(conn)
        conn.sendall(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
        conn.close()
        assert proc.wait(timeout=30) == 0
    finally:
        listener.close()
        state.clear_info(os.getpid())
    head, body = request.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    assert lines[0] == "POST /api/hook/Stop HTTP/1.1" and body == raw
    assert headers["authorization"] == f"Bearer {state.read_token()}"
    assert headers["content-length"] == str(len(raw))
    assert bytes.fromhex(headers["x-hook-cwd"]).decode() == str(proj)
    os.environ.update(env)
    try:
        assert headers["x-hook-env"] == warm.environment().encode().hex()
    finally:
        for name in env:
            del os.environ[name]
    assert abs(float(headers["x-hook-delivered"]) - time.time()) < 30
    assert not out.exists()  # accepted: nothing ran after the relay


def _read_request(conn: socket.socket) -> bytes:
    conn.settimeout(30)
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head = data.split(b"\r\n\r\n", 1)[0].lower()
    length = int(head.split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
    while len(data) < len(head) + 4 + length:
        data += conn.recv(65536)
    return data


@pytest.mark.parametrize("size", [100, 200_000, 2_000_000])
def test_a_refused_payload_reaches_the_fallback_byte_for_byte(
    proj: Path,
    daemon,
    binary: Path,
    tmp_path: Path,
    size: int,  # type: ignore[no-untyped-def]
) -> None:
    """Another MEMLANE_* environment (409): the relay has read the payload, so it replays it: through the
    pipe itself when it fits, through a writer process when it does not; invalid UTF-8 included."""
    raw = bytes(range(256)) * (size // 256 + 1)
    out = tmp_path / "fallback.bin"
    run(catcher(out, "UserPromptSubmit", binary), raw, proj, env={"MEMLANE_INJECTION_ENABLED": "false"})
    assert out.read_bytes() == raw
    assert hooks_run()["UserPromptSubmit"] == 0


def test_an_oversized_payload_goes_to_the_fallback(proj: Path, daemon, binary: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    raw = b"x" * (warm.MAX_PAYLOAD_BYTES + 1)
    out = tmp_path / "fallback.bin"
    run(catcher(out, "PostToolUse", binary), raw, proj)
    assert out.read_bytes() == raw and hooks_run()["PostToolUse"] == 0


def test_without_a_daemon_the_fallback_gets_claude_codes_stdin(proj: Path, binary: Path, tmp_path: Path) -> None:
    out = tmp_path / "fallback.bin"
    run(catcher(out, "Stop", binary), b'{"a": 1}', proj)
    assert out.read_bytes() == b'{"a": 1}'
    run(catcher(out, "PreToolUse", binary), b"not a hook the daemon runs", proj)
    assert out.read_bytes() == b"not a hook the daemon runs"


def test_without_a_daemon_the_installed_command_stores_the_event(proj: Path, binary: Path) -> None:
    ask = payload("02-UserPromptSubmit.json", session_id="relay-2", prompt_id="r2", prompt=PROMPT, cwd=str(proj))
    run(installed("UserPromptSubmit"), json.dumps(ask).encode(), proj)
    mem = Memory.open(str(proj))
    assert [e.content for e in mem.store.history(types=["user_prompt"], limit=10)] == [PROMPT]


def test_a_stuck_daemon_costs_one_wait_then_the_relay_does_not_ask(
    memlane_home: Path, proj: Path, binary: Path, tmp_path: Path
) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    state.ensure_token()
    state.write_info({"pid": os.getpid(), "host": "127.0.0.1", "port": silent.getsockname()[1], "started": 0})
    out = tmp_path / "fallback.bin"
    try:
        began = time.monotonic()
        run(catcher(out, "Stop", binary), b"first", proj)  # the hand-off waits warm.ACCEPT_S
        assert time.monotonic() - began >= warm.ACCEPT_S and out.read_bytes() == b"first"
        assert (memlane_home / warm.SLOW_FILE).exists()
        began = time.monotonic()
        run(catcher(out, "Stop", binary), b"second", proj)
        assert time.monotonic() - began < warm.ACCEPT_S and out.read_bytes() == b"second"
    finally:
        silent.close()
        state.clear_info(os.getpid())


def test_a_daemon_whose_process_is_gone_is_not_asked(
    memlane_home: Path, proj: Path, binary: Path, tmp_path: Path
) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    state.ensure_token()
    state.write_info({"pid": gone.pid, "host": "127.0.0.1", "port": 9, "started": 0})
    out = tmp_path / "fallback.bin"
    run(catcher(out, "SessionStart", binary), b"{}", proj)
    assert out.read_bytes() == b"{}"


def test_bad_arguments_fail_open(binary: Path, proj: Path) -> None:
    done = subprocess.run([str(binary)], capture_output=True, timeout=10, check=False)
    assert done.returncode == 0 and b"usage" in done.stderr
    done = subprocess.run([str(binary), "/nonexistent/python", "Stop"], input=b"{}", capture_output=True, timeout=10)
    assert done.returncode == 0 and b"cannot run /nonexistent/python" in done.stderr


def test_doctor_says_whether_the_hooks_have_the_relay(proj: Path, binary: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memlane.cli.main import cli

    settings = inst.settings_path("project", proj)

    def doctor() -> str:
        return CliRunner().invoke(cli, ["-C", str(proj), "doctor"]).output

    def install(*flags: str) -> None:
        assert CliRunner().invoke(cli, ["-C", str(proj), "install", "--scope", "project", *flags]).exit_code == 0

    install()
    assert "hook relay (project)" in doctor() and "C relay in front of the Python hook" in doctor()
    install("--no-relay")
    assert next(iter(inst.installed_events(settings).values())).split()[1:3] == ["-I", "-S"]
    out = doctor()
    assert "every hook starts Python" in out and "installed with --no-relay" in out
    install()
    assert next(iter(inst.installed_events(settings).values())).startswith(str(binary))
