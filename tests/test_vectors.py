"""Embeddings, the vector outbox and hybrid retrieval, with the real model and real LanceDB."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memlane.config import EmbeddingConfig, RetrievalConfig
from memlane.embed import DEFAULT_MODEL, passages
from memlane.memory import Memory
from memlane.retrieval import scoring
from memlane.retrieval.engine import Engine
from memlane.retrieval.hybrid import Retriever
from memlane.store import NewEvent
from memlane.vectors import VectorIndex, process_outbox, rebuild, reconcile, retry_failed
from memlane.vectors.worker import WorkerLock

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def embedder() -> Any:
    from memlane.embed import get_embedder

    return get_embedder(EmbeddingConfig())


@pytest.fixture
def mem(proj: Path) -> Iterator[Memory]:
    m = Memory.open(proj)
    m.store.append(
        [
            NewEvent(
                "agent_response", "s1", "Fixed the DB connection pool: connections were never released under load", "1"
            ),
            NewEvent("user_prompt", "s1", "Please make the login page accept SSO via Okta", "2"),
            NewEvent(
                "tool_observation", "s1", "Bash: pytest\nE   TimeoutError in shop/db/pool_manager.py line 42", "3"
            ),
            NewEvent(
                "agent_response", "s2", "Added retry with exponential backoff to the payment webhook handler", "4"
            ),
        ]
    )
    yield m
    m.close()


def outbox(m: Memory) -> dict[str, int]:
    return dict(m.store.db.execute("SELECT status, COUNT(*) FROM outbox GROUP BY status").fetchall())


def test_embedding_shape_normalised_and_offline(embedder: Any) -> None:
    vectors = embedder.embed_passages(["hello", "world"])
    assert vectors.shape == (2, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.version.startswith(f"{DEFAULT_MODEL}@")
    # The query path skips encode(); it must still land in the same space as the passages.
    text = "connection pool exhausted under load in shop/db/pool_manager.py"
    assert np.allclose(embedder.embed_query(text), embedder.embed_passages([text])[0], atol=1e-5)


def test_long_text_is_chunked_not_truncated(embedder: Any) -> None:
    text = " ".join(f"w{i}" for i in range(3000))
    chunks = embedder.chunk(text)
    assert len(chunks) > 1
    end = 0
    for chunk in chunks:  # in order, overlapping or touching, from the first character to the last
        start = text.index(chunk, max(0, end - len(chunk)))
        assert start <= end
        end = start + len(chunk)
    assert chunks[0].startswith("w0 ") and end == len(text)


@pytest.mark.parametrize(
    ("model", "query", "passage"),
    [
        ("intfloat/multilingual-e5-small", "query: ", "passage: "),
        ("/models/e5-base-v2", "query: ", "passage: "),
        ("all-MiniLM-L6-v2", "", ""),
        ("BAAI/bge-small-en", "", ""),
    ],
)
def test_e5_prefixes(model: str, query: str, passage: str) -> None:
    from memlane.embed import e5_prefixes

    assert e5_prefixes(model, EmbeddingConfig(model=model)) == (query, passage)
    assert e5_prefixes(model, EmbeddingConfig(model=model, query_prefix="Q: "))[0] == "Q: "


class FakeOpenAI(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.headers.get("Authorization") != "Bearer k-123":
            self.send_response(401)
            self.end_headers()
            return
        data = [{"index": i, "embedding": [float(len(t)), 1.0, 0.5]} for i, t in enumerate(body["input"])]
        out = json.dumps({"data": data, "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def test_openai_compatible_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    from memlane.embed import EmbeddingError, OpenAIEmbedder

    server = HTTPServer(("127.0.0.1", 0), FakeOpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    monkeypatch.setenv("EMBED_KEY", "k-123")
    emb = OpenAIEmbedder(
        EmbeddingConfig(provider="openai", url=url, model="nomic", api_key_env="EMBED_KEY", batch_size=2)
    )
    assert emb.dim == 3
    vectors = emb.embed_passages(["a", "bb", "ccc"])
    assert vectors.shape == (3, 3) and np.allclose(np.linalg.norm(vectors, axis=1), 1)
    monkeypatch.setenv("EMBED_KEY", "wrong")
    with pytest.raises(EmbeddingError, match="HTTP 401"):
        OpenAIEmbedder(EmbeddingConfig(provider="openai", url=url, model="nomic", api_key_env="EMBED_KEY"))
    server.shutdown()
    with pytest.raises(EmbeddingError, match="unreachable"):
        OpenAIEmbedder(EmbeddingConfig(provider="openai", url="http://127.0.0.1:9/v1", model="m", timeout_s=1))
    with pytest.raises(EmbeddingError, match=r"embedding\.url is required"):
        OpenAIEmbedder(EmbeddingConfig(provider="openai"))


def test_outbox_drains_once_and_reruns_add_nothing(mem: Memory, embedder: Any) -> None:
    report = process_outbox(mem, embedder)
    assert report.processed == 4 and report.remaining == 0 and outbox(mem) == {"done": 4}
    index = VectorIndex(mem.project.id, embedder.version, embedder.dim, mem.config.vectors)
    assert index.count() == 4
    rebuild(mem, embedder)
    process_outbox(mem, embedder)
    process_outbox(mem, embedder)
    assert index.count() == 4  # upserts keyed by (event, chunk, model): no duplicates


def test_small_appends_are_compacted_and_answers_do_not_change(mem: Memory, embedder: Any) -> None:
    """Every worker batch appends a fragment; below the ANN index's size the table is compacted once there are
    ``COMPACT_AT`` of them (a flat search reads each one), and what a search finds stays the same."""
    from memlane.vectors import index as vindex

    process_outbox(mem, embedder)
    for n in range(vindex.COMPACT_AT + 2):
        text = f"Batch {n}: tuned the worker pool size to {n + 4}"
        mem.store.append([NewEvent("agent_response", "s3", text, f"b{n}")])
        process_outbox(mem, embedder)  # one batch, one fragment
    index = VectorIndex(mem.project.id, embedder.version, embedder.dim, mem.config.vectors)
    table = index.table()
    assert table is not None
    fragments = int(table.stats()["fragment_stats"]["num_fragments"])
    assert fragments < vindex.COMPACT_AT, fragments
    assert index.count() == 4 + vindex.COMPACT_AT + 2
    query = embedder.embed_query("connection pool released under load")
    before = index.search(query, 5)
    index.ensure_index()
    assert index.search(query, 5) == before


def test_a_table_past_the_compaction_size_is_left_in_fragments(memlane_home: Path) -> None:
    """Compaction rewrites the whole table, so a table past ``COMPACT_MAX_ROWS`` keeps its fragments until the
    ANN index takes over (rewriting ~10k vectors every few batches held 480 MB in the daemon)."""
    from memlane.config import VectorsConfig
    from memlane.vectors import index as vindex

    rng = np.random.default_rng(7)
    index = VectorIndex("p-big", "m1", 8, VectorsConfig())

    def rows(n: int, tag: str) -> list[dict[str, Any]]:
        return [
            {"event_id": f"{tag}{i}", "chunk": 0, "type": "user_prompt", "vector": rng.standard_normal(8)}
            for i in range(n)
        ]

    index.upsert(rows(vindex.COMPACT_MAX_ROWS + 1, "big"))
    for n in range(vindex.COMPACT_AT + 1):
        index.upsert(rows(3, f"b{n}-"))
        index.ensure_index()
    table = index.table()
    assert table is not None
    assert int(table.stats()["fragment_stats"]["num_fragments"]) == vindex.COMPACT_AT + 2


def test_stuck_jobs_are_recovered(mem: Memory, embedder: Any) -> None:
    mem.store.db.execute("UPDATE outbox SET status = 'processing', updated_at = '2000-01-01T00:00:00.000Z'")
    report = process_outbox(mem, embedder)
    assert report.recovered == 4 and report.processed == 4


class Broken:
    def __init__(self, real: Any) -> None:
        self.real, self.version, self.dim, self.model_id = real, real.version, real.dim, real.model_id

    def chunk(self, text: str) -> list[str]:
        return [text]

    def embed_passages(self, texts: list[str]) -> Any:
        raise RuntimeError("model exploded")

    def embed_query(self, text: str) -> Any:
        return self.real.embed_query(text)


def test_failures_back_off_then_fail_then_retry(mem: Memory, embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    mem.config.vectors.max_attempts = 2
    report = process_outbox(mem, Broken(embedder))
    assert report.retried == 4 and "model exploded" in report.errors[0]
    row = mem.store.db.execute("SELECT status, attempts, next_attempt_at FROM outbox LIMIT 1").fetchone()
    assert row[0] == "pending" and row[1] == 1 and row[2] is not None
    assert process_outbox(mem, Broken(embedder)).processed == 0  # backing off: nothing due yet
    mem.store.db.execute("UPDATE outbox SET next_attempt_at = NULL")
    assert process_outbox(mem, Broken(embedder)).failed == 4
    assert outbox(mem) == {"failed": 4}
    assert retry_failed(mem) == 4
    assert process_outbox(mem, embedder).processed == 4


def test_second_worker_is_refused(mem: Memory, embedder: Any) -> None:
    lock = WorkerLock(mem.project.id)
    assert lock.acquire()
    try:
        assert process_outbox(mem, embedder).busy is True
    finally:
        lock.release()
    assert process_outbox(mem, embedder).processed == 4


def test_embedding_waits_for_the_other_worker_and_takes_over_when_it_leaves(
    mem: Memory, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memlane import`/`process` while the daemon embeds the project: the command returns once everything is
    embedded (searches right after it must not depend on how fast the daemon is), or says busy if it stalls."""
    import threading

    from memlane.cli import vectors as cli_vectors

    monkeypatch.setattr(cli_vectors, "_embedder", lambda _mem: embedder)
    monkeypatch.setattr(cli_vectors, "WAIT_POLL_S", 0.05)
    monkeypatch.setattr(cli_vectors, "RETRY_S", 0.2)
    monkeypatch.setattr(cli_vectors, "WAIT_STALL_S", 0.6)
    lock = WorkerLock(mem.project.id)
    assert lock.acquire()
    stalled = cli_vectors.embed_pending(mem, quiet=True)  # held throughout: it gives up, and says so
    assert stalled.busy and stalled.remaining == 4 and outbox(mem) == {"pending": 4}
    threading.Timer(0.3, lock.release).start()  # the other worker leaves with the work undone
    report = cli_vectors.embed_pending(mem, quiet=True)
    assert not report.busy and report.remaining == 0 and report.processed == 4
    assert outbox(mem) == {"done": 4}


