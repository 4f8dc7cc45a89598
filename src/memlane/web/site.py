"""What every dashboard route shares: the daemon it runs in, the project a request is about, one library call
off the event loop, and pages rendered with the common frame (project switcher, CSRF token, status line).

A route parses its input, makes library calls through ``Site.run`` and renders; it never touches SQL. A
``MemlaneError`` becomes a 400 (404 for something named that does not exist) with its one-line message: as a
page for people, as ``{"error": message}`` for the JSON API, as in the rest of the daemon's API.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from memlane import paths, project
from memlane.errors import MemlaneError, NotFoundError
from memlane.memory import Memory
from memlane.web import auth, templating


class Site:
    """The dashboard inside one daemon. ``daemon`` gives ``cfg``, ``engine``, ``gate``, ``stop``, ``touch()``,
    ``web_auth`` and ``compose_context(body)``."""

    def __init__(self, daemon: Any) -> None:
        self.daemon = daemon
        self.templates = templating.env()

    # ---- which project -------------------------------------------------------------------------

    @staticmethod
    def projects() -> list[dict[str, Any]]:
        """Projects with a store on disk, newest first (the switcher's list)."""
        return [p for p in project.known_projects() if paths.db_path(str(p["id"])).exists()]

    def project_id(self, request: Request) -> str | None:
        """The project a request is about: ``?project=``, else the one this browser chose last, else the newest."""
        chosen = request.query_params.get("project") or request.cookies.get(auth.PROJECT_COOKIE)
        if chosen:
            return chosen
        known = self.projects()
        return str(known[0]["id"]) if known else None

    def memory(self, project_id: str | None) -> Memory:
        """The project's memory; a project without a store reads as empty (reads never create one)."""
        if not project_id:
            raise NotFoundError(
                "no project has memory yet: run Claude Code with memlane installed, or `memlane import`"
            )
        return Memory.open(project_id=project_id, cfg=self.daemon.cfg, create=None)

    # ---- running library calls -----------------------------------------------------------------

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` on a worker thread (SQLite and the model are blocking), as a request in flight."""
        self.daemon.touch()
        try:
            with self.daemon.gate.request():
                return await run_in_threadpool(fn, *args)
        finally:
            self.daemon.touch()

    async def json(self, request: Request, fn: Callable[[Memory], Any], status: int = 200) -> Response:
        """A JSON route over the request's project."""
        pid = self.project_id(request)

        def call() -> Any:
            with self.memory(pid) as mem:
                return fn(mem)

        try:
            return JSONResponse(await self.run(call), status_code=status)
        except (MemlaneError, sqlite3.Error) as exc:
            return error_json(exc)

    async def page(
        self, request: Request, template: str, build: Callable[[Memory], dict[str, Any]], status: int = 200
    ) -> Response:
        """A page over the request's project: ``build(mem)`` gives the template's values."""
        call = self._rendering(request, template, build)
        try:
            response: Response = HTMLResponse(await self.run(call), status_code=status)
        except (MemlaneError, sqlite3.Error) as exc:
            response = await self.error_page(request, exc)
        if request.query_params.get("project"):
            remember_project(response, request.query_params["project"])
        return response

    def _rendering(
        self, request: Request, template: str, build: Callable[[Memory], dict[str, Any]]
    ) -> Callable[[], str]:
        """The work of a page or fragment, to run off the event loop: open the project, build, render."""
        pid = self.project_id(request)

        def call() -> str:
            with self.memory(pid) as mem:
                return self.render(request, template, mem, **build(mem))

        return call

    def render(self, request: Request, template: str, mem: Memory | None, **values: Any) -> str:
        headers = dict(request.scope.get("headers") or [])
        frame = {
            "request_path": request.url.path,
            "csrf": self.daemon.web_auth.request_csrf(headers),
            "projects": self.projects(),
            "current": mem.project if mem is not None else None,
            "privacy_marker": self.daemon.cfg.privacy.marker,
            "secret_marker": self.daemon.cfg.privacy.secret_marker,
            "status": _status_line(mem),
        }
        return self.templates.get_template(template).render(**frame, **values)

    async def error_page(self, request: Request, exc: BaseException) -> Response:
        status, message = error_status(exc)

        def call() -> str:
            return self.render(request, "error.html", None, message=message, status_code=status)

        return HTMLResponse(await run_in_threadpool(call), status_code=status)

    async def fragment(self, request: Request, template: str, build: Callable[[Memory], dict[str, Any]]) -> Response:
        """A piece of a page (an htmx swap): errors come back as a small message in place, with their status."""
        call = self._rendering(request, template, build)
        try:
            return HTMLResponse(await self.run(call))
        except (MemlaneError, sqlite3.Error) as exc:
            status, message = error_status(exc)
            html = self.templates.get_template("_error.html").render(message=message)
            # htmx swaps only 2xx answers by default; the page's script swaps these in too (app.js).
            return HTMLResponse(html, status_code=status)


def error_status(exc: BaseException) -> tuple[int, str]:
    if isinstance(exc, sqlite3.Error):
        return 503, (str(exc).splitlines()[0] if str(exc) else "store error")
    return (404 if isinstance(exc, NotFoundError) else 400), str(exc)


def error_json(exc: BaseException) -> JSONResponse:
    status, message = error_status(exc)
    return JSONResponse({"error": message}, status_code=status)


def remember_project(response: Response, project_id: str) -> None:
    response.set_cookie(auth.PROJECT_COOKIE, project_id, httponly=True, samesite="strict", path="/")


def _status_line(mem: Memory | None) -> dict[str, Any] | None:
    """The footer: events, sessions and outbox backlog (cheap counts)."""
    if mem is None:
        return None
    counts = mem.store.outbox_status_counts()
    return {
        "events": mem.store.count(),
        "pending": int(counts.get("pending", 0)) + int(counts.get("processing", 0)),
        "failed": int(counts.get("failed", 0)),
        "embedded": int(counts.get("done", 0)),
    }
