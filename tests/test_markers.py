"""Session start/end markers are bookkeeping: visible in history and the session listing, invisible to
retrieval (no full-text rows, no vectors), so where a store lives never changes what it answers.
Real model, real LanceDB, events built by the capture code the hooks run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlane import config
from memlane.capture import events as capture
from memlane.capture.inject import prompt_hits
from memlane.embed.passages import passages
from memlane.memory import Memory
from memlane.retrieval.engine import Engine
from memlane.store import NewEvent
from memlane.store.schema import UNSEARCHED_TYPES
from memlane.vectors import VectorIndex, process_outbox, reconcile

pytestmark = pytest.mark.slow

# One project's history in three sessions; every session opens and closes with a marker.
SESSIONS = [
    [
        ("user_prompt", "The label cache keeps serving stale PDFs after a carrier changes the template"),
        ("agent_response", "Label PDFs are cached in Redis for an hour; the key now includes the template version."),
    ],
    [
        ("user_prompt", "Why did the nightly export fail with a cache timeout?"),
        ("tool_observation", "Bash: python -m app.jobs.export\nE   redis.TimeoutError: cache read timed out"),
        ("agent_response", "The export read 40k keys one by one; it now uses a pipeline and finishes in 9 s."),
    ],
    [
        ("user_prompt", "Add a tracking page for shipments that customers can open without logging in"),
        ("agent_response", "Public tracking lives at /t/<code>; codes are random 10-character tokens."),
    ],
]
QUERIES = [
    "label cache stale template",
    "what was the cache timeout in the export about?",
    "tracking page without login",
    "service cache folder",
]


@pytest.fixture(scope="module")
def embedder() -> Any:
    from memlane.embed import get_embedder

    return get_embedder(config.EmbeddingConfig())


def _capture(root: Path) -> Memory:
    """The history above captured in a project at ``root``, the way the hooks store it."""
    root.mkdir(parents=True)
    (root / ".git").mkdir()
    mem = Memory.open(root)
    cfg = mem.config
    for n, turns in enumerate(SESSIONS):
        sid = f"s{n}"
        base = {"session_id": sid, "cwd": str(root), "transcript_path": "/dev/null"}
        batch = capture.session_start({**base, "hook_event_name": "SessionStart", "source": "startup"}, cfg)
        batch += [NewEvent(kind, sid, text, str(i)) for i, (kind, text) in enumerate(turns)]
        batch += capture.session_end({**base, "hook_event_name": "SessionEnd", "reason": "other"}, cfg)
        mem.store.append(batch)
    return mem


def _answers(mem: Memory) -> list[list[tuple[str, float]]]:
    engine = Engine(mem.config)
    return [[(h.event.content, round(h.score, 6)) for h in engine.search(mem, q, limit=8)] for q in QUERIES]


def test_the_same_history_in_two_folders_ranks_identically(tmp_path: Path, embedder: Any) -> None:
    """Before schema 9 the markers ("Session started (startup) in <folder>") had vectors: they sat among
    every query's neighbours and moved the median cosine the stand-out feature subtracts, so a folder
    whose name shares words with the project ("cache") changed scores."""
    plain = _capture(tmp_path / "a" / "shop")
    cachey = _capture(tmp_path / "label-cache-service" / "shop")
    for mem in (plain, cachey):
        process_outbox(mem, embedder)
    assert "label-cache-service" in cachey.store.history(types=["session_start"])[0].content
    assert _answers(plain) == _answers(cachey)
    for mem in (plain, cachey):
        mem.close()


def test_markers_get_no_vectors_and_are_never_injected(tmp_path: Path, embedder: Any) -> None:
    mem = _capture(tmp_path / "work" / "shop")
    process_outbox(mem, embedder)
    markers = {e.id for e in mem.store.iter_events() if e.type in UNSEARCHED_TYPES}
    assert len(markers) == 2 * len(SESSIONS)
    index = VectorIndex(mem.project.id, embedder.version, embedder.dim, mem.config.vectors)
    assert index.event_ids() == mem.store.embeddable_event_ids() and not markers & index.event_ids()
    queued = {r[0] for r in mem.store.db.execute("SELECT event_id FROM outbox")}
    assert not markers & queued, "no embedding job for a marker"
    # A prompt made of a marker's own words: neither the daemon's answer nor the full-text fallback has it.
    prompt = f"Session started (startup) in {mem.project.root}; session ended (other)"
    engine = Engine(mem.config)
    assert not {h.event.id for h in engine.search(mem, prompt, limit=20)} & markers
    assert not {h.event.id for h in engine.relevant(mem, prompt).hits} & markers
    assert not {h.event.id for h in prompt_hits(mem.store, prompt, mem.config).hits} & markers
    # Still where they belong: history and the session listing.
    assert [e.type for e in mem.store.history(session="s1", limit=10)][::-1][0] == "session_start"
    assert all(s["ended_at"] and s["source"] == "startup" for s in mem.sessions())
    mem.close()


def _make_schema_8(mem: Memory, embedder: Any) -> set[str]:
    """Turn a fresh store into what schema 8 and its worker left: every marker with a done embedding job and
    its vectors in the index (written as the old worker wrote them), and no record of migration 9."""
    index = VectorIndex(mem.project.id, embedder.version, embedder.dim, mem.config.vectors)
    markers = [e for e in mem.store.iter_events() if e.type in UNSEARCHED_TYPES]
    vectors = embedder.embed_passages([passages(e.type, e.content, embedder)[0] for e in markers])
    index.upsert(
        [
            {"event_id": e.id, "chunk": 0, "vector": v, "type": e.type, "session_id": e.session_id, "ts": e.ts}
            for e, v in zip(markers, vectors, strict=True)
        ]
    )
    with mem.store.write() as db:
        for e in markers:
            db.execute(
                "INSERT INTO outbox (event_id, status, created_at, updated_at) VALUES (?, 'done', ?, ?)"
                " ON CONFLICT(event_id) DO UPDATE SET status = 'done'",
                (e.id, e.ts, e.ts),
            )
        db.execute("DELETE FROM schema_migrations WHERE version = 9")
    return {e.id for e in markers}


def test_an_old_store_loses_its_marker_vectors_on_upgrade(tmp_path: Path, embedder: Any) -> None:
    fresh = _capture(tmp_path / "fresh" / "shop")
    process_outbox(fresh, embedder)
    expected = _answers(fresh)
    fresh.close()

    root = tmp_path / "label-cache-service" / "shop"
    old = _capture(root)
    process_outbox(old, embedder)
    markers = _make_schema_8(old, embedder)
    index = VectorIndex(old.project.id, embedder.version, embedder.dim, old.config.vectors)
    assert markers <= index.event_ids()
    old.close()

    mem = Memory.open(root)  # migration 9
    jobs = dict(mem.store.db.execute("SELECT event_id, status FROM outbox").fetchall())
    assert {jobs[m] for m in markers} == {"pending"}
    # Until the worker has run, searches already leave the markers' vectors out of the neighbours.
    assert _answers(mem) == expected
    assert process_outbox(mem, embedder).errors == []
    index = VectorIndex(mem.project.id, embedder.version, embedder.dim, mem.config.vectors)
    assert not markers & index.event_ids()
    assert index.event_ids() == mem.store.embeddable_event_ids()
    assert not markers & {r[0] for r in mem.store.db.execute("SELECT event_id FROM outbox")}
    assert mem.store.outbox_pending_count() == 0
    report = reconcile(mem, embedder, fix=False)
    assert (report.missing, report.orphans) == (0, 0)
    assert _answers(mem) == expected
    assert {e.id for e in mem.store.history(types=list(UNSEARCHED_TYPES), limit=50)} == markers
    assert len(mem.sessions()) == len(SESSIONS)
    mem.close()


def test_content_vectors_survive_the_upgrade_unchanged(tmp_path: Path, embedder: Any) -> None:
    """The worker's pass over an old store drops only marker rows: the others are not re-embedded."""
    root = tmp_path / "w" / "shop"
    mem = _capture(root)
    process_outbox(mem, embedder)
    index = VectorIndex(mem.project.id, embedder.version, embedder.dim, mem.config.vectors)
    ids = sorted(mem.store.embeddable_event_ids())
    before = index.first_vectors(ids)
    _make_schema_8(mem, embedder)
    mem.close()
    mem = Memory.open(root)
    report = process_outbox(mem, embedder)
    assert report.chunks == 0 and report.processed == 2 * len(SESSIONS)
    after = VectorIndex(mem.project.id, embedder.version, embedder.dim, mem.config.vectors).first_vectors(ids)
    assert all(np.array_equal(before[i], after[i]) for i in ids)
    mem.close()
