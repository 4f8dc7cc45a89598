"""Consolidation: one memory per long-running topic with its key facts and every source event; idempotent,
resumable after a real kill -9, searchable (words and Korean), and honest about facts that were replaced."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from en_support import Log, dump

from conftest import wait_until
from memlane import derived
from memlane.endless import consolidation, service
from memlane.store.db import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "memory.db", "proj-e")
    yield s
    s.close()


def pool_history(log: Log) -> None:
    log.exchange("s1", "Configure the engine pool.", "app/db.py", "engine = create_engine(URL)",
                 "engine = create_engine(URL, pool_size=10)", "app/db.py now uses pool_size=10.", hours=0)  # fmt: skip
    log.exchange("s2", "The load test throws 500s.", "app/db.py", "pool_size=10", "pool_size=25",
                 "QueuePool was exhausted; app/db.py now uses pool_size=25.", hours=50)  # fmt: skip


def test_a_topic_of_two_sessions_becomes_one_memory_with_its_facts_and_every_source(store: Store) -> None:
    log = Log(store)
    pool_history(log)
    log.project()
    memory = store.consolidated_by_topic("file", "app/db.py")
    assert memory is not None
    assert (memory["title"], memory["sessions"], memory["sources"], memory["confidence"]) == ("app/db.py", 2, 6, 0.85)
    assert [f["role"] for f in memory["facts"]] == ["asked", "change", "answer"] * 2
    assert memory["summary"].splitlines()[-1] == "2026-03-04 QueuePool was exhausted; app/db.py now uses pool_size=25."
    everything = [e.id for e in store.iter_events()]
    assert sorted(store.consolidated_sources(memory["id"])) == sorted(everything)  # sources kept, all of them


def test_one_event_or_only_reads_make_no_memory_and_a_memory_goes_when_its_topic_no_longer_qualifies(
    store: Store,
) -> None:
    log = Log(store)
    log.edit("app/one.py", "a = 1", "a = 2", "s1")
    log.read("app/seen.py", "b = 1", "s1")
    log.read("app/seen.py", "b = 1", "s2")
    log.bash("pytest -q", "3 passed", "s1")
    log.bash("pytest -q", "3 passed", "s2")
    log.project()
    assert store.consolidated_count() == 0


def test_consolidating_again_changes_nothing(store: Store) -> None:
    log = Log(store)
    pool_history(log)
    log.project()
    before = dump(store)
    store.mark_topics_dirty([(k, v) for k, v in store.db.execute("SELECT kind, key FROM endless_marks")])
    assert consolidation.consolidate(store) > 0
    assert dump(store) == before
    derived.rebuild(store, ["endless"])
    assert dump(store) == before


def test_replaced_facts_stay_in_the_memory_and_are_said_to_be_replaced(store: Store) -> None:
    log = Log(store)
    pool_history(log)
    log.project()
    (found,) = service.memories(store, "pool_size")
    old = [f for f in found["facts"] if "pool_size=10" in f["text"] and f["role"] == "change"]
    assert old and old[0]["replaced_by"].startswith("mem:")
    assert not [f for f in found["facts"] if "pool_size=25" in f["text"] and f.get("replaced_by")]


def test_search_finds_consolidated_memories_by_words_and_korean(store: Store) -> None:
    log = Log(store)
    pool_history(log)
    log.exchange("k1", "야간 리포트에 반품 건수도 넣어 주세요.", "app/report.py", 'COLUMNS = ["a"]',
                 'COLUMNS = ["a", "r"]', "리포트에 반품 건수 열을 추가했습니다.", hours=60)  # fmt: skip
    log.exchange("k2", "반품률도 보여 주세요.", "app/report.py", 'COLUMNS = ["a", "r"]', 'COLUMNS = ["a", "r", "rate"]',
                 "반품률 열을 추가했습니다.", hours=70)  # fmt: skip
    log.project()
    assert [m["title"] for m in service.memories(store, "QueuePool exhausted")] == ["app/db.py"]
    assert [m["title"] for m in service.memories(store, "반품 건수")] == ["app/report.py"]
    assert service.memories(store, "kubernetes") == []
    listed = service.memories(store, None, sources=True)
    assert {m["title"] for m in listed} == {"app/db.py", "app/report.py"}
    assert all(len(m["source_events"]) == m["sources"] for m in listed)


def test_forgetting_a_source_takes_its_words_out_of_the_memory(store: Store, tmp_path: Path) -> None:
    from memlane import config, project
    from memlane.memory import Memory

    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    with Memory.open(root, cfg=config.Config()) as mem:
        log = Log(mem.store)
        pool_history(log)
        log.project()
        answer = next(e for e in mem.store.iter_events() if "QueuePool was exhausted" in e.content)
        mem.forget(ids=[answer.id])
        log.project()
        memory = mem.store.consolidated_by_topic("file", "app/db.py")
        assert memory is not None and "QueuePool" not in memory["summary"]
        assert answer.id not in mem.store.consolidated_sources(memory["id"])
        assert project.identify(root).id == mem.project.id


# ---- resumable after kill -9 ----------------------------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import sys, time
    from memlane.endless import consolidation
    from memlane.store.db import Store

    consolidation.BATCH = 5
    build = consolidation.build

    def slow(store, kind, key):
        time.sleep(0.02)  # a batch takes ~0.1 s: the kill lands inside one
        return build(store, kind, key)

    consolidation.build = slow
    store = Store(sys.argv[1], "proj-e")
    print("started", flush=True)
    consolidation.consolidate(store)
    print("finished", flush=True)
    """
)


def test_consolidation_killed_with_sigkill_loses_at_most_its_open_batch_and_resumes(store: Store) -> None:
    log = Log(store)
    for n in range(60):
        log.exchange(f"s{n % 3}", f"Tune module {n}.", f"app/m{n}.py", f"v = {n}", f"v = {n + 1}",
                     f"app/m{n}.py now sets v = {n + 1}.", hours=n / 10)  # fmt: skip
    derived.catch_up(store)
    queued = store.dirty_topic_count()
    assert queued >= 60
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(store.file)], stdout=subprocess.PIPE, env={**os.environ})
    try:
        wait_until(lambda: store.dirty_topic_count() <= queued - 10, "the child consolidated two batches", 60)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    left = store.dirty_topic_count()
    assert 0 < left < queued  # killed part-way
    done = {r[0] for r in store.db.execute("SELECT id FROM consolidated_memories")}
    queued_now = {consolidation.memory_id(k, v) for k, v in store.dirty_topics(1000)}
    for kind, key in store.db.execute("SELECT DISTINCT kind, key FROM endless_marks WHERE kind = 'file'"):
        mid = consolidation.memory_id(kind, key)
        assert mid in done or mid in queued_now, key  # every topic either written or still queued: no half batch
    service.refresh(store, None, consolidate=True)
    resumed = dump(store)
    derived.rebuild(store, ["endless"])
    assert dump(store) == resumed
    assert store.consolidated_count() == 60
