"""A pasted multi-megabyte prompt costs what its bytes cost, like tool output: recall reads its head and tail only."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from memlane.capture import inject
from memlane.memory import Memory
from memlane.store import fulltext
from memlane.store.db import NewEvent, parse_query


def test_query_of_keeps_head_and_tail() -> None:
    short = "fix the pool timeout"
    assert inject.query_of(short) == short
    big = "HEADWORD " + "filler " * 500_000 + " TAILWORD"
    q = inject.query_of(big)
    assert len(q) <= inject.QUERY_HEAD_CHARS + inject.QUERY_TAIL_CHARS + 1
    assert q.startswith("HEADWORD") and q.endswith("TAILWORD")


def test_parse_query_stops_scanning_a_huge_query(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    real = fulltext.keys.has_cjk

    def counting(text: str) -> bool:
        seen.append(1)
        return real(text)

    monkeypatch.setattr(fulltext.keys, "has_cjk", counting)
    words, _, _ = parse_query(" ".join(f"w{i}" for i in range(1_000_000)))
    assert words[:2] == ['"w0"', '"w1"'] and len(words) == 32
    assert len(seen) <= fulltext._MAX_QUERY_CHUNKS  # not a million


def test_parse_query_of_an_ordinary_query() -> None:
    words, trigrams, short = parse_query('the pool_manager.py "timeout" 연결 데이터베이스 and, again: pool')
    assert words == ['"pool_manager.py"', '"timeout"', '"again"', '"pool"', '"manager"', '"py"']
    assert short == ["연결"]
    assert trigrams == ['"데이터"', '"이터베"', '"터베이"', '"베이스"']


def test_huge_prompt_is_stored_capped_and_recalls_from_its_tail(hook: Callable[..., str], proj: Path) -> None:
    with Memory.open(proj) as mem:
        # A store of realistic size, where log words like "info" and "here" are common and weigh little in
        # the match (in a one-event store every word of the pasted log would count as rare evidence).
        filler = [
            NewEvent("tool_observation", f"f{i}", f"INFO here is log line {i}: nothing to see", "t") for i in range(40)
        ]
        mem.store.append([*filler, NewEvent("agent_response", "old", "Fixed the zebrafinch webhook retry loop", "t")])
    prompt = "Here is the log:\n" + ("INFO nothing to see here\n" * 400_000) + "why does zebrafinch webhook retry?"
    out = hook("UserPromptSubmit", {"session_id": "s1", "prompt": prompt, "prompt_id": "p1"})
    assert "zebrafinch" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    with Memory.open(proj, create=False) as mem:
        stored = mem.store.history(types=["user_prompt"], limit=1)[0]
    assert len(stored.content) <= mem.config.capture.max_content_chars + 200  # capped like tool output
    assert stored.content.rstrip().endswith("why does zebrafinch webhook retry?")
