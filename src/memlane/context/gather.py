"""Volatile facts memlane can find out by itself: git branch, files touched this session. Stdlib only.

Nothing here runs on the capture path: PostToolUse already stores each tool's ``file_path`` in the
event's metadata, and the files touched are read back from the store only when a prompt is composed.
"""

from __future__ import annotations

import os

from memlane.context.git_head import git_branch
from memlane.context.service import AppContextService, PromptContext, RefreshTrigger

__all__ = ["SCAN_OBSERVATIONS", "files_touched", "for_hook", "git_branch", "session_values"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memlane.config import Config
    from memlane.project import Project
    from memlane.store.db import Store

SCAN_OBSERVATIONS = 300  # most recent tool observations of a session looked at for file paths


def files_touched(store: Store, session_id: str, root: str, limit: int) -> list[str]:
    """Files the session's tools read or wrote, most recent first, relative to ``root`` when inside it."""
    if limit <= 0 or not session_id:
        return []
    out: list[str] = []
    prefix = root.rstrip(os.sep) + os.sep
    for path in store.session_tool_file_paths(session_id, SCAN_OBSERVATIONS):
        if not isinstance(path, str) or not path:
            continue
        shown = path[len(prefix) :] if path.startswith(prefix) else path
        if shown not in out:
            out.append(shown)
            if len(out) >= limit:
                break
    return out


def session_values(store: Store | None, session_id: str, root: str, cfg: Config) -> dict[str, Any]:
    """Session-scope volatile values: the session id and the files it touched."""
    values: dict[str, Any] = {"sessionId": session_id} if session_id else {}
    if store is not None and session_id:
        try:
            touched = files_touched(store, session_id, root, cfg.context.files_touched)
        except Exception:  # noqa: BLE001 - an older or locked store: no list, still a context
            touched = []
        if touched:
            values["filesTouched"] = touched
    return values


def for_hook(proj: Project, payload: dict[str, Any], cfg: Config, store: Store | None) -> PromptContext:
    """The context a hook can assemble without the daemon: persistent from its file (refreshed when a
    rule file changed), volatile from the payload (cwd) and ``memlane context set``, session from the store."""
    svc = AppContextService(proj.root_str, cfg, project_id=proj.id)
    cwd = payload.get("cwd")
    svc.ensure_volatile_working_directory(cwd if isinstance(cwd, str) else None)
    status = svc.refresh_persistent_if_needed(RefreshTrigger(None))
    session_id = payload.get("session_id")
    session = session_values(store, session_id if isinstance(session_id, str) else "", proj.root_str, cfg)
    context = svc.context_for_prompt(session)
    context.status = status
    return context
