"""``/workflow-memory <command>`` typed in Claude Code: seed 001's in-session memory commands. Stdlib only.

The seed ships a ``/workflow-memory`` slash command (init, list, switch, status, update, remove, cleanup,
search); memlane answers it in its own UserPromptSubmit hook instead, so nothing has to be installed in the
project: the hook runs the command on the workflow memory here and hands the result back, to the user as a
hook message and to Claude as context (``memlane.hooks``). ``/memlane:workflow-memory …`` (the plugin's
command) is the same. ``complete`` is added: the seed's manual "workflow complete". The same operations
are ``memlane workflow …`` in a shell; both call the library in ``memlane.workflow``.
"""

from __future__ import annotations

import re

from memlane.workflow import lifecycle, progress, sessions, store
from memlane.workflow.store import WorkflowError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memlane.config import WorkflowConfig
    from memlane.project import Project

_PROMPT = re.compile(r"^\s*/(?:memlane:)?workflow-memory(?=\s|$)(.*)\Z", re.DOTALL)
COMMANDS = {
    "init": "init [ID] — create a workflow memory (default id: this project's) and link the project to it",
    "list": "list — every workflow memory",
    "switch": "switch ID — link this project to another workflow memory",
    "status": "status — the memory in use: link, current workflow, sessions, progress",
    "update": "update — regenerate memory.md from progress.json",
    "remove": "remove ID — delete a workflow memory (progress, memory.md, session records)",
    "cleanup": "cleanup — remove session records past workflow.max_sessions_per_project / max_session_age_days",
    "search": "search QUERY — search the session records",
    "complete": "complete [WORKFLOW] — complete a workflow (default: the current one)",
}


def parse(prompt: object) -> list[str] | None:
    """The words after ``/workflow-memory`` (``[]`` for the bare command), or None for any other prompt."""
    if not isinstance(prompt, str):
        return None
    match = _PROMPT.match(prompt)
    return match.group(1).split() if match else None


def usage() -> str:
    return "Usage: /workflow-memory <command>\n" + "\n".join(f"  {line}" for line in COMMANDS.values())


def run(args: list[str], proj: Project, cfg: WorkflowConfig) -> str:
    """Run one command for the project; returns what to tell the user. Never raises for a user's mistake."""
    if not args or args[0] in ("help", "-h", "--help"):
        return usage()
    name, rest = args[0].lower(), args[1:]
    if name not in COMMANDS:
        return f"unknown command '{name}'.\n{usage()}"
    if not cfg.enabled:
        return "workflow memory is off (workflow.enabled = false): `memlane config set workflow.enabled true`"
    try:
        return _COMMANDS[name](rest, proj, cfg)
    except WorkflowError as exc:
        return f"error: {exc}"


def _memory(proj: Project) -> str:
    found = store.resolve(proj.root_str, proj.id)
    if found is None:
        raise WorkflowError(f"project {proj.name} has no workflow memory: `/workflow-memory init` creates one")
    return found


def _one(rest: list[str], what: str) -> str:
    if len(rest) != 1:
        raise WorkflowError(f"give exactly one {what}")
    return store.check_id(rest[0])


def _counts(memory_id: str) -> str:
    try:
        c = progress.counts(progress.load(memory_id))
    except WorkflowError as exc:
        return f"progress.json invalid: {exc}"
    return f"{c['featuresDone']}/{c['features']} features, {c['tasksDone']}/{c['tasks']} tasks done"


def _init(rest: list[str], proj: Project, cfg: WorkflowConfig) -> str:
    memory_id = store.check_id(rest[0]) if rest else proj.id
    created, mode = lifecycle.init(proj.root_str, proj.name, memory_id, cfg)
    verb = "Created" if created else "Linked existing"
    return f"{verb} workflow memory {memory_id} ({store.mem_dir(memory_id)}); memory.md linked by {mode}."


def _list(rest: list[str], proj: Project, cfg: WorkflowConfig) -> str:
    linked = store.resolve(proj.root_str, proj.id)
    lines = []
    for memory_id in store.all_ids():
        try:
            meta = store.load_meta(memory_id)
        except WorkflowError as exc:
            meta = {"projectName": f"meta.json invalid: {exc}"}
        mark = "*" if memory_id == linked else "-"
        current = meta.get("currentWorkflow") or "no workflow in progress"
        lines.append(
            f"{mark} {memory_id} ({meta.get('projectName')}): {len(sessions.list_files(memory_id))} session "
            f"record(s), {current}, {_counts(memory_id)}"
        )
    return "\n".join(lines) if lines else "No workflow memories yet: `/workflow-memory init` creates one."


