"""The store test-suite: behaviour through the backend interface runs on both backends (SQLite and
PostgreSQL, the ``store`` fixture's parameters); schema upgrades and SQLite's own files stay SQLite-only."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from memlane.store import NewEvent, Store, schema
from memlane.store.keys import canonical_key, has_cjk, parse_citation


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        s: Any = Store(tmp_path / "memory.db", "proj-1")
    else:
        from memlane.store.postgres.store import PgStore

        s = PgStore(request.getfixturevalue("pg_url"), f"proj-{uuid.uuid4().hex[:12]}")
    yield s
    s.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "memory.db", "proj-1")
    yield s
    s.close()


def ev(content: str, turn: str = "t1", type_: str = "user_prompt", session: str = "s1", **meta: object) -> NewEvent:
    return NewEvent(type_, session, content, turn, dict(meta))


def test_blank_database_gets_every_migration(sqlite_store: Store) -> None:
    store = sqlite_store
    versions = [r[0] for r in store.db.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == [n for n, _, _ in schema.MIGRATIONS]
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_upgrade_from_v1_backfills_citations(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    schema.migrate(db, target=1)
    for i in range(50):
        db.execute(
            "INSERT INTO events (id, type, session_id, project_id, ts, content, canonical_key, dedupe_key)"
            " VALUES (?, 'user_prompt', 's', 'p', '2026-01-01T00:00:00.000Z', ?, '', ?)",
            (f"{i:032x}", f"old prompt {i}", f"k{i}"),
        )
    db.close()
    store = Store(path, "p")
    cites = [r[0] for r in store.db.execute("SELECT citation FROM events")]
    assert len(cites) == 50 and len(set(cites)) == 50 and all(c and len(c) == 6 for c in cites)
    assert store.get(f"mem:{cites[0]}") is not None
    # FTS written by the v1 triggers still works after the upgrade.
    assert next(e.content for e, _ in store.fts("prompt 7")) == "old prompt 7"
    store.close()


def _insert_old(db: sqlite3.Connection, rows: list[tuple[str, str]], embedded: bool = False) -> None:
    """Events written straight into a store left at an older schema (ids 0, 1, … in hex), each with a done
    embedding job when ``embedded``."""
    for i, (kind, text) in enumerate(rows):
        db.execute(
            "INSERT INTO events (id, type, session_id, project_id, ts, content, canonical_key, dedupe_key, has_cjk)"
            " VALUES (?, ?, 's', 'p', '2026-01-01T00:00:00.000Z', ?, '', ?, ?)",
            (f"{i:032x}", kind, text, f"k{i}", int(has_cjk(text))),
        )
        if embedded:
            db.execute(
                "INSERT INTO outbox (event_id, status, created_at, updated_at) VALUES (?, 'done', '', '')",
                (f"{i:032x}",),
            )


def test_bookkeeping_leaves_search_on_upgrade_to_schema_9(tmp_path: Path) -> None:
    """A store from schema 8 had PreCompact's line in its full-text indexes and an embedding job (done: the
    worker embedded it) for every event; after the upgrade the bookkeeping is out of the indexes and its
    jobs are pending, so the worker drops its vectors (tests/test_markers.py runs that part)."""
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    schema.migrate(db, target=8)
    rows = [
        ("session_start", "Session started (startup) in /home/dev/src/shop"),
        ("compaction", "Context compaction (auto)"),
        ("compaction", "This session is being continued: the checkout pool was raised to 20 after the compaction."),
        ("user_prompt", "why does the checkout pool time out"),
        ("session_end", "Session ended (other)"),
    ]
    _insert_old(db, rows, embedded=True)
    assert db.execute("SELECT COUNT(*) FROM events_fts_docsize").fetchone()[0] == 3
    db.close()
    store = Store(path, "p")
    assert store.index_stats()[0] == 2
    assert [e.content[:4] for e, _ in store.fts("context compaction auto")] == ["This"]
    jobs = dict(store.db.execute("SELECT event_id, status FROM outbox").fetchall())
    assert [jobs[f"{i:032x}"] for i in range(len(rows))] == ["pending", "pending", "done", "done", "pending"]
    assert store.embeddable_event_ids() == {f"{2:032x}", f"{3:032x}"}
    store.append([ev("Context compaction (manual): keep tests", type_="compaction", session="s2")])
    assert store.index_stats()[0] == 2 and store.outbox_pending_count() == 3, "a new one is bookkeeping too"
    store.forget(store.select_for_forget(session="s2"), "session", "s2")  # deleting it keeps the index sound
    store.db.execute("INSERT INTO events_fts(events_fts) VALUES ('integrity-check')")
    assert len(store.history(limit=10)) == len(rows)
    store.close()


def test_session_markers_stay_out_of_the_full_text_indexes_and_bm25_statistics(tmp_path: Path) -> None:
    """Retrieval never returns session start/end markers, so they must not weigh in BM25's N and average
    length either; a store from before (v7) loses them from its indexes on upgrade."""
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    schema.migrate(db, target=7)
    rows = [
        ("session_start", "Session started in /home/dev/src/서비스 project"),
        ("user_prompt", "why does the checkout pool time out"),
        ("session_end", "Session ended"),
    ]
    _insert_old(db, rows)
    db.close()
    store = Store(path, "p")
    assert store.index_stats() == (1, 7.0)
    assert [e.type for e, _ in store.fts("session started checkout")] == ["user_prompt"]
    assert store.fts("서비스") == []
    store.append(
        [ev("Session started again", type_="session_start", session="s2"), ev("pool size raised", "t2", session="s2")]
    )
    assert store.index_stats() == (2, 5.0)
    store.forget(store.select_for_forget(session="s2"), "session", "s2")  # deleting markers keeps the index sound
    store.db.execute("INSERT INTO events_fts(events_fts) VALUES ('integrity-check')")
    store.db.execute("INSERT INTO events_cjk(events_cjk) VALUES ('integrity-check')")
    assert store.index_stats() == (1, 7.0)
    store.close()


def test_event_outbox_and_session_are_one_transaction(store: Store) -> None:
    result = store.append([ev("fix the pool"), ev("and the cache", "t2")])
    assert len(result.inserted) == 2
    assert store.outbox_queued_ids() == set(result.inserted) and store.outbox_status_counts() == {"pending": 2}
    session = store.session("s1")
    assert session and session["event_count"] == 2 and session["prompt_count"] == 2


def test_failed_transaction_leaves_nothing(store: Store) -> None:
    class Boom(Exception):
        pass

    with pytest.raises(Boom), store.write() as db:
        store._insert(db, ev("half written"))
        raise Boom
    assert store.count() == 0
    assert store.outbox_status_counts() == {}
    assert store.fts("half written") == []


def test_dedupe_same_delivery_once_same_words_twice(store: Store) -> None:
    store.append([ev("run the tests", "prompt-a")])
    assert store.append([ev("run the tests", "prompt-a")]).duplicates == 1
    store.append([ev("run the tests", "prompt-b")])
    assert store.count() == 2


def test_fts_ranks_exact_identifiers(store: Store) -> None:
    store.append(
        [
            ev("changed shop/db/pool_manager.py to release connections", "1"),
            ev("the pool was full of water", "2"),
            ev("error E4012 from the payment gateway", "3"),
        ]
    )
    assert store.fts("pool_manager.py")[0][0].content.startswith("changed shop/db/pool_manager.py")
    assert store.fts("E4012")[0][0].content.startswith("error E4012")
    assert store.fts("nonexistentword") == []


@pytest.mark.parametrize("query", ["데이터베이스", "데이터베이스를", "연결", "풀이", "接続プール", "数据库"])
def test_cjk_text_is_findable(store: Store, query: str) -> None:
    store.append(
        [
            ev("데이터베이스 연결 풀이 부하에서 시간 초과됩니다", "1"),
            ev("データベースの接続プールがタイムアウトします", "2"),
            ev("数据库连接池超时", "3"),
            ev("unrelated english text", "4"),
        ]
    )
    hits = store.fts(query)
    assert hits, query
    assert all("unrelated" not in e.content for e, _ in hits)


def test_fts_survives_hostile_queries(store: Store) -> None:
    store.append([ev("hello world")])
    for q in ['"', "AND OR NOT", "*", "NEAR(", "col:val", "'; DROP TABLE events; --", "\x00"]:
        store.fts(q)
    assert store.count() == 1


def test_forget_purges_everything_and_leaves_tombstone(store: Store) -> None:
    keep = store.append([ev("keep this one", "1")]).inserted[0]
    gone = store.append([ev("secret plan zanzibar", "2", session="s2")]).inserted[0]
    targets = store.select_for_forget(session="s2")
    assert store.forget(targets, "session", "s2") == 1
    assert store.get(gone) is None and store.get(keep) is not None
    assert store.fts("zanzibar") == []
    assert gone not in store.outbox_queued_ids() and store.outbox_status_counts() == {"pending": 1}
    assert store.session("s2") is None
    tomb = store.tombstones()[0]
    assert tomb["event_count"] == 1 and tomb["scope"] == "session"
    assert "zanzibar" not in str(tomb)
    if isinstance(store, Store):  # SQLite scrubs the freed pages of its file
        store.close()
        raw = (store.path).read_bytes()
        assert b"zanzibar" not in raw


def test_citations_resolve_in_every_form(store: Store) -> None:
    event = store.get(store.append([ev("cite me")]).inserted[0])
    assert event is not None
    for ref in (event.cite, f"[{event.cite}]", event.citation, event.id, event.id[:12]):
        found = store.get(ref)
        assert found is not None and found.id == event.id, ref
    assert parse_citation("mem:ABC123") == "abc123"
    assert parse_citation("hello") is None


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("Fix the Pool!", "fix the pool"),
        ("ＦＵＬＬＷＩＤＴＨ", "fullwidth"),
        ("  many   spaces\n\there ", "many spaces here"),
        ("Straße", "strasse"),
        ("데이터베이스, 연결!", "데이터베이스 연결"),
        ("snake_case.py", "snakecasepy"),
    ],
)
def test_canonical_key(text: str, key: str) -> None:
    assert canonical_key(text) == key


def test_long_canonical_key_is_shortened_with_hash() -> None:
    a, b = canonical_key("word " * 100 + "a"), canonical_key("word " * 100 + "b")
    assert len(a) == 200 and a != b


def test_concurrent_migration_is_safe(tmp_path: Path) -> None:
    import threading

    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            Store(tmp_path / "race.db", "p").close()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_document_counts_are_cached_until_the_store_grows(store: Store) -> None:
    store.append([ev(f"zebrafinch pool note {i}", turn=f"t{i}") for i in range(100)])
    assert store.doc_freqs(["zebrafinch", "pool", "absent"]) == {"zebrafinch": 100, "pool": 100}
    assert store.size_estimate() == store.count() == 100
    store.append([ev(f"zebrafinch again {i}", turn=f"u{i}") for i in range(3)])
    assert store.doc_freqs(["zebrafinch"]) == {"zebrafinch": 100}, "a few new events reuse the cached count"
    store.append([ev(f"zebrafinch later {i}", turn=f"v{i}") for i in range(200)])
    assert store.doc_freqs(["zebrafinch", "later"]) == {"zebrafinch": 303, "later": 200}
    # The match chosen from those counts still finds the new events.
    assert any("later" in e.content for e, _ in store.fts("zebrafinch later", limit=5))


def test_document_counts_outlive_the_process_but_never_keep_foreign_words(sqlite_store: Store, tmp_path: Path) -> None:
    """Every hook is a new process: counts are kept in the store (only of words it indexes: a query's secret
    is not one), reused by the next opener, and dropped when events are forgotten."""
    from memlane.store import fulltext as store_fulltext

    store = sqlite_store
    store.append([ev(f"zebrafinch pool note {i}", turn=f"t{i}") for i in range(100)])
    assert store.doc_freqs(["zebrafinch", "pool", "hunter2secret"]) == {"zebrafinch": 100, "pool": 100}
    kept = dict(store.db.execute("SELECT term, doc FROM term_counts").fetchall())
    assert kept == {"zebrafinch": 100, "pool": 100}
    store_fulltext._DF_CACHE.clear()  # a new process: nothing in memory
    store.db.execute("UPDATE term_counts SET doc = 77 WHERE term = 'pool'")  # proves the table is what is read
    with Store(store.file, store.project_id) as other:
        assert other.doc_freqs(["pool"]) == {"pool": 77}
    store_fulltext._DF_CACHE.clear()
    store.append([ev(f"pool later {i}", turn=f"v{i}") for i in range(200)])  # grown too much: recounted
    assert store.doc_freqs(["pool"]) == {"pool": 300}
    assert store.db.execute("SELECT doc FROM term_counts WHERE term = 'pool'").fetchone() == (300,)
    first = store.history(limit=1, oldest_first=True)[0]
    store.forget([(first.id, first.type)], "event", first.id)
    assert store.db.execute("SELECT COUNT(*) FROM term_counts").fetchone() == (0,)


def test_a_busy_store_answers_counts_without_waiting_or_keeping_them(sqlite_store: Store) -> None:
    from memlane.store import fulltext as store_fulltext

    store = sqlite_store
    store.append([ev(f"zebrafinch pool note {i}", turn=f"t{i}") for i in range(10)])
    store_fulltext._DF_CACHE.clear()
    with Store(store.file, store.project_id, busy_timeout_ms=5000) as reader:
        blocker = sqlite3.connect(store.file, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another process is writing
        try:
            assert reader.doc_freqs(["zebrafinch"]) == {"zebrafinch": 10}
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert reader.db.execute("PRAGMA busy_timeout").fetchone() == (5000,)
    assert store.db.execute("SELECT COUNT(*) FROM term_counts").fetchone() == (0,)


def test_broad_matches_are_bounded_and_unknown_words_do_not_hide_known_ones(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlane.store import fulltext as store_fulltext  # the modules that read the budget
    from memlane.store.postgres import store as pg_store

    monkeypatch.setattr(store_fulltext, "POSTINGS_BUDGET", 50)  # what 20k postings are to a large store
    monkeypatch.setattr(pg_store, "POSTINGS_BUDGET", 50)
    store.append([ev(f"checkout pool note {i}", turn=f"t{i}") for i in range(60)])
    store.append([ev(f"rare zebrafinch pool {i}", turn=f"z{i}") for i in range(3)])
    # A word the store has never seen used to be taken as the rarest and match nothing at all.
    hits = store.fts("checkout pool flibbertigibbet", limit=5)
    assert len(hits) == 5 and all("checkout pool" in e.content for e, _ in hits)
    # Too broad to rank with BM25 (every match would be scored): the newest matches, newest first.
    assert [e.content for e, _ in hits] == [f"checkout pool note {i}" for i in range(59, 54, -1)]
    # Within the budget the rare word still ranks by BM25.
    assert "zebrafinch" in store.fts("zebrafinch flibbertigibbet", limit=5)[0][0].content
    assert store.fts("flibbertigibbet", limit=5) == []


def test_replace_derived_swaps_events_without_a_tombstone(store: Store) -> None:
    store.append([ev("ask"), ev("first summary", "end", "session_summary")])
    (old,) = store.history(types=["session_summary"], limit=5)
    result = store.replace_derived([old.id], [ev("second summary", "end", "session_summary")])
    assert len(result.inserted) == 1
    assert [e.content for e in store.history(types=["session_summary"], limit=5)] == ["second summary"]
    assert [e.content for e, _ in store.fts("summary")] == ["second summary"]  # gone from full-text too
    session = store.session("s1")
    assert session is not None
    assert session["event_count"] == 2 and session["summary"] == "second summary"
    assert store.tombstones() == []


def test_a_migration_numbered_below_the_highest_applied_is_still_applied(tmp_path: Path) -> None:
    """Parallel work takes ranges of numbers: a store that already has a higher number still gets a lower one."""
    db = sqlite3.connect(tmp_path / "gap.db", isolation_level=None)
    schema.migrate(db, target=schema.LATEST - 1)
    db.execute(  # a later-numbered migration, applied by a newer build before this one's arrived
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'later', '2026-01-01')",
        (schema.LATEST + 100,),
    )
    assert schema.migrate(db) == [schema.LATEST]
    assert schema.migrate(db) == []
    db.close()


def test_a_store_from_before_the_cjk_index_gets_it(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    schema.migrate(db, target=20)
    assert not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'events_cjk_seq'").fetchone()
    db.close()
    with Store(path, "p") as store:
        assert store.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'events_cjk_seq'").fetchone()
