"""``memlane rebuild`` reproduces the learning loop exactly: on the coding replay's 61 recorded sessions, imported in
two halves out of time order, with later sessions that cite its memories, fetches, injection records and LLM
answers arriving in between, the projection catching up in uneven batches and the graduation and endless jobs
running now and then (as the daemon would) — then every derived table of every owner (knowledge, endless mode,
learning) recreated together from the events and the logs, and compared; the logs themselves are kept."""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
from pathlib import Path
from typing import Any

from test_rebuild_replay import FIXTURES, ROOT, bench
from test_rebuild_replay import TABLES as KNOWLEDGE_TABLES

from memlane import config, derived, project
from memlane.daemon.jobs import EndlessJob
from memlane.importers import Importer, Options, discover
from memlane.knowledge import projection
from memlane.memory import Memory
from memlane.store.db import NewEvent, Store

TABLES = {
    "memory_usage": "*",
    "memory_levels": "*",
    "insights": "*",
    "insight_sources": "*",
    "learning_errors": "*",
}


LOGS = {"injections": "*", "memory_fetches": "*", "llm_extractions": "*", "llm_extraction_events": "*"}


def endless_tables() -> dict[str, str]:
    spec = importlib.util.spec_from_file_location("en_support", ROOT / "tests" / "endless" / "en_support.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.TABLES)


def dump(store: Store, tables: dict[str, str] = TABLES) -> dict[str, list[tuple[Any, ...]]]:
    return {t: sorted(store.db.execute(f"SELECT {cols} FROM {t}").fetchall(), key=repr) for t, cols in tables.items()}


def catch_up_unevenly(mem: Memory, rng: random.Random, job: EndlessJob) -> None:
    store = mem.store
    while not projection.catch_up(store, derived.projectors(), max_events=rng.randint(1, 60)).done:
        if rng.random() < 0.3:
            derived.settle(store, limit=1)
        if rng.random() < 0.3:
            job.refreshed.clear()
            job.step(mem)  # endless mode's job, consolidating when due, between batches
    derived.settle(store, limit=rng.randint(1, 3))


def use_some(mem: Memory, rng: random.Random, day: int) -> None:
    """A later session that cites, fetches and is shown some of what the store holds."""
    store = mem.store
    pool = [e for e in store.history(limit=400) if e.type in ("agent_response", "tool_observation", "user_prompt")]
    picked = rng.sample(pool[:12], 6)  # a few memories used again and again: they climb
    session = f"later-{day}"
    ts = f"2027-0{1 + day // 3}-1{day % 3}T10:00:00.000Z"
    prompt = NewEvent(
        "user_prompt", session, f"how did we handle {picked[0].content[:40]!r}?", f"{session}:p", {}, ts=ts
    )
    store.append([prompt])
    (p,) = store.history(session=session, types=["user_prompt"], limit=1)
    record = {"full": [{"id": e.id, "cite": e.cite, "score": round(rng.random(), 3)} for e in picked[:3]],
              "index": [{"id": e.id, "cite": e.cite, "score": 0.2} for e in picked[3:5]], "left_out": []}  # fmt: skip
    with store.write() as db:  # the injection log's row, at the prompt's time (record_injection stamps now)
        db.execute("INSERT OR REPLACE INTO injections (prompt_id, session_id, ts, record) VALUES (?,?,?,?)",
                   (p.id, session, ts, json.dumps(record)))  # fmt: skip
    answer = "Going by " + " and ".join(f"[mem:{e.citation}]" for e in picked[:2]) + ", it was fixed."
    store.append([NewEvent("agent_response", session, answer, f"{session}:a", {"cites": [picked[2].citation]},
                           ts=ts.replace("10:00", "10:01"))])  # fmt: skip
    store.record_fetch([picked[5].id, picked[0].id], "mcp", session)


def test_rebuild_reproduces_levels_and_insights_exactly(tmp_path: Path) -> None:
    root = tmp_path / "parcelwise"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    files = bench().materialize(FIXTURES, tmp_path / "transcripts", root)
    proj = project.identify(root)
    cfg = config.load()
    cfg.endless.consolidate_after_events = 40
    rng = random.Random(33)
    job = EndlessJob()
    every = {**KNOWLEDGE_TABLES, **endless_tables(), **TABLES}
    with Memory.open(root, cfg=cfg) as mem:
        for day, half in enumerate((files[::2], files[1::2])):
            options = Options(["claude", "codex"], half)
            Importer(proj, options, cfg).run(discover(proj, options))
            catch_up_unevenly(mem, rng, job)
            for extra in range(6):
                use_some(mem, rng, day * 6 + extra)
                catch_up_unevenly(mem, rng, job)
        # an LLM answer, as the extractor keeps it, arriving after the projection
        events = mem.store.history(types=["user_prompt", "agent_response"], limit=5)
        quote = next(e for e in events if len(e.content) > 30)
        row = {"session_id": quote.session_id, "input_hash": "replay-1", "last_seq": quote.seq, "provider": "openai",
               "model": "stub", "input_tokens": 10, "output_tokens": 5, "cost_usd": 0.0,
               "response": {"insights": [{"type": "convention",
                                          "quotes": [{"message": 0, "text": quote.content[:30]}]}]}}  # fmt: skip
        mem.store.add_extraction(row, [quote.id])
        catch_up_unevenly(mem, rng, job)
        # much later, a session that uses nothing: what was not used since steps down
        mem.store.append(
            [NewEvent("user_prompt", "much-later", "something else", "ml", {}, ts="2027-06-15T00:00:00.000Z")]
        )
        catch_up_unevenly(mem, rng, job)
        while derived.settle(mem.store):
            pass
        for _ in range(100):
            job.refreshed.clear()
            if not job.step(mem) and not mem.store.dirty_topic_count():
                break
        assert not mem.store.dirty_topic_count() and not mem.store.dirty_sessions(1)
        followed = dump(mem.store, every)
        logs = dump(mem.store, LOGS)
        assert len(logs["injections"]) == 12 and logs["llm_extractions"]
        assert len(followed["memory_usage"]) >= 30, "uses of every kind were folded in"
        assert {r[1] for r in followed["memory_usage"]} >= {"cited", "fetched"}
        reasons = [r[13] for r in followed["memory_levels"]]
        assert any(r.startswith("stepped down from L2") for r in reasons), reasons
        kinds = {r[1] for r in followed["insights"]}
        assert {"decision", "convention"} <= kinds, kinds
        assert any("llm" in r[4] for r in followed["insights"])
        assert mem.store.endless_counts()["consolidated"] >= 30
        counts = mem.rebuild()  # every owner of the registry, together
        assert list(counts) == derived.names() == ["fulltext", "sessions", "knowledge", "endless", "learning"]
        assert len(set(counts.values())) == 1, counts
        rebuilt = dump(mem.store, every)
        assert dump(mem.store, LOGS) == logs, "rebuild keeps the logs it reads"
    for table, rows in followed.items():
        assert rebuilt[table] == rows, table
