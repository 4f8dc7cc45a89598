"""A tiny HTTP client for hooks: raw socket, hard deadline, stdlib only (http.client costs ~8 ms to import).

Every failure — daemon down, slow, wrong token, bad JSON — returns None, and the caller falls back.
``send`` and ``Pending`` split a call in two, so a hook sends its question first and reads the answer when it
needs it, without a thread: a thread of its own would compete with the hook's imports for the GIL.
"""

from __future__ import annotations

import json
import time

from memlane.daemon import state, wire

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Pending:
    """A request on its way: ``wait`` reads the answer for as long as it is given, across several calls."""

    def __init__(self, sock: Any, end: float) -> None:
        self.sock = sock
        self.end = end
        self.chunks: list[bytes] = []
        self.done = False
        self.result: dict[str, Any] | None = None

    def wait(self, seconds: float | None = None) -> dict[str, Any] | bool | None:
        """The answer (None when it failed or the deadline passed), or False if it is still out after ``seconds``."""
        if self.done:
            return self.result
        stop = self.end if seconds is None else min(self.end, time.monotonic() + max(0.0, seconds))
        try:
            while True:
                remaining = stop - time.monotonic()
                if remaining <= 0:
                    if stop < self.end:
                        return False
                    return self._finish(None)
                self.sock.settimeout(remaining)
                try:
                    data = self.sock.recv(65536)
                except TimeoutError:
                    continue  # the loop decides: still out, or past the deadline
                if not data:
                    return self._finish(_parse(b"".join(self.chunks)))
                self.chunks.append(data)
        except OSError:
            return self._finish(None)

    def _finish(self, result: dict[str, Any] | None) -> dict[str, Any] | None:
        self.done, self.result = True, result
        self.sock.close()
        return result


def send(path: str, body: dict[str, Any] | None, deadline_ms: int, method: str = "POST") -> Pending | None:
    """Connect and send the request; None when there is no daemon to ask or it cannot be reached."""
    info = state.read_info()
    token = state.read_token()
    if not info or not token:
        return None
    host, port = str(info.get("host", "127.0.0.1")), int(info.get("port", 0))
    end = time.monotonic() + deadline_ms / 1000
    sock = wire.send(host, port, token, path, json.dumps(body or {}).encode("utf-8"), deadline_ms / 1000, method)
    return Pending(sock, end) if sock is not None else None


def call(path: str, body: dict[str, Any] | None, deadline_ms: int, method: str = "POST") -> dict[str, Any] | None:
    pending = send(path, body, deadline_ms, method)
    if pending is None:
        return None
    answer = pending.wait()
    return answer if isinstance(answer, dict) else None


def _parse(raw: bytes) -> dict[str, Any] | None:
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
