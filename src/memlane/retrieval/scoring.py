"""One score per result that estimates "this memory bears on the query", and the labels read from it.

Evidence per candidate:

- text ``t`` in [0, 1): the event's Okapi BM25 score for the query as a share of the most any event
  could score (``text_score``) — so text-only results are in BM25 order, and exact identifiers (file
  names, error codes) are rare words that carry most of the weight;
- cosine ``c``: the best cosine similarity between the query and one of the event's vectors;
- stand-out ``s``: ``c`` minus the median cosine of the query's nearest neighbours. In a store about
  one subject (one codebase, one long conversation) every memory is "about" the query and raw cosines
  are uniformly high; what marks the memory that answers it is how far it stands above that
  background;

and they are combined by logistic regression, ``P = sigmoid(w · features)``, with weights fitted on the
dev split of the retrieval benchmarks (``benchmarks/calibrate.py``). Nothing saturates: an earlier
version mapped any cosine ≥ 0.55 to full evidence and fused with a noisy-OR, so in a one-subject
store most candidates scored ~0.99 and noise decided the order. With a linear logit, lexical evidence
keeps ordering candidates that are all on-topic, and ``P`` is a probability the tiers can use.

The tiers read ``P`` against the query's own background (``background``, ``lift``): the level of the
candidates ranked 11th–30th, which match the query's words or topic without being what it asks for. In a
store about one subject that level is high, in a store of unrelated chats it is low; a memory's lift —
its log-odds above that level — means the same in both, where a fixed threshold on ``P`` does not
(``tier``: "high" → injected in full, "suggested" → an index line, "none").

Recency, a small prior by event type and a time named in the query only reorder results, and only
near-ties (``rank_key``: at most ``nudge_margin`` in log-odds, as support from the session and the
exchange is at most ``support_margin``), so none of them can put a clearly weaker match first; they
never change ``P``, so a time phrase cannot push a strong match under the injection gate. (The type
is kept out of ``P`` on purpose: fitted, it learns a benchmark's labelling habits — LongMemEval marks
user turns as evidence — rather than what helps.)
"""

from __future__ import annotations

import math
import time
from datetime import datetime

from memlane.config import RetrievalConfig

TYPE_PRIOR = {
    "agent_response": 1.0,
    "session_summary": 1.0,
    "compaction": 0.9,
    "user_prompt": 0.85,
    "tool_observation": 0.7,
    "session_start": 0.0,
    "session_end": 0.0,
}


def clamp(x: float) -> float:
    return 0.0 if x < 0 else 1.0 if x > 1 else x


def sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


K1, B = 1.2, 0.75  # Okapi BM25's term-frequency saturation and length normalisation (FTS5's and Lucene's defaults)


def bm25_term(idf_weight: float, tf: int, length: int, avg_length: float) -> float:
    """One query term's Okapi BM25 contribution to an event of ``length`` tokens."""
    if tf <= 0:
        return 0.0
    norm = 1 - B + B * length / avg_length if avg_length > 0 else 1.0
    return idf_weight * tf * (K1 + 1) / (tf + K1 * norm)


def text_score(bm25: float, ideal: float) -> float:
    """Lexical evidence: the event's BM25 as a share of the most any event could score for this query.

    A term contributes at most ``idf · (k1 + 1)`` (many occurrences), so ``ideal`` is that sum and the
    share lies in [0, 1). It is BM25 divided by a constant of the query, so it orders a query's
    candidates exactly as BM25 does, while its scale means the same across queries: every query word
    once in an event of average length is ~0.45; one rare word of a five-word query, much less.
    """
    return bm25 / ideal if ideal > 0 else 0.0


# Ranks (1 / (1 + position) in the full-text or vector list) were tried as features and dropped: every
# query has a first result, so they lifted unanswerable prompts over the gate (coding replay dev: 0.94 →
# 0.88 of no-match prompts silent at equal recall).
TEXT_FEATURES: tuple[str, ...] = ("text",)
HYBRID_FEATURES: tuple[str, ...] = ("text", "vector", "standout")


def probability(evidence: dict[str, float], cfg: RetrievalConfig) -> float:
    """P(this memory bears on the query). Without a vector side (no ``vector``) the text-only model."""
    if "vector" not in evidence:
        bias, *weights = cfg.text_weights
        names = TEXT_FEATURES
    else:
        bias, *weights = cfg.hybrid_weights
        names = HYBRID_FEATURES
    own = sum(w * evidence.get(n, 0.0) for w, n in zip(weights, names, strict=True))
    return sigmoid(bias + own + cfg.answer_weight * evidence.get("answer", 0.0))


