"""Creating, linking, completing and removing workflow memories. Stdlib only (hooks use it too).

The seed's flow: a ``/workflow-<name>`` prompt starts a workflow (session record, meta.json,
``setup.workflows.<name> = in_progress``); SessionEnd — or ``memlane workflow complete`` — completes
it: the workflow is marked done, changed feature-list.md / domain-definition.md are parsed into
progress.json, totals are recalculated, memory.md is regenerated and cleanup rules are applied.
"""

from __future__ import annotations

import os

from memlane.logs import log
from memlane.workflow import links, progress, sessions, store
from memlane.workflow.store import WorkflowError, now_iso

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memlane.config import WorkflowConfig

RESERVED = ("memory",)  # /workflow-memory manages memories, it is not a workflow


def create(memory_id: str, root: str, name: str, cfg: WorkflowConfig) -> bool:
    """The central files of a new memory; False when it already exists (nothing is touched)."""
    store.check_id(memory_id)
    with store.Lock(memory_id):
        if store.exists(memory_id):
            return False
        data = progress.new(cfg.default_progress)  # validates default_progress before anything is written
        os.makedirs(store.sessions_dir(memory_id), exist_ok=True)
        stamp = now_iso()
        meta = {
            "id": memory_id,
            "projectPath": root,
            "projectName": name,
            "createdAt": stamp,
            "lastAccess": stamp,
            "totalSessions": 0,
            "currentWorkflow": None,
            "workflowStartedAt": None,
            "activeSessions": {},
            "pendingResume": None,
            "links": {},
            "importedDocs": {},
        }
        progress.save(memory_id, data)
        store.save_meta(memory_id, meta)
        from memlane.workflow import memory_md

        memory_md.write(memory_id, data)
    return True


def link(root: str, memory_id: str, mode: str = "auto") -> str:
    """Point the project at ``memory_id``, detaching it from the memory it was linked to."""
    old = store.read_ref(root)
    if old and old != memory_id and store.exists(old):
        with store.Lock(old):
            meta = store.load_meta(old)
            links.pull(old, meta)  # keep decisions written in a project copy
            meta["links"].pop(root, None)
            store.save_meta(old, meta)
    with store.Lock(memory_id):
        meta = store.load_meta(memory_id)
        links.pull(memory_id, meta)
        used = links.link(root, memory_id, meta, mode)
        meta["lastAccess"] = now_iso()
        store.save_meta(memory_id, meta)
    return used


def init(root: str, name: str, memory_id: str, cfg: WorkflowConfig, mode: str = "auto") -> tuple[bool, str]:
    """Create (if new) and link; returns (created, link mode)."""
    created = create(memory_id, root, name, cfg)
    return created, link(root, memory_id, mode)


def remove(memory_id: str) -> list[str]:
    """Delete a memory and the link files of every project pointing at it; returns those projects."""
    import shutil

    if not store.exists(memory_id):
        raise WorkflowError(f"no workflow memory '{memory_id}' (see `memlane workflow list`)")
    with store.Lock(memory_id):
        meta = store.load_meta(memory_id)
        unlinked = [root for root in meta["links"] if store.read_ref(root) == memory_id]
        for root in unlinked:
            links.unlink(root)
        shutil.rmtree(store.mem_dir(memory_id))
    return unlinked


# ---- workflows -----------------------------------------------------------------------------------


def start_workflow(memory_id: str, workflow: str, session_id: str, root: str, name: str) -> str:
    """A ``/workflow-<name>`` prompt: open the session record, mark the workflow in progress."""
    with store.Lock(memory_id):
        meta = store.load_meta(memory_id)
        current = meta["activeSessions"].get(session_id)
        if current and current.get("workflow") == workflow:
            return str(current["file"])
        if current:  # the session moves on to another workflow: the previous one is complete
            complete(memory_id, str(current["workflow"]), root, None, "next workflow started", session_id, strict=False)
            meta = store.load_meta(memory_id)
        file_name = sessions.start(memory_id, workflow, session_id, name, root)
        stamp = now_iso()
        meta["activeSessions"][session_id] = {"file": file_name, "workflow": workflow, "startedAt": stamp}
        meta.update(currentWorkflow=workflow, workflowStartedAt=stamp, lastAccess=stamp)
        store.save_meta(memory_id, meta)
        try:
            progress.mutate(memory_id, lambda d: progress.set_workflow(d, workflow, "in_progress"))
        except WorkflowError as exc:  # a broken progress.json must not stop the session record
            log("workflow", "error", f"{memory_id}: workflow {workflow} started, progress.json not updated: {exc}")
        return file_name


