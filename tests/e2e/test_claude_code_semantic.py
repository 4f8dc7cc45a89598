"""Semantic memory end to end: the real Claude Code CLI, memlane's daemon (auto-started by SessionStart)
embeds the first session; a later session's prompt — sharing no keywords with it — gets that memory
injected, as the stub's request log shows, and that session's hooks are run by the daemon.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from e2e.conftest import free_port, wait_for
from memlane import relay

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_later_session_gets_earlier_memory_by_meaning(
    claude_bin: Path,
    stub: tuple[int, Path],
    tmp_path: Path,
) -> None:
    pytest.importorskip("memlane.embed")
    port, request_log = stub
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "shop"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "MEMLANE_HOME": str(tmp_path / "memlane"),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "MEMLANE_DAEMON_AUTOSTART": "true",
        "MEMLANE_DAEMON_PORT": str(free_port()),
        # A cold first query (LanceDB open) can exceed the production 120 ms deadline on a busy CI box.
        "MEMLANE_DAEMON_HOOK_DEADLINE_MS": "3000",
    }

    def memlane(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memlane", *args],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def claude(prompt: str) -> None:
        proc = subprocess.run(
            [str(claude_bin), "-p", prompt, "--allowedTools", "Bash", "--output-format", "json"],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]

    assert memlane("install").returncode == 0
    settings = json.loads((Path(env["HOME"]) / ".claude" / "settings.json").read_text())
    registered = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    # Where a C compiler is at hand the hooks go through the C relay (memlane.relay): no Python per hook.
    assert ("/hook-relay-" in registered.split()[0]) == (relay.compiler() is not None), registered
    try:
        claude("The DB connection pool times out under load, please fix it (marker zebrafinch)")

        def embedded() -> bool:
            out = memlane("stats", "--json")
            if out.returncode != 0:
                return False
            outbox = json.loads(out.stdout)["outbox"]
            return outbox.get("done", 0) >= 3 and not outbox.get("pending") and not outbox.get("processing")

        assert wait_for(embedded, timeout=180), memlane("stats", "--json").stdout
        before = len(request_log.read_text().splitlines())
        claude("Our database keeps running out of connections when traffic spikes. Seen this before?")
        later = "\n".join(request_log.read_text().splitlines()[before:])
        assert "memlane: relevant memory" in later, later[-3000:]
        assert "zebrafinch" in later or "narwhal" in later or "quokka" in later
        # The later session's hooks were run by the daemon itself (daemon.warm), as in real use.
        health = json.loads(memlane("daemon", "status", "--json").stdout)["health"]
        assert health["hooks"]["SessionStart"] >= 1 and health["hooks"]["UserPromptSubmit"] >= 1, health

        def stop_stored() -> bool:  # a handed-over Stop is counted once stored, after the turn's hooks settle
            return json.loads(memlane("daemon", "status", "--json").stdout)["health"]["hooks"]["Stop"] >= 1

        assert wait_for(stop_stored, timeout=30), memlane("daemon", "status", "--json").stdout
    finally:
        memlane("daemon", "stop")
        time.sleep(0.5)
