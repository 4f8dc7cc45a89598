"""The start-of-task context pack: recent sessions, open threads, failed tool runs and the memories
relevant to a task, composed with the persistent and volatile context blocks within one budget.

The library's answer to "what should I know before starting on X": the MCP tool ``mem-context-pack``
and ``memlane context compose --task mcp_context_pack`` both call ``build``. Everything read from the
store is privacy-filtered on the way out (events are stored filtered; this is a second line of
defence for older data and changed rules). Nothing here reads a project file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memlane.errors import InputError
from memlane.privacy import filter_text, filter_value
from memlane.retrieval.disclosure import index_row, one_line
from memlane.retrieval.hybrid import Hit
from memlane.store.db import Event

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memlane.config import Config, PrivacyConfig
    from memlane.context.service import PromptContext
    from memlane.memory import Memory
    from memlane.project import Project

BOUNDS = {"max_chars": (200, 100_000), "sessions": (0, 10), "memories": (0, 20)}


@dataclass
class Pack:
    text: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Section:
    title: str
    lines: list[str]
    priority: int  # lower is filled first when the budget is short


def day(ts: str) -> str:
    return ts[:16].replace("T", " ")


def kind(event_type: str) -> str:
    return event_type.replace("_", " ")


def event_line(event: Event, limit: int = 200, mark: str = "-") -> str:
    return f"{mark} [{event.cite}] {day(event.ts)} {kind(event.type)}: {one_line(event.content, limit)}"


def hit_line(row: dict[str, Any]) -> str:
    return (
        f"- [{row['citation']}] {row['score']:.2f} ({row['confidence']}) {day(row['ts'])} "
        f"{kind(row['type'])}: {row['summary']}"
    )


def clean(event: Event, privacy: PrivacyConfig) -> Event:
    """The event with its text and metadata privacy-filtered again."""
    meta, _ = filter_value(event.metadata, privacy)
    text = filter_text(event.content, privacy).text
    return Event(
        event.seq, event.id, event.citation, event.type, event.session_id, event.project_id, event.ts,
        text, event.canonical_key, meta,
    )  # fmt: skip


def where(proj: Project) -> str:
    return f"{proj.name} ({proj.root_str})"


def check_whole(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
    return value


def fit_sections(header: str, sections: Sequence[Section], max_chars: int) -> tuple[str, dict[str, int]]:
    """Header plus whole lines of each section within ``max_chars``.

    Every non-empty section first gets an equal share of the budget, so a long list of memories never
    crowds out the open threads; what is left over goes to sections by priority.
    """
    budget = max_chars - len(header) - 1
    live = [s for s in sections if s.lines]
    taken = {s.title: 0 for s in live}
    used = 0
    share = budget // max(1, len(live))
    for sec in live:
        spent = len(sec.title) + 1
        for line in sec.lines:
            if spent + len(line) + 1 > share:
                break
            spent += len(line) + 1
            taken[sec.title] += 1
        if taken[sec.title]:
            used += spent
    for sec in sorted(live, key=lambda s: s.priority):
        for line in sec.lines[taken[sec.title] :]:
            cost = len(line) + 1 + (0 if taken[sec.title] else len(sec.title) + 1)
            if used + cost > budget:
                break
            used += cost
            taken[sec.title] += 1
    out = [header]
    for sec in sections:
        if taken.get(sec.title):
            out.append(sec.title)
            out.extend(sec.lines[: taken[sec.title]])
    return "\n".join(out), {s.title: taken.get(s.title, 0) for s in sections}


def build(
    mem: Memory,
    task: str | None = None,
    *,
    max_chars: int = 6000,
    sessions: int = 3,
    memories: int = 8,
    engine: Any = None,
    context: PromptContext | None = None,
) -> Pack:
    """The pack for ``mem``'s project. ``engine``: a warm ``retrieval.engine.Engine`` (None: full-text
    search); ``context``: the persistent and volatile blocks (default: ``stored_context``)."""
    for name, value in (("max_chars", max_chars), ("sessions", sessions), ("memories", memories)):
        check_whole(name, value, *BOUNDS[name])
    privacy = mem.config.privacy
    task = (task or "").strip()
    recent = mem.store.sessions(limit=max(sessions, 10))
    session_lines = [_session_line(mem, s) for s in recent[:sessions]]
    threads = _open_threads(mem, recent)
    errors = _recent_errors(mem)
    hits: list[Hit] = []
    if task and memories:
        hits = mem.search(task, limit=memories, engine=engine, semantic=engine is not None)
    memory_rows = [index_row(Hit(clean(h.event, privacy), h.score, h.sources, h.confidence)) for h in hits]
    sections = [
        Section("## Recent sessions (newest first)", session_lines, 2),
        Section("## Open threads (last prompt of sessions with no recorded end)", threads, 1),
        Section("## Recent failed tool runs", errors, 3),
        Section(f'## Memories relevant to "{one_line(task, 80)}"', [hit_line(r) for r in memory_rows], 0),
    ]
    place = where(mem.project)
    header = f"memlane context pack for {place}. Expand any [mem:…] with mem-details or mem-timeline."
    counts: dict[str, int] = {}

    def body(budget: int) -> str:
        text, got = fit_sections("", sections, budget)
        counts.update(got)
        return text.lstrip("\n") if any(got.values()) else "Nothing stored for this project yet."

    from memlane.context.compose import PromptComposer

    if context is None:
        context = stored_context(mem.project, mem.config)
    composed = PromptComposer(mem.config).compose_parts(
        "mcp_context_pack", context, body, header=header, max_chars=max_chars
    )
    data = {
        "project": place,
        "task": task,
        "sessions": recent[:sessions],
        "open_threads": threads,
        "recent_errors": errors,
        "memories": memory_rows,
        "included": counts,
        "context": [b.as_dict() for b in composed.blocks],
    }
    return Pack(filtered_text(composed.text, privacy, max_chars), filter_value(data, privacy)[0])


def filtered_text(text: str, privacy: PrivacyConfig, max_chars: int | None = None) -> str:
    """``text`` privacy-filtered, then cut back to ``max_chars`` at a line end (a redaction marker can be
    longer than what it replaced)."""
    text = filter_text(text, privacy).text
    if max_chars is not None and len(text) > max_chars:
        text = text[: text.rfind("\n", 0, max_chars)] if "\n" in text[:max_chars] else text[:max_chars]
    return text


def stored_context(proj: Project, cfg: Config) -> PromptContext:
    """Persistent + volatile context for a pack: the daemon's (rules refreshed, editor state) when it
    runs, else the project's stored snapshots. Either way this process reads no project file."""
    from urllib.parse import quote

    from memlane.context.scope import ContextScope, PersistenceKind
    from memlane.context.service import PromptContext
    from memlane.context.store import project_store
    from memlane.daemon import client

    deadline = max(cfg.daemon.hook_deadline_ms, 300)
    live = client.call(f"/api/context?projectRoot={quote(proj.root_str)}", None, deadline, method="GET")
    if live is not None and isinstance(live.get("persistent"), dict) and isinstance(live.get("volatile"), dict):
        return PromptContext(live["persistent"], live["volatile"], project_root=proj.root_str)
    persistent = project_store(proj.id, ContextScope.APP, PersistenceKind.PERSISTENT).snapshot()
    volatile = project_store(proj.id, ContextScope.APP, PersistenceKind.VOLATILE).snapshot()
    volatile.setdefault("projectRoot", proj.root_str)
    return PromptContext(persistent, volatile, project_root=proj.root_str)


