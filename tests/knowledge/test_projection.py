"""Projection: resumable and idempotent offsets, restart on a new version, the rebuild registry, forget, the daemon
job, and a store from schema 9 upgrading in place."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from kn_support import Log, open_store

from memlane import derived
from memlane.knowledge import projection
from memlane.knowledge.projection import Projector
from memlane.knowledge.projector import KnowledgeProjector
from memlane.store import schema
from memlane.store.db import Event, Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    yield from open_store(tmp_path)


@pytest.fixture
def log(store: Store) -> Log:
    return Log(store)


class Counter(Projector):
    """A projector that counts events per type in a table of its own (what another feature would add)."""

    name = "counter"

    def __init__(self, fail_at: int | None = None) -> None:
        self.fail_at = fail_at

    def drop(self, store: Store) -> None:
        store.db.execute("CREATE TABLE IF NOT EXISTS counts (type TEXT PRIMARY KEY, n INTEGER NOT NULL)")
        store.db.execute("DELETE FROM counts")

    def project(self, store: Store, events: Sequence[Event]) -> None:
        for event in events:
            if self.fail_at is not None and event.seq == self.fail_at:
                raise RuntimeError("killed mid-batch")
            store.db.execute(
                "INSERT INTO counts (type, n) VALUES (?, 1) ON CONFLICT(type) DO UPDATE SET n = n + 1", (event.type,)
            )


def counts(store: Store) -> dict[str, int]:
    return dict(store.db.execute("SELECT type, n FROM counts").fetchall())


def test_catch_up_is_resumable_and_never_projects_an_event_twice(store: Store, log: Log) -> None:
    for i in range(10):
        log.prompt(f"prompt {i}")
    progress = projection.catch_up(store, [Counter()], max_events=4, batch=3)
    assert (progress.projected, progress.behind, progress.restarted) == (4, {"counter": 6}, ["counter"])
    assert counts(store) == {"user_prompt": 4}
    with pytest.raises(RuntimeError):  # a crash in the second batch (8-10): it is rolled back with its offset
        projection.catch_up(store, [Counter(fail_at=9)], batch=3)
    assert counts(store) == {"user_prompt": 7}
    assert store.projection_offset("counter") == (7, 1)
    progress = projection.catch_up(store, [Counter()])
    assert counts(store) == {"user_prompt": 10} and progress.done
    assert projection.catch_up(store, [Counter()]).projected == 0, "nothing new: nothing done"


def test_a_new_version_starts_over(store: Store, log: Log) -> None:
    log.prompt("one")
    projection.catch_up(store, [Counter()])
    log.prompt("two")

    class Counter2(Counter):
        version = 2

    progress = projection.catch_up(store, [Counter2()])
    assert progress.restarted == ["counter"] and counts(store) == {"user_prompt": 2}
    assert store.projection_offset("counter") == (2, 2)


def test_two_catch_ups_at_once_project_each_event_once(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with Store(path, "p") as s:
        Log(s)
        for i in range(300):
            Log(s).prompt(f"prompt {i}", at=i)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with Store(path, "p") as s:
                projection.catch_up(s, [Counter()], batch=7)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Store(path, "p") as s:
        assert counts(s) == {"user_prompt": 300}


def test_registry_lists_every_owner_and_rebuild_recreates_them(store: Store, log: Log) -> None:
    assert derived.names() == ["fulltext", "sessions", "knowledge", "endless", "learning"]
    log.prompt("why does the checkout pool time out")
    log.edit("app/db.py", "pool_size=10", "pool_size=20")
    log.project()
    before = store.knowledge_counts()
    store.db.execute("DELETE FROM entries")
    store.db.execute("INSERT INTO events_fts(events_fts) VALUES ('delete-all')")
    store.db.execute("DELETE FROM sessions")
    assert store.fts("checkout pool") == [] and store.sessions() == []
    counts_read = derived.rebuild(store)
    assert counts_read == {"fulltext": 2, "sessions": 2, "knowledge": 2, "endless": 2, "learning": 2}
    assert store.knowledge_counts() == before
    assert next(e.content for e, _ in store.fts("checkout pool")) == "why does the checkout pool time out"
    assert store.sessions()[0]["event_count"] == 2
    store.db.execute("INSERT INTO events_fts(events_fts) VALUES ('integrity-check')")


def test_forget_empties_what_was_derived_and_it_comes_back_for_what_remains(tmp_path: Path) -> None:
    from memlane import config, project
    from memlane.memory import Memory

    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    mem = Memory.open(root, cfg=config.load())
    log = Log(mem.store)
    secret_task = log.prompt("- [ ] rename the project to Bluebird", session="a")
    log.prompt("- [ ] write the CSV importer", session="b")
    mem.catch_up()
    assert {t["title"] for t in mem.tasks()} == {"rename the project to Bluebird", "write the CSV importer"}
    mem.forget(ids=[secret_task.id])
    titles = [r[0] for r in mem.store.db.execute("SELECT title FROM entities")]
    assert not any("Bluebird" in t for t in titles), "derived text of a forgotten event must go at once"
    assert mem.store.projection_offsets() == {}
    mem.catch_up()
    assert [t["title"] for t in mem.tasks()] == ["write the CSV importer"]
    mem.close()
    del project


def test_schema_9_store_upgrades_in_place_and_projects_its_old_events(tmp_path: Path) -> None:
    """A store made by today's main (schema 9) gains the knowledge tables on open; its events are projected by the
    next catch-up (the daemon's job) as if they had been there all along."""
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    schema.migrate(db, target=9)
    rows = [
        ("user_prompt", "Configure the SQLAlchemy engine"),
        (
            "tool_observation",
            "Edit: /home/dev/src/shop/app/db.py\n- engine = create_engine(URL)\n"
            "+ engine = create_engine(URL, pool_size=10)",
        ),
        ("agent_response", "app/db.py now creates the engine with pool_size=10."),
        ("user_prompt", "Raise the pool"),
        ("tool_observation", "Edit: /home/dev/src/shop/app/db.py\n- pool_size=10\n+ pool_size=25"),
    ]
    for i, (kind, text) in enumerate(rows):
        meta = '{"tool_name": "Edit", "file_path": "/home/dev/src/shop/app/db.py", "cwd": "/home/dev/src/shop"}'
        db.execute(
            "INSERT INTO events (id, citation, type, session_id, project_id, ts, content, canonical_key, dedupe_key,"
            " metadata) VALUES (?, ?, ?, ?, 'p', ?, ?, '', ?, ?)",
            (f"{i:032x}", f"c{i:05d}", kind, "s1" if i < 3 else "s2", f"2026-01-0{i + 1}T00:00:00.000Z", text,
             f"k{i}", meta if kind == "tool_observation" else "{}"),
        )  # fmt: skip
    assert db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == 9
    db.close()
    store = Store(path, "p")
    versions = [r[0] for r in store.db.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == [n for n, _, _ in schema.MIGRATIONS] and 10 in versions
    assert store.knowledge_counts()["superseded"] == 0, "empty until projected"
    derived.catch_up(store)
    assert store.replacements([f"{1:032x}", f"{2:032x}"]) == {f"{1:032x}": f"{4:032x}", f"{2:032x}": f"{4:032x}"}
    assert len(store.history(limit=10)) == 5
    store.close()


def test_migrations_apply_by_number_not_by_the_highest(tmp_path: Path) -> None:
    """A store that has a later branch's migration but not this one's still gets this one."""
    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    schema.migrate(db, target=9)
    db.execute("INSERT INTO schema_migrations VALUES (25, 'someone_elses', '2026-01-01')")
    applied = schema.migrate(db)
    assert 10 in applied and 25 not in applied and applied == sorted(applied)
    assert db.execute("SELECT COUNT(*) FROM projection_offsets").fetchone()[0] == 0
    db.close()


def test_the_daemon_projection_job_projects_every_project(tmp_path: Path) -> None:
    from memlane import config
    from memlane.daemon.embed_worker import Gate, Worker
    from memlane.daemon.jobs import default_jobs
    from memlane.memory import Memory

    stop = threading.Event()
    roots = []
    for name in ("a", "b"):
        root = tmp_path / name
        (root / ".git").mkdir(parents=True)
        roots.append(root)
        with Memory.open(root) as mem:
            Log(mem.store).prompt(f"- [ ] task of project {name}")
    gate = Gate()
    worker = Worker(config.load(), None, gate, stop, lambda: None, jobs=default_jobs(config.load(), gate, stop))
    assert [job.name for job in worker.jobs] == ["projection", "graduation", "endless"]
    assert worker.step() >= 2, "no model: the jobs run anyway"
    assert worker.step() == 0
    # One event per project, read by each log-following projector (knowledge, endless, learning).
    assert worker.state["jobs"]["projection"] == {"done": 6, "last_error": None}
    for root, name in zip(roots, ("a", "b"), strict=True):
        with Memory.open(root) as mem:
            assert [t["title"] for t in mem.tasks()] == [f"task of project {name}"]


def test_knowledge_projector_skips_bookkeeping(store: Store, log: Log) -> None:
    log.add("session_start", "Session started (startup) in /home/dev/src/shop")
    log.prompt("- [ ] write the CSV importer")
    KnowledgeProjector().project(store, list(store.iter_events()))
    assert [e["entity_type"] for e in store.entities("task")] == ["task"]
