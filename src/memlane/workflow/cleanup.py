"""Retention for workflow session records: ``max_session_age_days`` and ``max_sessions_per_project``.

Only files in ``sessions/`` are ever removed, never progress.json, memory.md or meta.json, and never
the record of a session that is still active. Age is taken from the file's last write. 0 disables a
limit. Stdlib only (runs at SessionEnd).
"""

from __future__ import annotations

import os
import time

from memlane.logs import log
from memlane.workflow import sessions, store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memlane.config import WorkflowConfig


def plan(memory_id: str, cfg: WorkflowConfig, now: float | None = None) -> list[dict[str, Any]]:
    """The records cleanup would remove, each with the reason."""
    now = time.time() if now is None else now
    try:
        active = {str(a.get("file")) for a in store.load_meta(memory_id)["activeSessions"].values()}
    except store.WorkflowError:
        active = set()
    files = [f for f in sessions.list_files(memory_id) if f["name"] not in active]  # newest first
    doomed: list[dict[str, Any]] = []
    keep: list[dict[str, Any]] = []
    max_age = cfg.max_session_age_days * 86400
    for info in files:
        age_days = (now - info["mtime"]) / 86400
        if cfg.max_session_age_days and now - info["mtime"] > max_age:
            doomed.append({**info, "reason": f"older than {cfg.max_session_age_days} days ({age_days:.0f})"})
        else:
            keep.append(info)
    limit = cfg.max_sessions_per_project
    if limit:
        room = max(0, limit - len(active))
        for info in keep[room:]:
            doomed.append({**info, "reason": f"beyond the newest {limit} session record(s)"})
    return doomed


def run(memory_id: str, cfg: WorkflowConfig, dry_run: bool = False) -> list[dict[str, Any]]:
    """Remove what ``plan`` lists (unless ``dry_run``); returns the records removed."""
    doomed = plan(memory_id, cfg)
    if dry_run or not doomed:
        return doomed
    removed = []
    with store.Lock(memory_id):
        for info in doomed:
            try:
                os.remove(info["path"])
                removed.append(info)
            except FileNotFoundError:
                continue
    log("workflow", "info", f"cleanup {memory_id}: removed {len(removed)} session record(s)")
    return removed
