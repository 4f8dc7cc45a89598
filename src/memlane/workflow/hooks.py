"""Workflow memory on memlane's hooks (called from ``memlane.hooks._workflow``). Stdlib only.

Budget: a hook process has ~50 ms in all, so only os and re are imported here and the
memlane modules (all stdlib-only themselves) are imported inside the function that needs them.
The common case — a prompt or an answer in a session with a workflow running — costs a read of
``.memory-ref`` and ``meta.json`` and one appending write. Errors propagate to ``memlane.hooks``,
which logs them and carries on: workflow memory never breaks capture.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memlane.config import WorkflowConfig
    from memlane.project import Project

_WORKFLOW = re.compile(r"^/workflow-(\S+)")


def _memory(proj: Project) -> str | None:
    from memlane.workflow import store

    return store.resolve(proj.root_str, proj.id)


def _active(memory_id: str, session_id: str) -> dict[str, Any] | None:
    from memlane.workflow import store

    entry = store.load_meta(memory_id)["activeSessions"].get(session_id)
    return entry if isinstance(entry, dict) and entry.get("file") else None


def workflow_name(prompt: str) -> str | None:
    from memlane.workflow.lifecycle import RESERVED

    match = _WORKFLOW.match(prompt.lstrip())
    if not match:
        return None
    name = match.group(1).strip().rstrip(":,.")
    return None if not name or name in RESERVED else name


def on_user_prompt(payload: dict[str, Any], proj: Project, cfg: WorkflowConfig) -> None:
    """A ``/workflow-<name>`` prompt starts a workflow session; later prompts are appended to it."""
    session_id = str(payload.get("session_id") or "")
    prompt = payload.get("prompt")
    if not session_id or not isinstance(prompt, str):
        return
    from memlane.workflow import sessions

    if prompt.lstrip().startswith(("/workflow-memory", "/memlane:")):
        return  # a command to memlane (the hook answers /workflow-memory itself), not part of the work
    name = workflow_name(prompt)
    memory_id = _memory(proj)
    if name:
        from memlane.workflow import lifecycle

        if memory_id is None:  # the first /workflow- prompt of a project creates its memory
            memory_id = proj.id
            lifecycle.init(proj.root_str, proj.name, memory_id, cfg)
        file_name = lifecycle.start_workflow(memory_id, name, session_id, proj.root_str, proj.name)
    else:
        entry = _active(memory_id, session_id) if memory_id else None
        if entry is None or memory_id is None:
            return
        file_name = str(entry["file"])
    sessions.add_prompt(memory_id, file_name, private(prompt))


def private(text: str) -> str:
    """memlane's privacy filter (<private> sections, secrets) before anything reaches a session record.

    The hooks hand us only the [workflow] settings, so the privacy settings are read again — only
    when something is about to be recorded.
    """
    from memlane import config, privacy

    try:
        cfg = config.load().privacy
    except config.ConfigError:
        cfg = config.PrivacyConfig()
    return privacy.filter_text(text, cfg).text


def _response(payload: dict[str, Any], response: str) -> str:
    if response:
        return response  # the captured event's content: already filtered
    text = payload.get("last_assistant_message")
    if not (isinstance(text, str) and text.strip()) and isinstance(payload.get("transcript_path"), str):
        from memlane.capture import transcript

        text = transcript.final_text(payload["transcript_path"])[0]
    return private(text) if isinstance(text, str) and text else ""


def on_stop(payload: dict[str, Any], proj: Project, cfg: WorkflowConfig, response: str) -> None:
    """Claude's answer (cut to ``max_response_length``) and the turn's tools go to the session record."""
    memory_id = _memory(proj)
    entry = _active(memory_id, str(payload.get("session_id") or "")) if memory_id else None
    if entry is None or memory_id is None:
        return
    from memlane.capture import transcript
    from memlane.workflow import sessions

    path = payload.get("transcript_path")
    tools = transcript.tools_used(path) if isinstance(path, str) else []
    sessions.add_response(memory_id, str(entry["file"]), _response(payload, response), tools, cfg.max_response_length)


def on_session_end(payload: dict[str, Any], proj: Project, cfg: WorkflowConfig) -> None:
    """Complete the session's workflow (as the seed does automatically) and apply cleanup."""
    memory_id = _memory(proj)
    if memory_id is None:
        return
    from memlane.logs import log
    from memlane.workflow import lifecycle

    report = lifecycle.end_session(memory_id, str(payload.get("session_id") or ""), proj.root_str, cfg)
    if report.get("workflow") or report.get("cleanup"):
        log("workflow", "info", f"{memory_id}: session end: {_brief(report)}")


