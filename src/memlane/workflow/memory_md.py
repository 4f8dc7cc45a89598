"""``memory.md``: the human-readable view of progress.json, plus hand-written decisions.

Everything but the decisions section is regenerated from progress.json; the section between the
``DECISIONS_START``/``DECISIONS_END`` markers is carried over verbatim, and ``add_decision`` (the
memory-manager agent's ``memlane workflow decide``) appends dated entries to it. Stdlib only.
"""

from __future__ import annotations

import os
import time

from memlane.workflow import store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DECISIONS_START = "<!-- memlane:decisions:start -->"
DECISIONS_END = "<!-- memlane:decisions:end -->"
DECISIONS_HEADING = "## Key decisions"
_EMPTY = '_No decisions recorded yet: `memlane workflow decide "…"` adds one._'
_MARK = {"done": "x", "in_progress": "~", "blocked": "!", "pending": " "}
_LABEL = {"done": "done", "in_progress": "in progress", "blocked": "blocked", "pending": "pending"}


def path(memory_id: str) -> str:
    return store.file(memory_id, "memory.md")


def extract_decisions(text: str) -> str:
    """The body of the decisions section; tolerates lost markers by falling back to the heading."""
    start, end = text.find(DECISIONS_START), text.find(DECISIONS_END)
    if start != -1 and end > start:
        body = text[start + len(DECISIONS_START) : end]
    else:
        at = text.find(DECISIONS_HEADING)
        if at == -1:
            return ""
        body = text[at + len(DECISIONS_HEADING) :]
        nxt = body.find("\n## ")
        body = body if nxt == -1 else body[:nxt]
    return "\n".join(line for line in body.strip("\n").splitlines() if line.strip() != _EMPTY).strip("\n")


def _pct(done: float, total: float) -> str:
    return f"{round(100 * done / total)}%" if total else "-"


def _num(value: Any) -> str:
    return str(value if value is not None else 0)


def _date(stamp: Any) -> str:
    return str(stamp)[:10] if stamp else ""


def _workflows(progress: dict[str, Any]) -> list[str]:
    lines = ["## Workflows", ""]
    workflows = progress["setup"]["workflows"]
    if not workflows:
        lines.append("_No workflow run yet: start one with a `/workflow-<name>` prompt._")
    for name, wf in workflows.items():
        status = wf.get("status", "pending")
        when = ""
        if status == "done" and wf.get("completedAt"):
            when = f" — completed {_date(wf['completedAt'])}"
        elif wf.get("startedAt"):
            when = f" — started {_date(wf['startedAt'])}"
        lines.append(f"- [{_MARK.get(status, ' ')}] {name} ({_LABEL.get(status, status)}){when}")
    for item in progress["setup"].get("custom", []):
        if isinstance(item, dict):
            status = str(item.get("status", "pending"))
            lines.append(f"- [{_MARK.get(status, ' ')}] {item.get('name', '?')} (custom, {_LABEL.get(status, status)})")
        else:
            lines.append(f"- {item} (custom)")
    return [*lines, ""]


def _overview(progress: dict[str, Any], meta: dict[str, Any]) -> list[str]:
    from memlane.workflow.progress import counts

    c = counts(progress)
    lines = ["## Overview", ""]
    if meta.get("currentWorkflow"):
        since = _date(meta.get("workflowStartedAt"))
        lines.append(f"- Current workflow: **{meta['currentWorkflow']}** (since {since})")
    lines += [
        f"- Features: {c['featuresDone']}/{c['features']} done ({_pct(c['featuresDone'], c['features'])})",
        f"- Tasks: {c['tasksDone']}/{c['tasks']} done ({_pct(c['tasksDone'], c['tasks'])})",
        f"- Points: {c['pointsDone']}/{c['points']} ({_pct(c['pointsDone'], c['points'])})",
        "",
    ]
    return lines


