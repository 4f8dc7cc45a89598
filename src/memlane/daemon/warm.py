"""Hooks run by the daemon: the hook process only forwards its payload.

Claude Code waits for SessionStart and UserPromptSubmit (their answer is context for the model). Run in the
hook process, each spends ~20 ms importing memlane's modules and opening the store before it does any work;
the daemon has them loaded and its model warm. So the installed hook sends the payload, as Claude Code sent
it, to ``/api/hook/<Event>``, where the daemon runs the same ``hooks.respond`` (storing the prompt, searching,
building the context), and prints the answer (``answer``). The capture-only hooks hand their payload over the
same way (``hand_off``): the daemon queues it and stores it after answering (``daemon.inbox``), which spares
a process importing memlane three or more times a turn. Nothing here imports more than ``os``, ``time`` and
``_socket``.

When the daemon is down, refuses, or has not answered within ``ANSWER_S`` (``ACCEPT_S``), the hook runs in
its own process as before. A daemon that answered nothing in time may still finish the same delivery; the
hook's own run then stores the same events, which the store's dedupe keys turn away. After such a timeout
the hook does not ask again for ``SLOW_S``: one stuck daemon costs one wait, not one per prompt.

The daemon's configuration applies to what it runs, so the hook sends its ``MEMLANE_*`` environment and the
daemon declines (the hook runs itself) when its own differs: a setting given one hook by the environment is
honoured.
"""

from __future__ import annotations

import os
import time

from memlane import paths
from memlane.daemon import wire

EVENTS = ("SessionStart", "UserPromptSubmit")
CAPTURE_EVENTS = ("PostToolUse", "PostToolUseFailure", "Stop", "SubagentStop", "SessionEnd", "PreCompact")
ACCEPT_S = 0.5  # a capture hook's payload is only queued before the answer: well under a millisecond
CONNECT_S = 0.1  # loopback: a daemon that cannot take a connection this fast will not answer fast either
ANSWER_S = 2.0  # the daemon answers in tens of ms; this only bounds what a stuck one costs
SLOW_S = 60.0  # after a daemon missed ``ANSWER_S``: hooks run themselves for this long
SLOW_FILE = "daemon.slow"  # in the data directory; its mtime is the last miss
MAX_PAYLOAD_BYTES = 8 * 1024 * 1024  # a bigger paste is handled (and trimmed) in the hook's own process


def environment() -> str:
    """The ``MEMLANE_*`` variables, as one string both sides compute the same way."""
    return "\0".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("MEMLANE_"))


def answer(event: str, raw: bytes) -> bytes | None:
    """What the hook prints, from the daemon; None when the hook must run itself. Never raises."""
    if event not in EVENTS:
        return None
    return _exchange(event, raw, "", b"200", ANSWER_S)


def hand_off(event: str, raw: bytes, delivered: float) -> bool:
    """Give a capture-only hook's payload to the daemon (``daemon.inbox``); True once the daemon has queued it.
    False: the hook stores it itself. Never raises."""
    if event not in CAPTURE_EVENTS:
        return False
    return _exchange(event, raw, f"X-Hook-Delivered: {delivered!r}\r\n", b"202", ACCEPT_S) is not None


def _exchange(event: str, raw: bytes, extra: str, status: bytes, wait_s: float) -> bytes | None:
    """Send the payload to ``/api/hook/<event>``; the answer's body if its status is ``status``, else None."""
    try:
        if len(raw) > MAX_PAYLOAD_BYTES or _slow():
            return None
        port, secret = wire.port(), wire.token()
        if not port or not secret:
            return None
        headers = (
            f"X-Hook-Cwd: {os.getcwd().encode('utf-8', 'surrogateescape').hex()}\r\n"
            f"X-Hook-Env: {environment().encode('utf-8', 'surrogateescape').hex()}\r\n{extra}"
        )
        sock = wire.send("127.0.0.1", port, secret, f"/api/hook/{event}", raw, CONNECT_S, headers=headers)
        if sock is None:
            return None
        try:
            return _read(sock, time.monotonic() + wait_s, status)
        finally:
            sock.close()
    except TimeoutError:
        _mark_slow()
        return None
    except Exception:  # noqa: BLE001 - the hook's own run reports real problems
        return None


def _read(sock: object, deadline: float, status: bytes) -> bytes | None:
    """The body of an answer with ``status`` (read by its Content-Length: the daemon closes the connection
    only after closing the store), or None for any other status."""
    data = b""
    while True:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            head = data[:end].lower()
            if not head.startswith(b"http/1.1 " + status):
                return None
            at = head.find(b"content-length:")
            if at < 0:
                return None
            length = int(head[at + 15 :].split(b"\r\n", 1)[0])
            if len(data) >= end + 4 + length:
                return data[end + 4 : end + 4 + length]
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)  # type: ignore[attr-defined]
        chunk = sock.recv(65536)  # type: ignore[attr-defined]
        if not chunk:
            return None
        data += chunk


def _slow() -> bool:
    try:
        return time.time() - os.stat(paths.join(SLOW_FILE)).st_mtime < SLOW_S
    except OSError:
        return False


def _mark_slow() -> None:
    try:
        with open(paths.join(SLOW_FILE), "w", encoding="utf-8") as fh:
            fh.write(
                "the daemon missed a hook's deadline; hooks run themselves until a minute after this file's time\n"
            )
    except OSError:
        pass
