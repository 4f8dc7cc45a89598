"""Extractive session summaries: what was asked, files touched, commands run, errors seen, outcome.

No LLM: the summary is assembled from the session's own events, so it costs nothing and invents
nothing.
"""

from __future__ import annotations

from memlane.store.db import NewEvent

TYPE_CHECKING = False  # typing costs ~2 ms of a hook's start-up (a late summary runs in SessionStart)
if TYPE_CHECKING:
    from typing import Any

    from memlane.store.db import Event, Store

_EDIT_TOOLS = {"Write", "Edit", "MultiEdit", "NotebookEdit"}
_PATCH_TOOLS = {"apply_patch"}  # Codex: one call may touch several files (metadata "files")


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def summarize(events: list[Event]) -> str:
    """A few labelled lines describing a session; empty when there is nothing to say."""
    prompts = [e.content for e in events if e.type == "user_prompt"]
    tools = [e for e in events if e.type == "tool_observation"]
    edited = _unique(
        [
            str(path or "")
            for e in tools
            for path in (
                [e.metadata.get("file_path")]
                if e.metadata.get("tool_name") in _EDIT_TOOLS
                else e.metadata.get("files") or []
                if e.metadata.get("tool_name") in _PATCH_TOOLS
                else []
            )
        ]
    )
    read = _unique([str(e.metadata.get("file_path") or "") for e in tools if e.metadata.get("tool_name") == "Read"])
    commands = _unique([str(e.metadata.get("command") or "") for e in tools if e.metadata.get("command")])
    errors = _unique(
        [
            str(e.metadata.get("error") or f"{e.metadata.get('tool_name')}: exit {e.metadata.get('exit_code')}")
            for e in tools
            if e.metadata.get("success") is False
        ]
    )
    answers = [e.content for e in events if e.type == "agent_response"]
    lines: list[str] = []
    if prompts:
        asked = "; ".join(_one_line(p, 160) for p in prompts[:4])
        more = f" (+{len(prompts) - 4} more)" if len(prompts) > 4 else ""
        lines.append(f"Asked: {asked}{more}")
    if edited:
        lines.append("Files changed: " + ", ".join(edited[:12]) + (" …" if len(edited) > 12 else ""))
    if read:
        lines.append("Files read: " + ", ".join(read[:8]) + (" …" if len(read) > 8 else ""))
    if commands:
        lines.append("Commands: " + ", ".join(f"`{_one_line(c, 80)}`" for c in commands[:8]))
    if errors:
        lines.append("Errors: " + "; ".join(_one_line(e, 120) for e in errors[:4]))
    if answers:
        lines.append("Outcome: " + _one_line(answers[-1], 300))
    return "\n".join(lines)


def refresh(store: Store, session_id: str, turn: str, meta: dict[str, Any], ts: str | None = None) -> bool:
    """Make the session's one summary, from all its events, replacing any earlier one (hook or import).

    SessionEnd fires once per run of a resumed session and imports re-summarize a grown file; each
    replaces the summary so a session keeps exactly one, built from every event, not the first 5,000.
    """
    history = store.history(session=session_id, limit=-1, oldest_first=True)
    old = [e for e in history if e.type == "session_summary"]
    text = summarize([e for e in history if e.type != "session_summary"])
    if not text:
        return False
    if len(old) == 1 and old[0].content == text and old[0].metadata.get("imported") == meta.get("imported"):
        return False  # unchanged, and owned by the same side (hooks or import)
    store.replace_derived([e.id for e in old], [NewEvent("session_summary", session_id, text, turn, meta, ts=ts)])
    return True
