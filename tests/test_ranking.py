"""Fusion details that decide order: support from the same session."""

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
