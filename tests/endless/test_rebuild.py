"""``memlane rebuild`` reproduces endless mode's state — marks, session spans and continuity scores, the working
set, consolidated memories with their sources and search rows — on the coding replay imported in two halves out of
time order, followed in uneven batches with the daemon's job running (and consolidating) between them; and a store
from before (schema 9, and main's schema 70) upgrades in place."""

from __future__ import annotations

import importlib.util
import random
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from en_support import Log, dump

from memlane import config, derived, project
from memlane.daemon.jobs import EndlessJob
from memlane.importers import Importer, Options, discover
from memlane.knowledge import projection
from memlane.memory import Memory
from memlane.store import schema
from memlane.store.db import Store

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "coding_replay.py"
FIXTURES = ROOT / "benchmarks" / "coding_replay" / "transcripts"


def bench() -> Any:
    spec = importlib.util.spec_from_file_location("coding_replay", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rebuild_reproduces_the_working_set_consolidations_and_scores_of_the_coding_replay(tmp_path: Path) -> None:
    root = tmp_path / "parcelwise"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    files = bench().materialize(FIXTURES, tmp_path / "transcripts", root)
    proj = project.identify(root)
    cfg = config.load()
    cfg.endless.consolidate_after_events = 40
    rng = random.Random(34)
    with Memory.open(root, cfg=cfg) as mem:
        job = EndlessJob()
        for half in (files[1::2], files[::2]):  # out of time order
            options = Options(["claude", "codex"], half)
            Importer(proj, options, cfg).run(discover(proj, options))
            while not projection.catch_up(mem.store, derived.projectors(), max_events=rng.randint(1, 60)).done:
                job.refreshed.clear()
                job.step(mem)  # consolidates when due: part of the way, in between
        for _ in range(100):
            job.refreshed.clear()
            if not job.step(mem) and not mem.store.dirty_topic_count():
                break
        assert not mem.store.dirty_topic_count() and not mem.store.dirty_sessions(1)
        followed = dump(mem.store)
        counts = mem.store.endless_counts()
        assert counts["consolidated"] >= 30 and counts["sessions"] == 61 and counts["working_set"] >= 5, counts
        assert mem.rebuild(["endless"]) == {"endless": 439}
        rebuilt = dump(mem.store)
    for table, rows in followed.items():
        assert rebuilt[table] == rows, table


def test_a_store_from_schema_9_or_from_main_upgrades_in_place(tmp_path: Path) -> None:
    for name, target in (("nine", 9), ("main", 70)):
        path = tmp_path / f"{name}.db"
        db = sqlite3.connect(path, isolation_level=None)
        schema.migrate(db, target=target)
        db.close()
        with Store(path, "p") as store:
            versions = {r[0] for r in store.db.execute("SELECT version FROM schema_migrations")}
            assert {9, 10, 70, 90} <= versions, name
            assert store.endless_mode() is None and store.working_set() == []
            Log(store).exchange("s1", "Fix it.", "app/x.py", "a = 1", "a = 2", "Fixed app/x.py.", hours=0)
            Log(store).edit("app/x.py", "a = 2", "a = 3", "s2", hours=1)
            derived.catch_up(store)
            derived.rebuild(store, ["endless"])
            assert [i["key"] for i in store.working_set() if i["kind"] == "file"] == ["app/x.py"]
