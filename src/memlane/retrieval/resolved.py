"""Supersession from the knowledge model's resolutions (``Store.replacements``), for search and injection.

The knowledge projector records, from structure, which memory a later one replaced (a later edit of the same
file region, a revert, a decision that removed what an exchange introduced, an edit that took out what a memory
quotes: ``knowledge/resolutions.py``). Two uses here, beside ``select.py``'s own rule (which reads edits among
the hits at query time and stays as it is):

- ``current_first`` (search order): a wholly replaced memory never ranks above what replaced it. The
  replacement takes the place of the first memory it replaced (read from the store if the search did not
  return it, when it passes the search's filters); the replaced ones go below every current one, labelled
  superseded. Partly replaced memories keep their place (``disclosure`` names what replaced part of them).
- ``drop_replaced`` (injection, called at the end of ``select.drop_replaced``): a wholly replaced memory is left
  out with the prompt that asked for it, and what replaced it takes its place with the best score of what it
  replaced — the replacement if the search returned it, else the answer of the exchange that made it.

Without resolutions (a store the daemon has not projected yet) both return the hits unchanged. Stdlib only: the
hooks' full-text fallback imports ``select``. One indexed read per call (``Store.replacements``: ~0.1 ms for 30
ids).
"""

from __future__ import annotations

from collections.abc import Callable

from memlane.logs import log

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs a hook ~1 ms to import: annotations only
    from typing import Any

    from memlane.retrieval.hybrid import Hit


def _replacements(hits: list[Hit], store: Any) -> dict[str, str]:
    if store is None or not hits or not hasattr(store, "replacements"):
        return {}
    try:
        return dict(store.replacements([h.event.id for h in hits]))
    except Exception as exc:  # noqa: BLE001 - a failed read (an old store, a locked one) must not stop a search
        log("retrieval", "warning", f"resolutions not read: {exc!r}")
        return {}


def current_first(
    hits: list[Hit], store: Any, allowed: Callable[[Any], bool] | None = None, exclude: set[str] | None = None
) -> list[Hit]:
    """Search order with resolutions applied (see the module note); ``allowed`` is the search's filter for a
    replacement read from the store, ``exclude`` ids that must not be brought in."""
    replaced = _replacements(hits, store)
    if not replaced:
        return hits
    place = {h.event.id: i for i, h in enumerate(hits)}
    first: dict[str, tuple[int, Hit]] = {}  # replacement id → (place of the first hit it replaced, that hit)
    for h in hits:
        new = replaced.get(h.event.id)
        if new is not None and new not in first:
            first[new] = (place[h.event.id], h)
    missing = [new for new in first if new not in place and new not in (exclude or set())]
    found = {e.id: e for e in store.by_ids(missing)} if missing else {}
    current = [h for h in hits if h.event.id not in replaced]
    brought = []
    for new, (at, old) in first.items():
        if new in found and (allowed is None or allowed(found[new])):
            brought.append(
                (at - 0.5, type(old)(found[new], old.score, {**old.sources, "replaces": old.score}, old.confidence))
            )
    rank = {h.event.id: float(place[h.event.id]) for h in current}
    for h in current:
        if h.event.id in first:  # a replacement the search returned moves up to what it replaced
            rank[h.event.id] = min(rank[h.event.id], first[h.event.id][0] - 0.5)
    ordered = sorted([(rank[h.event.id], h) for h in current] + brought, key=lambda x: x[0])
    stale = [h for h in hits if h.event.id in replaced]
    for h in stale:
        h.sources["superseded"] = 1.0
    return [h for _, h in ordered] + stale


def drop_replaced(hits: list[Hit], store: Any) -> list[Hit]:
    """Injection: wholly replaced memories left out, and what replaced them put in their place with the best
    score of what it replaced: the replacement if the search returned it, else the answer of the exchange that
    made it, read from the store (it answers the question as it stands now, usually in other words, so the
    search rarely finds it). Order: best score first."""
    replaced = _replacements(hits, store)
    if not replaced:
        return hits
    present = {h.event.id: h for h in hits}
    best: dict[str, Hit] = {}  # what stands for a replacement → the best hit it replaced
    shown: dict[str, Any] = {}  # ... and its event, when the search did not return it
    for h in hits:
        new = replaced.get(h.event.id)
        if new is None:
            continue
        if new not in present:
            answer = _answer_of(store, new)
            if answer is None or answer.id in replaced:
                continue
            new = answer.id
            if new not in present:
                shown[new] = answer
        if new not in best or h.score > best[new].score:
            best[new] = h
    # The prompt that asked for a replaced answer goes with it, as in ``select.retirements``: on its own it would
    # bring the old exchange back (and take the place of what answers it now).
    asked = _prompts_of(store, [h.event for h in hits if h.event.id in replaced])
    out = []
    for h in hits:
        if h.event.id in replaced or (h.event.id in asked and h.event.id not in best):
            continue
        top = best.get(h.event.id)
        if top is not None and top.score > h.score:
            h = type(h)(h.event, top.score, {**h.sources, "replaces": top.score}, top.confidence)
        out.append(h)
    for new, event in shown.items():
        old = best[new]
        out.append(type(old)(event, old.score, {**old.sources, "replaces": old.score}, old.confidence))
    out.sort(key=lambda h: -h.score)
    return out


def _prompts_of(store: Any, events: list[Any]) -> set[str]:
    try:
        return {p.id for p in store.exchange_prompts([e for e in events if e.type != "user_prompt"]).values()}
    except Exception as exc:  # noqa: BLE001 - a failed read must not stop the injection
        log("retrieval", "warning", f"exchange lookup skipped: {exc!r}")
        return set()


def _answer_of(store: Any, event_id: str) -> Any:
    """What to show for a replacement: the first answer of its exchange after it (the agent's words on the
    change), else the exchange's session summary, else the event itself."""
    try:
        found = store.by_ids([event_id])
        if not found:
            return None
        event = found[0]
        members = store.exchange_members(store.exchange_of(event))
        after = [m for m in members if m[1] >= event.seq]
        pick = next((m[0] for m in after if m[2] == "agent_response"), None)
        pick = pick or next((m[0] for m in reversed(after) if m[2] == "session_summary"), None)
        return store.by_ids([pick])[0] if pick else event
    except Exception as exc:  # noqa: BLE001 - a failed read must not stop the injection
        log("retrieval", "warning", f"replacement not read: {exc!r}")
        return None


def superseded_info(store: Any, event_ids: list[str]) -> dict[str, dict[str, Any]]:
    """For display: each replaced id → {"by": citation of what replaces it now, "partial": bool}."""
    if store is None or not event_ids or not hasattr(store, "replacements"):
        return {}
    try:
        whole = store.replacements(event_ids)
        some = store.replacements([i for i in event_ids if i not in whole], partial=True)
        events = {e.id: e for e in store.by_ids(list(set(whole.values()) | set(some.values())))}
    except Exception as exc:  # noqa: BLE001 - display only
        log("retrieval", "warning", f"resolutions not read: {exc!r}")
        return {}
    out: dict[str, dict[str, Any]] = {}
    for old, new in [*whole.items(), *some.items()]:
        if new in events:
            out[old] = {"by": events[new].cite, "partial": old not in whole, "ts": events[new].ts}
    return out
