"""The continuity score on constructed pairs of sessions — continuous, unrelated, partly related — with what raised
or lowered it, and its predecessor changing when an earlier session is imported later."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from en_support import Log

from memlane.endless import continuity
from memlane.store.db import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "memory.db", "proj-e")
    yield s
    s.close()


def pool_session(log: Log, session: str, hours: float) -> None:
    log.prompt("The pool times out under load; pool_size is too small.", session, hours)
    log.bash("pytest -q tests/test_db.py", "E   TimeoutError: QueuePool limit\n1 failed", session, code=1)
    log.edit("app/db.py", "pool_size=10", "pool_size=25", session)
    log.answer("app/db.py now sets pool_size=25; QueuePool no longer runs out.", session)


def score_of(store: Store, session: str) -> dict:  # type: ignore[type-arg]
    row = store.endless_session(session)
    assert row is not None
    return row


def test_a_session_that_goes_on_with_the_same_work_an_hour_later_is_seamless(store: Store) -> None:
    log = Log(store)
    pool_session(log, "a", 0)
    pool_session(log, "b", 1.1)
    log.project()
    b = score_of(store, "b")
    assert b["prev_session_id"] == "a" and b["transition"] == "seamless" and b["score"] >= 0.9
    assert b["detail"]["parts"]["files"]["shared"] == ["app/db.py", "tests/test_db.py"]
    assert b["detail"]["reasons"][0].startswith("+0.29 time: started 1.1 h after")
    assert score_of(store, "a")["score"] is None  # the first session has no predecessor


def test_an_unrelated_session_days_later_is_a_break_and_says_why(store: Store) -> None:
    log = Log(store)
    pool_session(log, "a", 0)
    log.prompt("Add dark mode to the web app; follow the OS setting.", "c", 72)
    log.edit("web/tailwind.config.js", 'content: ["./src"]', 'darkMode: "class"', "c")
    log.answer("Tailwind uses darkMode class now.", "c")
    log.project()
    c = score_of(store, "c")
    assert c["transition"] == "break" and c["score"] == pytest.approx(0.3 * math.exp(-3), abs=0.002)
    reasons = c["detail"]["reasons"]
    assert reasons[0] == "+0.01 time: started 3.0 days after the previous session's last activity"
    assert "+0 of 0.2 files: none in common (1 here, 2 before)" in reasons


def test_a_partly_related_session_scores_between_and_counts_what_it_shares(store: Store) -> None:
    log = Log(store)
    pool_session(log, "a", 0)
    log.prompt("Add a metric for pool_size usage to app/metrics.py.", "p", 6)
    log.edit("app/metrics.py", "METRICS = []", "METRICS = [pool_usage]", "p")
    log.read("app/db.py", "pool_size=25", "p")
    log.answer("app/metrics.py exports pool_usage read from the engine's pool_size.", "p")
    log.project()
    p = score_of(store, "p")
    assert p["transition"] == "topic_shift" and 0.3 <= p["score"] < 0.7
    files = p["detail"]["parts"]["files"]
    assert files["shared"] == ["app/db.py"] and files["this"] == 2 and files["previous"] == 2
    assert p["detail"]["parts"]["entities"]["shared"] == ["pool_size"]
    continuous, unrelated = 0.9, 0.05
    assert unrelated < p["score"] < continuous


def test_a_session_imported_later_between_two_others_becomes_the_predecessor(store: Store) -> None:
    log = Log(store)
    pool_session(log, "a", 0)
    pool_session(log, "c", 48)
    log.project()
    assert score_of(store, "c")["prev_session_id"] == "a"
    pool_session(log, "b", 24)  # appended last, happened in between
    log.project()
    assert score_of(store, "c")["prev_session_id"] == "b" and score_of(store, "b")["prev_session_id"] == "a"
    assert not store.dirty_sessions(10)


def test_the_score_is_capped_at_one_and_parts_add_up() -> None:
    same = {"topics": {"pytest"}, "files": {"a.py"}, "entities": {"x_y"}}
    value, detail = continuity.score(same, same, 0)
    assert value == 1.0 and sum(p["value"] for p in detail["parts"].values()) == pytest.approx(1.0)
    empty: dict[str, set[str]] = {"topics": set(), "files": set(), "entities": set()}
    value, detail = continuity.score(empty, empty, 24 * 3600)
    assert value == pytest.approx(0.3 / math.e, abs=0.001)
    assert "+0 of 0.2 files: neither session has any" in detail["reasons"]
