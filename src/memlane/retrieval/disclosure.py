"""Progressive disclosure: index → timeline → full detail, so tokens go only where they matter.

Layer 1 (index): citation, one-line summary, score, confidence, time — a few dozen tokens a result.
Layer 2 (timeline): the neighbouring events of the same session around a result.
Layer 3 (full): the whole event with its metadata.
``smart`` returns the index and expands to full detail only the results the matcher calls "high",
stopping before the token budget (≈ 4 characters a token) would be exceeded.
"""

from __future__ import annotations

from typing import Any

from memlane.retrieval.hybrid import Hit
from memlane.retrieval.scoring import sigmoid
from memlane.store.db import Event, Store

CHARS_PER_TOKEN = 4


def one_line(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def index_row(hit: Hit) -> dict[str, Any]:
    """One result: ``score`` is P (the chance it bears on the query, what injection reads); ``rank`` is what
    the list is sorted by (its own evidence plus bounded support and nudges, docs/retrieval.md "Order") on
    the same 0-1 scale, so a list read top to bottom has falling ranks."""
    e = hit.event
    rank = hit.sources.get("rank")
    return {
        "id": e.id,
        "citation": e.cite,
        "type": e.type,
        "ts": e.ts,
        "session_id": e.session_id,
        "rank": round(sigmoid(rank), 3) if rank is not None else round(hit.score, 3),
        "score": round(hit.score, 3),
        "confidence": hit.confidence,
        "summary": one_line(e.content),
    }


def _replacement_ranks(hits: list[Hit], rows: list[dict[str, Any]]) -> None:
    """An answer that replaced a superseded memory takes that memory's place in the list, and so its rank."""
    stale = {round(h.score, 6): r["rank"] for h, r in zip(hits, rows, strict=False) if h.confidence == "superseded"}
    for i, (hit, row) in enumerate(zip(hits, rows, strict=False)):
        replaced = hit.sources.get("replaces")
        if replaced is None:
            continue
        taken = stale.get(round(replaced, 6), rows[i - 1]["rank"] if i else row["rank"])
        row["rank"] = max(row["rank"], taken)


def brief(event: Event) -> dict[str, Any]:
    return {"citation": event.cite, "type": event.type, "ts": event.ts, "summary": one_line(event.content, 200)}


def timeline(store: Store, event: Event, window: int = 3) -> list[dict[str, Any]]:
    return [{**brief(e), "current": e.id == event.id} for e in store.neighbours(event, window, window)]


def full(event: Event) -> dict[str, Any]:
    return event.as_dict()


def tokens(obj: Any) -> int:
    return len(str(obj)) // CHARS_PER_TOKEN + 1


def disclose(store: Store, hits: list[Hit], layer: str, budget_tokens: int = 2000) -> list[dict[str, Any]]:
    """Results at one layer (index | timeline | full | smart), within ``budget_tokens``."""
    out: list[dict[str, Any]] = []
    used = 0
    for hit in hits:
        row = index_row(hit)
        if layer == "timeline":
            row["timeline"] = timeline(store, hit.event)
        elif layer == "full" or (layer == "smart" and hit.confidence == "high"):
            detail = full(hit.event)
            if layer == "full" or used + tokens(detail) <= budget_tokens:
                row["detail"] = detail
        cost = tokens(row)
        if out and used + cost > budget_tokens:
            row.pop("detail", None)
            row.pop("timeline", None)
            cost = tokens(row)
            if used + cost > budget_tokens:
                break
        out.append(row)
        used += cost
    _replacement_ranks(hits, out)
    return out
