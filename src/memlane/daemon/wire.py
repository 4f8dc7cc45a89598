"""Sending a request to the daemon, before anything else is loaded: no ``json``, no ``socket`` module.

``client`` builds on this; ``prepare`` uses it alone, so the prompt reaches the daemon ~7 ms into the hook
instead of after ``json`` and ``re`` are imported (the daemon then embeds it while the hook imports them).
"""

from __future__ import annotations

import os

from memlane import paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TOKEN_FILE, INFO_FILE = "daemon.token", "daemon.json"  # in the data directory (``state`` writes them)


def token() -> str | None:
    """The daemon's shared secret, or None before one was made."""
    try:
        with open(paths.join(TOKEN_FILE), encoding="utf-8") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def port() -> int | None:
    """The running daemon's port from ``daemon.json``, read without a JSON parser (the file is ours: one flat
    object of numbers and strings); None when there is none or its process is gone."""
    try:
        with open(paths.join(INFO_FILE), "rb") as fh:
            text = fh.read(4096)
    except OSError:
        return None
    found = {key: _number(text, key) for key in (b"pid", b"port")}
    pid, number = found[b"pid"], found[b"port"]
    return number if pid and number and alive(pid) else None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _number(text: bytes, key: bytes) -> int | None:
    at = text.find(b'"' + key + b'"')
    if at < 0:
        return None
    start = text.find(b":", at) + 1
    digits = text[start : start + 24].strip().split(b",")[0].split(b"}")[0].strip()
    return int(digits) if digits.isdigit() else None


def send(
    host: str,
    port: int,
    secret: str,
    path: str,
    payload: bytes,
    timeout_s: float,
    method: str = "POST",
    headers: str = "",
) -> Any:
    """Connect and send one request; the connected socket (to read the answer from), or None.
    ``headers``: more header lines, each ending in CRLF."""
    request = (
        f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {secret}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n{headers}Connection: close\r\n\r\n"
    ).encode() + payload
    # The C module: ``socket`` adds ~3 ms of enum set-up to every hook that talks to the daemon. The daemon
    # always listens on 127.0.0.1 (IPv4 loopback), so no name resolution is needed.
    import _socket

    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout_s)
        sock.connect((host, port))
        sock.sendall(request)
    except OSError:
        sock.close()
        return None
    return sock
