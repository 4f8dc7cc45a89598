"""Fusion details that decide order: support from the same session and the same exchange."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlane import config
from memlane.retrieval.hybrid import Retriever
from memlane.store import NewEvent, Store


def test_a_match_backed_by_its_session_outranks_a_lone_one_and_lone_matches_keep_their_score(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db", "p")
    ts = "2026-11-20T10:00:00.000Z"
    store.append(
        [
            NewEvent("agent_response", "backed", "The checkout pool timeout came from leaked sessions", "1", {}, ts=ts),
            NewEvent("user_prompt", "backed", "why does checkout time out, is it the pool?", "2", {}, ts=ts),
            NewEvent("agent_response", "lone", "The checkout pool timeout came from leaked sessions!", "3", {}, ts=ts),
        ]
    )
    cfg = config.Config()
    hits = Retriever(store, cfg).search("checkout pool timeout leaked sessions")
    assert hits[0].event.session_id == "backed" and "session" in hits[0].sources
    lone = next(h for h in hits if h.event.session_id == "lone")
    assert "session" not in lone.sources

    cfg.retrieval.session_support = 0.0
    plain = {h.event.id: h.score for h in Retriever(store, cfg).search("checkout pool timeout leaked sessions")}
    assert lone.score == pytest.approx(plain[lone.event.id], abs=1e-6), "a lone match is not lowered"
    assert hits[0].score > plain[hits[0].event.id] + 1e-4
    store.close()


def _exchange_store(tmp_path: Path) -> tuple[Store, list[str]]:
    """One session with two exchanges; only the second one's answer matches the query below."""
    store = Store(tmp_path / "x.db", "p")
    ts = "2026-11-20T10:00:00.000Z"
    texts = [
        ("user_prompt", "set up the linter config"),
        ("agent_response", "Added ruff with the default rules."),
        ("user_prompt", "the nightly job keeps dying, can you look?"),
        ("tool_observation", "ran pytest: 3 passed"),
        ("agent_response", "The OOM killer stopped the exporter: the parquet writer buffered every row."),
        ("agent_response", "Parquet files are columnar."),
    ]
    result = store.append([NewEvent(kind, "s1", text, str(i), {}, ts=ts) for i, (kind, text) in enumerate(texts)])
    return store, result.inserted


def test_the_prompt_that_asked_for_a_matching_answer_joins_the_results(tmp_path: Path) -> None:
    store, ids = _exchange_store(tmp_path)
    answer, earlier_prompt = ids[4], ids[0]
    cfg = config.Config()
    query = "OOM killer parquet writer exporter"
    hits = Retriever(store, cfg).search(query)
    order = [h.event.id for h in hits]
    assert order[0] == answer
    asked = next(h for h in hits if h.event.type == "user_prompt")
    assert asked.event.content.startswith("the nightly job"), "the latest prompt before the answer, not an earlier one"
    assert asked.sources["exchange"] == pytest.approx(hits[0].score, abs=0.2)
    assert earlier_prompt not in order

    # Filters and exclusions still hold for prompts that join this way.
    only_answers = Retriever(store, cfg).search(query, types=["agent_response"])
    assert all(h.event.type == "agent_response" for h in only_answers)
    excluded = Retriever(store, cfg).search(query, exclude_ids=[asked.event.id])
    assert asked.event.id not in {h.event.id for h in excluded}

    cfg.retrieval.exchange_support = 0.0
    off = Retriever(store, cfg).search(query)
    assert all(h.event.type != "user_prompt" for h in off), "off means the prompt does not join"
    store.close()
