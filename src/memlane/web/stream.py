"""``GET /stream``: the live stream as Server-Sent Events, driven by new rows.

Each poll asks the store only for rows with a ``seq`` above the last one sent (``Memory.after_seq``, one index
range), every ``dashboard.live_poll_ms``. Every event carries its ``seq`` as the SSE id, so a browser that
reconnects (EventSource does so by itself) sends ``Last-Event-ID`` and gets exactly what it missed; a first
connection starts after ``?after=<seq>`` (the last row the page showed) or at the newest row. Each message is the
event's row, rendered by the same template as the page (escaped: stored content is never markup). A comment line
every ``KEEPALIVE_S`` keeps proxies from closing an idle stream. An open stream counts as use of the daemon,
so the daemon does not exit for idleness while someone watches.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from memlane.errors import MemlaneError
from memlane.memory import check_types
from memlane.web.pages import types_param
from memlane.web.site import Site, error_status

KEEPALIVE_S = 15.0
BATCH = 200


def start_seq(request: Request) -> int | None:
    """Where a stream starts: after ``Last-Event-ID`` (a reconnect), else ``?after=``; None = the newest row."""
    for raw in (request.headers.get("last-event-id"), request.query_params.get("after")):
        if raw is not None and raw.strip().isdigit():
            return int(raw.strip())
    return None


def sse(seq: int, html: str) -> str:
    data = "\n".join(f"data: {line}" for line in html.splitlines() or [""])
    return f"id: {seq}\nevent: memlane\n{data}\n\n"


def routes(site: Site) -> list[Route]:
    async def stream(request: Request) -> Response:
        pid = site.project_id(request)
        types = types_param(request)
        first = start_seq(request)
        poll_s = max(site.daemon.cfg.dashboard.live_poll_ms, 50) / 1000
        template = site.templates.get_template("_event_row.html")
        frame = {
            "privacy_marker": site.daemon.cfg.privacy.marker,
            "secret_marker": site.daemon.cfg.privacy.secret_marker,
        }

        def latest() -> int:
            with site.memory(pid) as mem:
                return mem.latest_seq()

        def poll(after: int) -> list[tuple[int, str]]:
            with site.memory(pid) as mem:
                rows = mem.after_seq(after, types or None, BATCH)
            return [(e.seq, template.render(e=e, focus="", live=True, **frame)) for e in rows]

        try:
            check_types(types)
            last = first if first is not None else await asyncio.to_thread(latest)
        except (MemlaneError, sqlite3.Error) as exc:
            status, message = error_status(exc)
            return Response(message, status_code=status, media_type="text/plain")

        async def events() -> AsyncIterator[str]:
            nonlocal last
            quiet_since = time.monotonic()
            yield f"retry: 2000\n: memlane live stream from seq {last}\n\n"
            while not site.daemon.stop.is_set() and not await request.is_disconnected():
                try:
                    batch = await asyncio.to_thread(poll, last)
                except (
                    MemlaneError,
                    OSError,
                    sqlite3.Error,
                ) as exc:  # a store that went away: say so, the browser retries
                    yield f"event: memlane-error\ndata: {str(exc).splitlines()[0] if str(exc) else 'error'}\n\n"
                    return
                site.daemon.touch()
                for seq, html in batch:
                    last = seq
                    yield sse(seq, html)
                if batch:
                    quiet_since = time.monotonic()
                elif time.monotonic() - quiet_since > KEEPALIVE_S:
                    quiet_since = time.monotonic()
                    yield ": keep-alive\n\n"
                if len(batch) < BATCH:
                    await asyncio.sleep(poll_s)

        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    return [Route("/stream", stream, methods=["GET"])]
