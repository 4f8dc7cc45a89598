"""Many hook processes writing at once: every event stored exactly once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import PAYLOADS, run_hook_process
from memlane import project
from memlane.store import Store

WORKERS = 20
PER_WORKER = 120
WORKER = """
import json, sys
from memlane import hooks
worker, count, cwd, template = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
for j in range(count):
    for owner in (worker, (worker + 1) % {workers}):  # every event is also redelivered by a neighbour
        if owner != worker and j % 3:
            continue
        data = dict(template, cwd=cwd, session_id=f"s{{owner}}", tool_use_id=f"t{{owner}}-{{j}}",
                    prompt_id=f"p{{owner}}-{{j // 10}}")
        data["tool_input"] = {{"command": f"echo {{owner}}-{{j}}"}}
        hooks.handle("PostToolUse", json.dumps(data).encode())
"""


def test_twenty_processes_thousands_of_events_exactly_once(proj: Path) -> None:
    template = json.loads((PAYLOADS / "04-PostToolUse.json").read_text())
    code = WORKER.format(workers=WORKERS)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(i), str(PER_WORKER), str(proj), json.dumps(template)],
            env=os.environ.copy(),
            stderr=subprocess.PIPE,
        )
        for i in range(WORKERS)
    ]
    # Real whole-process hooks join in while the workers run.
    for k in range(5):
        run_hook_process(
            "UserPromptSubmit",
            {
                "session_id": "live",
                "cwd": str(proj),
                "prompt_id": f"live{k}",
                "hook_event_name": "UserPromptSubmit",
                "prompt": f"live prompt {k}",
            },
        )
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err.decode()[-2000:]
    p = project.identify(proj)
    with Store(p.db_path, p.id) as store:
        spool_left = list((Path(os.environ["MEMLANE_HOME"]) / "spool").glob("*.json"))
        if spool_left:  # anything that hit the busy timeout is ingested by the next hook
            run_hook_process(
                "Stop",
                {
                    "session_id": "live",
                    "cwd": str(proj),
                    "hook_event_name": "Stop",
                    "last_assistant_message": "done",
                    "prompt_id": "live-stop",
                },
            )
        commands = [
            r[0]
            for r in store.db.execute(
                "SELECT json_extract(metadata, '$.command') FROM events WHERE type = 'tool_observation'"
            )
        ]
        assert len(commands) == WORKERS * PER_WORKER
        assert len(set(commands)) == len(commands)
        assert store.db.execute("SELECT COUNT(*) FROM outbox").fetchone()[0] == store.count()
        assert sum(1 for r in store.history(types=["user_prompt"], limit=100)) == 5
        sessions = {s["id"]: s["event_count"] for s in store.sessions(limit=100)}
        assert all(sessions[f"s{i}"] == PER_WORKER for i in range(WORKERS))