def _switch(rest: list[str], proj: Project, cfg: WorkflowConfig) -> str:
    memory_id = _one(rest, "workflow memory id")
    if not store.exists(memory_id):
        raise WorkflowError(f"no workflow memory '{memory_id}' (`/workflow-memory list` shows them)")
    old = store.read_ref(proj.root_str)
    mode = lifecycle.link(proj.root_str, memory_id)
    return f"Project now uses workflow memory {memory_id} ({mode}); was {old or 'none'}."


def _status(rest: list[str], proj: Project, cfg: WorkflowConfig) -> str:
    from memlane.workflow import links

    memory_id = _memory(proj)
    meta = store.load_meta(memory_id)
    flows = "none yet"
    try:
        workflows = progress.load(memory_id)["setup"]["workflows"]
        flows = ", ".join(f"{n} ({w.get('status')})" for n, w in workflows.items()) or flows
    except WorkflowError as exc:
        flows = f"progress.json invalid: {exc}"
    active = ", ".join(f"{v.get('workflow')} → {v.get('file')}" for v in meta["activeSessions"].values()) or "none"
    link = links.state(proj.root_str, memory_id) if store.read_ref(proj.root_str) == memory_id else "not linked"
    return "\n".join(
        [
            f"memory: {memory_id} ({store.mem_dir(memory_id)})",
            f"project link: {link}",
            f"current workflow: {meta.get('currentWorkflow') or '-'}",
            f"active sessions: {active}",
            f"workflows: {flows}",
            f"progress: {_counts(memory_id)}",
            f"sessions: {meta.get('totalSessions', 0)} completed, {len(sessions.list_files(memory_id))} record(s)",
        ]
    )


def _update(rest: list[str], proj: Project, cfg: WorkflowConfig) -> str:
    from memlane.workflow import memory_md

    memory_id = _memory(proj)
    memory_md.write(memory_id)
    return f"memory.md regenerated from progress.json ({memory_md.path(memory_id)})."


def _remove(rest: list[str], proj: Project, cfg: WorkflowConfig) -> str:
    memory_id = _one(rest, "workflow memory id (removing needs it spelled out)")
    count = len(sessions.list_files(memory_id)) if store.exists(memory_id) else 0
    unlinked = lifecycle.remove(memory_id)
    tail = f"; unlinked {', '.join(unlinked)}" if unlinked else ""
    return f"Removed workflow memory {memory_id} with {count} session record(s){tail}."


def _cleanup(rest: list[str], proj: Project, cfg: WorkflowConfig) -> str:
    from memlane.workflow import cleanup

    removed = cleanup.run(_memory(proj), cfg)
    limits = f"keep {cfg.max_sessions_per_project} newest, at most {cfg.max_session_age_days} days old"
    names = "".join(f"\n- {r['name']} ({r['reason']})" for r in removed)
    return f"Removed {len(removed)} session record(s) ({limits}).{names}"


def _search(rest: list[str], proj: Project, cfg: WorkflowConfig) -> str:
    text = " ".join(rest).strip()
    if not text:
        raise WorkflowError("search needs words to look for: /workflow-memory search <query>")
    hits = sessions.search([_memory(proj)], text, 10)
    if not hits:
        return f"Nothing found for '{text}' in the session records."
    return "\n".join(f"- {h['file']} · {h['entry']}: {h['snippet']}" for h in hits)


def _complete(rest: list[str], proj: Project, cfg: WorkflowConfig) -> str:
    report = lifecycle.complete(_memory(proj), rest[0] if rest else None, proj.root_str, cfg, reason="manual")
    closed = ", ".join(report["sessions_closed"]) or "none"
    return f"Workflow {report['workflow']} completed; session record(s) closed: {closed}."


_COMMANDS = {
    "init": _init,
    "list": _list,
    "switch": _switch,
    "status": _status,
    "update": _update,
    "remove": _remove,
    "cleanup": _cleanup,
    "search": _search,
    "complete": _complete,
}