def test_embedding_follows_the_other_worker_to_the_end(
    mem: Memory, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from memlane.cli import vectors as cli_vectors

    working = threading.Event()

    class Slow:
        """The daemon's worker, mid-batch when the command starts."""

        def __init__(self) -> None:
            self.__dict__.update({k: getattr(embedder, k) for k in ("model_id", "version", "dim")})

        def embed_passages(self, texts: list[str]) -> Any:
            working.set()
            time.sleep(0.3)
            return embedder.embed_passages(texts)

        def chunk(self, text: str) -> list[str]:
            return list(embedder.chunk(text))

    monkeypatch.setattr(cli_vectors, "_embedder", lambda _mem: embedder)
    monkeypatch.setattr(cli_vectors, "WAIT_POLL_S", 0.05)

    def daemon_worker() -> None:
        with Memory.open(mem.project.root) as other:
            process_outbox(other, Slow())

    worker = threading.Thread(target=daemon_worker)
    worker.start()
    assert working.wait(30)
    report = cli_vectors.embed_pending(mem, quiet=True)
    assert outbox(mem) == {"done": 4}, "returned before the other worker finished"
    worker.join()
    assert not report.busy and report.remaining == 0 and report.processed == 4


class Renamed(Broken):
    def __init__(self, real: Any, version: str) -> None:
        super().__init__(real)
        self.version = version

    def chunk(self, text: str) -> list[str]:
        return self.real.chunk(text)

    def embed_passages(self, texts: list[str]) -> Any:
        return self.real.embed_passages(texts)


def test_model_change_reembeds_cleanly(mem: Memory, embedder: Any) -> None:
    process_outbox(mem, embedder)
    other = Renamed(embedder, "all-MiniLM-L6-v2@newversion")
    report = process_outbox(mem, other)
    assert report.model_changed and report.processed == 4
    new = VectorIndex(mem.project.id, other.version, other.dim, mem.config.vectors)
    assert new.count() == 4
    from memlane.vectors.index import other_tables

    assert other_tables(mem.project.id, keep=new.name) == []  # the old model's vectors are gone


def test_each_sentence_of_a_prompt_gets_a_vector(proj: Path, embedder: Any) -> None:
    """A fact mentioned in passing inside a longer prompt is found by a question about it."""
    m = Memory.open(proj)
    prompt = (
        "Can you suggest some new BBQ sauce recipes to try out? I've been making my own from scratch "
        "and I'm always looking to improve. By the way, I just got a smoker today and I'm excited to use it."
    )
    answer = "Here are three BBQ sauce recipes: a Kansas City style, a Carolina vinegar sauce and a mustard sauce."
    ids = m.store.append([NewEvent("user_prompt", "s1", prompt, "1"), NewEvent("agent_response", "s1", answer, "2")])
    process_outbox(m, embedder)
    index = VectorIndex(m.project.id, embedder.version, embedder.dim, m.config.vectors)
    assert index.count() == 1 + 3 + 1, "the prompt whole and its three sentences; the answer whole"
    query = embedder.embed_query("what kitchen appliance did I buy?")
    whole = float(embedder.embed_passages([prompt])[0] @ query)
    by_sentence = max(embedder.embed_passages(passages.sentences(prompt)) @ query)
    best = index.nearest(query, 2)[ids.inserted[0]].similarity
    assert best == pytest.approx(by_sentence, abs=1e-4) and best > whole + 0.05, (best, whole)
    assert process_outbox(m, embedder).processed == 0 and index.count() == 5, "re-runs add nothing"
    m.close()


def test_reconcile_finds_gaps_and_orphans(mem: Memory, embedder: Any) -> None:
    process_outbox(mem, embedder)
    index = VectorIndex(mem.project.id, embedder.version, embedder.dim, mem.config.vectors)
    victim = mem.store.history(limit=1)[0].id
    index.delete([victim])
    index.upsert([{"event_id": "ghost", "chunk": 0, "vector": np.ones(embedder.dim) / 20}])
    report = reconcile(mem, embedder, fix=False)
    assert (report.missing, report.orphans) == (1, 1)
    reconcile(mem, embedder, fix=True)
    process_outbox(mem, embedder)
    assert reconcile(mem, embedder, fix=False).missing == 0 and "ghost" not in index.event_ids()


def test_forget_removes_vectors(mem: Memory, embedder: Any) -> None:
    process_outbox(mem, embedder)
    target = mem.store.history(limit=1)[0]
    mem.forget(ids=[target.id])
    index = VectorIndex(mem.project.id, embedder.version, embedder.dim, mem.config.vectors)
    assert target.id not in index.event_ids() and index.count() == 3


def test_ann_index_is_built_when_large(proj: Path, embedder: Any) -> None:
    m = Memory.open(proj)
    m.config.vectors.index_min_rows = 300
    index = VectorIndex(m.project.id, "random@1", 32, m.config.vectors)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(400, 32)).astype(np.float32)
    index.upsert([{"event_id": f"e{i}", "chunk": 0, "vector": v} for i, v in enumerate(vectors)])
    assert index.ensure_index() is True and index.index_type() == "IvfSq"
    assert index.search(vectors[7], 3)[0][0] == "e7"
    assert index.ensure_index() is False, "an index of the right type is only optimised"
    m.close()


