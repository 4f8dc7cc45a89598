"""Progressive disclosure: index → timeline → full detail, so tokens go only where they matter
(reference specs/progressive-disclosure).

Layer 1 (index): citation, one-line summary, score, confidence, time — a few dozen tokens a result.
Layer 2 (timeline): the neighbouring events of the same session around a result.
Layer 3 (full): the whole event with its metadata.

``smart`` expands by the spec's rules (§5.1), read from the injection tiers (``scoring.tier``: "high"
would be injected in full, "suggested" offered as an index line):

- **high_confidence** — a single result, and it is "high": its full detail;
- **clear_winner** — the top result is "high" and no result of another session is: its full detail;
- **ambiguous_results** — no winner, but three or more results are "high" or "suggested": the timelines of
  the top three (what happened around each tells them apart), no details;
- **low_confidence** — otherwise nothing is expanded.

Every layer honours the token budget (§5.2, ≈ 4 characters a token): index rows first, best first, as many
as fit; then the expansions in rank order while they fit, a detail that does not fit whole cut to the room
left (with a marker) when that room is worth it. ``DisclosureCache`` is the per-layer result cache of §7.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from functools import partial
from typing import Any, ClassVar

from memlane.retrieval.hybrid import Hit
from memlane.retrieval.scoring import sigmoid
from memlane.store.db import Event

CHARS_PER_TOKEN = 4
LAYERS = ("index", "timeline", "full", "smart")
MIN_DETAIL_TOKENS = 60  # below this much room left, a detail is not cut down to a stub: it is left out
TIMELINE_WINDOW = 3
SMART_TIMELINES = 3

Neighbours = Callable[[Event, int, int], list[Event]]


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
        "confidence": hit.shown or hit.confidence,
        "tier": hit.confidence,  # what a prompt would do with it: high = in full, suggested = an index line
        "summary": one_line(e.content),
    }


def _replacement_ranks(hits: Sequence[Hit], rows: list[dict[str, Any]]) -> None:
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


def timeline(neighbours: Neighbours, event: Event, window: int = TIMELINE_WINDOW) -> list[dict[str, Any]]:
    return [{**brief(e), "current": e.id == event.id} for e in neighbours(event, window, window)]


def full(event: Event) -> dict[str, Any]:
    return event.as_dict()


def tokens(obj: Any) -> int:
    return len(str(obj)) // CHARS_PER_TOKEN + 1


def mark_superseded(store: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
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


# ---- smart expansion (§5.1) ------------------------------------------------------------------------


class Expansion:
    """What ``smart`` expands and why (the spec's ExpansionDecision)."""

    __slots__ = ("details", "reason", "timelines")

    def __init__(self, reason: str, details: Sequence[str] = (), timelines: Sequence[str] = ()) -> None:
        self.reason = reason
        self.details = list(details)
        self.timelines = list(timelines)

    def __repr__(self) -> str:
        return f"Expansion({self.reason!r}, details={self.details}, timelines={self.timelines})"


def plan(hits: Sequence[Hit], rcfg: Any) -> Expansion:
    """The expansion ``smart`` makes for ranked ``hits`` (see the module docstring)."""
    if not hits:
        return Expansion("no_results")
    top = hits[0]
    if len(hits) == 1 and top.confidence == "high":
        return Expansion("high_confidence", details=[top.event.id])
    rivals = [h for h in hits[1:] if h.event.session_id != top.event.session_id and h.confidence == "high"]
    if top.confidence == "high" and not rivals:
        return Expansion("clear_winner", details=[top.event.id])
    shown = [h for h in hits if h.confidence in ("high", "suggested")]
    if len(shown) >= SMART_TIMELINES:
        return Expansion("ambiguous_results", timelines=[h.event.id for h in shown[:SMART_TIMELINES]])
    return Expansion("low_confidence")


# ---- within the budget (§5.2) ----------------------------------------------------------------------


class Disclosure:
    """Rows (index rows, some with ``timeline`` or ``detail``) and what was done: ``meta`` holds the layer,
    the expansion reason, how many rows were expanded, the estimated tokens and the budget."""

    __slots__ = ("meta", "rows")

    def __init__(self, rows: list[dict[str, Any]], meta: dict[str, Any]) -> None:
        self.rows = rows
        self.meta = meta


def _cut_detail(detail: dict[str, Any], room_tokens: int) -> dict[str, Any] | None:
    """``detail`` with its content cut so the whole fits ``room_tokens``; None when that leaves too little."""
    if room_tokens < MIN_DETAIL_TOKENS:
        return None
    content = str(detail.get("content") or "")
    over = (tokens(detail) - room_tokens) * CHARS_PER_TOKEN
    keep = len(content) - over - 80  # the marker and rounding
    if keep < CHARS_PER_TOKEN * 20:
        return None
    cut = {**detail, "content": content[:keep] + f"\n… [{len(content) - keep} more characters: over the token budget]"}
    cut["truncated"] = True
    return cut if tokens(cut) <= room_tokens else None


def disclose(
    hits: Sequence[Hit],
    layer: str,
    budget_tokens: int = 2000,
    neighbours: Neighbours | None = None,
    rcfg: Any = None,
    cache: DisclosureCache | None = None,
    scope: Hashable = None,
    mark: Callable[[list[dict[str, Any]]], Any] | None = None,
) -> Disclosure:
    """Results at one layer (index | timeline | full | smart) within ``budget_tokens``.

    The index rows come first (every result that fits, best first); then the layer's expansions in rank
    order while they fit: ``timeline`` every row's timeline, ``full`` every row's detail, ``smart`` what
    ``plan`` chose. A detail that does not fit whole is cut to the room left (marked ``truncated``).
    ``neighbours(event, before, after)`` reads a session's events (``Memory.neighbours``: the right store
    for another project's event too); ``rcfg`` holds the thresholds ``smart`` uses; ``cache`` keeps
    timelines and details (keyed with ``scope``, e.g. the store's generation) for later calls. ``mark(rows)``
    adds what a reader says of each index row (what replaced it, its learning level) before the budget counts
    them: the rows that no longer fit go, last first.
    """
    if layer not in LAYERS:
        raise ValueError(f"unknown disclosure layer {layer!r} (one of {', '.join(LAYERS)})")
    if layer == "smart" and rcfg is None:
        raise ValueError("smart disclosure needs the retrieval settings (rcfg)")
    budget = _Budget(budget_tokens, neighbours, cache, scope)
    rows: list[dict[str, Any]] = []
    for hit in hits:  # the index first: every result that fits, best first
        row = budget.index(hit)
        if row is None:
            break
        rows.append(row)
    if mark is not None and rows:
        mark(rows)
        budget.used = sum(tokens(r) for r in rows)
        while rows and budget.used > budget.total:
            budget.used -= tokens(rows.pop())
    shown = hits[: len(rows)]
    _replacement_ranks(shown, rows)
    if layer == "smart":
        decision = plan(shown, rcfg)
    elif layer == "timeline":
        decision = Expansion("requested", timelines=[h.event.id for h in shown])
    elif layer == "full":
        decision = Expansion("requested", details=[h.event.id for h in shown])
    else:
        decision = Expansion("index_only")
    for hit, row in zip(shown, rows, strict=True):  # then the expansions, in rank order, while they fit
        eid = hit.event.id
        added = budget.expand(row, hit, timeline_=eid in decision.timelines, detail=eid in decision.details)
        if added and layer == "smart":
            row["expansion"] = decision.reason
    meta = {
        "layer": layer,
        "expansion": decision.reason,
        "expanded": budget.expanded,
        "shown": len(rows),
        "matches": len(hits),
        "estimated_tokens": budget.used,
        "budget_tokens": budget_tokens,
    }
    return Disclosure(rows, meta)


class _Budget:
    """Tokens spent so far, and the expansions that fit in what is left."""

    def __init__(
        self, total: int, neighbours: Neighbours | None, cache: DisclosureCache | None, scope: Hashable
    ) -> None:
        self.total = total
        self.used = 0
        self.expanded = 0
        self.neighbours = neighbours
        self.cache = cache
        self.scope = scope

    def index(self, hit: Hit) -> dict[str, Any] | None:
        row = index_row(hit)
        cost = tokens(row)
        if self.used + cost > self.total:
            return None
        self.used += cost
        return row

    def expand(self, row: dict[str, Any], hit: Hit, *, timeline_: bool, detail: bool) -> bool:
        """Add the timeline and/or detail to ``row`` where they fit; whether anything was added."""
        event, added = hit.event, False
        if timeline_ and self.neighbours is not None:
            made = _cached(self.cache, "timeline", (self.scope, event.id), partial(timeline, self.neighbours, event))
            cost = tokens({"timeline": made})
            if self.used + cost <= self.total:
                row["timeline"] = made
                self.used += cost
                added = True
        if detail:
            whole: dict[str, Any] = _cached(self.cache, "details", (self.scope, event.id), partial(full, event))
            shown: dict[str, Any] | None = whole
            if self.used + tokens({"detail": whole}) > self.total:
                shown = _cut_detail(whole, self.total - self.used - tokens({"detail": ""}))
            if shown is not None:
                row["detail"] = shown
                self.used += tokens({"detail": shown})
                added = True
        self.expanded += added
        return added


# ---- per-layer result cache (§7) -------------------------------------------------------------------


class LayerCache:
    """One layer's results: at most ``size`` entries, each kept ``ttl_s`` seconds; least recently used out first."""

    def __init__(self, ttl_s: float, size: int) -> None:
        self.ttl_s = ttl_s
        self.size = size
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        now = time.monotonic()
        with self._lock:
            found = self._data.get(key)
            if found is not None and found[0] > now:
                self._data.move_to_end(key)
                self.hits += 1
                return found[1]
            self.misses += 1
        value = make()
        with self._lock:
            self._data[key] = (now + self.ttl_s, value)
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._data)


class DisclosureCache:
    """The three layers' caches with the spec's lifetimes and sizes: search results 1 minute / 100 queries,
    timelines 5 minutes / 500, details 30 minutes / 200.

    Keys carry the store's generation (``Store.generation``: the last event and the last forget or redact),
    so anything stored, forgotten or redacted since is never answered from the cache; the lifetimes bound
    what a long-lived process (the MCP server, the daemon) holds.
    """

    LAYERS: ClassVar[dict[str, tuple[float, int]]] = {
        "index": (60.0, 100),
        "timeline": (300.0, 500),
        "details": (1800.0, 200),
    }

    def __init__(self) -> None:
        self.layers = {name: LayerCache(ttl, size) for name, (ttl, size) in self.LAYERS.items()}

    def get_or_make(self, layer: str, key: Hashable, make: Callable[[], Any]) -> Any:
        return self.layers[layer].get_or_make(key, make)

    def stats(self) -> dict[str, dict[str, int]]:
        return {n: {"hits": c.hits, "misses": c.misses, "entries": len(c)} for n, c in self.layers.items()}


def _cached(cache: DisclosureCache | None, layer: str, key: Hashable, make: Callable[[], Any]) -> Any:
    return make() if cache is None else cache.get_or_make(layer, key, make)
