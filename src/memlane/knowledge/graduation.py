"""Graduation L0 → L4: a memory's level from how it has been used (spec.md §2.3; the criteria of the reference's
``GraduationPipeline``).

| level | name | reached when (all of) |
|---|---|---|
| L0 | raw | stored (every event) |
| L1 | structured | used ≥ 1 time, confidence ≥ 0.5, used within 30 days |
| L2 | candidate | used ≥ 3 times, confidence ≥ 0.7, in ≥ 1 other session, within 60 days |
| L3 | verified | used ≥ 5 times, confidence ≥ 0.85, in ≥ 2 other sessions, within 90 days (an insight: aligned) |
| L4 | active | used ≥ 10 times, confidence ≥ 0.92, in ≥ 3 other sessions, within 180 days |

**Uses** (``access``) are the times a memory was injected in full for a prompt, fetched in full (MCP mem-details,
``memlane show``, the dashboard) or cited in an answer (``[mem:abc123]``); being listed on the index tier is
counted but is not a use. **Other sessions** are sessions other than the one that stored it. **Confidence** is
the best evidence that it was right to use: a citation 1.0, a fetch 0.9, an injection its match score capped at
0.8 (memlane chose it; nobody confirmed it yet), so injection alone never makes a memory verified. A memory
wholly replaced (the knowledge model's resolutions) has confidence 0 and falls to L0; one partly replaced is
capped at 0.8.

**Demotion**: a level holds while the memory is used within that level's window (30/60/90/180 days). Unused
past it, it steps down one level, and the next window starts: an L4 memory left alone 200 days is L3, after
300 days L2. A new use brings it back to the level its counters earn. Age is counted on the **project's
clock** (its newest event or use), not the wall clock: a project left alone for a summer keeps what it
learned, and a rebuild at any time gives the same levels.

Insights (``insights.py``) are judged the same way, from the uses of their source events plus their support
(each further source that states them counts as a use, each further session as another session); they start
at L1 and reach L3 only with every quote aligned to its source (evidence-aligner-v2 §7).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

LEVELS = ("L0", "L1", "L2", "L3", "L4")
NAMES = ("raw", "structured", "candidate", "verified", "active")


@dataclass(frozen=True)
class Criterion:
    access: int
    confidence: float
    cross_session: int
    max_age_days: int


CRITERIA = {
    1: Criterion(1, 0.5, 0, 30),
    2: Criterion(3, 0.7, 1, 60),
    3: Criterion(5, 0.85, 2, 90),
    4: Criterion(10, 0.92, 3, 180),
}
NEEDS_EVIDENCE = 3  # from this level up an insight needs every quote aligned

USE_CONFIDENCE = {"cited": 1.0, "fetched": 0.9}
INJECTED_CAP = 0.8  # an injection's score counts at most this much: chosen by memlane, not yet confirmed
PARTLY_REPLACED_CAP = 0.8


@dataclass
class Counters:
    """What a level is judged on."""

    access: int = 0
    cross_session: int = 0
    confidence: float = 0.0
    last_used: str = ""
    replaced: int = 0  # 0 current, 1 partly replaced, 2 wholly replaced
    base: int = 0  # the lowest level (insights start at L1)
    evidence_aligned: bool = True


@dataclass
class Level:
    level: int
    earned: int  # what the counters earn before age is counted
    demote_at: str | None
    reason: str


def use_confidence(kind: str, score: float) -> float:
    if kind in USE_CONFIDENCE:
        return USE_CONFIDENCE[kind]
    return round(min(max(score, 0.0), INJECTED_CAP), 4)


def confidence_of(best: float, replaced: int) -> float:
    if replaced >= 2:
        return 0.0
    if replaced == 1:
        return min(best, PARTLY_REPLACED_CAP)
    return best


def earned(c: Counters) -> tuple[int, str]:
    """The highest level the counters reach (age aside), and what stops the next one."""
    level = c.base
    for target in range(c.base + 1, 5):
        need = CRITERIA[target]
        missing = []
        if c.access < need.access:
            missing.append(f"{need.access} uses (has {c.access})")
        if c.confidence < need.confidence:
            missing.append(f"confidence {need.confidence} (has {c.confidence:.2f})")
        if c.cross_session < need.cross_session:
            missing.append(f"{need.cross_session} other session(s) (has {c.cross_session})")
        if target >= NEEDS_EVIDENCE and not c.evidence_aligned:
            missing.append("its evidence aligned")
        if missing:
            why = "wholly replaced" if c.replaced >= 2 else ("partly replaced; " if c.replaced == 1 else "")
            if c.replaced >= 2:
                return level, why
            return level, f"{why}L{target} needs " + ", ".join(missing)
        level = target
    return level, "at the top level"


def _when(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def judge(c: Counters, as_of: str) -> Level:
    """The level on the project's clock ``as_of``: what the counters earn, stepped down for each window of
    disuse (see the module note), and when it drops next if nothing happens."""
    top, reason = earned(c)
    if top <= c.base or not c.last_used:
        return Level(top if c.last_used else c.base, top, None, reason)
    age = max((_when(as_of) - _when(c.last_used)).total_seconds() / 86400, 0.0) if as_of else 0.0
    level, spent = top, 0
    while level > c.base and age > spent + CRITERIA[level].max_age_days:
        spent += CRITERIA[level].max_age_days
        level -= 1
    if level < top:
        reason = f"stepped down from L{top}: not used for {int(age)} days"
    demote_at = None
    if level > c.base:
        demote_at = _iso(_when(c.last_used) + timedelta(days=spent + CRITERIA[level].max_age_days, milliseconds=1))
    return Level(level, top, demote_at, reason)


def label(level: int) -> str:
    return f"{LEVELS[level]} {NAMES[level]}"