def test_an_older_index_type_is_replaced(proj: Path, embedder: Any) -> None:
    m = Memory.open(proj)
    m.config.vectors.index_min_rows = 300
    index = VectorIndex(m.project.id, "random@1", 32, m.config.vectors)
    vectors = np.random.default_rng(1).normal(size=(400, 32)).astype(np.float32)
    index.upsert([{"event_id": f"e{i}", "chunk": 0, "vector": v} for i, v in enumerate(vectors)])
    index.table().create_index(
        metric="cosine", num_partitions=4, num_sub_vectors=4, vector_column_name="vector", index_type="IVF_PQ"
    )
    assert index.index_type() == "IvfPq"
    assert index.ensure_index() is True and index.index_type() == "IvfSq"
    assert index.search(vectors[3], 1)[0][0] == "e3"
    m.close()


def test_hybrid_finds_paraphrases_and_exact_identifiers(mem: Memory, embedder: Any) -> None:
    process_outbox(mem, embedder)
    engine = Engine(mem.config)
    hits = engine.search(mem, "our database runs out of connections when traffic spikes", limit=3)
    assert "connection pool" in hits[0].event.content
    assert hits[0].score > 2 * hits[1].score  # a paraphrase with no shared word still leads clearly
    assert engine.search(mem, "pool_manager.py", limit=2)[0].event.type == "tool_observation"
    assert not engine.relevant(mem, "How do I bake sourdough bread at home?")  # neither tier
    assert (
        "webhook"
        in engine.relevant(mem, "stripe webhook calls fail sometimes, do we retry them?").hits[0].event.content
    )


def test_tiers_read_the_score_against_the_querys_background() -> None:
    cfg = RetrievalConfig()
    # The background is the median P of the candidates ranked 11th-30th ...
    scores = [0.9, 0.5] + [0.2] * 8 + [0.05] * 20
    assert scoring.background(scores, 0.01) == 0.05
    # ... or, with too few candidates for one, the level of no evidence at all (the model's bias).
    assert scoring.background([0.9, 0.1], 0.01) == 0.01
    assert scoring.no_evidence(cfg, vectors=True) == pytest.approx(scoring.sigmoid(cfg.hybrid_weights[0]))
    low, high = scoring.lift(0.06, 0.05), scoring.lift(0.8, 0.05)
    assert scoring.tier(0.06, low, cfg) == "none"
    assert scoring.tier(0.8, high, cfg) == "high"
    # The same P is only suggested where the store's on-topic level is higher (a conversation about one life).
    assert scoring.tier(0.8, scoring.lift(0.8, 0.2), cfg) == "suggested"
    # High needs a P worth stating in full, whatever the lift.
    assert scoring.tier(0.15, scoring.lift(0.15, 0.001), cfg) == "suggested"


