"""store/browse.py: keyset pages that neither skip nor repeat rows (equal timestamps included), capped counts,
rows after a seq, injection figures; forget by time range."""

from __future__ import annotations

from pathlib import Path

from memlane.memory import Memory
from memlane.store import NewEvent, Store, browse


def store(tmp_path: Path, n: int = 25) -> Store:
    s = Store(tmp_path / "m.db", "p")
    same = "2026-11-01T10:00:00.000Z"  # every row at one instant: only seq orders them
    s.append([NewEvent("user_prompt" if i % 2 else "tool_observation", f"s{i % 3}", f"event {i}", f"t{i}", ts=same)
              for i in range(n)])  # fmt: skip
    return s


def test_pages_walk_every_row_once_both_ways(tmp_path: Path) -> None:
    s = store(tmp_path)
    for oldest_first in (False, True):
        seen: list[int] = []
        after = None
        while True:
            page = s.page(after=after, limit=4, oldest_first=oldest_first)
            if not page:
                break
            seen.extend(e.seq for e in page)
            after = (page[-1].ts, page[-1].seq)
        assert sorted(seen) == list(range(1, 26)) and len(set(seen)) == 25
        assert seen == sorted(seen, reverse=not oldest_first)


def test_counts_stop_at_the_cap(tmp_path: Path) -> None:
    s = store(tmp_path)
    assert s.count_events() == 25
    assert s.count_events(types=["user_prompt"]) == 12
    assert s.count_events(types=["user_prompt"], cap=5) == 6  # "5+"
    assert browse.COUNT_CAP == 10_000


def test_rows_after_a_seq(tmp_path: Path) -> None:
    s = store(tmp_path)
    assert [e.seq for e in s.after_seq(22)] == [23, 24, 25]
    assert [e.seq for e in s.after_seq(0, types=["user_prompt"], limit=2)] == [2, 4]
    assert s.latest_seq() == 25


def test_injection_counts(tmp_path: Path) -> None:
    s = Store(tmp_path / "m.db", "p")
    told = {"mode": "text", "full": [], "index": [{"id": "a", "cite": "mem:a", "score": 0.2, "confidence": "low"}]}
    silent = {"mode": "text", "full": [], "index": [], "left_out": []}
    one, two, _three = s.append([NewEvent("user_prompt", "s", "one", "1"),
                                 NewEvent("user_prompt", "s", "two", "2"),
                                 NewEvent("user_prompt", "s", "three", "3")]).inserted  # fmt: skip
    s.record_injection(one, "s", told)
    s.record_injection(two, "s", silent)
    assert s.injection_counts() == {"prompts": 3, "recorded": 2, "injected": 1}
    assert s.prompts_shown("a") == [one]


def test_forget_by_time_range(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    with Memory.open(root) as mem:
        mem.store.append([NewEvent("user_prompt", "s", f"day {d}", f"t{d}", ts=f"2026-11-0{d}T12:00:00.000Z")
                          for d in range(1, 6)])  # fmt: skip
        assert len(mem.forget_preview(since="2026-11-02", until="2026-11-04")) == 2
        assert mem.forget(since="2026-11-02", until="2026-11-04") == 2
        assert [e.content for e in mem.history(oldest_first=True, limit=10)] == ["day 1", "day 4", "day 5"]
        assert mem.store.tombstones()[0]["scope"] == "range"
