"""The JSON API of the web-viewer spec (``specs/web-viewer-ui`` §3), over the library; docs/dashboard.md lists it.

``GET /api/sessions`` · ``GET /api/sessions/{id}`` · ``GET /api/events`` · ``GET /api/events/{id}`` ·
``GET /api/stats`` · ``GET /api/stats/timeline`` · ``GET|PATCH /api/config`` · ``GET /api/citations/{id}`` ·
``GET /api/projects`` · ``GET /api/injections`` · ``POST /api/dashboard/login`` (Bearer only: a one-time link).
``POST /api/search`` is the daemon's own search route (``daemon.server``), which also takes the spec's shape.

Field names follow the spec (camelCase). The project is ``?project=<id>`` (``GET /api/projects``), else the one
the browser chose; bad input is a 400 (404 for an unknown id) with ``{"error": "<one line>"}``.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from memlane import config, config_file
from memlane.errors import InputError, MemlaneError
from memlane.memory import Memory
from memlane.store.browse import COUNT_CAP
from memlane.store.records import Event
from memlane.web import templating
from memlane.web.edits import LOCKED, settings_rows
from memlane.web.pages import cursor, int_param, types_param
from memlane.web.site import Site, error_json

HAS_CODE = ("```", "def ", "function ", "class ", "import ", "=> ")


def brief(event: Event) -> dict[str, Any]:
    """An event in a list (spec ``EventsResponse``)."""
    return {
        "eventId": event.id,
        "citation": event.cite,
        "eventType": event.type,
        "timestamp": event.ts,
        "sessionId": event.session_id,
        "preview": templating.one_line(event.content, 100),
        "metadata": {
            "tokenCount": len(event.content) // 4 + 1,
            "hasCode": any(mark in event.content for mark in HAS_CODE),
        },
    }


def full(event: Event) -> dict[str, Any]:
    """An event in full (spec ``EventDetailResponse.event``): the stored content and metadata as ``payload``."""
    return {**brief(event), "payload": {"content": event.content, "metadata": event.metadata}}


def session_json(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "sessionId": row["id"],
        "projectPath": row.get("cwd"),
        "startedAt": row["started_at"],
        "lastActivity": row["last_activity"],
        "endedAt": row.get("ended_at"),
        "eventCount": row["event_count"],
        "promptCount": row["prompt_count"],
        "status": "ended" if row.get("ended_at") else "active",
        "summary": row.get("summary"),
    }


def routes(site: Site) -> list[Route]:
    async def projects(request: Request) -> Response:
        return JSONResponse(
            {"projects": [{"id": p["id"], "name": p.get("name"), "root": p.get("root")} for p in site.projects()]}
        )

    async def sessions(request: Request) -> Response:
        def call(mem: Memory) -> dict[str, Any]:
            page = int_param(request, "page", 1, 1, 1_000_000)
            size = int_param(request, "pageSize", 20, 1, 200)
            rows, total = mem.sessions_page(page, size)
            return {
                "sessions": [session_json(r) for r in rows],
                "total": total,
                "page": page,
                "pageSize": size,
                "hasMore": page * size < total,
            }

        return await site.json(request, call)

    async def session(request: Request) -> Response:
        sid = request.path_params["sid"]

        def call(mem: Memory) -> dict[str, Any]:
            info = mem.session(sid)
            limit = int_param(request, "limit", 100, 1, 200)
            events = mem.page(
                session=sid, after=cursor(request.query_params.get("after")), limit=limit, oldest_first=True
            )
            by_type = info["by_type"]
            return {
                "session": session_json(info),
                "events": [brief(e) for e in events],
                "next": f"{events[-1].ts}|{events[-1].seq}" if len(events) == limit else None,
                "stats": {
                    "promptCount": by_type.get("user_prompt", 0),
                    "responseCount": by_type.get("agent_response", 0),
                    "toolCount": by_type.get("tool_observation", 0),
                    "eventCount": sum(by_type.values()),
                },
            }

        return await site.json(request, call)

    async def events(request: Request) -> Response:
        def call(mem: Memory) -> dict[str, Any]:
            q = request.query_params
            limit = int_param(request, "limit", 50, 1, 200)
            filters: dict[str, Any] = {
                "session": q.get("sessionId") or None,
                "types": types_param(request) or None,
                "since": q.get("since") or None,
                "until": q.get("until") or None,
            }
            page = mem.page(after=cursor(q.get("after")), limit=limit, **filters)
            total = mem.count(**filters)
            return {
                "events": [brief(e) for e in page],
                "total": total,
                "totalCapped": total > COUNT_CAP,
                "next": f"{page[-1].ts}|{page[-1].seq}" if len(page) == limit else None,
            }

        return await site.json(request, call)

    async def event(request: Request) -> Response:
        ref = request.path_params["ref"]

        def call(mem: Memory) -> dict[str, Any]:
            ev = mem.get(ref)
            around = mem.timeline(ev.id, 1, 1)
            at = around.index(ev)
            return {
                "event": full(ev),
                "related": {
                    "previous": around[at - 1].id if at > 0 else None,
                    "next": around[at + 1].id if at + 1 < len(around) else None,
                },
            }

        return await site.json(request, call)

    async def citation(request: Request) -> Response:
        """A citation's record (citations-system §6.2, with the learning loop's usage): the event, its neighbours,
        the prompts it was injected into, how often it was injected, listed, fetched and cited (and in how many
        sessions), its level with the counters it was judged on, the sessions that cited it, its insights."""
        ref = request.path_params["ref"]
        ref = ref if ref.startswith("mem:") or len(ref) > 12 else f"mem:{ref}"

        def call(mem: Memory) -> dict[str, Any]:
            ev = mem.get(ref)
            around = mem.timeline(ev.id, 1, 1)
            at = around.index(ev)
            injected = mem.injected_into(ev.id, 50)
            usage = mem.usage(ev.id, 50)
            cited = [
                {"sessionId": s["session_id"], "uses": s["uses"], "firstUsed": s["first"], "lastUsed": s["last"]}
                for s in usage["cited_in"]
            ]
            insights = [
                {"id": i["id"], "type": i["insight_type"], "level": i["level"], "content": i["content"],
                 "evidenceAligned": i["evidence_aligned"]}
                for i in usage["insights"]
            ]  # fmt: skip
            return {
                "usage": {**usage["counts"], "sessions": len(usage["used_in"])},
                "level": {k: v for k, v in usage["level"].items() if k != "event_id"},
                "citedIn": cited,
                "insights": insights,
                "citation": {
                    "id": ev.citation,
                    "cite": ev.cite,
                    "eventId": ev.id,
                    "sessionId": ev.session_id,
                    "timestamp": ev.ts,
                    "eventType": ev.type,
                    "preview": templating.one_line(ev.content, 50),
                },
                "event": full(ev),
                "related": {
                    "previous": around[at - 1].cite if at > 0 else None,
                    "next": around[at + 1].cite if at + 1 < len(around) else None,
                },
                "injectedInto": [
                    {
                        "eventId": p.id,
                        "citation": p.cite,
                        "sessionId": p.session_id,
                        "timestamp": p.ts,
                        "tier": _tier(record, ev.cite),
                    }
                    for p, record in injected
                ],
            }

        return await site.json(request, call)

    async def injections(request: Request) -> Response:
        def call(mem: Memory) -> dict[str, Any]:
            limit = int_param(request, "limit", 20, 1, 200)
            rows = mem.injections(limit, request.query_params.get("sessionId") or None)
            return {"prompts": [{**brief(e), "injection": record or None} for e, record in rows]}

        return await site.json(request, call)

    async def stats(request: Request) -> Response:
        def call(mem: Memory) -> dict[str, Any]:
            h = mem.health()
            ob = h["outbox_health"]
            inj = h["injection"]
            return {
                "storage": {
                    "eventCount": h["events"],
                    "dbSizeMB": round(h["db_bytes"] / 1e6, 3),
                    "vectorSizeMB": round(h["vectors_bytes"] / 1e6, 3),
                },
                "sessions": {"total": h["sessions"]},
                "embeddings": {
                    "pending": ob["pending"] + ob["processing"],
                    "processed": ob["done"],
                    "failed": ob["failed"],
                    "avgProcessTime": ob["avg_seconds"],
                    "oldestWaiting": ob["oldest_waiting"],
                    "errors": ob["failed_errors"],
                },
                "byType": h["by_type"],
                "privacy": h["privacy"],
                "redactions": h["redactions"],
                "injection": {**inj, "rate": round(inj["injected"] / inj["prompts"], 3) if inj["prompts"] else None},
                "tombstones": h["tombstones"],
                "firstActivity": h["first_activity"],
                "lastActivity": h["last_activity"],
                "knowledge": mem.knowledge_stats(),
            }

        return await site.json(request, call)

    async def timeline(request: Request) -> Response:
        def call(mem: Memory) -> dict[str, Any]:
            return {"daily": mem.daily(int_param(request, "days", 30, 1, 366))}

        return await site.json(request, call)

    async def get_config(request: Request) -> Response:
        def call() -> dict[str, Any]:
            rows = settings_rows(site.daemon.cfg)
            values = config.as_dict(config.load())
            values["dashboard"]["password_hash"] = "(set)" if values["dashboard"]["password_hash"] else ""
            return {
                "config": values,
                "editable": [r["dotted"] for r in rows if r["editable"]],
                "sources": {r["dotted"]: r["source"] for r in rows},
            }

        try:
            return JSONResponse(await site.run(call))
        except MemlaneError as exc:
            return error_json(exc)

    async def patch_config(request: Request) -> Response:
        """``{"updates": {"section.key": value, …}}`` (or ``{"section": {"key": value}}``): each value checked as
        ``memlane config set`` checks it; a bad one is refused with its message and nothing is written."""
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"error": "body must be JSON"}, status_code=400)
        updates = body.get("updates") if isinstance(body, dict) else None
        if not isinstance(updates, dict) or not updates:
            return JSONResponse({"error": 'give {"updates": {"section.key": value}}'}, status_code=400)

        def call() -> dict[str, Any]:
            flat: dict[str, Any] = {}
            for key, value in updates.items():
                if isinstance(value, dict):
                    flat.update({f"{key}.{k}": v for k, v in value.items()})
                else:
                    flat[key] = value
            locked = [k for k in flat if k in LOCKED]
            if locked:
                raise InputError(f"{locked[0]} is set at the terminal: memlane dashboard --set-password")
            config_file.set_values(flat)
            rows = {r["dotted"]: r for r in settings_rows(site.daemon.cfg)}
            return {
                "success": True,
                "config": {k: config.get_value(config.load(), k) for k in flat},
                "restartRequired": any(rows[k]["restart"] for k in flat),
            }

        try:
            return JSONResponse(await site.run(call))
        except MemlaneError as exc:
            return error_json(exc)

    async def login_link(request: Request) -> Response:
        """A one-time login link, for ``memlane dashboard`` (its Bearer token; a browser session cannot ask)."""
        if not request.headers.get("authorization"):
            return JSONResponse({"error": "a login link needs the daemon's token"}, status_code=403)
        try:
            body = await request.json()
        except ValueError:
            body = {}
        pid = body.get("project_id") if isinstance(body, dict) else None
        if pid is not None and not isinstance(pid, str):
            return JSONResponse({"error": "project_id must be a string"}, status_code=400)
        code = site.daemon.web_auth.issue_code(pid)
        return JSONResponse({"path": f"/login?code={code}", "expires_s": 600})

    return [
        Route("/api/projects", projects, methods=["GET"]),
        Route("/api/sessions", sessions, methods=["GET"]),
        Route("/api/sessions/{sid:path}", session, methods=["GET"]),
        Route("/api/events", events, methods=["GET"]),
        Route("/api/events/{ref}", event, methods=["GET"]),
        Route("/api/citations/{ref}", citation, methods=["GET"]),
        Route("/api/injections", injections, methods=["GET"]),
        Route("/api/stats", stats, methods=["GET"]),
        Route("/api/stats/timeline", timeline, methods=["GET"]),
        Route("/api/config", get_config, methods=["GET"]),
        Route("/api/config", patch_config, methods=["PATCH"]),
        Route("/api/dashboard/login", login_link, methods=["POST"]),
    ]


def _tier(record: Any, cite: str) -> str | None:
    """Which part of a prompt's injection named ``cite``: full, index or left_out."""
    if not isinstance(record, dict):
        return None
    for tier in ("full", "index", "left_out"):
        for entry in record.get(tier) or []:
            if isinstance(entry, dict) and entry.get("cite") == cite:
                return tier
    return None