def test_more_evidence_never_lowers_the_score_and_nothing_saturates() -> None:
    """The old fusion mapped every cosine ≥ 0.55 to full evidence, so on-topic candidates all scored ~0.99."""
    cfg = RetrievalConfig()
    scores = [scoring.probability({"text": 0.3, "vector": c, "standout": c - 0.5}, cfg) for c in (0.55, 0.65, 0.75)]
    assert scores == sorted(scores) and scores[2] - scores[0] > 0.05
    assert scoring.probability({"text": 0.8, "vector": 0.6, "standout": 0.1}, cfg) > scoring.probability(
        {"text": 0.2, "vector": 0.6, "standout": 0.1}, cfg
    )
    nothing = scoring.probability({"text": 0.0, "vector": 0.6, "standout": 0.0}, cfg)
    assert scoring.tier(nothing, scoring.lift(nothing, scoring.no_evidence(cfg, vectors=True)), cfg) == "none"


ONE_PROJECT = [
    ("s1", "agent_response", "The label worker now retries render_label three times with exponential backoff."),
    ("s2", "agent_response", "Moved the label PDF renderer to WeasyPrint; fonts load from app/fonts."),
    ("s3", "agent_response", "Label batches over 500 parcels are split into chunks of 100 before rendering."),
    ("s4", "agent_response", "The label download link is a presigned S3 URL that expires after 15 minutes."),
    ("s5", "tool_observation", "Bash: pytest tests/test_labels.py\nE   KeyError: 'NanumGothic' in render_label"),
    ("s6", "agent_response", "Label previews in the admin UI are PNG thumbnails cached in Redis for an hour."),
]


@pytest.fixture
def one_topic(proj: Path, embedder: Any) -> Iterator[Memory]:
    """Every memory is about the same part of one codebase: where similarity alone saturates."""
    m = Memory.open(proj)
    m.store.append([NewEvent(kind, sid, text, str(i)) for i, (sid, kind, text) in enumerate(ONE_PROJECT)])
    process_outbox(m, embedder)
    yield m
    m.close()


def test_in_a_one_topic_store_the_exact_match_leads_and_scores_keep_their_spread(one_topic: Memory) -> None:
    engine = Engine(one_topic.config)
    hits = engine.search(one_topic, "KeyError NanumGothic when rendering labels", limit=6)
    assert "NanumGothic" in hits[0].event.content
    assert hits[0].score - hits[1].score > 0.2, [round(h.score, 3) for h in hits]
    assert sum(h.score >= 0.95 for h in hits) <= 1


def test_the_gate_is_silent_on_an_on_topic_prompt_the_history_cannot_answer(one_topic: Memory) -> None:
    engine = Engine(one_topic.config)
    assert not engine.relevant(one_topic, "Add a QR code with the tracking number to every shipping label").items
    assert not engine.relevant(one_topic, "What is a good recipe for banana bread?")  # neither tier
    found = engine.relevant(one_topic, "how long does the label download link stay valid?")
    assert found.items and "expires after 15 minutes" in found.full[0].event.content


PASTED = (
    "the label worker died overnight, can you look?\nTraceback (most recent call last):\n"
    '  File "/app/app/labels/render.py", line 57, in render_label\n    pdf.drawString(x, y, parcel.recipient)\n'
    "AttributeError: 'NoneType' object has no attribute 'recipient'"
)


def test_a_pasted_traceback_matches_its_own_error_not_every_traceback(one_topic: Memory, embedder: Any) -> None:
    """A prompt gets a vector per sentence, and a pasted traceback's lines are sentences: its generic lines
    ("Traceback (most recent call last):") must not make it evidence for every other traceback."""
    one_topic.store.append(
        [
            NewEvent("user_prompt", "s7", PASTED, "7"),
            NewEvent("agent_response", "s7", "render_label now skips cancelled shipments (parcel is None).", "8"),
        ]
    )
    process_outbox(one_topic, embedder)
    engine = Engine(one_topic.config)
    other = (
        "what is this?\nTraceback (most recent call last):\n"
        '  File "/app/app/exports/csv_writer.py", line 88, in write_rows\n'
        "KeyError: 'customer_vat_id'"
    )
    assert not engine.relevant(one_topic, other).items
    again = engine.relevant(one_topic, "AttributeError: 'NoneType' object has no attribute 'recipient' again")
    assert again.items and again.full[0].event.session_id == "s7"


def test_the_full_text_fallback_gives_the_same_answer_for_an_exact_error(one_topic: Memory) -> None:
    """When the daemon misses its deadline the hook's full-text path must not change an exact answer."""
    from memlane.capture.inject import prompt_hits

    prompt = "KeyError: 'NanumGothic' in render_label again"
    hybrid = Engine(one_topic.config).relevant(one_topic, prompt)
    fallback = prompt_hits(one_topic.store, prompt, one_topic.config)
    assert hybrid.hits[0].event.id == fallback.hits[0].event.id
    assert not prompt_hits(
        one_topic.store, "Add a QR code with the tracking number to every label", one_topic.config
    ).items


def _answers(proj: Path, embedder: Any, *answers: tuple[str, str, str]) -> Memory:
    """The project's memory with these agent answers (session, text, time), one per session, embedded."""
    m = Memory.open(proj)
    m.store.append([NewEvent("agent_response", session, text, "1", ts=ts) for session, text, ts in answers])
    process_outbox(m, embedder)
    return m


def test_a_newer_memory_on_the_same_subject_supersedes_the_older(proj: Path, embedder: Any) -> None:
    m = _answers(
        proj,
        embedder,
        ("old", "The SQLAlchemy engine uses pool_size=10 and max_overflow=5.", "2026-08-03T10:00:00.000Z"),
        ("new", "The SQLAlchemy engine now uses pool_size=25 and max_overflow=10.", "2026-09-26T10:00:00.000Z"),
    )
    found = Engine(m.config).relevant(m, "what pool_size does the SQLAlchemy engine use?")
    assert [h.event.session_id for h in found.hits] == ["new"]  # the older is in neither tier
    m.close()