def _session_line(mem: Memory, s: dict[str, Any]) -> str:
    privacy = mem.config.privacy
    summary = one_line(filter_text(str(s.get("summary") or ""), privacy).text, 300)
    if not summary:
        first = mem.store.history(session=s["id"], types=["user_prompt"], limit=1, oldest_first=True)
        summary = "first prompt: " + one_line(clean(first[0], privacy).content, 200) if first else "no prompts"
    status = "ended" if s.get("ended_at") else "open"
    return (
        f"- {day(str(s.get('started_at') or ''))} → {day(str(s.get('last_activity') or ''))} "
        f"({s.get('prompt_count') or 0} prompt(s), {status}) session {str(s['id'])[:8]}: {summary}"
    )


def _open_threads(mem: Memory, recent: list[dict[str, Any]]) -> list[str]:
    lines = []
    for s in recent:
        if s.get("ended_at"):
            continue
        last = mem.store.history(session=s["id"], types=["user_prompt"], limit=1)
        if last:
            lines.append(event_line(clean(last[0], mem.config.privacy), 240))
    return lines


def _recent_errors(mem: Memory, limit: int = 5) -> list[str]:
    lines = []
    for event in mem.store.history(types=["tool_observation"], limit=300):
        if event.metadata.get("success") is False:
            event = clean(event, mem.config.privacy)
            tool = event.metadata.get("tool_name") or "tool"
            error = str(event.metadata.get("error") or event.content)
            lines.append(f"- [{event.cite}] {day(event.ts)} {tool}: {one_line(error, 200)}")
            if len(lines) >= limit:
                break
    return lines
