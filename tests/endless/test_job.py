"""The daemon's endless job: the working set and scores follow new marks; consolidation runs when due (enough new
events, an interval, an idle project) and not before; SessionStart through the installed hook command is answered
by a real daemon from the working set, and without the daemon the hook gives the session recap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner
from en_support import Log

from conftest import payload
from memlane import config, derived, hooks, paths
from memlane.cli.main import cli
from memlane.daemon import client
from memlane.daemon.embed_worker import Gate, Worker
from memlane.daemon.jobs import EndlessJob, default_jobs
from memlane.endless import continuity, service
from memlane.memory import Memory


def test_the_job_keeps_the_working_set_and_consolidates_only_when_due(proj: Path) -> None:
    cfg = config.Config()
    cfg.endless.consolidate_after_events = 5
    with Memory.open(proj, cfg=cfg) as mem:
        log = Log(mem.store, start=datetime.now(UTC) - timedelta(minutes=10))  # recent: the project is not idle
        log.exchange("s1", "Raise the pool.", "app/db.py", "pool_size=10", "pool_size=25", "app/db.py: 25.", hours=0)
        log.exchange("s2", "Lower it.", "app/db.py", "pool_size=25", "pool_size=20", "app/db.py: 20.", hours=0.05)
        derived.catch_up(mem.store)
        job = EndlessJob()
        # Nothing consolidated yet and never was: the interval has passed since "never".
        assert service.consolidation_due(mem.store, cfg) == "5+ new events"
        assert job.step(mem) > 0
        assert mem.store.consolidated_count() == 1 and mem.working_set()[0]["key"] == "app/db.py"
        assert job.step(mem) == 0  # nothing new
        log.edit("app/db.py", "pool_size=20", "pool_size=22", "s2")
        derived.catch_up(mem.store)
        job.refreshed.clear()  # as if REFRESH_S had passed
        assert service.consolidation_due(mem.store, cfg, now=log.at.timestamp() + 60) is None
        assert job.step(mem) > 0  # the working set follows ...
        assert mem.store.dirty_topic_count() == 1  # ... consolidation waits
        latest = continuity.stamp(mem.store.latest_mark_ts() or "")
        assert service.consolidation_due(mem.store, cfg, now=latest + 19 * 60) is None
        assert service.consolidation_due(mem.store, cfg, now=latest + 20 * 60) == "idle"
        last = float(mem.store.endless_state()["consolidated_at"])
        assert service.consolidation_due(mem.store, cfg, now=last + 3600) == "interval"


def test_the_daemons_loop_runs_the_endless_job_for_every_project(tmp_path: Path) -> None:
    stop = threading.Event()
    for name in ("a", "b"):
        root = tmp_path / name
        (root / ".git").mkdir(parents=True)
        with Memory.open(root) as mem:
            Log(mem.store).exchange("s1", "Fix it.", "app/x.py", "a = 1", "a = 2", "app/x.py is fixed.", hours=0)
    gate = Gate()
    cfg = config.load()
    worker = Worker(cfg, None, gate, stop, lambda: None, jobs=default_jobs(cfg, gate, stop))
    worker.step()
    assert worker.state["jobs"]["endless"]["done"] > 0 and worker.state["jobs"]["endless"]["last_error"] is None
    for name in ("a", "b"):
        with Memory.open(tmp_path / name) as mem:
            assert [i["key"] for i in mem.working_set() if i["kind"] == "file"] == ["app/x.py"]


def _launch(event: str, data: dict[str, object], cwd: Path) -> str:
    """The command ``memlane install`` registers (``python -I -S hook_launcher.py``), run as Claude Code runs it."""
    launcher = Path(hooks.__file__).with_name("hook_launcher.py")
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(launcher), event],
        input=json.dumps(data).encode(),
        capture_output=True,
        cwd=cwd,
        env=os.environ.copy(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout.decode()


def test_session_start_through_the_installed_hook_is_answered_by_the_daemon_from_the_working_set(
    hook,
    proj: Path,
    daemon,  # type: ignore[no-untyped-def]
) -> None:
    for session in ("one", "two"):
        hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", session_id=session, prompt_id=f"{session}-p",
                                         prompt="The checkout pool times out, fix app/db.py"))  # fmt: skip
        hook("Stop", payload("05-Stop.json", session_id=session, prompt_id=f"{session}-p",
                             last_assistant_message="app/db.py now sets pool_size=25."))  # fmt: skip
    result = CliRunner().invoke(cli, ["-C", str(proj), "endless", "enable"])
    assert result.exit_code == 0, result.output
    start = payload("01-SessionStart.json", session_id="three", cwd=str(proj))
    out = json.loads(_launch("SessionStart", start, proj))["hookSpecificOutput"]["additionalContext"]
    assert out.startswith("memlane (endless mode): where the work stands")
    assert "Last asked:\n- [mem:" in out
    health = client.call("/api/health", None, 10_000, method="GET")
    assert health is not None and health["hooks"]["SessionStart"] == 1  # run in the daemon, not the hook process
    # The same project with the daemon gone: the hook process gives the recap and says why in the log.
    os.remove(paths.join("daemon.json"))
    out = json.loads(_launch("SessionStart", {**start, "session_id": "four"}, proj))
    assert out["hookSpecificOutput"]["additionalContext"].startswith("memlane: where this project left off")
    assert "endless mode: the daemon is not up" in Path(paths.join("logs", "hooks.log")).read_text()