def evidence(evidence: dict[str, float], cfg: RetrievalConfig) -> float:
    """A result's own evidence in log-odds, for the order: ``logit(P)`` plus what the query's stop words
    add to its BM25 (``stopwords``, a share on the text feature's scale, weighted like it). So text-only
    results come in plain BM25 order, stop words and all, while P — what the gate reads — is the fitted
    model of the query's content words."""
    weights = cfg.hybrid_weights if "vector" in evidence else cfg.text_weights
    return logit(probability(evidence, cfg)) + weights[1] * evidence.get("stopwords", 0.0)


def moment(ts: str) -> float | None:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def recency(ts: str, half_life_days: float, now: float | None = None) -> float:
    at = moment(ts)
    if at is None:
        return 0.0
    age_days = max(0.0, ((now or time.time()) - at) / 86400)
    return 0.5 ** (age_days / half_life_days) if half_life_days > 0 else 0.0


def logit(p: float) -> float:
    p = min(max(p, 1e-12), 1 - 1e-12)
    return math.log(p / (1 - p))


def rank_key(
    own: float, support: float, fresh: float, prior: float, closeness: float | None, cfg: RetrievalConfig
) -> float:
    """The order of results: a result's own evidence (``own``, log-odds: ``evidence``), plus the support
    its session and exchange add to P (``support``, log-odds), plus a nudge for recency, type and a
    time named in the query.

    Support counts up to ``cfg.support_margin``, and the nudge — a weighted mean of the three in
    [0, 1] — up to ``cfg.nudge_margin``. So neither can put a result ahead of one whose own evidence is
    clearly stronger (by more than the two margins): a newer answer goes before an older one that
    matches as well, never before one that matches clearly better. P itself keeps the whole support,
    for the gate.
    """
    key = own + min(max(support, 0.0), cfg.support_margin)
    weights = cfg.w_recency + cfg.w_status + cfg.when_weight
    if weights > 0:
        near = 1.0 if closeness is None else closeness  # no time named: every event is as near as any other
        recent = fresh if closeness is None else closeness  # a time named takes recency's share ("last week")
        key += cfg.nudge_margin * (cfg.w_recency * recent + cfg.w_status * prior + cfg.when_weight * near) / weights
    return key


BACKGROUND_RANKS = (10, 30)  # the candidates whose median P is a query's background
MIN_BACKGROUND = 12  # fewer candidates than this: too few for a level (``no_evidence`` stands in)


def no_evidence(cfg: RetrievalConfig, vectors: bool) -> float:
    """The P of a memory with no evidence at all (no shared word, an unrelated vector): the model's bias."""
    return sigmoid((cfg.hybrid_weights if vectors else cfg.text_weights)[0])


def background(scores: list[float], floor: float) -> float:
    """The level of a query's on-topic non-answers: the median of its candidates ranked 11th–30th (P, or the
    order's log-odds for the label search shows).

    A query's candidates are the best 50 of each index; past the first ten they are memories that share
    its words or subject without answering it, so their level says how much evidence "on topic" earns in
    this store for this query. With fewer than ``MIN_BACKGROUND`` candidates there is no such level, and
    ``floor`` (``no_evidence``) stands in: a memory's lift is then its own evidence.
    """
    if len(scores) < MIN_BACKGROUND:
        return floor
    ranked = sorted(scores, reverse=True)[BACKGROUND_RANKS[0] : BACKGROUND_RANKS[1]]
    return max(ranked[len(ranked) // 2], floor)


def lift(score: float, level: float) -> float:
    """How far ``score`` stands above the query's background, in log-odds."""
    return logit(score) - logit(level)


def tier(score: float, rise: float, cfg: RetrievalConfig) -> str:
    """'high' (injected in full), 'suggested' (an index line) or 'none', from P and its lift.

    High needs both a clear lift and a P worth stating in full; suggested needs only the lift, so a
    paraphrase whose words the memory does not share can still be offered as a line to open.
    """
    if rise >= cfg.high_lift and score >= cfg.high_min_score:
        return "high"
    if rise >= cfg.suggest_lift:
        return "suggested"
    return "none"


def idf(doc_count: int, df: int) -> float:
    return math.log((doc_count - df + 0.5) / (df + 0.5) + 1.0)
