"""Files the daemon and its clients share: the token, the lock, ``daemon.json``. Stdlib only (hooks read them)."""

from __future__ import annotations

import json
import os

from memlane import atomic, paths
from memlane.daemon import wire

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def token_file() -> str:
    return paths.join(wire.TOKEN_FILE)


def info_file() -> str:
    return paths.join(wire.INFO_FILE)


def lock_file() -> str:
    return paths.join("daemon.lock")


def ensure_token() -> str:
    """The shared secret (created 0600 on first use). Clients send it as a Bearer token."""
    path = token_file()
    try:
        with open(path, encoding="utf-8") as fh:
            token = fh.read().strip()
        if token:
            return token
    except FileNotFoundError:
        pass
    import secrets  # only where a token is made: ~9 ms (hashlib, hmac, random) hooks never need

    token = secrets.token_urlsafe(32)
    atomic.write_text(path, token, atomic.PRIVATE)
    return token


def read_token() -> str | None:
    return wire.token()


def read_info() -> dict[str, Any] | None:
    """What the running daemon wrote about itself (pid, host, port), if it is alive."""
    try:
        with open(info_file(), encoding="utf-8") as fh:
            info = json.load(fh)
    except (OSError, ValueError):
        return None
    pid = info.get("pid") if isinstance(info, dict) else None
    if not isinstance(pid, int) or not wire.alive(pid):
        return None
    return info


def write_info(info: dict[str, Any]) -> None:
    path = info_file()
    atomic.write_text(path, json.dumps(info), atomic.PRIVATE)  # pid and port of a token-guarded server


def clear_info(pid: int) -> None:
    current = None
    try:
        with open(info_file(), encoding="utf-8") as fh:
            current = json.load(fh)
    except (OSError, ValueError):
        return
    if isinstance(current, dict) and current.get("pid") == pid:
        try:
            os.unlink(info_file())
        except OSError:
            pass