def _phases_domains(progress: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if progress["phases"]:
        lines += ["## Phases", "", "| Phase | Name | Status | Points | Features |", "|---|---|---|---|---|"]
        for pid, ph in progress["phases"].items():
            pts = f"{_num(ph.get('completedPoints'))}/{_num(ph.get('totalPoints'))}"
            feats = ", ".join(ph.get("features", []))
            lines.append(f"| {pid} | {ph['name']} | {_LABEL.get(ph['status'], ph['status'])} | {pts} | {feats} |")
        lines.append("")
    if progress["domains"]:
        lines += ["## Domains", "", "| Domain | Name | Status | Features done |", "|---|---|---|---|"]
        for did, dom in progress["domains"].items():
            done = f"{_num(dom.get('completedFeatures'))}/{_num(dom.get('totalFeatures'))}"
            lines.append(f"| {did} | {dom['name']} | {_LABEL.get(dom['status'], dom['status'])} | {done} |")
        lines.append("")
    return lines


def _features(progress: dict[str, Any]) -> list[str]:
    from memlane.workflow.progress import feature_points

    lines = ["## Features", ""]
    if not progress["features"]:
        lines += ["_No features yet: `memlane workflow import-doc feature-list.md` or `feature add`._", ""]
    tasks_of: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    loose = []
    for tid, task in progress["tasks"].items():
        if task.get("featureId"):
            tasks_of.setdefault(task["featureId"], []).append((tid, task))
        else:
            loose.append((tid, task))
    for fid, feat in progress["features"].items():
        tasks = tasks_of.get(fid, [])
        total, done = feature_points(feat, [t for _, t in tasks])
        bits = [_LABEL.get(feat["status"], feat["status"])]
        if tasks:
            bits.append(f"{sum(t['status'] == 'done' for _, t in tasks)}/{len(tasks)} tasks")
        if total:
            bits.append(f"{_num(done)}/{_num(total)} pt")
        category = f" [{feat['category']}]" if feat.get("category") else ""
        lines.append(f"### [{_MARK.get(feat['status'], ' ')}] {fid} {feat['name']}{category} — {', '.join(bits)}")
        lines.append("")
        if feat.get("note"):
            lines += [f"> {feat['note']}", ""]
        lines += [_task_line(tid, task) for tid, task in tasks]
        if tasks:
            lines.append("")
    if loose:
        lines += ["### Tasks without a feature", "", *(_task_line(tid, task) for tid, task in loose), ""]
    return lines


def _task_line(tid: str, task: dict[str, Any]) -> str:
    extra = [task.get("priority") or ""]
    if task.get("points") is not None:
        extra.append(f"{_num(task['points'])}pt")
    if task.get("dependencies"):
        extra.append("after " + ", ".join(task["dependencies"]))
    tail = f" ({', '.join(e for e in extra if e)})" if any(extra) else ""
    note = f" — {task['note']}" if task.get("note") else ""
    return f"- [{_MARK.get(task['status'], ' ')}] {tid} {task['name']}{tail}{note}"


def render(progress: dict[str, Any], meta: dict[str, Any], decisions: str = "") -> str:
    title = meta.get("projectName") or meta.get("id") or "workflow"
    head = [
        f"# Workflow memory: {title}",
        "",
        f"> memlane workflow memory `{meta.get('id', '')}` — generated from progress.json"
        f" ({progress.get('lastUpdated') or store.now_iso()}).",
        "> Everything except the Key decisions section is rewritten by `memlane workflow update`.",
        "",
    ]
    body = _overview(progress, meta) + _workflows(progress) + _phases_domains(progress) + _features(progress)
    tail = [DECISIONS_HEADING, "", DECISIONS_START, decisions.strip("\n") or _EMPTY, DECISIONS_END, ""]
    return "\n".join(head + body + tail)


def _read(memory_id: str) -> str:
    try:
        with open(path(memory_id), encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return ""


def write(memory_id: str, progress: dict[str, Any] | None = None, decisions: str | None = None) -> str:
    """Regenerate memory.md (keeping its decisions) and bring the project links up to date."""
    from memlane.workflow import links

    with store.Lock(memory_id):
        meta = store.load_meta(memory_id)
        links.pull(memory_id, meta)
        if progress is None:
            from memlane.workflow import progress as progress_mod

            progress = progress_mod.load(memory_id)
        if decisions is None:
            decisions = extract_decisions(_read(memory_id))
        text = render(progress, meta, decisions)
        store.atomic_write(path(memory_id), text)
        links.sync(memory_id, meta)
        return text


def add_decision(memory_id: str, text: str, when: str | None = None) -> str:
    """Append ``- YYYY-MM-DD: text`` to the decisions section; returns the line added."""
    text = " ".join(text.split())
    if not text:
        raise store.WorkflowError("a decision needs some text")
    line = f"- {when or time.strftime('%Y-%m-%d')}: {text}"
    from memlane.workflow import links

    with store.Lock(memory_id):
        links.pull(memory_id, store.load_meta(memory_id))
        current = extract_decisions(_read(memory_id))
        write(memory_id, decisions=f"{current}\n{line}" if current else line)
    return line


def exists(memory_id: str) -> bool:
    return os.path.exists(path(memory_id))