# Two sessions on one setting, as Claude Code records them: the first sets the pool up, the second (a load
# test weeks later) edits the same line. Only the edit says that the first session's answer is history.
POOL_HISTORY = [
    (
        "setup",
        "user_prompt",
        "Configure the SQLAlchemy engine properly, we're using defaults everywhere.",
        "08-03T10:00",
    ),
    (
        "setup",
        "tool_observation",
        "Edit: /home/dev/src/shop/app/db.py\n- engine = create_engine(DATABASE_URL)\n"
        "+ engine = create_engine(DATABASE_URL, pool_size=10, max_overflow=5, pool_pre_ping=True)",
        "08-03T10:01",
    ),
    (
        "setup",
        "agent_response",
        "app/db.py now creates the engine with pool_size=10, max_overflow=5 and pool_pre_ping=True, so the"
        " SQLAlchemy engine no longer runs on defaults.",
        "08-03T10:02",
    ),
    ("load", "user_prompt", "The locust load test at 300 users starts throwing 500s after a minute.", "09-26T10:00"),
    (
        "load",
        "tool_observation",
        "Edit: /home/dev/src/shop/app/db.py\n- pool_size=10, max_overflow=5\n+ pool_size=25, max_overflow=10",
        "09-26T10:01",
    ),
    (
        "load",
        "agent_response",
        "The 500s were QueuePool exhaustion: the SQLAlchemy engine now has pool_size=25, max_overflow=10.",
        "09-26T10:02",
    ),
]


def _pool_memory(proj: Path, embedder: Any | None) -> Memory:
    m = Memory.open(proj)
    m.store.append(
        [
            NewEvent(kind, sid, text, str(i), ts=f"2026-{at}:00.000Z")
            for i, (sid, kind, text, at) in enumerate(POOL_HISTORY)
        ]
    )
    if embedder is not None:
        process_outbox(m, embedder)
    return m


@pytest.mark.parametrize("vectors", [True, False], ids=["daemon", "fallback"])
def test_an_edit_that_removes_a_setting_retires_the_exchange_that_set_it(
    proj: Path, embedder: Any, vectors: bool
) -> None:
    """The later edit removed pool_size=10: the answer quoting it and the prompt that asked for it stay out."""
    from memlane.capture.inject import prompt_hits

    m = _pool_memory(proj, embedder if vectors else None)
    query = "What pool_size is the SQLAlchemy engine configured with?"
    engine = Engine(m.config)
    search = engine.retriever(m).search if vectors else Retriever(m.store, m.config).search
    hits = search(query, limit=15, current_first=False)
    # Without the rule the old exchange is injected (it matches the query best) ...
    assert "setup" in {h.event.session_id for h in hits if h.confidence in ("high", "suggested")}
    # ... with it, only the session that holds the current value, in either tier.
    found = engine.relevant(m, query) if vectors else prompt_hits(m.store, query, m.config)
    assert found and {h.event.session_id for h in found.hits} == {"load"}
    assert not any("pool_size=10, max_overflow=5 and" in h.event.content for h in found.hits)
    m.close()


def test_an_edit_keeps_its_own_exchange_and_what_it_did_not_remove(proj: Path, embedder: Any) -> None:
    """Memories of the editing exchange are the change itself; an added option retires nothing."""
    from memlane.retrieval.select import drop_replaced

    m = _pool_memory(proj, embedder)
    hits = Engine(m.config).search(m, "pool_size max_overflow QueuePool load test", limit=15)
    kept = {h.event.session_id for h in drop_replaced(hits, m.store)}
    assert kept == {"load"}  # the load test's own exchange (it read pool_size=10 before editing) stays
    m.store.append(
        [
            NewEvent(
                "tool_observation",
                "later",
                "Edit: /home/dev/src/shop/app/db.py\n- pool_pre_ping=True)\n+ pool_pre_ping=True, echo_pool=True)",
                "9",
                ts="2026-10-01T10:00:00.000Z",
            )
        ]
    )
    hits = Engine(m.config).search(m, "pool_pre_ping echo_pool", limit=15)
    kept_ids = {h.event.id for h in drop_replaced(hits, m.store)}
    # the later edit only added an option: it retires nothing (the setup exchange is still the load test's)
    assert {h.event.id for h in hits if h.event.session_id != "setup"} <= kept_ids
    m.close()


def test_the_edit_that_retires_a_memory_is_found_in_the_store_when_the_prompt_misses_it(proj: Path) -> None:
    """The replacing edit rarely matches the prompt: it is looked up by what the chosen memories quote."""
    from memlane.retrieval.select import drop_replaced, later_edits

    m = _pool_memory(proj, None)
    hits = Retriever(m.store, m.config).search("How was the SQLAlchemy engine configured?", limit=15)
    hits = [h for h in hits if h.event.session_id != "load"]  # the edit that replaced pool_size=10 is not a hit
    assert {h.event.session_id for h in hits} == {"setup"}
    assert drop_replaced(hits, m.store) == hits
    edits = later_edits(hits, m.store)
    assert [(e.session_id, gone) for e, gone in edits] == [("load", {"pool_size=10", "max_overflow=5"})]
    assert drop_replaced(hits, m.store, edits) == []
    m.close()


