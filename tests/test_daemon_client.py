"""The hooks' HTTP client against a real local server that answers late, answers nothing, or is not there."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlane.daemon import client, state


@pytest.fixture
def server(memlane_home: Path) -> Iterator[dict[str, float]]:
    """A loopback server that reads one request and answers after ``delay`` seconds (registered as the daemon)."""
    settings = {"delay": 0.0}
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    state.ensure_token()
    state.write_info({"pid": os.getpid(), "host": "127.0.0.1", "port": listener.getsockname()[1]})

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                request = conn.recv(65536)
                time.sleep(settings["delay"])
                body = json.dumps({"echo": request.split(b"\r\n", 1)[0].decode()}).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield settings
    listener.close()


def test_an_answer_read_later_in_parts(server: dict[str, float]) -> None:
    """A hook sends its question, does its own work, and reads the answer when it needs it: still out after a
    short wait (False), then the whole answer."""
    server["delay"] = 0.3
    pending = client.send("/api/inject", {"prompt": "x"}, 2000)
    assert pending is not None
    assert pending.wait(0.05) is False
    assert pending.wait() == {"echo": "POST /api/inject HTTP/1.1"}
    assert pending.wait(0.0) == {"echo": "POST /api/inject HTTP/1.1"}  # read once, kept


def test_a_late_answer_is_none_at_the_deadline(server: dict[str, float]) -> None:
    server["delay"] = 1.0
    started = time.monotonic()
    assert client.call("/api/inject", {"prompt": "x"}, 200) is None
    assert time.monotonic() - started < 0.9


def test_no_daemon_listening_is_none_at_once(memlane_home: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there any more
    state.ensure_token()
    state.write_info({"pid": os.getpid(), "host": "127.0.0.1", "port": port})
    assert client.send("/api/health", None, 500) is None
    assert client.call("/api/health", None, 500, method="GET") is None


@pytest.mark.parametrize(
    "text",
    [
        b"",  # empty
        b"{not json",  # cut short
        b'{"pid": 1, "host": "127.0.0.1"}',  # no port
        b'{"pid": "x", "port": 37777}',  # no number
        b'{"pid": 999999999, "port": 37777}',  # its process is gone
    ],
)
def test_a_damaged_or_stale_daemon_file_means_no_daemon(memlane_home: Path, text: bytes) -> None:
    """The first step of UserPromptSubmit reads daemon.json without a JSON parser: anything odd in it means
    "no daemon" (the hook goes on with full-text search), never an error."""
    from memlane import paths
    from memlane.daemon import prepare, wire

    state.ensure_token()
    Path(paths.join(wire.INFO_FILE)).write_bytes(text)
    assert wire.port() is None
    assert prepare.start(b'{"prompt": "fix the pool", "cwd": "/tmp"}') is False


def test_the_daemon_file_as_the_daemon_writes_it(memlane_home: Path) -> None:
    from memlane.daemon import wire

    state.write_info({"pid": os.getpid(), "host": "127.0.0.1", "port": 41234, "started": 1.5, "version": "0.1.0"})
    assert wire.port() == 41234 == state.read_info()["port"]  # type: ignore[index]