def _brief(report: dict[str, Any]) -> str:
    done = f"completed {report['workflow']}" if report.get("workflow") else "no workflow"
    return f"{done}, removed {len(report.get('cleanup') or [])} old session record(s)"


def on_pre_compact(payload: dict[str, Any], proj: Project, cfg: WorkflowConfig) -> None:
    """Remember that the context is being compacted: the next SessionStart says where things stand."""
    memory_id = _memory(proj)
    if memory_id is None:
        return
    from memlane.workflow import store

    session_id = str(payload.get("session_id") or "")
    with store.Lock(memory_id):
        meta = store.load_meta(memory_id)
        entry = meta["activeSessions"].get(session_id) or {}
        meta["pendingResume"] = {
            "sessionId": session_id,
            "workflow": entry.get("workflow") or meta.get("currentWorkflow"),
            "file": entry.get("file"),
            "trigger": payload.get("trigger"),
            "at": store.now_iso(),
        }
        store.save_meta(memory_id, meta)


def session_start_note(payload: dict[str, Any], proj: Project, cfg: WorkflowConfig) -> str | None:
    """After a compaction (``pendingResume``): a short note on the workflow to resume; clears the flag."""
    memory_id = _memory(proj)
    if memory_id is None:
        return None
    from memlane.workflow import store

    if not store.load_meta(memory_id).get("pendingResume"):
        return None
    with store.Lock(memory_id):
        meta = store.load_meta(memory_id)
        pending = meta.get("pendingResume")
        if not pending:
            return None
        meta["pendingResume"] = None
        meta["lastAccess"] = store.now_iso()
        store.save_meta(memory_id, meta)
    return resume_note(memory_id, meta, pending if isinstance(pending, dict) else {})


def resume_note(memory_id: str, meta: dict[str, Any], pending: dict[str, Any]) -> str:
    from memlane.workflow import store

    lines = [f"Workflow memory '{memory_id}' — resuming after context compaction."]
    workflow = pending.get("workflow") or meta.get("currentWorkflow")
    if workflow:
        lines.append(f"Workflow in progress: {workflow} (started {str(meta.get('workflowStartedAt') or '?')[:16]}).")
    if pending.get("file"):
        lines.append(f"Session record: {os.path.join(store.sessions_dir(memory_id), str(pending['file']))}")
    lines += _progress_lines(memory_id)
    lines.append("Full picture: .claude/docs/memory/memory.md (or `memlane workflow status`).")
    return "\n".join(lines)


def _progress_lines(memory_id: str) -> list[str]:
    from memlane.workflow import progress

    try:
        data = progress.load(memory_id)
    except (ValueError, OSError) as exc:
        return [f"progress.json could not be read: {exc}"]
    c = progress.counts(data)
    lines = [
        f"Progress: {c['featuresDone']}/{c['features']} features, {c['tasksDone']}/{c['tasks']} tasks, "
        f"{c['pointsDone']}/{c['points']} points done."
    ]
    doing = [f"{tid} {t['name']}" for tid, t in data["tasks"].items() if t["status"] == "in_progress"]
    if not doing:
        doing = [f"{fid} {f['name']}" for fid, f in data["features"].items() if f["status"] == "in_progress"]
    if doing:
        lines.append("In progress: " + "; ".join(doing[:5]) + (" …" if len(doing) > 5 else ""))
    nxt = [
        f"{tid} {t['name']}"
        for tid, t in data["tasks"].items()
        if t["status"] == "pending" and not progress.open_dependencies(data, tid)
    ]
    if nxt:
        lines.append("Next (dependencies done): " + "; ".join(nxt[:5]) + (" …" if len(nxt) > 5 else ""))
    return lines
