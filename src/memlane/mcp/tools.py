"""What each MCP tool does, independent of the MCP SDK.

Every tool resolves its project (an explicit ``project`` directory, else the server's default), checks
its input, reads through ``Memory`` only (the store under ``MEMLANE_HOME``, never the project's files),
formats compact text for the model and privacy-filters everything on the way out — events are stored
filtered, so this is a second line of defence (older data, changed rules, imported history).

Each tool returns a ``Reply``: the text the model reads plus the same facts as data. A problem with the
input raises ``ToolInputError`` whose one-line message says how to fix the call.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memlane import config, paths
from memlane import project as projects
from memlane.context import pack
from memlane.context.pack import event_line, hit_line, kind
from memlane.errors import InputError, NotFoundError
from memlane.knowledge.graduation import LEVELS
from memlane.knowledge.learning import mark_learned
from memlane.memory import Memory, check_tool_filters
from memlane.privacy import filter_text, filter_value
from memlane.retrieval.disclosure import DisclosureCache, index_row, mark_superseded, one_line
from memlane.retrieval.hybrid import Hit
from memlane.store import keys, peek
from memlane.store.db import Event

MAX_REFS = 20
# A query is words to look for, not a document: longer text is refused (never echoed back) with a hint.
MAX_QUERY_CHARS = 2000
LIMITS = {
    "limit": (1, 50),
    "before": (0, 20),
    "after": (0, 20),
    "window": (0, 20),
    "max_chars": (200, 100_000),
    "sessions": (0, 10),
    "memories": (0, 20),
}
NEXT_STEP = (
    "Next: mem-timeline ref=<citation> shows what happened around one result; "
    "mem-details refs=[<citations>] gives the full text of the ones you need."
)


def check_length(name: str, value: str) -> None:
    if len(value) > MAX_QUERY_CHARS:
        raise ToolInputError(
            f"{name} is {len(value)} characters; the limit is {MAX_QUERY_CHARS}: "
            "give the distinctive words (an error line, a file or function name), not a whole document"
        )


def level_of(known: dict[str, Any] | None) -> str:
    return LEVELS[int((known or {}).get("level", 0))]


def learned_note(row: dict[str, Any]) -> str:
    """A search line's tail: the memory's level when it rose above L0, and the insight it is evidence of."""
    parts = [row["level"]] if row.get("level", "L0") != "L0" else []
    insight = row.get("insight")
    if insight:
        mark = "verified " if insight.get("verified") else ""
        parts.append(f"{mark}{insight['type']} {insight['level']}: {one_line(insight['content'], 120)}")
    return f" [{'; '.join(parts)}]" if parts else ""


def learned_line(known: dict[str, Any]) -> str:
    """mem-details' line on a memory's level and insight."""
    text = f"level {level_of(known)}"
    insight = known.get("insight")
    if insight:
        mark = "verified " if insight.get("verified") else ""
        kind = f"{mark}{insight['type']} ({LEVELS[int(insight['level'])]})"
        text += f"; evidence of a {kind}: {one_line(insight['content'], 160)}"
    return text


class ToolInputError(InputError):
    """A call the model should fix; the message is one line and says how."""


@dataclass
class Reply:
    text: str
    data: dict[str, Any] = field(default_factory=dict)


def check_range(name: str, value: int) -> int:
    return pack.check_whole(name, value, *LIMITS[name])


def check_ref(ref: Any, what: str = "ref") -> str:
    """A citation (``mem:abc123``, ``[mem:abc123]``) or an event id, tidied; anything else is refused."""
    if not isinstance(ref, str) or not ref.strip():
        raise ToolInputError(f"{what} is empty: give a citation like mem:abc123 (from mem-search) or an event id")
    ref = ref.strip()
    if len(ref) > 100:
        raise ToolInputError(f"{what} is too long to be a citation or event id: {ref[:40]!r}…")
    if "mem:" in ref.lower():
        if keys.parse_citation(ref) is None:
            raise ToolInputError(f"malformed citation {ref!r}: citations look like mem:abc123 (six letters/digits)")
        return f"mem:{keys.parse_citation(ref)}"
    return ref


def capped(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f"\n… [{len(text) - max_chars} more characters; raise max_chars to see them]"


class MemoryTools:
    """The tools over one user's memory. ``engine`` is a shared ``retrieval.engine.Engine`` (or None:
    full-text search only); ``default_project`` is the directory used when a call names none."""

    def __init__(self, cfg: config.Config, engine: Any = None, default_project: str | None = None) -> None:
        self.cfg = cfg
        self.engine = engine
        self.default_project = default_project
        # Progressive disclosure's per-layer cache (search 1 min, timelines 5 min, details 30 min): the server
        # lives as long as the client's session, and a model often asks again for what it was just shown.
        self.cache = DisclosureCache()

    # ---- project, privacy ----------------------------------------------------------------------

    def resolve(self, project: str | None) -> projects.Project:
        """The project a call is about; refuses paths that are not directories and projects without memory."""
        if project is not None and not str(project).strip():
            raise ToolInputError("project is empty: give a project directory, or leave it out for the default")
        raw = str(project or self.default_project or os.getcwd()).strip()
        path = os.path.abspath(os.path.expanduser(raw))
        if not os.path.exists(path):
            known = projects.by_id(raw)
            if known is not None and known.db_path.exists():
                return known
            raise ToolInputError(f"project '{raw}' does not exist (give a project directory)")
        if not os.path.isdir(path):
            raise ToolInputError(f"project '{raw}' is not a directory (give the project's folder, not a file)")
        proj = projects.identify(path)
        if not proj.db_path.exists():
            raise ToolInputError(self._no_memory(proj))
        return proj

    def _no_memory(self, proj: projects.Project) -> str:
        others = [str(p["root"]) for p in projects.known_projects() if paths.db_path(str(p["id"])).exists()]
        if others:
            hint = f"projects with memory: {', '.join(others[:8])}; pass project=<one of them>"
        else:
            hint = "nothing is stored yet: run `memlane install` (Claude Code hooks) or `memlane import`"
        return f"no memory for project {proj.root_str}; {hint}"

    def open(self, project: str | None) -> Memory:
        proj = self.resolve(project)
        mem = Memory.existing(proj, self.cfg)
        try:
            mem.store.verify()  # a lost page is a tool error naming `memlane doctor --repair`, not "no results"
        except BaseException:
            mem.close()
            raise
        return mem

    def clean(self, event: Event) -> Event:
        return pack.clean(event, self.cfg.privacy)

    def reply(self, lines: Sequence[str], data: dict[str, Any], max_chars: int | None = None) -> Reply:
        clean, _ = filter_value(data, self.cfg.privacy)
        return Reply(pack.filtered_text("\n".join(lines), self.cfg.privacy, max_chars), clean)

    def _find(self, mem: Memory, ref: str) -> Event | None:
        """The event (cached: a stored event never changes until a forget or redact moves the generation);
        another project's too when retrieval.cross_project is on."""
        try:
            return self.cache.get_or_make("details", (mem.project.id, mem.store.generation(), ref),
                                          lambda: self.clean(mem.find(ref)))  # fmt: skip
        except NotFoundError:
            return None

    def _get(self, mem: Memory, ref: str) -> Event:
        event = self._find(mem, ref)
        if event is None:
            raise ToolInputError(
                f"unknown memory '{ref}' in project {mem.project.name} ({mem.project.root_str}): "
                "use a citation from mem-search (like mem:abc123) or an event id"
            )
        return event

    def _around(self, mem: Memory, event: Event, before: int, after: int) -> list[Event]:
        key = (mem.project.id, mem.store.generation(), event.id, before, after)

        def read() -> list[Event]:
            return [self.clean(e) for e in mem.neighbours(event, before, after)]

        return list(self.cache.get_or_make("timeline", key, read))

    def _search(self, mem: Memory, query: str, limit: int, **filters: Any) -> list[Hit]:
        key = (mem.project.id, mem.store.generation(), mem.cross_project(), query, limit, repr(sorted(filters.items())))

        def run() -> list[Hit]:
            hits = mem.search(query, limit=limit, engine=self.engine, semantic=self.engine is not None, **filters)
            return [Hit(self.clean(h.event), h.score, h.sources, h.confidence) for h in hits]

        return list(self.cache.get_or_make("index", key, run))

    @staticmethod
    def _where(mem: Memory) -> str:
        return pack.where(mem.project)

    @staticmethod
    def _origin(mem: Memory, event: Event) -> str:
        """`` [project <name>]`` for another project's event (retrieval.cross_project), else nothing."""
        if event.project_id == mem.project.id:
            return ""
        other = next((o.project for o in mem.others() if o.project.id == event.project_id), None)
        return f" [project {other.name if other else event.project_id}]"

    # ---- layer 1: search -----------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        types: Sequence[str] | None = None,
        session: str | None = None,
        since: str | None = None,
        until: str | None = None,
        project: str | None = None,
        tool: str | None = None,
        file: str | None = None,
        failed: bool = False,
    ) -> Reply:
        # Query, types, since/until and the tool filters are checked by Memory, as for every other entry
        # point; the tool only caps how many results a model is handed.
        query = (query or "").strip()
        check_length("query", query)  # MCP's own guard: a model must not paste a document as a query
        check_range("limit", limit)
        tools = check_tool_filters(tool, file, failed, types)
        filters = {"types": types, "session": (session or "").strip() or None, "since": since, "until": until}
        if not query and tools:
            return self._tool_runs(tools, limit, filters, project)
        with self.open(project) as mem:
            hits = self._search(mem, query, limit, **filters, **tools)
            rows = [{**index_row(h), **_project_of(mem, h.event)} for h in hits]
            mark_superseded(mem.store, rows)  # what replaced a result (the knowledge model), in its line
            mark_learned(mem.store, rows)  # its level and the insight it is evidence of (the learning loop)
            lines = [
                hit_line(r) + learned_note(r) + self._origin(mem, h.event) for r, h in zip(rows, hits, strict=True)
            ]
            where = self._where(mem)
            others = {h.event.project_id for h in hits} - {mem.project.id}
        if others:
            where += f" and {len(others)} other project(s) (retrieval.cross_project is on)"
        data = {"project": where, "query": query, "results": rows}
        if not rows:
            hint = "try other words, fewer filters, or mem-context-pack for recent work"
            return self.reply([f'No memories match "{query}" in {where}; {hint}.'], data)
        head = [f'{len(rows)} memor{"y" if len(rows) == 1 else "ies"} for "{query}" in {where}, best first:']
        return self.reply([*head, *lines, NEXT_STEP], data)

    def _tool_runs(self, tools: dict[str, Any], limit: int, filters: dict[str, Any], project: str | None) -> Reply:
        """mem-search with tool, file or failed and no query: those tool calls, newest first."""
        what = ", ".join("failed" if k == "failed" else f"{k} {v}" for k, v in tools.items())
        with self.open(project) as mem:
            runs = mem.tool_runs(
                limit=limit, session=filters["session"], since=filters["since"], until=filters["until"], **tools
            )
            events = [self.clean(e) for e in runs]
            where = self._where(mem)
        rows = [{**_brief(e), "tool": e.metadata.get("tool_name"), "success": e.metadata.get("success"),
                 "prompt_index": e.metadata.get("prompt_index"), "tool_index": e.metadata.get("tool_index")}
                for e in events]  # fmt: skip
        data = {"project": where, "tool_runs": what, "results": rows}
        if not rows:
            return self.reply([f"No tool calls ({what}) in {where}."], data)
        lines = [f"{len(rows)} tool call(s) ({what}) in {where}, newest first:"]
        lines.extend(event_line(e, 200) for e in events)
        lines.append(NEXT_STEP)
        return self.reply(lines, data)

    # ---- layer 2: timeline ---------------------------------------------------------------------

    def timeline(self, ref: str, *, before: int = 3, after: int = 3, project: str | None = None) -> Reply:
        ref = check_ref(ref)
        check_range("before", before)
        check_range("after", after)
        with self.open(project) as mem:
            target = self._get(mem, ref)
            events = self._around(mem, target, before, after)
        lines = [f"Session {target.session_id}: {len(events)} event(s) around [{target.cite}], oldest first:"]
        lines.extend(event_line(e, 200, "→" if e.id == target.id else " ") for e in events)
        lines.append("Next: mem-details refs=[<citations>] for the full text of any of these.")
        rows = [{**_brief(e), "current": e.id == target.id} for e in events]
        return self.reply(lines, {"session_id": target.session_id, "target": target.cite, "events": rows})

    # ---- layer 3: details ----------------------------------------------------------------------

    def details(self, refs: Sequence[str], *, max_chars: int = 8000, project: str | None = None) -> Reply:
        if isinstance(refs, str):
            refs = [refs]
        if not refs:
            raise ToolInputError("refs is empty: give one or more citations (mem:abc123) or event ids")
        if len(refs) > MAX_REFS:
            raise ToolInputError(f"at most {MAX_REFS} refs per call (got {len(refs)}); fetch only what you need")
        check_range("max_chars", max_chars)
        wanted = list(dict.fromkeys(check_ref(r, "a ref") for r in refs))
        found: list[Event] = []
        missing: list[str] = []
        with self.open(project) as mem:
            for ref in wanted:
                event = self._find(mem, ref)
                if event is None:
                    missing.append(ref)
                elif event not in found:
                    found.append(event)
            name = mem.project.name
            if found:  # fetched in full: a use of each (the learning loop; MCP runs in Claude Code's session)
                mem.fetched([e.id for e in found if e.project_id == mem.project.id], "mcp")
            learned = mem.learned([e.id for e in found])
        if not found:
            raise ToolInputError(f"unknown memor{'y' if len(missing) == 1 else 'ies'} {', '.join(missing)} "
                                 f"in project {name}: use citations from mem-search (like mem:abc123)")  # fmt: skip
        lines: list[str] = []
        for event in found:
            lines.append(f"## [{event.cite}] {kind(event.type)} · {event.ts} · session {event.session_id}")
            meta = _meta_line(event.metadata)
            if meta:
                lines.append(meta)
            known = learned.get(event.id)
            if known:
                lines.append(learned_line(known))
            lines.append(capped(event.content, max_chars))
            lines.append("")
        if missing:
            lines.append(f"Not found: {', '.join(missing)}")
        events = [
            {**_public(e), "content": capped(e.content, max_chars), "level": level_of(learned.get(e.id))} for e in found
        ]
        return self.reply(lines, {"events": events, "missing": missing})

    # ---- stats, source, projects ---------------------------------------------------------------

    def stats(self, project: str | None = None) -> Reply:
        with self.open(project) as mem:
            data = mem.stats()
            data["learning"] = mem.learning_stats() if not mem.store.ephemeral else {}
            where = self._where(mem)
        data["search"] = self.search_mode()
        p = data["privacy"]
        by_type = ", ".join(f"{kind(k)} {v}" for k, v in data["by_type"].items()) or "none"
        outbox = ", ".join(f"{k} {v}" for k, v in data["outbox"].items()) or "empty"
        lines = [
            f"memlane memory for {where}, project id {data['project_id']}",
            f"events: {data['events']} in {data['sessions']} session(s); "
            f"first {data['first_activity'] or '-'}, last {data['last_activity'] or '-'}",
            f"by type: {by_type}",
            f"privacy: {p['private_sections']} private section(s) removed, {p['secrets_redacted']} secret(s) "
            f"redacted, in {p['events_filtered']} event(s)"
            + (f"; {p['unclosed_tags']} unclosed private tag(s) left unfiltered" if p.get("unclosed_tags") else ""),
            f"search: {data['search']}; embedding queue: {outbox}",
            f"forgotten: {data['tombstones']} forget operation(s); store size {data['db_bytes']} bytes",
        ]
        learned = data["learning"]
        if learned:
            lines.append("levels: " + ", ".join(f"{k} {v}" for k, v in learned["levels"].items())
                         + "; uses: " + ", ".join(f"{k} {v}" for k, v in learned["uses"].items()))  # fmt: skip
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(learned["insights"].items()))
            lines.append("insights: " + (kinds or "none"))
        return self.reply(lines, data)

    # ---- insights (the learning loop) ------------------------------------------------------------

    def insights(
        self,
        query: str | None = None,
        *,
        types: Sequence[str] | None = None,
        level: str = "L1",
        limit: int = 10,
        project: str | None = None,
    ) -> Reply:
        """Insights (decisions, conventions, preferences, recurring errors with their fix), highest level first, or
        those whose evidence a search for ``query`` finds."""
        query = (query or "").strip() or None
        if query:
            check_length("query", query)
        check_range("limit", limit)
        if level not in LEVELS[1:]:
            raise ToolInputError(f"level must be one of {', '.join(LEVELS[1:])}, got {level!r}")
        with self.open(project) as mem:
            if not mem.store.ephemeral:
                try:  # bring the learning tables up to date, as mem-tasks does (the daemon does it anyway)
                    mem.catch_up(budget_s=5.0)
                except sqlite3.OperationalError:
                    pass  # locked: what is derived so far
            rows = mem.insights(types=list(types or ()), min_level=LEVELS.index(level), limit=limit, query=query,
                                engine=self.engine)  # fmt: skip
            where = self._where(mem)
        out = [
            {"id": r["id"], "type": r["insight_type"], "level": LEVELS[r["level"]], "verified": r["level"] >= 3
             and r["evidence_aligned"], "content": r["content"], "support": r["support"], "citation": r["cite"],
             "sources": [s["cite"] for s in r["sources"]]}
            for r in rows
        ]  # fmt: skip
        data = {"project": where, "query": query, "insights": out}
        if not out:
            return self.reply([f"No insights{f' for {query!r}' if query else ''} in {where} yet."], data)
        lines = [f"{len(out)} insight(s) in {where}{f' for {query!r}' if query else ''}, highest level first:"]
        for r in out:
            mark = "verified " if r["verified"] else ""
            cites = " ".join(f"[{c}]" for c in dict.fromkeys(r["sources"]))
            lines.append(f"- {r['level']} {mark}{r['type']}: {one_line(r['content'], 240)} (evidence {cites})")
        lines.append("Next: mem-details refs=[<citations>] for the full text of a source.")
        return self.reply(lines, data)

    def search_mode(self) -> str:
        engine = self.engine
        if engine is None or not engine.vectors:
            return "full-text only (semantic search off for this server)"
        if engine.model_error:
            return f"full-text only (embedding model unavailable: {engine.model_error})"
        return "hybrid (full-text + semantic)"

    def source(self, citation: str, *, window: int = 3, max_chars: int = 8000, project: str | None = None) -> Reply:
        ref = check_ref(citation, "citation")
        check_range("window", window)
        check_range("max_chars", max_chars)
        with self.open(project) as mem:
            event = self._get(mem, ref)
            around = self._around(mem, event, window, window)
            home = mem
            if event.project_id != mem.project.id:  # retrieval.cross_project: the session is in its own store
                home = next((o for o in mem.others() if o.project.id == event.project_id), mem)
            session = home.store.session(event.session_id) or {}
            where = self._where(home)
        summary = filter_text(str(session.get("summary") or ""), self.cfg.privacy).text
        lines = [f"[{event.cite}]: {kind(event.type)} from {event.ts}, session {event.session_id}, {where}."]
        if session:
            ended = f"ended {session['ended_at']}" if session.get("ended_at") else "no recorded end"
            lines.append(
                f"Session: started {session.get('started_at')}, {ended}, {session.get('prompt_count')} prompt(s)"
                + (f"; summary: {one_line(summary, 400)}" if summary else "")
            )
        meta = _meta_line(event.metadata)
        if meta:
            lines.append(meta)
        lines += ["Content:", capped(event.content, max_chars)]
        others = [e for e in around if e.id != event.id]
        if others:
            lines.append(f"Around it in the session ({window} before/after, → is the source):")
            lines.extend(event_line(e, 200, "→" if e.id == event.id else " ") for e in around)
        data = {
            "event": {**_public(event), "content": capped(event.content, max_chars)},
            "session": {k: session.get(k) for k in ("id", "started_at", "ended_at", "prompt_count")}
            | {"summary": summary},
            "neighbours": [{**_brief(e), "current": e.id == event.id} for e in around],
        }
        return self.reply(lines, data)

    def projects(self) -> Reply:
        default = os.path.realpath(self.default_project or os.getcwd())
        default_id = projects.identify(default).id
        rows = []
        for entry in projects.known_projects():
            db = paths.db_path(str(entry["id"]))
            if not db.exists():
                continue
            rows.append(
                {
                    "id": entry["id"],
                    "name": entry.get("name"),
                    "root": entry.get("root"),
                    "events": _count(str(db)),
                    "default": entry["id"] == default_id,
                }
            )
        if not rows:
            return self.reply(["memlane has no memory yet (install its hooks or import history)."], {"projects": []})
        lines = [f"{len(rows)} project(s) with memory (pass one as project=<root>):"]
        lines.extend(
            f"- {r['root']} · {r['events']} event(s) · id {r['id']}" + (" · default" if r["default"] else "")
            for r in rows
        )
        return self.reply(lines, {"projects": rows})

    # ---- tasks ---------------------------------------------------------------------------------

    def tasks(
        self,
        action: str = "list",
        *,
        task: str | None = None,
        title: str | None = None,
        status: str | None = None,
        priority: str | None = None,
        blockers: Sequence[str] | None = None,
        note: str | None = None,
        all_tasks: bool = False,
        project: str | None = None,
    ) -> Reply:
        """Tasks named across sessions: list, show one, add one, or update one (the state machine is enforced)."""
        if action not in TASK_ACTIONS:
            raise ToolInputError(f"unknown action '{action}' (one of: {', '.join(TASK_ACTIONS)})")
        if action in ("show", "update") and not (task or "").strip():
            raise ToolInputError(f"action '{action}' needs task: a task id (task-…) or its title, from action=list")
        if action == "add" and not (title or "").strip():
            raise ToolInputError("action 'add' needs title: what the task is")
        if action == "update" and status is None and priority is None and blockers is None and note is None:
            raise ToolInputError("action 'update' needs something to change: status, priority, blockers or note")
        with self.open(project) as mem:
            mem.catch_up(budget_s=5.0)
            if action == "list":
                statuses = [status] if status else (None if all_tasks else ["in_progress", "blocked", "pending"])
                rows = mem.tasks(statuses, 100)
                lines = [f"{len(rows)} task(s) in {self._where(mem)}:" if rows else "No open tasks."]
                lines.extend(_task_line(r) for r in rows)
                if rows:
                    lines.append("Next: mem-tasks action=show task=<id> for a task's history and blockers.")
                return self.reply(lines, {"tasks": rows})
            if action == "add":
                view = mem.add_task(
                    str(title), status=status or "pending", priority=priority, blockers=blockers or (), note=note
                )
            elif action == "update":
                view = mem.update_task(str(task), status=status, priority=priority, blockers=blockers, note=note)
            else:
                view = mem.task(str(task))
        lines = [_task_line(view)]
        for h in view.get("history") or []:
            change = f" {h['from_status'] or ''} → {h['to_status']}" if h["to_status"] else ""
            lines.append(f"  {h['ts'][:16]} {h['kind']}{change}")
        for s in view.get("suggested_blockers") or []:
            lines.append(f"  maybe blocked by (suggested): {s['title']} [{s['id']}]")
        if view.get("events"):
            lines.append("Named in: " + ", ".join(f"[{e['citation']}]" for e in view["events"][-10:]))
        return self.reply(lines, {"task": view})

    # ---- start-of-task pack --------------------------------------------------------------------

    def context_pack(
        self,
        task: str | None = None,
        *,
        max_chars: int = 6000,
        sessions: int = 3,
        memories: int = 8,
        project: str | None = None,
    ) -> Reply:
        check_length("task", (task or "").strip())
        with self.open(project) as mem:
            got = pack.build(mem, task, max_chars=max_chars, sessions=sessions, memories=memories, engine=self.engine)
        return Reply(got.text, got.data)


