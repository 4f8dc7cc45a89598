"""Full-text ranking is Okapi BM25: a clearly better BM25 match never ranks below a worse one.

Real store, real FTS5, the retriever without a vector side (the hooks' fallback and ``--mode text``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conftest import on_both_backends
from memlane import config
from memlane.retrieval import scoring
from memlane.retrieval.hybrid import Retriever
from memlane.store import NewEvent, Store

backend = on_both_backends(__name__)  # every test here runs on SQLite and on PostgreSQL

TS = "2026-11-20T10:00:00.000Z"
FILLER = [
    "we talked about the release notes and the changelog for the next version",
    "the dashboard shows the weekly numbers and the team looked at them together",
    "renamed a few variables in the settings page and fixed the typo in the footer",
    "the meeting moved to thursday because half of the team was travelling",
    "added a section on installation to the readme and linked the changelog",
    "the build is green again after the flaky network test was retried",
    "reviewed the pull request for the login page and left two comments",
    "memory of the old cluster is still in the wiki page about the migration",
]


def _okapi(docs: list[str], query: str) -> list[float]:
    """Textbook Okapi BM25 (k1 1.2, b 0.75, IDF log(1 + (N - df + 0.5) / (df + 0.5)))."""
    word = re.compile(r"[^\W_]+")
    tfs = [Counter(word.findall(d.lower())) for d in docs]
    lens = [sum(tf.values()) for tf in tfs]
    avg = sum(lens) / len(lens)
    terms = set(word.findall(query.lower()))
    df = {t: sum(1 for tf in tfs if t in tf) for t in terms}
    idf = {t: math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    return [
        sum(idf[t] * tf[t] * 2.2 / (tf[t] + 1.2 * (0.25 + 0.75 * n / avg)) for t in terms if tf[t])
        for tf, n in zip(tfs, lens, strict=True)
    ]


def _store(tmp_path: Path, texts: list[str]) -> tuple[Store, list[str]]:
    """Each text an answer in its own session at one moment: no session, exchange or recency differences."""
    store = Store(tmp_path / "m.db", "p")
    result = store.append([NewEvent("agent_response", f"s{i}", t, "1", {}, ts=TS) for i, t in enumerate(texts)])
    return store, result.inserted


def test_a_focused_match_outranks_a_long_event_that_mentions_every_query_word_once(tmp_path: Path) -> None:
    # The long event has every query word, including the rarer "memory", once among a hundred others;
    # the short one is about the parquet writer and the exporter and says so repeatedly. Counting
    # which query words appear (the previous score) put the long one first; BM25 puts the short one
    # first by a wide margin.
    better = "the parquet writer in the exporter: the parquet writer buffered rows, so the exporter parquet writer died"
    worse = (
        "notes from the planning call: "
        + " ".join(FILLER[:4])
        + " then someone mentioned the parquet writer once and the exporter once and memory once "
        + " ".join(FILLER[4:7])
    )
    store, ids = _store(tmp_path, [*FILLER, worse, better])
    query = "parquet writer exporter memory"
    expected = _okapi([*FILLER, worse, better], query)
    assert expected[-1] > 1.3 * expected[-2], "the fixture must make the short event clearly the better BM25 match"
    hits = Retriever(store, config.Config()).search(query)
    order = [h.event.id for h in hits]
    assert order.index(ids[-1]) < order.index(ids[-2])
    assert hits[0].event.id == ids[-1]
    assert hits[0].sources["text"] > hits[1].sources["text"]
    store.close()


def test_text_only_results_come_in_okapi_bm25_order(tmp_path: Path) -> None:
    texts = [
        *FILLER,
        "checkout pool timeout",
        "the checkout pool timeout came from leaked sessions in the checkout service",
        "pool sizes were raised; the timeout stayed",
        "a timeout in the checkout, a timeout in the cart, a timeout in the pool, timeouts everywhere today",
        "checkout",
        "the pool of volunteers for the checkout redesign study",
        "leaked sessions kept the pool full until the timeout fired, said the checkout team lead in the long"
        " retrospective that followed the incident, which also covered the dashboard and the changelog",
    ]
    store, ids = _store(tmp_path, texts)
    query = "checkout pool timeout leaked"
    expected = _okapi(texts, query)
    hits = Retriever(store, config.Config()).search(query, limit=20)
    want = sorted((i for i, s in enumerate(expected) if s > 0), key=lambda i: -expected[i])
    assert [ids.index(h.event.id) for h in hits] == want
    texts_scores = [h.sources["text"] for h in hits]
    assert texts_scores == sorted(texts_scores, reverse=True)
    assert all(0 < t < 1 for t in texts_scores)
    store.close()


def test_stop_words_order_results_as_plain_bm25_does_but_do_not_raise_p(tmp_path: Path) -> None:
    # Stop words are not matched (they would match most of the store) but they are scored: among the
    # events that match a content word, the order is textbook BM25 over every word of the query.
    texts = [
        *FILLER,
        "checkout pool timeout",
        "why is the checkout pool timeout back? it was the pool in the checkout",
        "the timeout",
        "is it the pool or the checkout that times out, and why is it slow",
        "pool",
        "why is the checkout pool timeout back",  # the same content words and length as the next one:
        "checkout pool timeout back: seven words here",  # only the stop words put it first
    ]
    store, ids = _store(tmp_path, texts)
    query = "why is the checkout pool timeout back"
    expected = _okapi(texts, query)
    content = {"checkout", "pool", "timeout", "back"}
    want = [i for i in sorted(range(len(texts)), key=lambda i: -expected[i]) if content & set(texts[i].split())]
    hits = Retriever(store, config.Config()).search(query, limit=20)
    assert [ids.index(h.event.id) for h in hits] == want
    assert want.index(len(texts) - 2) < want.index(len(texts) - 1)
    plain = {h.event.id: h.score for h in Retriever(store, config.Config()).search("checkout pool timeout back")}
    assert all(h.score == plain[h.event.id] for h in hits), "P is the model of the content words alone"
    store.close()


def test_text_evidence_is_bm25_over_the_ideal_so_partial_matches_score_less(tmp_path: Path) -> None:
    # Scale, for the gate: an event with every query word scores more than one with only the rarest.
    texts = [*FILLER, "the exporter oom: parquet writer buffered every row", "exporter restarted"]
    store, ids = _store(tmp_path, texts)
    hits = {h.event.id: h for h in Retriever(store, config.Config()).search("exporter parquet writer oom")}
    assert hits[ids[-2]].sources["text"] > 2 * hits[ids[-1]].sources["text"]
    assert hits[ids[-2]].score > hits[ids[-1]].score
    store.close()


def test_index_stats_are_the_word_index_row_count_and_average_length(tmp_path: Path) -> None:
    store, ids = _store(tmp_path, ["one two three", "four five", "six seven eight nine ten eleven twelve"])
    assert store.index_stats() == (3, 12 / 3)
    store.forget(store.select_for_forget(ids=[ids[2]]), "ids", ids[2])
    assert store.index_stats() == (2, 5 / 2)
    store.close()


def test_no_nudge_or_support_puts_a_clearly_weaker_bm25_match_first(tmp_path: Path) -> None:
    # The weaker match has everything a nudge or a lift rewards: it is the newest event, an answer
    # rather than tool output, from the day the query names ("yesterday"), and a prompt of its session
    # matches strongly (session and exchange support). The stronger match is a tool output from months
    # earlier, alone in its session. Its BM25 evidence is clearly higher, so it stays first.
    store = Store(tmp_path / "m.db", "p")
    old, new = "2026-06-01T10:00:00.000Z", "2026-11-19T10:00:00.000Z"
    strong = "the parquet exporter crashed: parquet exporter crashed again on the nightly run"
    weak = "looked at the exporter logs, nothing stood out"
    events = [NewEvent("agent_response", f"f{i}", t, "1", {}, ts=old) for i, t in enumerate(FILLER)]
    events += [
        NewEvent("tool_observation", "a", strong, "1", {}, ts=old),
        NewEvent("user_prompt", "b", "the parquet exporter crashed, parquet exporter crashed", "1", {}, ts=new),
        NewEvent("agent_response", "b", weak, "2", {}, ts=new),
    ]
    ids = store.append(events).inserted
    strong_id, weak_id = ids[len(FILLER)], ids[-1]
    query, now = "why has the parquet exporter crashed yesterday", datetime(2026, 11, 20, 12, tzinfo=UTC)
    cfg = config.Config()

    def ranked() -> dict[str, tuple[int, Any]]:
        hits = Retriever(store, cfg).search(query, limit=20, now=now)
        return {h.event.id: (i, h) for i, h in enumerate(hits)}

    hits = ranked()
    (s_at, s_hit), (w_at, w_hit) = hits[strong_id], hits[weak_id]
    rcfg = cfg.retrieval
    gap = scoring.evidence(s_hit.sources, rcfg) - scoring.evidence(w_hit.sources, rcfg)
    assert gap > rcfg.support_margin + rcfg.nudge_margin, "the fixture must make the evidence clearly different"
    assert w_hit.sources["recency"] > s_hit.sources["recency"] and w_hit.sources["when"] > s_hit.sources["when"]
    assert w_hit.score > scoring.probability(w_hit.sources, rcfg) + 0.1, "its P keeps the support (for the gate)"
    assert s_at < w_at

    # The same fixture with unbounded nudges and support puts the weak match first: what the margins stop.
    rcfg.support_margin = rcfg.nudge_margin = 50.0
    hits = ranked()
    assert hits[weak_id][0] < hits[strong_id][0]
    store.close()


def test_of_two_equally_matching_memories_the_newer_comes_first(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db", "p")
    text = "the label worker now runs on rq with the redis broker"
    ids = store.append(
        [
            *[NewEvent("agent_response", f"f{i}", t, "1", {}, ts=TS) for i, t in enumerate(FILLER)],
            NewEvent("agent_response", "newer", text, "1", {}, ts="2026-11-01T10:00:00.000Z"),
            NewEvent("agent_response", "older", text, "1", {}, ts="2026-08-01T10:00:00.000Z"),
        ]
    ).inserted
    hits = Retriever(store, config.Config()).search("which queue runs the label worker")
    assert [h.event.id for h in hits[:2]] == [ids[-2], ids[-1]]
    store.close()
