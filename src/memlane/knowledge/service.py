"""What ``Memory`` offers of the knowledge model: tasks changed by hand, a memory's supersession, lineage.

A task changed by hand is an event like any other (``task_update``, in no agent session), so the change is part of
the log and ``memlane rebuild`` replays it. The change is checked against the task's current state before it is
stored: what the state machine refuses is never written (``tasks.TaskError``, one line). The caller brings the
projection up to date before and after (``Memory`` does: ``derived.catch_up``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlane import privacy
from memlane.config import Config
from memlane.errors import InputError
from memlane.knowledge import tasks
from memlane.knowledge.text import entity_key
from memlane.store.db import NewEvent, Store
from memlane.store.keys import now_iso
from memlane.store.records import TASKS_SESSION

MAX_TEXT = 500


def _clean(text: str, cfg: Config, what: str) -> str:
    """User text for a task: one line, private parts and secrets filtered like any captured text."""
    text = " ".join(str(text).split())
    if not text:
        raise InputError(f"empty {what}")
    if len(text) > MAX_TEXT:
        raise InputError(f"{what} is longer than {MAX_TEXT} characters")
    return privacy.filter_text(text, cfg.privacy).text


def _describe(title: str, payload: dict[str, Any], before: str | None) -> str:
    parts = [f"Task '{title}'"]
    status = payload.get("status")
    if payload["op"] == "add":
        parts.append(f"added ({status or 'pending'})")
    elif status and status != before:
        parts.append(f"{before} → {status}")
    if payload.get("priority"):
        parts.append(f"priority {payload['priority']}")
    if payload.get("blockers"):
        parts.append("blocked by " + "; ".join(payload["blockers"]))
    text = ", ".join(parts)
    if payload.get("note"):
        text += f". Note: {payload['note']}"
    return text


def _append(store: Store, title: str, payload: dict[str, Any], before: str | None) -> str:
    event = NewEvent(
        "task_update",
        TASKS_SESSION,
        _describe(title, payload, before),
        turn=now_iso() + ":" + str(payload.get("task") or entity_key("task", title)),
        metadata={"task_update": payload},
    )
    result = store.append([event])
    return result.inserted[0] if result.inserted else ""


def add_task(
    store: Store,
    cfg: Config,
    title: str,
    *,
    status: str = "pending",
    priority: str | None = None,
    blockers: Sequence[str] = (),
    note: str | None = None,
) -> str:
    """Record a new task; the event id. A task that starts done, or blocked without a blocker, is refused."""
    title = _clean(title, cfg, "task title")
    tasks.check_status(status)
    if priority is not None:
        tasks.check_priority(priority)
    if status in ("done", "cancelled"):
        raise tasks.TaskError(f"a new task starts pending or in_progress, not {status}")
    clean_blockers = [_clean(b, cfg, "blocker") for b in blockers]
    if clean_blockers and status != "blocked":
        status = "blocked"
    if status == "blocked" and not clean_blockers:
        raise tasks.TaskError(f"task '{title}': a blocked task needs a blocker (add --blocker TEXT)")
    existing = store.entity_by_key("task", entity_key("task", title))
    if existing is not None:
        raise InputError(
            f"task '{existing['title']}' exists already ({existing['id']}); change it with `memlane tasks update`"
        )
    payload: dict[str, Any] = {"op": "add", "title": title, "status": status}
    if priority:
        payload["priority"] = priority
    if note:
        payload["note"] = _clean(note, cfg, "note")
    if clean_blockers:
        payload["blockers"] = clean_blockers
    return _append(store, title, payload, None)


def update_task(
    store: Store,
    cfg: Config,
    ref: str,
    *,
    status: str | None = None,
    priority: str | None = None,
    blockers: Sequence[str] | None = None,
    note: str | None = None,
) -> tuple[dict[str, Any], str]:
    """Change a task by hand (status, priority, blockers, note) after checking the state machine; (the task as it
    was, the new event's id). ``blockers`` replaces the task's blockers and, without ``status``, blocks it."""
    task = tasks.find_task(store, ref)
    current = task["state"].get("status", "pending")
    if status is not None:
        tasks.check_status(status)
    if priority is not None:
        tasks.check_priority(priority)
    clean_blockers = [_clean(b, cfg, "blocker") for b in blockers] if blockers is not None else None
    if clean_blockers and status is None:
        status = "blocked"
    target = status or current
    if target == "blocked":
        open_after = (
            len(clean_blockers) if clean_blockers is not None else len(tasks.TaskFold(store).open_blockers(task["id"]))
        )
    else:
        open_after = len(clean_blockers or [])
    tasks.check_transition(task["title"], current, target, open_after)
    if clean_blockers is not None and target != "blocked" and clean_blockers:
        raise tasks.TaskError(f"task '{task['title']}': blockers go with --status blocked")
    changed = (
        target != current
        or (priority is not None and priority != task["state"].get("priority"))
        or clean_blockers is not None
        or note is not None
    )
    if not changed:
        raise InputError(f"task '{task['title']}' is already {current}: nothing to change")
    payload: dict[str, Any] = {"op": "update", "task": task["id"]}
    if target != current:
        payload["status"] = target
    if priority is not None:
        payload["priority"] = priority
    if clean_blockers is not None:
        payload["blockers"] = clean_blockers
    if note is not None:
        payload["note"] = _clean(note, cfg, "note")
    return task, _append(store, task["title"], payload, current)


def supersession(store: Store, event_id: str) -> dict[str, Any]:
    """What replaced a memory (wholly or partly, and why), what replaces it now, and what it replaced."""
    rows = store.resolutions_of(event_id)
    events = {e.id: e for e in store.by_ids(list({r["new_id"] for r in rows} | set(store.resolutions_made(event_id))))}
    current = store.replacements([event_id]).get(event_id)
    if current is not None and current not in events:
        events.update({e.id: e for e in store.by_ids([current])})
    by = []
    for r in rows:
        new = events.get(r["new_id"])
        if new is None:
            continue
        by.append(
            {
                "citation": new.cite,
                "type": new.type,
                "ts": new.ts,
                "rule": r["rule"],
                "partial": bool(r["partial"]),
                "direct": bool(r["direct"]),
                "summary": " ".join(new.content.split())[:160],
                **{k: v for k, v in r["detail"].items() if k != "terms"},
            }
        )
    replaced = [events[i] for i in store.resolutions_made(event_id) if i in events]
    return {
        "superseded": any(not b["partial"] for b in by),
        "partly_superseded": bool(by) and all(b["partial"] for b in by),
        "current": events[current].cite if current in events else None,
        "superseded_by": by,
        "replaces": [{"citation": e.cite, "type": e.type, "ts": e.ts} for e in sorted(replaced, key=lambda e: e.ts)],
        "entries": [
            {
                "id": e["id"],
                "type": e["entry_type"],
                "title": e["title"],
                "stage": e["stage"],
                "status": e["status"],
                "evidence_aligned": bool(e["evidence_aligned"]),
            }
            for e in store.entries_of_event(event_id)
        ],
    }


def set_stage(store: Store, entry_id: str, stage: str) -> dict[str, Any]:
    """Move an entry to a stage (the learning loop's graduation uses this); an entry whose evidence is not aligned
    with its source is never made verified or certified (``aligner.UnalignedEvidence``)."""
    from memlane.errors import NotFoundError
    from memlane.knowledge.aligner import check_stage

    entry = store.entry(entry_id)
    if entry is None:
        raise NotFoundError(f"no entry '{entry_id}'")
    check_stage(stage, bool(entry["evidence_aligned"]))
    with store.write():
        store.set_entry_stage(entry_id, stage)
    return {**entry, "stage": stage}
