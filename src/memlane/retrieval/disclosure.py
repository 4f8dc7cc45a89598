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
from memlane.store.db import Event, Store

CHARS_PER_TOKEN = 4


def one_line(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def index_row(hit: Hit) -> dict[str, Any]:
    e = hit.event
    return {
        "id": e.id,
        "citation": e.cite,
        "type": e.type,
        "ts": e.ts,
        "session_id": e.session_id,
        "score": round(hit.score, 3),
        "confidence": hit.confidence,
        "summary": one_line(e.content),
    }


def brief(event: Event) -> dict[str, Any]:
    return {"citation": event.cite, "type": event.type, "ts": event.ts, "summary": one_line(event.content, 200)}


def timeline(store: Store, event: Event, window: int = 3) -> list[dict[str, Any]]:
    return [{**brief(e), "current": e.id == event.id} for e in store.neighbours(event, window, window)]


def full(event: Event) -> dict[str, Any]:
    return event.as_dict()


def tokens(obj: Any) -> int:
    return len(str(obj)) // CHARS_PER_TOKEN + 1


def mark_superseded(store: Store | None, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Name what replaced each replaced result (the knowledge model's resolutions): ``superseded_by`` (its
    citation), ``partly`` when only part of it was replaced, and the summary says so first."""
    from memlane.retrieval.resolved import superseded_info

    info = superseded_info(store, [r["id"] for r in rows])
    for row in rows:
        found = info.get(row["id"])
        if found is not None:
            row["superseded_by"] = found["by"]
            row["partly"] = found["partial"]
            row["summary"] = f"({'partly ' if found['partial'] else ''}superseded by {found['by']}) {row['summary']}"
    return rows


def disclose(store: Store, hits: list[Hit], layer: str, budget_tokens: int = 2000) -> list[dict[str, Any]]:
    """Results at one layer (index | timeline | full | smart), within ``budget_tokens``."""
    out: list[dict[str, Any]] = []
    used = 0
    marked = mark_superseded(store, [index_row(h) for h in hits])
    for hit, row in zip(hits, marked, strict=True):
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
    return out
