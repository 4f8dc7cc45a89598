"""One calibrated score per result, on a scale where the matcher's thresholds are reachable.

Evidence comes from two places, each mapped to [0, 1]:

- text ``t``: IDF-weighted share of the query's words found in the event, scaled by its BM25 rank
  relative to the best hit — exact identifiers (file names, error codes) are rare words, so they
  carry most of the weight;
- vector ``v``: cosine similarity mapped linearly from ``vector_floor`` (unrelated) to
  ``vector_ceiling`` (a paraphrase), clamped.

They are combined as a weighted noisy-OR, ``1 - (1-t)^a (1-v)^b``, so either strong signal alone
can carry a result and two moderate ones reinforce each other (the original design summed weighted
parts, which capped a perfect match at 0.75 and made "high" unreachable). Recency and a small prior by
event type take the remaining ``w_recency + w_status`` of the scale. A perfect, fresh answer scores
1.0; "high" (≥ 0.92 with a 0.03 lead) needs strong evidence; "suggested" starts at 0.75.
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


def vector_score(similarity: float, cfg: RetrievalConfig) -> float:
    span = max(cfg.vector_ceiling - cfg.vector_floor, 1e-6)
    return clamp((similarity - cfg.vector_floor) / span)


def text_score(coverage: float, relative_bm25: float, matched_tokens: int) -> float:
    """Lexical evidence. One shared word is weak evidence however rare; each further one adds."""
    support = 0.5 + 0.5 * (1 - 0.5**matched_tokens)
    return clamp(coverage * (0.6 + 0.4 * clamp(relative_bm25)) * support)


def recency(ts: str, half_life_days: float, now: float | None = None) -> float:
    try:
        moment = datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
    age_days = max(0.0, ((now or time.time()) - moment) / 86400)
    return 0.5 ** (age_days / half_life_days) if half_life_days > 0 else 0.0


def fuse(text: float, vector: float, fresh: float, prior: float, cfg: RetrievalConfig) -> float:
    evidence_weight = cfg.w_bm25 + cfg.w_vector
    if evidence_weight <= 0:
        evidence = 0.0
    else:
        a = 2 * cfg.w_bm25 / evidence_weight
        b = 2 * cfg.w_vector / evidence_weight
        evidence = 1 - (1 - text) ** a * (1 - vector) ** b
    rest = cfg.w_recency + cfg.w_status
    total = evidence_weight + rest
    # Evidence gets its share of the scale; recency and prior fill the rest.
    share = evidence_weight / total if total else 1.0
    extra = (cfg.w_recency * fresh + cfg.w_status * prior) / total if total else 0.0
    return clamp(share * evidence + extra)


def classify(scores: list[float], cfg: RetrievalConfig, groups: list[str] | None = None) -> list[str]:
    """Per result (best first): 'high', 'suggested' or 'none'. High needs a lead over the runner-up.

    With ``groups`` (each result's session), the runner-up is the next result from another group:
    a question and its answer both matching is support for the top result, not competition.
    """
    groups = groups or [str(i) for i in range(len(scores))]
    rivals = [s for s, g in zip(scores[1:], groups[1:], strict=True) if g != groups[0]]
    runner_up = rivals[0] if rivals else 0.0
    labels = []
    for i, score in enumerate(scores):
        if i == 0 and score >= cfg.high_threshold and score - runner_up >= cfg.high_gap:
            labels.append("high")
        elif score >= cfg.suggest_threshold:
            labels.append("suggested")
        else:
            labels.append("none")
    return labels


def idf(doc_count: int, df: int) -> float:
    return math.log((doc_count - df + 0.5) / (df + 0.5) + 1.0)
