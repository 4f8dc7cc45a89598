"""Graduation L0 → L4: every promotion criterion (uses, confidence, other sessions, age) and every way down
(disuse, a whole replacement, a partial one), on the project's clock; an insight needs aligned evidence for L3."""

from __future__ import annotations

import pytest

from memlane.knowledge import graduation
from memlane.knowledge.graduation import CRITERIA, Counters, judge, use_confidence

NOW = "2026-06-01T12:00:00.000Z"


def days_before(days: float) -> str:
    from datetime import datetime, timedelta

    t = datetime.fromisoformat(NOW.replace("Z", "+00:00")) - timedelta(days=days)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def level(**kw: object) -> int:
    c = Counters(**{"last_used": days_before(1), **kw})  # type: ignore[arg-type]
    return judge(c, NOW).level


@pytest.mark.parametrize(
    ("target", "need"),
    [(n, CRITERIA[n]) for n in (1, 2, 3, 4)],
)
def test_each_level_is_reached_exactly_at_its_criteria(target: int, need: graduation.Criterion) -> None:
    enough = {"access": need.access, "confidence": need.confidence, "cross_session": need.cross_session}
    assert level(**enough) == target
    # one short on any criterion stays a level below
    assert level(**{**enough, "access": need.access - 1}) == target - 1
    assert level(**{**enough, "confidence": round(need.confidence - 0.01, 2)}) == target - 1
    if need.cross_session:
        assert level(**{**enough, "cross_session": need.cross_session - 1}) == target - 1


def test_an_unused_memory_is_l0_and_says_what_l1_needs() -> None:
    found = judge(Counters(), NOW)
    assert found.level == 0 and found.demote_at is None
    found = judge(Counters(access=0, confidence=0.0, last_used=days_before(1)), NOW)
    assert found.level == 0 and found.reason.startswith("L1 needs 1 uses (has 0)")


def test_injection_alone_never_makes_a_memory_verified() -> None:
    shown = use_confidence("injected", 0.99)
    assert shown == graduation.INJECTED_CAP == 0.8
    assert level(access=50, confidence=shown, cross_session=10) == 2
    assert level(access=50, confidence=use_confidence("fetched", 0), cross_session=10) == 3
    assert level(access=50, confidence=use_confidence("cited", 0), cross_session=10) == 4


def test_age_steps_a_level_down_for_each_window_of_disuse() -> None:
    top = {"access": 10, "confidence": 1.0, "cross_session": 3}
    assert level(**top, last_used=days_before(179)) == 4
    assert level(**top, last_used=days_before(181)) == 3  # past L4's 180 days
    assert level(**top, last_used=days_before(180 + 89)) == 3
    assert level(**top, last_used=days_before(180 + 91)) == 2  # and L3's 90 more
    assert level(**top, last_used=days_before(180 + 90 + 61)) == 1
    assert level(**top, last_used=days_before(180 + 90 + 60 + 31)) == 0
    # L1 reached a month and a half ago is gone: 30 days is its window
    assert level(access=1, confidence=1.0, last_used=days_before(29)) == 1
    assert level(access=1, confidence=1.0, last_used=days_before(31)) == 0


def test_demote_at_is_when_the_next_step_down_happens() -> None:
    c = Counters(access=10, confidence=1.0, cross_session=3, last_used=days_before(10))
    found = judge(c, NOW)
    assert found.level == 4
    assert found.demote_at is not None and found.demote_at > NOW
    assert judge(c, found.demote_at).level == 3
    before = found.demote_at.replace(".001Z", ".000Z")
    assert judge(c, before).level == 4


def test_a_new_use_brings_a_stepped_down_memory_back() -> None:
    c = Counters(access=5, confidence=1.0, cross_session=2, last_used=days_before(200))
    assert judge(c, NOW).level < 3
    c.last_used = days_before(0)
    assert judge(c, NOW).level == 3


def test_replacement_demotes() -> None:
    top = {"access": 10, "cross_session": 3}
    assert level(**top, confidence=graduation.confidence_of(1.0, 0)) == 4
    assert level(**top, confidence=graduation.confidence_of(1.0, 1), replaced=1) == 2  # partly: capped at 0.8
    wholly = judge(
        Counters(**top, confidence=graduation.confidence_of(1.0, 2), replaced=2, last_used=days_before(1)), NOW
    )
    assert wholly.level == 0 and wholly.reason == "wholly replaced"


def test_an_insight_starts_at_l1_and_needs_aligned_evidence_to_be_verified() -> None:
    base = {"base": 1, "access": 20, "confidence": 1.0, "cross_session": 5}
    assert level(**base) == 4
    unaligned = judge(Counters(**base, evidence_aligned=False, last_used=days_before(1)), NOW)  # type: ignore[arg-type]
    assert unaligned.level == 2 and "its evidence aligned" in unaligned.reason
    assert level(base=1, access=0, confidence=0.0) == 1
    assert level(base=1, access=20, confidence=1.0, cross_session=5, last_used=days_before(1000)) == 1


def test_the_clock_is_the_projects_not_the_wall() -> None:
    c = Counters(access=3, confidence=1.0, cross_session=1, last_used="2020-01-01T00:00:00.000Z")
    assert judge(c, "2020-01-02T00:00:00.000Z").level == 2  # a project left alone since 2020 keeps it
