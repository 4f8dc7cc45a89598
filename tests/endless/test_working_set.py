"""The working set: a window that slides with the project's activity (items enter and leave on time), ranked and
capped, open tasks only, the latest decision on a subject; and what SessionStart makes of it, within budget and
cited line by line."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from en_support import Log

from memlane.config import Config
from memlane.endless import inject, working_set
from memlane.store.db import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "memory.db", "proj-e")
    yield s
    s.close()


def keys(store: Store) -> list[str]:
    return [i["key"] for i in store.working_set()]


def test_items_enter_with_their_events_and_leave_once_the_activity_moved_on_by_the_window(store: Store) -> None:
    log = Log(store)
    log.edit("app/a.py", "x = 1", "x = 2", "s1", hours=0)
    log.edit("app/b.py", "y = 1", "y = 2", "s1", hours=10)
    log.project()
    assert sorted(keys(store)) == ["app/a.py", "app/b.py"]
    log.edit("app/c.py", "z = 1", "z = 2", "s2", hours=24)  # exactly 24 h after a.py: still inside
    log.project()
    assert sorted(keys(store)) == ["app/a.py", "app/b.py", "app/c.py"]
    log.edit("app/c.py", "z = 2", "z = 3", "s2", hours=24 + 1 / 60)  # a minute later: a.py leaves
    log.project()
    assert sorted(keys(store)) == ["app/b.py", "app/c.py"]
    log.edit("app/d.py", "w = 1", "w = 2", "s3", hours=40)
    log.project()
    assert sorted(keys(store)) == ["app/c.py", "app/d.py"]
    log.edit("app/a.py", "x = 2", "x = 3", "s3", hours=41)  # touched again: back in
    log.project()
    assert sorted(keys(store)) == ["app/a.py", "app/c.py", "app/d.py"]
    state = store.endless_state()
    assert (state["ws_since"], state["ws_anchor"]) == ("2026-03-03T02:00:00.000Z", "2026-03-04T02:00:00.000Z")


def test_the_window_is_a_setting_and_a_new_one_recomputes_the_set(store: Store) -> None:
    log = Log(store)
    log.edit("app/a.py", "x = 1", "x = 2", "s1", hours=0)
    log.edit("app/b.py", "y = 1", "y = 2", "s1", hours=10)
    log.project()
    cfg = Config()
    cfg.endless.window_hours = 6.0
    assert working_set.stale(store, cfg)
    log.project(cfg)
    assert keys(store) == ["app/b.py"]


def test_a_long_pause_keeps_the_set_of_the_last_activity(store: Store) -> None:
    """The window ends at the latest activity, not at the wall clock: Monday starts with Friday's work."""
    log = Log(store)
    log.edit("app/a.py", "x = 1", "x = 2", "s1", hours=0)
    log.project()
    assert keys(store) == ["app/a.py"]  # whatever today's date, a store from 2026-03-02 still has its set


def test_ranking_puts_a_failing_command_first_and_keeps_each_kind_within_its_cap(store: Store) -> None:
    log = Log(store)
    for n in range(9):
        log.edit(f"app/m{n}.py", f"v = {n}", f"v = {n + 1}", "s1", hours=n / 10)
    log.read("app/notes.py", "just looking", "s1")
    log.bash("pytest -q", "E   AssertionError: 2 != 3\n1 failed", "s1", code=1)
    log.project()
    items = store.working_set()
    assert items[0]["kind"] == "command" and items[0]["status"] == "failing"
    files = [i for i in items if i["kind"] == "file"]
    assert len(files) == working_set.CAPS["file"]
    assert "app/notes.py" not in [f["key"] for f in files]  # read only: below every changed file
    assert [f["key"] for f in files][:2] == ["app/m8.py", "app/m7.py"]  # the newest changes first
    cfg = Config()
    cfg.endless.max_items = 3
    log.project(cfg)
    assert len(store.working_set()) == 3


def test_a_command_that_passed_again_is_fixed_and_ranks_below_open_work(store: Store) -> None:
    log = Log(store)
    failed = log.bash("pytest -q", "E   ValueError: bad\n1 failed", "s1", code=1)
    log.edit("app/a.py", "x = 1", "x = 2", "s1")
    passed = log.bash("pytest -q", "3 passed", "s1")
    log.project()
    item = next(i for i in store.working_set() if i["kind"] == "command")
    assert item["status"] == "fixed" and item["event_id"] == failed.id and item["detail"]["fixed_by"] == passed.id
    assert store.working_set()[0]["key"] == "app/a.py"


def test_only_open_tasks_and_the_latest_decision_on_a_subject_are_in_the_set(store: Store) -> None:
    log = Log(store)
    log.prompt("Plan:\n- [ ] CSV importer\n- [ ] add a pool metric", "s1", hours=0)
    log.answer("Started the CSV importer.", "s1")
    log.answer("The CSV importer is done.", "s1")
    log.prompt("We decided to switch the task queue from Celery to RQ.", "s1")
    log.prompt("Now switch the task queue from RQ to Dramatiq.", "s1")
    log.project()
    items = {i["kind"]: [] for i in store.working_set()}
    for i in store.working_set():
        items[i["kind"]].append(i["title"])
    assert items["task"] == ["add a pool metric"]  # the importer is done
    assert items["decision"] == ["Now switch the task queue from RQ to Dramatiq."]


def test_session_start_text_is_cited_line_by_line_and_fits_the_budget(store: Store) -> None:
    log = Log(store)
    log.prompt("The load test throws 500s after a minute.", "s1", hours=0)
    log.bash("locust -f load.py", "Exit code 1\nsqlalchemy.exc.TimeoutError: QueuePool limit", "s1", code=1)
    for n in range(6):
        log.edit(f"app/m{n}.py", f"v = {n}", f"v = {n + 1}", "s1")
    log.answer("We decided to use pool_size=25 for the engine.", "s1")
    log.project()
    cfg = Config()
    text = inject.session_start_context(store, cfg)
    assert text.startswith("memlane (endless mode): where the work stands — the last 24 h of this project's activity")
    body = text.split(inject.BODY_TITLE + "\n", 1)[1].splitlines()
    assert body[0] == "Errors:" and "QueuePool limit" in body[1] and "(still failing)" in body[1]
    for line in body:
        assert line.endswith(":") or re.match(r"- \[mem:[0-9a-z]{6}\] ", line), line
    small = inject.session_start_context(store, cfg, max_chars=600)
    assert len(small) <= 600 and small.count("[mem:") < text.count("[mem:")
    assert all(line.endswith(":") or "[mem:" in line for line in small.split(inject.BODY_TITLE + "\n")[1].splitlines())


def test_no_working_set_means_no_endless_text(store: Store) -> None:
    assert inject.session_start_context(store, Config()) == ""