# A library replaced, as the replay's history has it: the first session wraps moment, an on-topic session
# touches the same page later, and the session that swapped moment for date-fns shares few of the question's
# words ("relative times" is how the first session put it).
LIBRARY_HISTORY = [
    (
        "feed",
        "user_prompt",
        'In the order history page, show relative times like "2 hours ago" instead of raw ISO timestamps.',
        "08-10T10:00",
    ),
    (
        "feed",
        "tool_observation",
        'Write: /home/dev/src/shop/web/src/lib/ago.ts\nimport moment from "moment";\n\n'
        "export const ago = (iso: string) => moment(iso).fromNow();",
        "08-10T10:01",
    ),
    (
        "feed",
        "agent_response",
        "OrderHistory now renders relative times like 2 hours ago through web/src/lib/ago.ts, which wraps"
        " moment's fromNow() instead of showing raw ISO timestamps.",
        "08-10T10:02",
    ),
    ("swap", "user_prompt", "moment is 67 KB of our bundle just for this. Replace it.", "10-01T10:00"),
    (
        "swap",
        "tool_observation",
        'Edit: /home/dev/src/shop/web/src/lib/ago.ts\n- import moment from "moment";\n'
        '+ import { formatDistanceToNow } from "date-fns";',
        "10-01T10:01",
    ),
    (
        "swap",
        "agent_response",
        "ago.ts now uses date-fns formatDistanceToNow(date, { addSuffix: true }); moment is gone from package.json.",
        "10-01T10:02",
    ),
    ("tz", "user_prompt", 'New entries in the order history page say "in 9 hours" for users in Korea.', "10-10T10:00"),
    (
        "tz",
        "agent_response",
        "The API sent naive timestamps without an offset, so browsers read them as local time; the order"
        " history page now gets UTC timestamps with an offset.",
        "10-10T10:01",
    ),
]


def test_the_answer_of_a_replacing_edit_takes_the_place_of_the_memory_it_retired(proj: Path, embedder: Any) -> None:
    """Which library formats the relative times? The answer that swapped moment for date-fns, not the stale
    one (retired by the edit) and not only the on-topic session that outscores the swap on the question's words."""
    m = Memory.open(proj)
    m.store.append(
        [
            NewEvent(kind, sid, text, str(i), ts=f"2026-{at}:00.000Z")
            for i, (sid, kind, text, at) in enumerate(LIBRARY_HISTORY)
        ]
    )
    process_outbox(m, embedder)
    query = "Which library formats the relative times in the order history page?"
    engine = Engine(m.config)
    hits = engine.search(m, query, limit=15)
    swap_answer = next(h for h in hits if h.event.session_id == "swap" and h.event.type == "agent_response")
    feed_best = max(h.score for h in hits if h.event.session_id == "feed")
    assert swap_answer.score < m.config.retrieval.inject_relative * feed_best  # alone it would be cut by the count
    found = engine.relevant(m, query)
    assert "swap" in {h.event.session_id for h in found.full}
    assert "feed" not in {h.event.session_id for h in found.hits}  # the stale answer stays out of both tiers
    promoted = next(h for h in found.full if h.event.id == swap_answer.event.id)
    assert promoted.score == pytest.approx(feed_best) and promoted.sources["replaces"] == pytest.approx(feed_best)
    m.close()


@pytest.mark.parametrize("vectors", [True, False], ids=["hybrid", "full-text"])
def test_search_ranks_the_current_setting_above_the_one_a_later_edit_replaced(
    proj: Path, embedder: Any, vectors: bool
) -> None:
    """`memlane search` and MCP search: the session that holds today's value comes first; the old
    exchange (which matches the question best) is still found, below it and marked superseded."""
    m = _pool_memory(proj, embedder if vectors else None)
    m.store.append([NewEvent("agent_response", "other", "The Stripe webhook secret lives in STRIPE_SECRET.", "7")])
    if vectors:
        process_outbox(m, embedder)
    search = Engine(m.config).retriever(m).search if vectors else Retriever(m.store, m.config).search
    query = "What pool_size is the SQLAlchemy engine configured with?"
    before = search(query, limit=15, current_first=False)
    assert before[0].event.session_id == "setup"  # what the scores alone say
    hits = search(query, limit=15)
    sessions = [h.event.session_id for h in hits]
    assert sessions[0] == "load" and "setup" in sessions
    first_setup = sessions.index("setup")
    assert "load" not in sessions[first_setup:]  # every current memory before any superseded one
    assert all(h.sources.get("superseded") == 1.0 for h in hits if h.event.session_id == "setup")
    assert {h.confidence for h in hits if h.event.session_id == "setup"} == {"superseded"}
    assert not any("superseded" in h.sources for h in hits if h.event.session_id != "setup")
    assert {h.event.id: h.score for h in hits} == {h.event.id: h.score for h in before}  # order only
    top = search(query, limit=3)
    assert {h.event.session_id for h in top} == {"load"}  # the stale answer leaves a short list
    m.close()


def test_search_ranks_the_replacing_answer_first_and_leaves_unrelated_results_alone(proj: Path, embedder: Any) -> None:
    """The answer of the exchange that swapped moment for date-fns moves to the place of the stale answer,
    although it shares few of the question's words; a search the swap has nothing to do with is unchanged."""
    m = Memory.open(proj)
    m.store.append(
        [
            NewEvent(kind, sid, text, str(i), ts=f"2026-{at}:00.000Z")
            for i, (sid, kind, text, at) in enumerate(LIBRARY_HISTORY)
        ]
    )
    process_outbox(m, embedder)
    search = Engine(m.config).retriever(m).search
    query = "Which library formats the relative times in the order history page?"
    before = search(query, limit=5, current_first=False)
    assert before[0].event.session_id == "feed"
    hits = search(query, limit=5)
    assert (hits[0].event.session_id, hits[0].event.type) == ("swap", "agent_response")
    assert "feed" not in {h.event.session_id for h in hits}  # three current memories and more were found
    # A question about another subject: the same first answer, and the memories that neither are stale nor
    # replaced something stale in the same order.
    unrelated = "Why did users in Korea see in 9 hours on new entries?"
    before, hits = search(unrelated, limit=8, current_first=False), search(unrelated, limit=8)
    assert hits[0].event.id == before[0].event.id and hits[0].event.session_id == "tz"
    untouched = [h.event.id for h in before if h.event.session_id not in ("feed", "swap")]
    assert [h.event.id for h in hits if h.event.session_id not in ("feed", "swap")] == untouched
    m.close()


def test_search_without_superseded_memories_is_unchanged(mem: Memory, embedder: Any) -> None:
    process_outbox(mem, embedder)
    search = Engine(mem.config).retriever(mem).search
    for query in ("connection pool timeout", "Okta SSO login", "payment webhook retries"):
        hits, before = search(query, limit=3), search(query, limit=3, current_first=False)
        assert [(h.event.id, h.score, h.confidence) for h in hits] == [
            (h.event.id, h.score, h.confidence) for h in before
        ]
        assert not any("superseded" in h.sources for h in hits)