def import_docs(memory_id: str, found: dict[str, str], only_changed: bool) -> list[tuple[str, Any]]:
    """Parse the documents into progress.json (one locked update); returns (path, Applied) pairs."""
    with store.Lock(memory_id):
        meta = store.load_meta(memory_id)
        seen = meta.setdefault("importedDocs", {})
        todo = []
        for kind in ("domain-definition", "feature-list"):  # domains first: their names, then features
            path = found.get(kind)
            if path is None:
                continue
            stamp = os.stat(path).st_mtime_ns
            if only_changed and seen.get(path) == stamp:
                continue
            todo.append((path, kind, stamp))
        if not todo:
            return []
        from memlane.workflow import docs  # compiling its patterns costs ~10 ms: only when there is work

        parsed = [(path, docs.read(path, kind), stamp) for path, kind, stamp in todo]
        results = progress.mutate(memory_id, lambda d: [(path, docs.apply(d, p)) for path, p, _ in parsed])
        for path, _, stamp in parsed:
            seen[path] = stamp
        store.save_meta(memory_id, meta)
        return list(results)


def complete(
    memory_id: str,
    workflow: str | None,
    root: str | None,
    cfg: WorkflowConfig | None,
    reason: str = "manual",
    session_id: str | None = None,
    strict: bool = True,
) -> dict[str, Any]:
    """Complete a workflow: close its session records, mark it done, import changed docs, regenerate.

    ``strict`` (the CLI) refuses before changing anything when progress.json is broken or the workflow
    unknown; hooks pass False so the session records are closed even then.
    """
    with store.Lock(memory_id):
        meta = store.load_meta(memory_id)
        if workflow is None:
            workflow = meta.get("currentWorkflow")
            if not workflow:
                raise WorkflowError("no workflow in progress: name one, e.g. `memlane workflow complete task-point`")
        closing = {
            sid: info
            for sid, info in meta["activeSessions"].items()
            if info.get("workflow") == workflow and (session_id is None or sid == session_id)
        }
        try:
            known = progress.load(memory_id)["setup"]["workflows"]
        except WorkflowError:
            if strict:
                raise
            known = None
        if strict and known is not None and workflow not in known and not closing:
            names = ", ".join(known) or "none yet"
            raise WorkflowError(f"unknown workflow '{workflow}' (workflows in this memory: {names})")
        summarize = bool(cfg and cfg.summarization)
        longest = cfg.summary_max_length if cfg is not None else 500
        for info in closing.values():
            sessions.close(memory_id, str(info.get("file")), reason, summarize, longest)
        for sid in closing:
            del meta["activeSessions"][sid]
        meta["totalSessions"] = int(meta.get("totalSessions") or 0) + len(closing)
        others = [i for i in meta["activeSessions"].values() if i.get("workflow")]
        meta["currentWorkflow"] = others[-1]["workflow"] if others else None
        meta["workflowStartedAt"] = others[-1].get("startedAt") if others else None
        meta["lastAccess"] = now_iso()
        store.save_meta(memory_id, meta)
        report: dict[str, Any] = {"workflow": workflow, "sessions_closed": sorted(i["file"] for i in closing.values())}
        if known is None:
            log("workflow", "error", f"{memory_id}: progress.json is invalid; workflow {workflow} not marked done")
            return report
        report["docs"] = [(p, a) for p, a in import_docs_of(memory_id, root)]
        progress.mutate(memory_id, lambda d: progress.set_workflow(d, workflow, "done"))
        return report


def import_docs_of(memory_id: str, root: str | None) -> list[tuple[str, Any]]:
    """The project's feature-list.md / domain-definition.md, when changed since their last import."""
    return import_docs(memory_id, find_docs(root), only_changed=True) if root else []


DOC_NAMES = {"domain-definition": "domain-definition.md", "feature-list": "feature-list.md"}


def find_docs(root: str) -> dict[str, str]:
    """kind → path of the project's documents: ``.claude/docs/``, ``docs/`` (and one level below), root."""
    found: dict[str, str] = {}
    bases = [os.path.join(root, ".claude", "docs"), os.path.join(root, "docs"), root]
    for kind, name in DOC_NAMES.items():
        for base in bases:
            candidates = [os.path.join(base, name)]
            if base != root and os.path.isdir(base):
                subdirs = sorted(d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d)))
                candidates += [os.path.join(base, d, name) for d in subdirs]
            hit = next((c for c in candidates if os.path.isfile(c)), None)
            if hit:
                found[kind] = hit
                break
    return found


def end_session(memory_id: str, session_id: str, root: str, cfg: WorkflowConfig) -> dict[str, Any]:
    """SessionEnd: complete the session's workflow, sync a project copy back, apply cleanup."""
    from memlane.workflow import cleanup

    report: dict[str, Any] = {}
    with store.Lock(memory_id):
        meta = store.load_meta(memory_id)
        links.pull(memory_id, meta)
        active = meta["activeSessions"].get(session_id)
        if active:
            try:
                report = complete(memory_id, active.get("workflow"), root, cfg, "session end", session_id, strict=False)
            except WorkflowError as exc:
                log("workflow", "error", f"{memory_id}: completing {active.get('workflow')} failed: {exc}")
        else:
            meta["lastAccess"] = now_iso()
            store.save_meta(memory_id, meta)
    report["cleanup"] = [f["name"] for f in cleanup.run(memory_id, cfg)]
    return report
