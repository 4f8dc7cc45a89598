"""``memlane demo``: a bundled Claude Code session replayed through the real hooks into a temp store.

Each payload is piped into ``memlane hook <Event>`` as its own process, exactly as Claude Code would
do it; then a new session starts and a new prompt is submitted, and what memlane hands back to Claude
(the hooks' ``additionalContext``) is printed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any


def _load() -> dict[str, Any]:
    text = resources.files("memlane.demo").joinpath("session.json").read_text(encoding="utf-8")
    return dict(json.loads(text))


def _hook(payload: dict[str, Any], env: dict[str, str]) -> tuple[str, float]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "memlane", "hook", payload["hook_event_name"]],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    return proc.stdout.decode("utf-8", "replace"), (time.perf_counter() - start) * 1000


def run(keep: bool = False, echo: Callable[[str], None] = print) -> str:
    """Replay the demo; returns the context injected for the new prompt."""
    data = _load()
    base = Path(tempfile.mkdtemp(prefix="memlane-demo-"))
    home, proj = base / "memlane-home", base / data["project"]
    proj.mkdir()
    (proj / ".git").mkdir()  # a git project, identified like a real one
    env = {**os.environ, "MEMLANE_HOME": str(home)}
    env.pop("MEMLANE_INJECTION_ENABLED", None)
    # No background daemon for a throwaway store: injection takes the in-process full-text path.
    env["MEMLANE_DAEMON_AUTOSTART"] = "false"

    def payload(raw: dict[str, Any], session: str) -> dict[str, Any]:
        transcript = f"{base}/transcripts/{session}.jsonl"
        return {"session_id": session, "transcript_path": transcript, "cwd": str(proj), **raw}

    injected = ""
    try:
        echo(f"memlane demo — temporary store in {home}\n")
        for i, session in enumerate(data["sessions"], 1):
            sid = str(uuid.uuid4())
            timings = [_hook(payload(p, sid), env)[1] for p in session]
            echo(
                f"Replayed session {i}: {len(session)} hook calls through `memlane hook` "
                f"(median {sorted(timings)[len(timings) // 2]:.0f} ms per process)"
            )
        sid = str(uuid.uuid4())
        for raw in data["next"]:
            out, ms = _hook(payload(raw, sid), env)
            event = raw["hook_event_name"]
            context = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out.strip() else ""
            echo(f"\n=== New session — {event} ({ms:.0f} ms)")
            if event == "UserPromptSubmit":
                echo(f"prompt: {raw['prompt']}")
                injected = context
            echo("memlane gives Claude:\n" + (context or "(nothing relevant)"))
        db = next(home.glob("projects/*/memory.db"))
        echo(
            f"\nStored events: see `MEMLANE_HOME={home} memlane -C {proj} history`"
            if keep
            else f"\nStore was {db.stat().st_size // 1024} KB; removed (use --keep to inspect it)."
        )
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
    return injected