def test_edit_fragments_of_claude_and_codex_edits() -> None:
    """What an edit takes out: settings, code-like identifiers and imported libraries, not plain words."""
    from memlane.retrieval.select import edit_sides, fragments

    claude = 'Edit: web/src/lib/relativeTime.ts\n- import moment from "moment";\nconst t = moment(iso).fromNow();'
    claude += '\n+ import { formatDistanceToNow } from "date-fns";\nconst t = formatDistanceToNow(new Date(iso));'
    old, new = edit_sides(claude) or ("", "")
    assert fragments(old) - fragments(new) == {"moment", "fromNow"}
    codex = (
        "apply_patch: app/auth/tokens.py\n*** Begin Patch\n*** Update File: app/auth/tokens.py\n@@\n"
        " REFRESH_TTL = 1209600\n-ACCESS_TTL = 900\n+ACCESS_TTL = 1800\n*** End Patch"
    )
    old, new = edit_sides(codex) or ("", "")
    assert fragments(old) - fragments(new) == {"ACCESS_TTL=900"}
    assert edit_sides("Bash: git diff\n- removed words here\n+ added") is None  # only edit tools' records
    assert fragments("we removed the retry comment") == set()


def test_a_pasted_error_brings_the_answer_of_the_session_that_showed_it(proj: Path, embedder: Any) -> None:
    """The tool output with the error matches best; the answer that explained it comes along."""
    from memlane.retrieval.select import ANSWERS

    m = Memory.open(proj)
    flaky = [
        ("user_prompt", "test_label_generation is flaky in CI, about one run in five fails."),
        (
            "tool_observation",
            "Bash: pytest tests/test_labels.py::test_label_generation -q --count 20\nExit code 1\n....F....\n"
            "E   AssertionError: assert None is not None\n"
            "E    +  where None = Shipment(id=881).label_url",
        ),
        ("user_prompt", "Make it deterministic."),
        (
            "agent_response",
            "The test asserted before the worker had rendered the PDF; tests now set CELERY_TASK_ALWAYS_EAGER=True so"
            " tasks run inline.",
        ),
    ]
    events = [NewEvent(kind, "flaky", text, str(i)) for i, (kind, text) in enumerate(flaky)]
    events += [NewEvent(kind, sid, text, str(i)) for i, (sid, kind, text) in enumerate(ONE_PROJECT)]
    m.store.append(events)
    process_outbox(m, embedder)
    query = "AssertionError: assert None is not None where None = Shipment(id=881).label_url"
    found = Engine(m.config).relevant(m, query).full
    assert found[0].event.type == "tool_observation"
    assert any(h.event.session_id == "flaky" and h.event.type in ANSWERS for h in found)
    m.close()


def test_what_a_session_summary_repeats_is_not_injected_again(proj: Path, embedder: Any) -> None:
    """A summary quotes its prompt and answer word for word: the prompt gets the summary, not three copies."""
    prompt = "Add a /healthz endpoint for Fly health checks that checks Postgres and Redis."
    answer = "GET /healthz runs SELECT 1 and a Redis PING and returns 503 if either fails; fly.toml polls it."
    healthz = [
        ("user_prompt", prompt),
        ("tool_observation", 'Bash: curl -s localhost:8000/healthz\n{"ok":true}'),
        ("agent_response", answer),
        ("session_summary", f"Asked: {prompt}\nFiles changed: app/health.py\nOutcome: {answer}"),
    ]
    events = [NewEvent(kind, "health", text, str(i)) for i, (kind, text) in enumerate(healthz)]
    events += [NewEvent(kind, sid, text, str(i)) for i, (sid, kind, text) in enumerate(ONE_PROJECT)]
    m = Memory.open(proj)
    m.store.append(events)
    process_outbox(m, embedder)
    engine = Engine(m.config)
    query = "What does the /healthz endpoint for the Fly health checks check?"

    def repeats(found: list[Any]) -> list[str]:
        return [a.event.type for a in found for b in found if a is not b and a.event.content in b.event.content]

    over = [h for h in engine.search(m, query, limit=15) if h.confidence != "none"]
    assert len(repeats(over)) >= 2  # the prompt and the answer score over the gate beside the summary
    found = engine.relevant(m, query)
    assert "session_summary" in {h.event.type for h in found.full}
    assert repeats(found.hits) == []
    m.close()


def test_a_korean_query_skips_english_only_vectors(proj: Path, embedder: Any) -> None:
    """all-MiniLM-L6-v2 maps Korean text to near-identical vectors: unrelated Korean history must not ride along."""
    m = Memory.open(proj)
    m.store.append(
        [
            NewEvent("user_prompt", "k1", "배송 추적 페이지에 지도 넣어 주세요. 현재 위치랑 배송 경로 표시.", "1"),
            NewEvent("user_prompt", "k2", "다크 모드 지원해 주세요. OS 설정 따라가고, 토글도 있으면 좋겠어요.", "1"),
        ]
    )
    process_outbox(m, embedder)
    engine = Engine(m.config)
    assert not engine.relevant(m, "결제 환불 처리 로직은 어디에 있어?")
    assert "다크 모드" in engine.relevant(m, "다크 모드 지원 토글, OS 설정 따라가게 해 주세요").hits[0].event.content
    assert all("vector" not in h.sources for h in engine.search(m, "다크 모드 토글"))
    m.close()


def test_vector_only_candidates_are_read_only_when_ranked_and_gone_events_skipped(mem: Memory, embedder: Any) -> None:
    """A vector whose event is already gone (forget deletes the event first) never surfaces; the next one fills in."""
    process_outbox(mem, embedder)
    engine = Engine(mem.config)
    query = "our database runs out of connections when traffic spikes"
    before = engine.search(mem, query, limit=2)
    gone = before[0].event
    mem.store.forget([(gone.id, gone.type)], "test", gone.id)  # the store only: its vector stays behind
    index = VectorIndex(mem.project.id, embedder.version, embedder.dim, mem.config.vectors)
    assert gone.id in index.event_ids()
    after = engine.search(mem, query, limit=2)
    assert gone.id not in [h.event.id for h in after] and len(after) == 2
    assert after[0].event.id == before[1].event.id
    near = index.nearest(embedder.embed_query(query), 4)
    assert {n.type for n in near.values()} <= {"agent_response", "user_prompt", "tool_observation"}
    assert all(n.ts for n in near.values())