TASK_ACTIONS = ("list", "show", "add", "update")


def _task_line(task: dict[str, Any]) -> str:
    blockers = "; ".join(b["title"] for b in task.get("blockers") or [] if b["open"])
    workflow = task.get("workflow")
    return (
        f"- {task['id']} [{task['status']}, {task['priority']}] {task['title']}"
        + (f" (blocked by {blockers})" if blockers else "")
        + (f" (workflow {workflow['task']}: {workflow['status']})" if workflow else "")
    )


def _project_of(mem: Memory, event: Event) -> dict[str, Any]:
    """``{"project_id": …}`` on a result from another project (retrieval.cross_project), else nothing."""
    return {} if event.project_id == mem.project.id else {"project_id": event.project_id}


def _brief(event: Event) -> dict[str, Any]:
    return {"citation": event.cite, "type": event.type, "ts": event.ts, "summary": one_line(event.content, 200)}


def _public(event: Event) -> dict[str, Any]:
    data = event.as_dict()
    data.pop("canonical_key", None)
    return data


_META_SKIP = {"privacy", "transcript_path", "cwd"}


def _meta_line(meta: dict[str, Any]) -> str:
    shown = {k: v for k, v in meta.items() if k not in _META_SKIP and v not in (None, "", [], {})}
    return "metadata: " + json.dumps(shown, ensure_ascii=False, default=str)[:1000] if shown else ""


def _count(db: str) -> int | None:
    try:
        return peek.count_events(db)
    except sqlite3.Error:
        return None
