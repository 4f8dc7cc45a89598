"""Fixtures for end-to-end tests with the real Claude Code CLI and the scripted model stub."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import CLAUDE_CODE

REPO = Path(__file__).resolve().parents[2]
CC_VERSION = "2.1.328"
STUB = CLAUDE_CODE / "stub_anthropic.py"


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node/npm not installed: the real Claude Code CLI cannot run here")
    if not STUB.exists():
        pytest.skip(f"stub model server not found at {STUB}")
    prefix = Path(os.environ.get("MEMLANE_CC_PREFIX", REPO / ".cache" / "claude-code"))
    binary = prefix / "node_modules" / ".bin" / "claude"
    if not binary.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(prefix),
                f"@anthropic-ai/claude-code@{CC_VERSION}",
                "--no-audit",
                "--no-fund",
            ],
            check=True,
            capture_output=True,
            timeout=900,
        )
    return binary


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve_stub(tmp_path: Path, script: Path) -> Iterator[tuple[int, Path]]:
    """The scripted model stand-in on a free port, answering from ``script``; yields (port, request log)."""
    log = tmp_path / "requests.jsonl"
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(STUB), "--port", str(port), "--script", str(script), "--log", str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.05)
    try:
        yield port, log
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class CliSession:
    """A git project, an empty HOME and the environment that points the real CLI at the stub on ``port``."""

    def __init__(self, tmp_path: Path, port: int, project: str = "shop", **extra: str) -> None:
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.project = tmp_path / project
        self.project.mkdir()
        subprocess.run(["git", "init", "-q", str(self.project)], check=True)
        self.env = {
            **os.environ,
            "HOME": str(self.home),
            "MEMLANE_HOME": str(tmp_path / "memlane"),
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "MEMLANE_DAEMON_AUTOSTART": "false",
            **extra,
        }
        self.env.pop("CLAUDE_CONFIG_DIR", None)  # the CLI must keep its state in this HOME

    def memlane(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memlane", *args],
            env=self.env,
            cwd=self.project,
            capture_output=True,
            text=True,
            timeout=300,
        )


@pytest.fixture
def stub(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "turns": [
                    {
                        "text": "Let me run the pool tests.",
                        "tool": "Bash",
                        "input": {
                            "command": "echo 'E   TimeoutError: pool exhausted after 30s (narwhal)'",
                            "description": "run pool tests",
                        },
                    }
                ],
                "final": [
                    "Fixed: the pool now releases connections on timeout (quokka).",
                    "Nothing else to do (heron).",
                ],
            }
        )
    )
    with serve_stub(tmp_path, script) as running:
        yield running


def wait_for(predicate, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.25)
    return bool(predicate())