def test_opening_vectors_met_by_a_search_are_the_stored_ones(mem: Memory, embedder: Any) -> None:
    """A search keeps the chunk-0 vectors it met, so the injection's supersession check reads no more from
    LanceDB for them; what it returns must be exactly what a fresh read gives, and a deleted event's is gone."""
    process_outbox(mem, embedder)
    searched = VectorIndex(mem.project.id, embedder.version, embedder.dim, mem.config.vectors)
    hits = searched.nearest(embedder.embed_query("connection pool released under load"), k=4)
    assert len(hits) == 4 and len(searched._firsts) == 4
    fresh = VectorIndex(mem.project.id, embedder.version, embedder.dim, mem.config.vectors)
    ids = list(hits)
    kept, read = searched.first_vectors(ids), fresh.first_vectors(ids)
    assert set(kept) == set(read) == set(ids)
    for event_id in ids:
        assert np.array_equal(kept[event_id], read[event_id])
        assert np.allclose(read[event_id], embedder.embed_passages([mem.store.get(event_id).content])[0], atol=1e-5)
    searched.delete([ids[0]])
    assert ids[0] not in searched._firsts and ids[0] not in searched.first_vectors(ids)


def _random_rows(rng: np.random.Generator, n: int, tag: str, dim: int = 16) -> list[dict[str, Any]]:
    """Events with one to three chunks each: the best chunk per event is what a search reports."""
    out = []
    for i in range(n):
        for chunk in range(1 + i % 3):
            out.append(
                {
                    "event_id": f"{tag}{i}",
                    "chunk": chunk,
                    "type": "agent_response",
                    "session_id": f"s{i % 4}",
                    "ts": f"2026-11-{1 + i % 28:02d}",
                    "vector": rng.standard_normal(dim),
                }
            )
    return out


def test_a_small_table_is_searched_in_memory_with_lancedbs_answer(memlane_home: Path) -> None:
    """Exact search over the in-memory copy finds what LanceDB's flat search finds: same events, same order,
    the same similarities, types, times and sessions."""
    from memlane.config import VectorsConfig
    from memlane.vectors import index as vindex

    rng = np.random.default_rng(11)
    index = VectorIndex("p-snap", "m1", 16, VectorsConfig())
    index.upsert(_random_rows(rng, 120, "e"))
    for _ in range(20):
        query = rng.standard_normal(16)
        fast = index.nearest(query, 10)
        assert index._snapshot is not None  # answered from memory
        slow = index.nearest(query, 10, where="chunk >= 0")  # a filter: LanceDB's own search
        assert list(fast) == list(slow)
        for event_id, n in fast.items():
            assert n[1:] == slow[event_id][1:] and abs(n.similarity - slow[event_id].similarity) < 1e-5
    assert index.count() <= vindex.SNAPSHOT_MAX_ROWS


def test_the_in_memory_copy_follows_writes_from_another_handle(memlane_home: Path) -> None:
    from memlane.config import VectorsConfig

    rng = np.random.default_rng(12)
    searcher = VectorIndex("p-follow", "m1", 16, VectorsConfig())
    writer = VectorIndex("p-follow", "m1", 16, VectorsConfig())  # the worker's own handle
    writer.upsert(_random_rows(rng, 30, "old"))
    query = rng.standard_normal(16)
    assert searcher.nearest(query, 5)
    target = {
        "event_id": "new-exact",
        "chunk": 0,
        "type": "user_prompt",
        "session_id": "s9",
        "ts": "t",
        "vector": query * 3,
    }
    writer.upsert([target])
    found = searcher.nearest(query, 5)
    assert next(iter(found)) == "new-exact" and found["new-exact"].similarity > 0.999
    writer.delete(["new-exact"])
    assert "new-exact" not in searcher.nearest(query, 5)


def test_a_table_past_the_in_memory_size_is_searched_by_lancedb(
    memlane_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memlane.config import VectorsConfig
    from memlane.vectors import index as vindex

    rng = np.random.default_rng(13)
    index = VectorIndex("p-large", "m1", 16, VectorsConfig())
    index.upsert(_random_rows(rng, 40, "e"))
    monkeypatch.setattr(vindex, "SNAPSHOT_MAX_ROWS", 10)
    query = rng.standard_normal(16)
    found = index.nearest(query, 5)
    assert index._snapshot is None and len(found) == 5


def test_korean_memories_are_not_one_subject_to_an_english_model(proj: Path, embedder: Any) -> None:
    """MiniLM puts any two Korean texts close together (cosine 0.5-0.8), so closeness is no sign of one subject:
    the similarity rule must not hide an older Korean memory behind a newer, unrelated one."""
    from memlane.retrieval.select import supersede

    m = _answers(
        proj,
        embedder,
        ("march", "두부가 방광염 진단을 받아서 사료를 처방식으로 바꿨어.", "2026-03-26T10:00:00.000Z"),
        ("september", "성수동 베이커리에서 다음 주부터 일해. 새벽 다섯 시 출근이야.", "2026-09-27T10:00:00.000Z"),
    )
    index = Engine(m.config).index_for(m)
    hits = Retriever(m.store, m.config).search("두부 진단, 베이커리 출근", limit=10)
    assert {h.event.session_id for h in hits} == {"march", "september"}
    a, b = index.first_vectors([h.event.id for h in hits]).values()
    assert float(a @ b) >= m.config.retrieval.supersede_similarity  # what the rule would take for one subject
    kept = supersede(hits, index, m.config.retrieval.supersede_similarity)
    assert {h.event.session_id for h in kept} == {"march", "september"}
    # A model whose Korean vectors carry meaning (multilingual, or retrieval.cjk_vectors) keeps the rule.
    assert [h.event.session_id for h in supersede(hits, index, m.config.retrieval.supersede_similarity, True)] == [
        "september"
    ]
    m.close()
