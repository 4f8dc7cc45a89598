"""A tiny HTTP client for hooks: raw socket, hard deadline, stdlib only (http.client costs ~8 ms to import).

Every failure — daemon down, slow, wrong token, bad JSON — returns None, and the caller falls back.
"""

from __future__ import annotations

import json
import time

from memlane.daemon import state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def call(path: str, body: dict[str, Any] | None, deadline_ms: int, method: str = "POST") -> dict[str, Any] | None:
    info = state.read_info()
    token = state.read_token()
    if not info or not token:
        return None
    host, port = str(info.get("host", "127.0.0.1")), int(info.get("port", 0))
    payload = json.dumps(body or {}).encode("utf-8")
    request = (
        f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    ).encode() + payload
    end = time.monotonic() + deadline_ms / 1000
    import socket  # ~8 ms: only once a daemon is known to be up

    try:
        with socket.create_connection((host, port), timeout=deadline_ms / 1000) as sock:
            sock.sendall(request)
            chunks = []
            while True:
                remaining = end - time.monotonic()
                if remaining <= 0:
                    return None
                sock.settimeout(remaining)
                data = sock.recv(65536)
                if not data:
                    break
                chunks.append(data)
    except OSError:
        return None
    raw = b"".join(chunks)
    head, _, content = raw.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200") and not head.startswith(b"HTTP/1.0 200"):
        return None
    if b"transfer-encoding: chunked" in head.lower():
        content = _unchunk(content)
    try:
        result = json.loads(content.decode("utf-8"))
    except ValueError:
        return None
    return result if isinstance(result, dict) else None


def _unchunk(data: bytes) -> bytes:
    out = []
    while data:
        size_line, _, rest = data.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            break
        if size == 0:
            break
        out.append(rest[:size])
        data = rest[size + 2 :]
    return b"".join(out)
