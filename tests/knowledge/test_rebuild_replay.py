"""``memlane rebuild`` gives what following the log gave, on a realistic store: the coding replay's 61 recorded
Claude Code and Codex sessions, imported in two halves with the projection catching up in uneven batches
between them (as the daemon would), then every derived table recreated from the events and compared."""

from __future__ import annotations

import importlib.util
import random
import subprocess
from pathlib import Path
from typing import Any

from memlane import config, derived, project
from memlane.importers import Importer, Options, discover
from memlane.knowledge import projection
from memlane.memory import Memory
from memlane.store.db import Store

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "coding_replay.py"
FIXTURES = ROOT / "benchmarks" / "coding_replay" / "transcripts"
TABLES = {
    "entries": "*",
    "entities": "*",
    "entity_aliases": "*",
    "edges": "src_type, src_id, rel_type, dst_type, dst_id, meta, event_id, ts",  # not the rowid
    "task_history": "*",
    "resolutions": "*",
    "memory_current": "*",
    "sessions": "*",
    "events_vocab": "term, doc, cnt",
}


def bench() -> Any:
    spec = importlib.util.spec_from_file_location("coding_replay", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dump(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    return {t: sorted(store.db.execute(f"SELECT {cols} FROM {t}").fetchall(), key=repr) for t, cols in TABLES.items()}


def test_rebuild_equals_following_the_log_on_the_coding_replay(tmp_path: Path) -> None:
    root = tmp_path / "parcelwise"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    files = bench().materialize(FIXTURES, tmp_path / "transcripts", root)
    assert len(files) == 61
    proj = project.identify(root)
    cfg = config.load()
    rng = random.Random(32)
    with Memory.open(root, cfg=cfg) as mem:
        for half in (files[::2], files[1::2]):  # Codex and Claude Code sessions interleaved, out of time order
            options = Options(["claude", "codex"], half)
            Importer(proj, options, cfg).run(discover(proj, options))
            while not projection.catch_up(mem.store, derived.projectors(), max_events=rng.randint(1, 60)).done:
                pass
        followed = dump(mem.store)
        counts = mem.store.knowledge_counts()
        assert counts["superseded"] >= 15 and counts["entries"]["change"] >= 40, counts
        assert mem.rebuild() == {"fulltext": 439, "sessions": 439, "knowledge": 439, "endless": 439, "learning": 439}
        rebuilt = dump(mem.store)
    for table in TABLES:
        assert rebuilt[table] == followed[table], table
