"""What a prompt gets from the ranked hits: the gate, the adaptive count, and stale memories left out.

Shared by every path that injects (the daemon, the hooks' full-text fallback, the benchmarks), so
they cannot disagree. Stdlib only: the hooks import it.
"""

from __future__ import annotations

from typing import Any

from memlane.logs import log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memlane.config import Config
    from memlane.retrieval.hybrid import Hit


def select_for_injection(hits: list[Hit], index: Any, cfg: Config) -> list[Hit]:
    """What a prompt gets: the gated hits, without memories a newer one on the same subject replaces."""
    chosen = gate(hits, cfg.retrieval, cfg.injection.max_results)
    return supersede(chosen, index, cfg.retrieval.supersede_similarity)


def gate(hits: list[Hit], rcfg: Any, max_results: int) -> list[Hit]:
    """The hits worth injecting: labelled, over the threshold, and close to the best one.

    The count follows confidence: one strong memory is injected alone rather than padded with weak
    ones (a further hit needs ``inject_relative`` of the best score).
    """
    passed = [h for h in hits if h.confidence != "none" and h.score >= rcfg.inject_threshold]
    if not passed:
        return []
    best = max(h.score for h in passed)
    # Not one per session: tried, and a session's best-ranked event is often its summary or prompt
    # rather than the answer itself (coding replay dev: 0.61 → 0.47 of answers injected).
    return [h for h in passed if h.score >= rcfg.inject_relative * best][:max_results]


def supersede(hits: list[Hit], index: Any, similarity: float) -> list[Hit]:
    """Drop an injected memory that a newer one on the same subject replaces.

    A changed setting, a replaced library or a reverted fix leaves two memories that say different
    things about one subject; the older one is stale. Two hits from different sessions whose opening
    vectors are this similar are taken as one subject, and only the newer is kept.
    """
    if len(hits) < 2 or index is None or similarity <= 0:
        return hits
    try:
        vectors = index.first_vectors([h.event.id for h in hits])
    except Exception as exc:  # noqa: BLE001 - a vector read failing must not stop the injection
        log("retrieval", "warning", f"supersession check skipped: {exc!r}")
        return hits
    stale: set[str] = set()
    for i, a in enumerate(hits):
        for b in hits[i + 1 :]:
            va, vb = vectors.get(a.event.id), vectors.get(b.event.id)
            if va is None or vb is None or a.event.session_id == b.event.session_id:
                continue
            if float(va @ vb) >= similarity:
                older = a if a.event.ts < b.event.ts else b
                stale.add(older.event.id)
    return [h for h in hits if h.event.id not in stale]
