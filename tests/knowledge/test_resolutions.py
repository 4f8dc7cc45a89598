"""Memory resolutions from structure: each rule, what goes with an exchange (wholly, partly, not at all), order of
projection not mattering, and the effective view."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kn_support import Log, open_store

from memlane import derived
from memlane.knowledge import resolutions
from memlane.store.db import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    yield from open_store(tmp_path)


@pytest.fixture
def log(store: Store) -> Log:
    return Log(store)


def pool_story(log: Log) -> dict[str, object]:
    """s1 sets pool_size=10 (and says so, beside something still true); s2 raises it to 25."""
    ask = log.prompt("Configure the SQLAlchemy engine properly", session="s1")
    write = log.write(
        "app/db.py", "engine = create_engine(DATABASE_URL, pool_size=10, max_overflow=5)\nBASE = 1", session="s1"
    )
    whole = log.answer("app/db.py now creates the engine with pool_size=10, max_overflow=5.", session="s1")
    part = log.answer(
        "Tests pass. The CI job uses pg_isready. The engine has pool_size=10. Docs are in README.", session="s1"
    )
    raise_it = log.prompt("The load test throws QueuePool errors", session="s2")
    edit = log.edit("app/db.py", "pool_size=10, max_overflow=5", "pool_size=25, max_overflow=10", session="s2")
    return {"ask": ask, "write": write, "whole": whole, "part": part, "raise": raise_it, "edit": edit}


def test_file_region_replaces_the_change_and_what_its_exchange_said_of_it(store: Store, log: Log) -> None:
    s = pool_story(log)
    log.project()
    edit = s["edit"].cite  # type: ignore[attr-defined]
    assert log.replaced(s["write"]) == edit  # type: ignore[arg-type]
    assert log.replaced(s["whole"]) == edit, "its only sentence names the replaced setting"  # type: ignore[arg-type]
    assert log.replaced(s["part"]) is None and log.replaced(s["part"], partial=True) == edit, "1 sentence of 4"  # type: ignore[arg-type]
    assert log.replaced(s["ask"]) is None and log.replaced(s["ask"], partial=True) is None, "the prompt names none"  # type: ignore[arg-type]
    assert log.replaced(s["raise"]) is None and log.replaced(s["edit"]) is None  # type: ignore[arg-type]
    rules = {r["rule"] for r in store.resolutions_of(s["write"].id)}  # type: ignore[attr-defined]
    assert rules == {"file_region"}, "replaced already when the quote rule looked: a history stays linear"
    entries = store.entries_of_event(s["write"].id)  # type: ignore[attr-defined]
    assert [(e["entry_type"], e["status"]) for e in entries] == [("change", "superseded")]
    newer = store.entries_of_event(s["edit"].id)[0]  # type: ignore[attr-defined]
    assert entries[0]["superseded_by"] == newer["id"]
    assert [e for e, _ in store.lineage(newer["id"])] == [newer["id"], entries[0]["id"]]


def test_a_line_only_extended_or_reindented_says_what_it_said(store: Store, log: Log) -> None:
    first = log.write("app/obs.py", "sentry_sdk.init(dsn=DSN, environment=ENV)\n    retries = 3", session="a")
    log.edit("app/obs.py", "environment=ENV)", "environment=ENV, ignore_errors=[CancelledError])", session="b")
    log.edit("app/obs.py", "    retries = 3", "retries = 3", session="c")
    log.project()
    assert log.replaced(first) is None and store.resolutions_of(first.id) == []


def test_edits_within_one_exchange_replace_nothing(store: Store, log: Log) -> None:
    log.prompt("set the pool")
    first = log.edit("app/db.py", "pool_size=5", "pool_size=10")
    log.edit("app/db.py", "pool_size=10", "pool_size=20")
    log.project()
    assert log.replaced(first) is None


def test_a_delete_replaces_every_earlier_change_and_snapshot_of_the_file(store: Store, log: Log) -> None:
    write = log.write("app/worker.py", "from celery import Celery\ncelery_app = Celery('shop')", session="a")
    read = log.read("app/worker.py", "from celery import Celery\ncelery_app = Celery('shop')", session="b")
    gone = log.patch("*** Delete File: app/worker.py", ["app/worker.py"], session="c")
    log.project()
    assert log.replaced(write) == gone.cite and log.replaced(read) == gone.cite
    other = log.write("app/jobs.py", "def run():\n    return 1", session="d")
    removed = log.bash("rm app/jobs.py", session="e")
    log.project()
    assert log.replaced(other) == removed.cite


def test_a_snapshot_is_replaced_by_a_later_edit_of_what_it_showed(store: Store, log: Log) -> None:
    read = log.read("README.md", "## Running locally\n\n    celery -A app.worker worker -Q labels", session="a")
    edit = log.edit(
        "README.md", "    celery -A app.worker worker -Q labels", "    rq worker labels default", session="b"
    )
    log.project()
    assert log.replaced(read) == edit.cite


def test_quote_rule_replaces_memories_elsewhere_that_quote_a_removed_fragment(store: Store, log: Log) -> None:
    log.prompt("what is our token lifetime?", session="q")
    said = log.answer("ACCESS_TOKEN_TTL = timedelta(minutes=15) in app/auth/tokens.py", session="q")
    edit = log.edit(
        "app/auth/tokens.py",
        "ACCESS_TOKEN_TTL = timedelta(minutes=15)",
        "ACCESS_TOKEN_TTL = timedelta(minutes=30)",
        session="w",
    )
    log.project()
    assert log.replaced(said) == edit.cite
    assert {r["rule"] for r in store.resolutions_of(said.id)} == {"quote"}


def test_a_fragment_quoted_too_often_replaces_nothing(store: Store, log: Log, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolutions, "MAX_QUOTING", 2)
    said = [log.answer(f"we read DATABASE_URL here ({i})", session=f"q{i}") for i in range(3)]
    log.edit("app/settings.py", "DATABASE_URL = env('DB')", "DB_URL = env('DB')", session="w")
    late = log.answer("DATABASE_URL again", session="late", at=0)  # older than the edit, stored after it
    log.project()
    assert [log.replaced(e) for e in [*said, late]] == [None, None, None, None]


def test_revert_replaces_the_exchange_that_made_the_commit(store: Store, log: Log) -> None:
    log.prompt("retry the DHL call", session="a")
    edit = log.edit(
        "app/carriers/dhl.py",
        "def create_shipment(self):",
        "@retry(stop=stop_after_attempt(5))\ndef create_shipment(self):",
        session="a",
    )
    told = log.answer("Added a tenacity retry to create_shipment: @retry(stop=stop_after_attempt(5)).", session="a")
    log.bash(
        "git commit -am 'carriers: retry DHL create_shipment with tenacity'",
        "[main 5d1e9a2] carriers: retry DHL create_shipment with tenacity\n 1 file changed",
        session="a",
    )
    log.prompt("we charged a merchant twice", session="b")
    revert = log.bash(
        "git revert --no-edit 5d1e9a2",
        '[main 8c03f7e] Revert "carriers: retry DHL create_shipment with tenacity"',
        session="b",
    )
    log.project()
    assert log.replaced(edit) == revert.cite and log.replaced(told) == revert.cite
    assert {r["detail"].get("sha") for r in store.resolutions_of(edit.id)} == {"5d1e9a2"}


def test_revert_without_its_commit_finds_the_change_by_the_subject(store: Store, log: Log) -> None:
    unrelated = log.edit("app/carriers/ups.py", "TIMEOUT = 5", "TIMEOUT = 10", session="z")
    edit = log.edit(
        "app/carriers/dhl.py",
        "def create_shipment(self):",
        "@retry(wait=wait_exponential(max=30))\ndef create_shipment(self):",
        session="a",
    )
    revert = log.bash(
        "git revert --no-edit 5d1e9a2",
        '[main 8c03f7e] Revert "carriers: retry DHL create_shipment with tenacity"',
        session="b",
    )
    log.project()
    assert log.replaced(edit) == revert.cite and log.replaced(unrelated) is None
    # A change projected after the revert (an older session imported later) that matches better takes over.
    better = log.edit(
        "app/carriers/dhl.py", "    pass", "    # retry create_shipment with tenacity (DHL carriers)", session="c", at=1
    )
    log.project()
    assert log.replaced(better) == revert.cite and log.replaced(edit) is None


def test_a_decision_replaces_what_introduced_the_name_and_a_later_reintroduction_replaces_it(
    store: Store, log: Log
) -> None:
    log.prompt("Set up a task queue", session="a")
    write = log.write("app/worker.py", "from celery import Celery\n\ncelery_app = Celery('shop')", session="a")
    chose = log.answer("Task queue: Celery. We picked Celery because the team knows it.", session="a")
    other = log.answer("Tests for the worker pass.", session="a")
    decision = log.answer("The decision is to switch the task queue from Celery to RQ.", session="b")
    log.project()
    assert log.replaced(write) == decision.cite and log.replaced(chose) == decision.cite
    assert log.replaced(other) is None, "it does not name Celery"
    assert {r["rule"] for r in store.resolutions_of(write.id)} == {"decision"}
    back = log.bash("pip install celery==5.4", "Successfully installed celery-5.4.0", session="c")
    log.project()
    assert log.replaced(decision, partial=True) == back.cite, "re-introduced later: the removal is history"


def test_the_first_removal_replaces_an_introduction_and_an_uninstall_counts(store: Store, log: Log) -> None:
    install = log.bash("npm install moment --prefix web", "added 1 package", session="a")
    decision = log.prompt("Replace moment with date-fns everywhere", session="b")
    log.bash("npm uninstall moment --prefix web", "removed 1 package", session="b")
    log.project()
    assert log.replaced(install) == decision.cite
    assert {r["rule"] for r in store.resolutions_of(install.id)} == {"decision"}, "replaced already: stays linear"
    other = log.bash("pip install celery", "Successfully installed celery", session="c")
    gone = log.bash("pip uninstall -y celery kombu", "Successfully uninstalled celery", session="d")
    log.project()
    assert log.replaced(other) == gone.cite and {r["rule"] for r in store.resolutions_of(other.id)} == {"command"}
    names = {e["title"] for e in store.entities("lib")}
    assert "web" not in names and {"moment", "date-fns"} <= names, "--prefix web is an option's value"


def test_later_decision_on_the_same_subject_replaces_the_earlier(store: Store, log: Log) -> None:
    first = log.answer("We will switch the task queue from Celery to RQ.", session="a")
    second = log.answer("Decided: switch the task queue from RQ to Dramatiq.", session="b")
    log.project()
    assert log.replaced(first) == second.cite


def test_projecting_out_of_time_order_gives_the_same_resolutions(store: Store, log: Log, tmp_path: Path) -> None:
    """History imported later than newer events: the newer edit is stored first, the older session after it."""
    edit = log.edit("app/db.py", "pool_size=10, max_overflow=5", "pool_size=25, max_overflow=10", session="s2", at=100)
    log.prompt("Configure the SQLAlchemy engine properly", session="s1", at=1)
    write = log.write("app/db.py", "engine = create_engine(URL, pool_size=10, max_overflow=5)", session="s1", at=2)
    told = log.answer("app/db.py now uses pool_size=10, max_overflow=5.", session="s1", at=3)
    log.project()
    assert log.replaced(write) == edit.cite and log.replaced(told) == edit.cite
    before = resolution_rows(store)
    derived.rebuild(store)
    assert resolution_rows(store) == before


def resolution_rows(store: Store) -> list[tuple[object, ...]]:
    return store.db.execute("SELECT * FROM resolutions ORDER BY old_id, new_id, rule").fetchall()


def test_chains_are_followed_and_the_effective_view_agrees(store: Store, log: Log) -> None:
    first = log.write("app/db.py", "POOL = 10", session="a")
    second = log.edit("app/db.py", "POOL = 10", "POOL = 25", session="b")
    third = log.edit("app/db.py", "POOL = 25", "POOL = 40", session="c")
    log.project()
    assert store.replacements([first.id, second.id, third.id]) == {first.id: third.id, second.id: third.id}
    view = {r[0]: r[1] for r in store.db.execute("SELECT event_id, current_id, status FROM v_memory_effective")}
    assert (view[first.id], view[second.id], view[third.id]) == (third.id, third.id, third.id)
    statuses = dict(store.db.execute("SELECT event_id, status FROM v_memory_effective").fetchall())
    assert (statuses[first.id], statuses[third.id]) == ("superseded", "current")
    # A change projected late (older, stored last) that sits between the two: every chain ends at the same place.
    log.edit("app/db.py", "POOL = 25", "POOL = 30", session="x", at=int(log.minute) - 1)
    log.project()
    assert store.replacements([first.id, second.id]) == {first.id: third.id, second.id: third.id}


def test_replacements_reads_by_index(store: Store) -> None:
    plan = " ".join(
        str(r[-1])
        for r in store.db.execute(
            "EXPLAIN QUERY PLAN SELECT event_id, current_id FROM memory_current WHERE event_id IN ('a','b')"
        )
    )
    assert "USING PRIMARY KEY" in plan or "USING INDEX" in plan, plan
