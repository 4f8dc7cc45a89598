"""Storage options of the reference spec §6.2: storage.path, storage.max_size_mb with pruning (oldest
low-value events first, protected events never; the daemon's job and `memlane prune`), the feature toggles,
and outbox monitoring (vector-outbox-v2 §4.3, §9: average time, failed-job alert in status/doctor, cleanup)."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import payload
from memlane import config, project, retention
from memlane.cli.main import cli
from memlane.daemon.jobs import CleanOutbox, PruneStores, Upkeep
from memlane.memory import Memory
from memlane.store.db import NewEvent

Hook = Callable[..., str]
OLD = "2026-09-0{d}T10:{m:02d}:00.000Z"  # weeks before "now" in these tests (KEEP_RECENT_DAYS is 7)
NOW = 1_795_000_000.0  # 2026-11-19: every OLD event is over a month older


def run(proj: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["-C", str(proj), *args])
    return result.exit_code, result.output


def test_storage_path_moves_the_project_stores(hook: Hook, proj: Path, tmp_path: Path, memlane_home: Path) -> None:
    elsewhere = tmp_path / "big-disk" / "memlane"
    assert run(proj, "config", "set", "storage.path", str(elsewhere))[0] == 0
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))  # a hook loads config.toml first
    pid = project.identify(proj).id
    assert (elsewhere / pid / "memory.db").is_file() and (elsewhere / pid / "project.json").is_file()
    assert not (memlane_home / "projects").exists()
    code, out = run(proj, "history", "--json")
    assert code == 0 and len(json.loads(out)) == 1
    code, out = run(proj, "projects", "--json")
    assert [p["id"] for p in json.loads(out)] == [pid]


@pytest.fixture
def big(proj: Path) -> Iterator[Memory]:
    """A store of old events of every kind (~1.3 MB), a recent one, and a session summary."""
    filler = " ".join(f"word{i}" for i in range(120))
    events = []
    for s in range(6):
        for i in range(40):
            ts = OLD.format(d=s + 1, m=i)
            tool = ("Read", "Bash", "Edit", "Grep")[i % 4]
            meta = {"tool_name": tool, "success": i % 8 != 1}
            events.append(NewEvent("tool_observation", f"s{s}", f"{tool} call {s}.{i} {filler}", f"t{s}.{i}", meta, ts))
            events.append(NewEvent("agent_response", f"s{s}", f"answer {s}.{i} {filler}", f"a{s}.{i}", {}, ts))
            events.append(NewEvent("user_prompt", f"s{s}", f"prompt {s}.{i} {filler}", f"p{s}.{i}", {}, ts))
        events.append(
            NewEvent("session_summary", f"s{s}", f"summary of s{s}", f"sum{s}", {}, OLD.format(d=s + 1, m=59))
        )
    events.append(NewEvent("tool_observation", "now", "Read call today", "today", {"tool_name": "Read"}, None))
    with Memory.open(str(proj)) as mem:
        mem.store.append(events)
        yield mem


def test_prune_takes_the_oldest_low_value_events_first(big: Memory, proj: Path) -> None:
    cited = big.history(types=["tool_observation"], oldest_first=True, limit=1)[0]  # the first Read: lowest value
    (proj / "CLAUDE.md").write_text(f"# Rules\nThe pool fix is in [{cited.cite}].\n")
    extra = big.history(types=["user_prompt"], oldest_first=True, limit=1)[0]

    def extra_protector(mem: Memory) -> set[str]:  # how a plug-in (as the learning loop's L3+) adds its own
        return {extra.id}

    retention.PROTECTORS.append(extra_protector)
    try:
        assert retention.protected_event_ids(big) == {cited.id, extra.id}
        live = big.store.live_bytes()
        cap = int(live * 0.7)
        report = retention.prune(big, cap, now=NOW)
    finally:
        retention.PROTECTORS.remove(extra_protector)  # the real protectors (L3+ knowledge) stay registered
    assert report.pruned > 0 and report.after_bytes <= cap * retention.TARGET_SHARE < live
    assert report.protected == 2
    left = {e.id: e for e in big.history(limit=-1)}
    assert cited.id in left and extra.id in left  # protected
    assert len([e for e in left.values() if e.type == "session_summary"]) == 6  # never pruned
    assert any(e.session_id == "now" for e in left.values())  # the last week stays
    # Tool output first, then answers; the prompts are all still there.
    assert set(report.types) == {"tool_observation", "agent_response"}
    old_tools = [e for e in left.values() if e.type == "tool_observation" and e.session_id != "now"]
    assert [e.id for e in old_tools] == [cited.id]
    assert len([e for e in left.values() if e.type == "user_prompt"]) == 240
    tombs = big.store.tombstones()  # one per round
    assert {t["scope"] for t in tombs} == {"prune"} and sum(t["event_count"] for t in tombs) == report.pruned
    assert all(t["selector"] == f"storage.max_size_mb={cap // 2**20}" for t in tombs)


def test_prune_goes_oldest_first_within_the_least_valuable_kind(big: Memory) -> None:
    before = {e.id: e for e in big.history(limit=-1)}
    report = retention.prune(big, int(big.store.live_bytes() * 0.97), now=NOW)
    gone = [before[i] for i in set(before) - {e.id for e in big.history(limit=-1)}]
    assert report.pruned == len(gone) > 0
    readers = sorted(
        (e for e in before.values() if e.type == "tool_observation" and e.session_id != "now"
         and e.metadata["tool_name"] in ("Read", "Grep") and e.metadata["success"]),
        key=lambda e: (e.ts, e.seq),
    )  # fmt: skip
    assert sorted(gone, key=lambda e: (e.ts, e.seq)) == readers[: len(gone)]  # successful reads, oldest first


def test_prune_stops_when_only_protected_or_recent_events_are_left(big: Memory) -> None:
    report = retention.prune(big, 1024, now=NOW)  # an impossible cap
    assert "nothing more may be pruned" in report.reason
    kinds = {e.type for e in big.history(limit=-1)}
    assert kinds == {"session_summary", "tool_observation"}  # the summaries and today's event
    assert retention.prune(big, 0).pruned == 0  # 0 = no cap


def test_daemon_job_and_cli_prune(big: Memory, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert PruneStores().run(config.Config()) is None  # no cap set: nothing to do
    cfg = config.Config()
    cfg.storage.max_size_mb = 1
    big.close()
    line = PruneStores().run(cfg)
    assert line is not None and "pruned" in line and "(cap 1 MB" in line
    with Memory.open(str(proj), create=False) as mem:
        assert mem.store.live_bytes() <= 1024 * 1024
    code, out = run(proj, "prune")
    assert code == 1 and "no size cap: set storage.max_size_mb" in out
    code, out = run(proj, "prune", "--max-mb", "1")
    assert code == 0 and "within the cap of 1 MB" in out


def _finish_jobs(proj: Path, when: str, failed: int = 0) -> None:
    conn = sqlite3.connect(project.identify(proj).db_path)
    conn.execute("UPDATE outbox SET status = 'done', created_at = ?, updated_at = ?", (when, when))
    conn.execute(
        "UPDATE outbox SET status = 'failed', attempts = 5, error = 'model crashed'"
        f" WHERE rowid IN (SELECT rowid FROM outbox LIMIT {failed})"
    )
    conn.commit()
    conn.close()


def test_outbox_metrics_alert_and_cleanup(hook: Hook, proj: Path) -> None:
    for i in range(12):
        hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt=f"question number {i}", prompt_id=f"p{i}"))
    with Memory.open(str(proj), create=False) as mem:
        queue = mem.store.outbox_metrics()
    assert queue["pending"] == 12 and queue["avg_ms"] is None and queue["oldest_waiting_since"]
    conn = sqlite3.connect(project.identify(proj).db_path)
    conn.execute(
        "UPDATE outbox SET status = 'done', created_at = '2026-01-01T10:00:00.000Z', "
        "updated_at = '2026-01-01T10:00:01.500Z'"
    )
    conn.execute("UPDATE outbox SET status = 'failed', error = 'x' WHERE rowid IN (SELECT rowid FROM outbox LIMIT 2)")
    conn.commit()
    conn.close()
    code, out = run(proj, "status", "--json")
    q = json.loads(out)["project"]["outbox"]
    assert (q["done"], q["failed"], q["avg_ms"]) == (10, 2, 1500.0)
    code, out = run(proj, "status")
    assert "2 FAILED (memlane vectors status; memlane vectors retry)" in out and "avg 1.5 s" in out
    code, out = run(proj, "doctor", "--json")
    check = next(c for c in json.loads(out) if c["name"].startswith("embedding queue"))
    assert check["warn"] is True and "2 embedding job(s) failed" in check["detail"]
    _finish_jobs(proj, "2026-01-01T10:00:00.000Z", failed=10)
    code, out = run(proj, "doctor", "--json")
    check = next(c for c in json.loads(out) if c["name"].startswith("embedding queue"))
    assert check["warn"] is False and code == 1  # from FAILED_ALERT failed jobs: a failure, not a warning
    line = CleanOutbox().run(config.Config())
    assert line is not None and line.endswith(f"{project.identify(proj).id} 2")  # the 2 done ones, long ago
    with Memory.open(str(proj), create=False) as mem:
        assert mem.store.outbox_metrics()["done"] == 0 and mem.store.outbox_metrics()["failed"] == 10


def test_upkeep_runs_due_jobs_and_records_them(big: Memory) -> None:
    big.close()
    cfg = config.Config()
    cfg.storage.max_size_mb = 1
    state: dict[str, object] = {}
    upkeep = Upkeep(cfg, threading.Event(), jobs=[PruneStores(), CleanOutbox()], state=state)
    lines = upkeep.run_due(now=1000.0)
    assert any("pruned" in line for line in lines) and set(state) == {"prune", "outbox-cleanup"}
    assert upkeep.run_due(now=1001.0) == []  # not due again before its interval
    assert upkeep.due["prune"] == 1000.0 + PruneStores.interval_s


def test_feature_toggles(hook: Hook, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = config.Config().features
    assert defaults.session_summary is True and defaults.insight_extraction is True
    _, out = run(proj, "config", "show")
    features = out.split("[features]\n", 1)[1].split("\n[", 1)[0]  # documented in `config show`
    assert "insight_extraction = true" in features and "session_summary = true" in features
    assert "learning loop" in features
    monkeypatch.setenv("MEMLANE_FEATURES_SESSION_SUMMARY", "false")
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    hook("Stop", payload("05-Stop.json"))
    hook("SessionEnd", payload("06-SessionEnd.json"))
    with Memory.open(str(proj), create=False) as mem:
        assert mem.history(types=["session_summary"]) == [] and mem.sessions()[0]["summary"] is None
    monkeypatch.setenv("MEMLANE_FEATURES_SESSION_SUMMARY", "true")
    hook("SessionEnd", payload("06-SessionEnd.json", prompt_id="again"))
    with Memory.open(str(proj), create=False) as mem:
        assert len(mem.history(types=["session_summary"])) == 1
