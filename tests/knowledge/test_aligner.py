"""The evidence aligner: exact → normalised → fuzzy, a miss, and no verified claim without aligned evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlane.errors import InputError
from memlane.knowledge.aligner import UnalignedEvidence, align, align_all, check_stage

SOURCE = (
    "Root cause: Celery's Redis broker has a visibility_timeout (1 hour here);\n"
    "long label batches were delivered twice.  Together with the prefork memory leak,\n"
    "the decision is to switch the task queue from Celery to RQ."
)


def test_exact_quote_gets_its_span_and_full_confidence() -> None:
    quote = "switch the task queue from Celery to RQ"
    found = align(quote, SOURCE)
    assert (found.method, found.confidence) == ("exact", 1.0)
    assert SOURCE[found.start : found.end] == quote


def test_whitespace_and_case_differences_align_normalised_to_the_original_span() -> None:
    quote = "LONG label batches were delivered twice. Together   with the prefork"
    found = align(quote, SOURCE)
    assert (found.method, found.confidence) == ("normalized", 0.95)
    assert SOURCE[found.start : found.end] == "long label batches were delivered twice.  Together with the prefork"


def test_a_quote_with_typos_aligns_fuzzy_above_the_threshold() -> None:
    found = align("swich the task qeue from Celery to RQ", SOURCE)
    assert found.method == "fuzzy"
    assert 0.85 <= found.confidence < 1.0
    assert SOURCE[found.start : found.end] == "switch the task queue from Celery to RQ"


def test_a_quote_not_in_the_source_is_a_miss() -> None:
    found = align("we moved the queue to Kafka last spring", SOURCE)
    assert (found.method, found.start, found.end, found.confidence) == ("none", None, None, 0.0)
    assert not found.aligned


def test_fuzzy_below_the_threshold_is_a_miss_too() -> None:
    assert align("switch the job runner from Celery to Dramatiq", SOURCE).method == "none"
    assert align("switch the job runner from Celery to Dramatiq", SOURCE, threshold=0.5).method == "fuzzy"


def test_korean_text_aligns_and_maps_back() -> None:
    source = "지금 라벨  생성 작업 큐는 RQ 입니다"
    found = align("라벨 생성 작업 큐", source)
    assert found.method == "normalized" and source[found.start : found.end] == "라벨  생성 작업 큐"
    fuzzy = align("라벨 생송 작업 큐는", source)
    assert fuzzy.method == "fuzzy" and source[fuzzy.start : fuzzy.end].startswith("라벨")


def test_align_all_says_aligned_only_when_every_quote_is_placed() -> None:
    messages = ["first message, nothing to see", SOURCE]
    good = align_all([(1, "visibility_timeout (1 hour here)"), (0, "nothing to see")], messages)
    assert good.evidence_aligned and good.failed == []
    assert [a.method for a in good.aligned] == ["exact", "exact"]
    bad = align_all([(1, "visibility_timeout"), (1, "a sentence nobody wrote at all")], messages)
    assert not bad.evidence_aligned and bad.failed == ["a sentence nobody wrote at all"]
    assert not align_all([(5, "visibility_timeout")], messages).evidence_aligned, "no such message"
    assert not align_all([], messages).evidence_aligned, "no evidence is no aligned evidence"


def test_an_unaligned_claim_is_never_verified() -> None:
    assert check_stage("candidate", False) == "candidate"
    assert check_stage("verified", True) == "verified"
    for stage in ("verified", "certified"):
        with pytest.raises(UnalignedEvidence, match="not aligned"):
            check_stage(stage, False)
    with pytest.raises(InputError, match="unknown stage"):
        check_stage("golden", True)


def test_quote_hash_is_stable() -> None:
    assert align("abc", "xxabcxx").quote_hash == align("abc", "other").quote_hash


def test_an_entry_without_aligned_evidence_cannot_be_made_verified(tmp_path: Path) -> None:
    from memlane import derived
    from memlane.knowledge import service
    from memlane.store.db import NewEvent, Store

    with Store(tmp_path / "m.db", "p") as store:
        store.append(
            [NewEvent("agent_response", "s", "The decision is to switch the task queue from Celery to RQ.", "t")]
        )
        derived.catch_up(store)
        entry = store.entries_of_type("decision")[0]
        assert entry["evidence_aligned"] and entry["evidence"][0]["method"] == "exact"
        assert service.set_stage(store, entry["id"], "verified")["stage"] == "verified"
        with store.write():
            store.db.execute("UPDATE entries SET evidence_aligned = 0 WHERE id = ?", (entry["id"],))
        with pytest.raises(UnalignedEvidence):
            service.set_stage(store, entry["id"], "certified")
        assert service.set_stage(store, entry["id"], "candidate")["stage"] == "candidate"
