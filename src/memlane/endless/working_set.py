"""The working set: what is active — files, decisions, open tasks, errors and the last prompts — in the last
``endless.window_hours`` of the project's activity, ranked and small (spec §3.2).

The window slides with the work, not the wall clock: it ends at the project's latest activity, so a project
left over a weekend starts Monday with Friday's working set, and the set never depends on when it was computed
(``memlane rebuild`` gives the same one). An event enters when it is projected and leaves once the project's
activity has moved on by more than the window. At most ``MAX_MARKS`` of the newest marks are read, so a burst
of thousands of events in one hour costs what a few hundred do.

Each item is ranked by

    score = weight(kind, status) · 0.5 ^ (age / (window / 2)) · (1 + 0.3 · ln touches) · (1 + 0.25 · (sessions − 1))

(age: hours before the latest activity; touches: events that touched it; sessions: how many of the window's
sessions did), then kept within a per-kind cap and ``endless.max_items`` in all. The daemon's ``EndlessJob``
computes it in the background (``refresh``); SessionStart only reads the table (``Store.working_set``).
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from memlane.config import Config
from memlane.store.db import Store

MAX_MARKS = 4000
KINDS = ("file", "command", "decision", "task", "prompt")
# (kind, status) → weight: what most needs carrying over ranks first.
WEIGHTS = {
    ("command", "failing"): 1.3,
    ("task", "in_progress"): 1.2,
    ("task", "blocked"): 1.1,
    ("task", "pending"): 1.0,
    ("file", "changed"): 1.0,
    ("decision", ""): 0.9,
    ("prompt", ""): 0.7,
    ("file", "read"): 0.5,
    ("file", "named"): 0.3,
    ("command", "fixed"): 0.4,
}
CAPS = {"file": 6, "decision": 4, "task": 5, "command": 3, "prompt": 3}
OPEN_TASK = ("pending", "in_progress", "blocked")


def _dt(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def compute(store: Store, cfg: Config) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(items best first, the window: anchor, since, hours)."""
    anchor_ts = store.latest_mark_ts()
    hours = cfg.endless.window_hours
    if not anchor_ts:
        return [], {"anchor": "", "since": "", "hours": hours}
    anchor = _dt(anchor_ts)
    since = _iso(anchor - timedelta(hours=hours))
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for mark in store.recent_marks(since, KINDS, MAX_MARKS):  # newest first
        groups.setdefault((mark["kind"], mark["key"]), []).append(mark)
    items = []
    for (kind, key), found in groups.items():
        item = _item(store, kind, key, found)
        if item is None:
            continue
        age_h = max(0.0, (anchor - _dt(item["last_ts"])).total_seconds() / 3600)
        recency = 0.5 ** (age_h / max(hours / 2, 1e-6))
        weight = WEIGHTS.get((kind, item["status"]), 0.5)
        item["score"] = round(
            weight * recency * (1 + 0.3 * math.log(item["touches"])) * (1 + 0.25 * (item["sessions"] - 1)), 4
        )
        items.append(item)
    _drop_replaced(store, items)
    items.sort(key=lambda i: (i["score"], i["last_ts"], i["kind"], i["key"]), reverse=True)
    kept: list[dict[str, Any]] = []
    taken: dict[str, int] = {}
    tasks: set[str] = set()
    for item in items:
        if len(kept) >= cfg.endless.max_items:
            break
        task = item["detail"].get("task") if item["kind"] == "task" else None
        if task in tasks:
            continue  # another title of a task already in the set (the knowledge model's matcher tied them)
        if task:
            tasks.add(task)
        if taken.get(item["kind"], 0) >= CAPS.get(item["kind"], 3):
            continue
        taken[item["kind"]] = taken.get(item["kind"], 0) + 1
        kept.append(item)
    return kept, {"anchor": anchor_ts, "since": since, "hours": hours}


def _item(store: Store, kind: str, key: str, found: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One working-set item from its marks (newest first); None when it does not belong in the set."""
    latest = found[0]
    events = {m["event_id"] for m in found}
    item: dict[str, Any] = {
        "kind": kind,
        "key": key,
        "title": key,
        "event_id": latest["event_id"],
        "first_ts": min(m["ts"] for m in found),
        "last_ts": latest["ts"],
        "touches": len(events),
        "sessions": len({m["session_id"] for m in found}),
        "status": "",
        "detail": {},
    }
    if kind == "file":
        changed = [m for m in found if m["role"] in ("change", "write", "delete")]
        item["status"] = "changed" if changed else ("read" if any(m["role"] == "read" for m in found) else "named")
        if changed:
            item["event_id"] = changed[0]["event_id"]
            item["detail"] = {"fact": changed[0]["fact"], "changes": len({m["event_id"] for m in changed})}
        answer = next((m for m in found if m["role"] == "answer"), None)
        if answer is not None:
            item["detail"]["answer"] = answer["fact"]
    elif kind == "command":
        runs = [m for m in found if m["role"] in ("ok", "fail")]
        failures = [m for m in runs if m["role"] == "fail"]
        if not failures:
            return None
        item["status"] = "failing" if runs[0]["role"] == "fail" else "fixed"
        item["event_id"] = failures[0]["event_id"]
        item["last_ts"] = failures[0]["ts"] if item["status"] == "failing" else runs[0]["ts"]
        item["detail"] = {"fact": failures[0]["fact"], "failures": len(failures)}
        if item["status"] == "fixed":
            item["detail"]["fixed_by"] = runs[0]["event_id"]
        answer = next((m for m in found if m["role"] == "answer"), None)
        if answer is not None:
            item["detail"]["answer"] = answer["fact"]
    elif kind == "decision":
        said = [m for m in found if m["role"] == "decision"]
        if not said:
            return None
        item["event_id"], item["title"] = said[0]["event_id"], said[0]["fact"]
    elif kind == "task":
        entity = store.entity_by_key("task", key)  # the knowledge model says what is a task, and its status
        status = (entity or {}).get("state", {}).get("status")
        if entity is None or status not in OPEN_TASK:
            return None
        item["status"] = str(status)
        item["title"] = entity["title"]
        item["detail"] = {"task": entity["id"]}
    elif kind == "prompt":
        item["title"] = latest["fact"]
    return item


def _drop_replaced(store: Store, items: list[dict[str, Any]]) -> None:
    """A decision another one replaced (the knowledge model's resolutions) is not current: it leaves the set."""
    decided = [i["event_id"] for i in items if i["kind"] == "decision"]
    if not decided:
        return
    gone = store.replacements(decided)
    items[:] = [i for i in items if not (i["kind"] == "decision" and i["event_id"] in gone)]


def refresh(store: Store, cfg: Config) -> dict[str, Any]:
    """Compute the working set and store it (one transaction); the window it covers."""
    with store.write():
        offset = store.projection_offset("endless")
        items, window = compute(store, cfg)
        store.replace_working_set(items)
        store.set_endless_state(
            {
                "ws_seq": offset[0] if offset else 0,
                "ws_anchor": window["anchor"],
                "ws_since": window["since"],
                "ws_hours": window["hours"],
                "ws_max_items": cfg.endless.max_items,
                "ws_at": round(time.time(), 3),
            }
        )
    return window


def stale(store: Store, cfg: Config) -> bool:
    """Whether the stored working set predates the projected marks (or the window settings changed)."""
    state = store.endless_state()
    offset = store.projection_offset("endless")
    seq = offset[0] if offset else 0
    return (
        state.get("ws_seq") != str(seq)
        or state.get("ws_hours") != str(cfg.endless.window_hours)
        or state.get("ws_max_items") != str(cfg.endless.max_items)
    )
