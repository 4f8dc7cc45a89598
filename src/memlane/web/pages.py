"""The dashboard's pages for reading: live stream, sessions and their timelines, one event, search, what Claude
was told, stats, workflow board, context preview. Each page makes library calls (``Memory`` and the other
library modules) and renders a template; mutations are in ``edits.py``.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from memlane.errors import InputError, MemlaneError
from memlane.memory import Memory
from memlane.store.browse import COUNT_CAP
from memlane.store.records import EVENT_TYPES
from memlane.web import templating
from memlane.web.site import Site

PAGE = 50  # events per page (and per scroll step)
TIMELINE_PAGE = 100


def cursor(text: str | None) -> tuple[str, int] | None:
    """``ts|seq`` (a page's last row) → (ts, seq)."""
    if not text:
        return None
    ts, sep, seq = text.rpartition("|")
    if not sep or not seq.isdigit() or not ts:
        raise InputError(f"after must be ts|seq of the last row shown, got {text[:80]!r}")
    return ts, int(seq)


def next_cursor(events: list[Any], size: int) -> str | None:
    return f"{events[-1].ts}|{events[-1].seq}" if len(events) == size else None


def types_param(request: Request) -> list[str]:
    """``?type=a&type=b`` or ``?type=a,b`` (unknown types are refused by the library)."""
    out: list[str] = []
    for value in request.query_params.getlist("type"):
        out.extend(t for t in value.split(",") if t)
    return out


def int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InputError(f"{name} must be a whole number from {low} to {high}, got {raw[:40]!r}") from None
    if not low <= value <= high:
        raise InputError(f"{name} must be a whole number from {low} to {high}, got {value}")
    return value


def routes(site: Site) -> list[Route]:
    async def live(request: Request) -> Response:
        types = types_param(request)

        def build(mem: Memory) -> dict[str, Any]:
            events = mem.page(types=types, limit=PAGE)
            return {
                "events": events,
                "latest": mem.latest_seq(),
                "types": types,
                "all_types": EVENT_TYPES,
                "next": next_cursor(events, PAGE),
                "page_url": "/events/page",
                "filters": {"type": types},
            }

        return await site.page(request, "live.html", build)

    async def events_page(request: Request) -> Response:
        """The next page of a list (scrolling): events older than ``after`` (or newer, in a timeline)."""
        after = request.query_params.get("after")
        session = request.query_params.get("session") or None
        oldest_first = request.query_params.get("order") == "asc"
        types = types_param(request)
        size = TIMELINE_PAGE if oldest_first else PAGE

        def build(mem: Memory) -> dict[str, Any]:
            events = mem.page(after=cursor(after), session=session, types=types, limit=size, oldest_first=oldest_first)
            return {
                "events": events,
                "next": next_cursor(events, size),
                "page_url": "/events/page",
                "filters": {"type": types, "session": session or "", "order": "asc" if oldest_first else ""},
                "focus": "",
            }

        return await site.fragment(request, "_event_rows.html", build)

    async def sessions(request: Request) -> Response:
        def build(mem: Memory) -> dict[str, Any]:
            page = int_param(request, "page", 1, 1, 1_000_000)
            rows, total = mem.sessions_page(page, 20)
            return {"sessions": rows, "total": total, "page": page, "pages": max(1, -(-total // 20))}

        return await site.page(request, "sessions.html", build)

    async def session(request: Request) -> Response:
        sid = request.path_params["sid"]
        at = request.query_params.get("at")

        def build(mem: Memory) -> dict[str, Any]:
            info = mem.session(sid)
            if at:
                # Opened from a citation: the event with what led up to it, then onwards.
                focus = mem.get(at)
                before = mem.timeline(focus.id, before=10, after=0)
                events = before + mem.page(
                    session=sid, after=(focus.ts, focus.seq), limit=TIMELINE_PAGE, oldest_first=True
                )
                more = mem.page(session=sid, after=(events[-1].ts, events[-1].seq), limit=1, oldest_first=True)
                nxt = f"{events[-1].ts}|{events[-1].seq}" if more else None
                earlier = before[0].id != _first_id(mem, sid)
            else:
                focus = None
                events = mem.page(session=sid, limit=TIMELINE_PAGE, oldest_first=True)
                nxt = next_cursor(events, TIMELINE_PAGE)
                earlier = False
            return {
                "session": info,
                "continuity": next(iter(mem.continuity(1, sid)), None),
                "events": events,
                "next": nxt,
                "page_url": "/events/page",
                "filters": {"session": sid, "order": "asc", "type": []},
                "focus": focus.id if focus else "",
                "earlier": earlier,
            }

        return await site.page(request, "session.html", build)

    async def event(request: Request) -> Response:
        ref = request.path_params["ref"]

        def build(mem: Memory) -> dict[str, Any]:
            ev = mem.get(ref)
            mem.fetched([ev.id], "web")  # opened in full: a use (the learning loop)
            learned = mem.usage(ev.id, 10)
            record = mem.injection_of(ev.id) if ev.type == "user_prompt" else None
            return {
                "event": ev,
                "neighbours": mem.timeline(ev.id, 3, 3),
                "injection": record if isinstance(record, dict) else None,
                "injected_into": [p for p, _ in mem.injected_into(ev.id, 10)],
                "learned": learned,
                "privacy": ev.metadata.get("privacy") or {},
                "metadata": {k: v for k, v in ev.metadata.items() if k != "privacy"},
            }

        return await site.page(request, "event.html", build)

    async def citation(request: Request) -> Response:
        """``/m/<citation>``: the event in its session's timeline."""
        ref = request.path_params["ref"]
        ref = ref if ref.startswith("mem:") or len(ref) > 12 else f"mem:{ref}"

        pid = site.project_id(request)

        def find() -> tuple[str, str]:
            with site.memory(pid) as mem:
                ev = mem.get(ref)
                return ev.session_id, ev.id

        try:
            sid, eid = await site.run(find)
        except (MemlaneError, sqlite3.Error) as exc:
            return await site.error_page(request, exc)
        from urllib.parse import quote

        return RedirectResponse(f"/sessions/{quote(sid, safe='')}?at={eid}#ev-{eid}", status_code=303)

    async def search(request: Request) -> Response:
        q = request.query_params.get("q", "")
        layer = request.query_params.get("layer", "index")
        types = types_param(request)
        session = request.query_params.get("session") or None
        since = request.query_params.get("since") or None
        until = request.query_params.get("until") or None

        def build(mem: Memory) -> dict[str, Any]:
            if layer not in ("index", "timeline", "full"):
                raise InputError(f"layer must be index, timeline or full, got {layer[:40]!r}")
            limit = int_param(request, "limit", 20, 1, 200)
            out: dict[str, Any] = {
                "q": q,
                "layer": layer,
                "types": types,
                "all_types": EVENT_TYPES,
                "session_filter": session or "",
                "since": since or "",
                "until": until or "",
                "rows": [],
                "meta": None,
                "terms": templating.terms_of(q),
            }
            if not q.strip():
                return out
            out["rows"], out["meta"] = run_search(site, mem, q, layer, limit, types, session, since, until)
            return out

        return await site.page(request, "search.html", build)

    async def told(request: Request) -> Response:
        session = request.query_params.get("session") or None

        def build(mem: Memory) -> dict[str, Any]:
            limit = int_param(request, "limit", 20, 1, 200)
            return {"prompts": mem.injections(limit, session), "session_filter": session or "", "limit": limit}

        return await site.page(request, "told.html", build)

    async def stats(request: Request) -> Response:
        def build(mem: Memory) -> dict[str, Any]:
            days = int_param(request, "days", 30, 1, 366)
            data = mem.health()
            daily = mem.daily(days)
            return {
                "s": data,
                "daily": daily,
                "days": days,
                "day_max": max([d["eventCount"] for d in daily] + [1]),
                "type_max": max([*data["by_type"].values(), 1]),
                "knowledge": mem.knowledge_stats(),
                "daemon_worker": dict(site.daemon.worker_state),
                "mode": mem.endless_mode()[0],
                "continuity": mem.continuity(10),
            }

        return await site.page(request, "stats.html", build)

    async def workflow(request: Request) -> Response:
        def build(mem: Memory) -> dict[str, Any]:
            from memlane.workflow import progress, store

            memory_id = store.resolve(mem.project.root_str, mem.project.id)
            if memory_id is None:
                return {"memory_id": None, "data": None, "counts": None, "columns": {}}
            data = progress.load(memory_id)
            columns: dict[str, list[tuple[str, dict[str, Any]]]] = {s: [] for s in progress.STATUSES}
            for tid, task in data["tasks"].items():
                columns.setdefault(task.get("status", "pending"), []).append((tid, task))
            return {"memory_id": memory_id, "data": data, "counts": progress.counts(data), "columns": columns}

        return await site.page(request, "workflow.html", build)

    async def context_preview(request: Request) -> Response:
        from memlane.context.compose import TASKS

        task = request.query_params.get("task", "dashboard_preview")
        body = request.query_params.get("body", "")

        def build(mem: Memory) -> dict[str, Any]:
            if task not in TASKS:
                raise InputError(f"unknown task type {task[:40]!r} (one of: {', '.join(sorted(TASKS))})")
            parts = site.daemon.compose_context({"projectRoot": mem.project.root_str, "task": task, "body": body})
            return {"task": task, "tasks": TASKS, "parts": parts, "body": body}

        return await site.page(request, "context.html", build)

    return [
        Route("/", live, methods=["GET"]),
        Route("/events/page", events_page, methods=["GET"]),
        Route("/sessions", sessions, methods=["GET"]),
        Route("/sessions/{sid:path}", session, methods=["GET"]),
        Route("/events/{ref}", event, methods=["GET"]),
        Route("/m/{ref}", citation, methods=["GET"]),
        Route("/search", search, methods=["GET"]),
        Route("/told", told, methods=["GET"]),
        Route("/stats", stats, methods=["GET"]),
        Route("/workflow", workflow, methods=["GET"]),
        Route("/context", context_preview, methods=["GET"]),
    ]


def _first_id(mem: Memory, sid: str) -> str:
    first = mem.page(session=sid, limit=1, oldest_first=True)
    return first[0].id if first else ""


def run_search(
    site: Site,
    mem: Memory,
    q: str,
    layer: str,
    limit: int,
    types: list[str],
    session: str | None,
    since: str | None,
    until: str | None,
    min_score: float = 0.0,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One search with the daemon's warm engine: the disclosure rows and the spec's meta (total matches, time, mode)."""
    from memlane.retrieval.disclosure import disclose

    started = time.perf_counter()
    hits = mem.search(q, limit=limit, types=types, session=session, since=since, until=until, engine=site.daemon.engine)
    hits = [h for h in hits if h.score >= min_score]
    rows = disclose(hits, layer, 10**9, mem.neighbours, mem.config.retrieval).rows
    elapsed = (time.perf_counter() - started) * 1000
    total = mem.count_matches(q)
    meta = {
        "totalMatches": total,
        "totalCapped": total > COUNT_CAP,
        "searchTime": round(elapsed, 1),
        "mode": site.daemon.engine.mode(mem, q),
        "returned": len(rows),
    }
    return rows, meta
