"""Context over HTTP: editors and tools push volatile context and ask for composed prompts.

- ``GET  /api/context?projectRoot=/abs/path[&sessionId=…]`` — persistent + volatile (+ session) snapshots.
- ``PUT  /api/context/volatile`` — ``{"projectRoot": "/abs/path", "currentFile": "src/a.py", "selection": …}``;
  a ``null`` value removes the key.
- ``POST /api/context/compose`` — ``{"projectRoot", "task", "body", "header"?, "maxChars"?, "context"?, "sessionId"?,
  "layer"?}`` (``layer``: a Layer-scope store whose entries join the persistent block).

The daemon's ``Guard`` checks token, Host and Origin before any of these run. Volatile state lives in
this process (one ``AppContextService`` per project); persistent state is the project's JSON file.
Bad input is a 400 with a one-line ``error``.
"""

from __future__ import annotations

import os
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from memlane.context import gather
from memlane.context.compose import PromptComposer
from memlane.context.scope import ContextError
from memlane.context.service import AppContextService, ContextRegistry, PromptContext, RefreshTrigger
from memlane.context.store import check_layer
from memlane.logs import log

MAX_COMPOSE_CHARS = 100_000


def registry(daemon: Any) -> ContextRegistry:
    """The daemon's per-project and per-session context (created on first use)."""
    reg = getattr(daemon, "_context_registry", None)
    if reg is None:
        reg = ContextRegistry(daemon.cfg)
        daemon._context_registry = reg
    return reg


def inject_context(daemon: Any, mem: Any, body: dict[str, Any]) -> PromptContext | None:
    """The context for ``/api/inject`` (UserPromptSubmit): this project's volatile state in the daemon
    (editor pushes included) updated with what the hook knows; None if it cannot be built."""
    if not mem.config.context.enabled:
        return None
    try:
        reg = registry(daemon)
        svc = reg.app(mem.project.root_str)
        cwd = body.get("working_directory")
        svc.ensure_volatile_working_directory(cwd if isinstance(cwd, str) else None)
        status = svc.refresh_persistent_if_needed(RefreshTrigger())
        sid = body.get("session_id")
        session = _session(reg, mem.store, sid if isinstance(sid, str) else "", svc)
        context = svc.context_for_prompt(session)
        context.status = status
        return context
    except Exception as exc:  # noqa: BLE001 - context is an extra: the memories still go out
        log("daemon", "warning", f"context unavailable for injection: {exc!r}")
        return None


def _session(reg: ContextRegistry, store: Any, session_id: str, svc: AppContextService) -> dict[str, Any]:
    if not session_id:
        return {}
    session = reg.session(session_id)
    values = gather.session_values(store, session_id, svc.root, svc.cfg)
    session.put_all(values, remove=[] if "filesTouched" in values else ["filesTouched"])
    return session.snapshot()


def _root(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ContextError("projectRoot is required: the absolute path of the project")
    if not os.path.isabs(os.path.expanduser(value.strip())):
        raise ContextError(f"projectRoot {value!r} must be an absolute path (the daemon does not share your cwd)")
    from memlane.context.service import project_root

    return project_root(value)


def _store_for(root: str, cfg: Any) -> Any:
    """The project's event store when it has one (for files touched); None otherwise."""
    from memlane.project import identify
    from memlane.store.db import Store

    proj = identify(root)
    if not os.path.exists(proj.db_file):
        return None
    return Store(proj.db_file, proj.id, cfg.store.busy_timeout_ms)


def _snapshot(daemon: Any, root: str, session_id: Any, request: dict[str, Any] | None = None) -> PromptContext:
    if session_id is not None and (not isinstance(session_id, str) or not session_id):
        raise ContextError("sessionId must be a non-empty string")
    reg = registry(daemon)
    svc = reg.app(root)
    svc.ensure_volatile_working_directory()
    status = svc.refresh_persistent_if_needed(RefreshTrigger())
    session: dict[str, Any] = {}
    if session_id:
        store = _store_for(root, daemon.cfg)
        try:
            session = _session(reg, store, session_id, svc)
        finally:
            if store is not None:
                store.close()
    if request is not None and not isinstance(request, dict):
        raise ContextError("context must be a JSON object of request-only values")
    context = svc.context_for_prompt(session, request)
    context.status = status
    return context


def get_context(daemon: Any, params: dict[str, Any]) -> dict[str, Any]:
    root = _root(params.get("projectRoot") or params.get("cwd"))
    context = _snapshot(daemon, root, params.get("sessionId"))
    return {**context.as_dict(), "projectId": registry(daemon).app(root).project_id}


def put_volatile(daemon: Any, body: dict[str, Any]) -> dict[str, Any]:
    values = dict(body)
    root = _root(values.pop("projectRoot", None))
    if not values:
        raise ContextError("nothing to set: add keys like currentFile or selection (null removes a key)")
    svc = registry(daemon).app(root)
    applied = svc.update_volatile_from_request(values)
    return {"projectRoot": root, "applied": applied, "volatile": svc.volatile.snapshot()}


def compose(daemon: Any, body: dict[str, Any]) -> dict[str, Any]:
    root = _root(body.get("projectRoot"))
    task_type = body.get("task")
    if not isinstance(task_type, str) or not task_type:
        raise ContextError("task is required (session_start, prompt_injection, mcp_context_pack, …)")
    text = body.get("body", "")
    header = body.get("header", "")
    if not isinstance(text, str) or not isinstance(header, str):
        raise ContextError("body and header must be strings")
    max_chars = body.get("maxChars")
    if max_chars is not None and (
        isinstance(max_chars, bool) or not isinstance(max_chars, int) or not 1 <= max_chars <= MAX_COMPOSE_CHARS
    ):
        raise ContextError(f"maxChars must be a whole number from 1 to {MAX_COMPOSE_CHARS}")
    context = _snapshot(daemon, root, body.get("sessionId"), body.get("context"))
    layer = body.get("layer")
    if layer is not None:
        from memlane import project

        context.with_layer(project.identify(root).id, check_layer(layer))
    parts = PromptComposer(daemon.cfg).compose_parts(task_type, context, text, header=header, max_chars=max_chars)
    return {**parts.as_dict(), "projectRoot": root}


def routes(daemon: Any) -> list[Route]:
    """The context routes, bound to ``daemon`` (its config, registry and idle clock)."""

    async def get_route(request: Request) -> JSONResponse:
        return await daemon.answer(lambda query: get_context(daemon, query), dict(request.query_params))

    async def put_route(request: Request) -> JSONResponse:
        return await daemon.json_route(request, lambda body: put_volatile(daemon, body))

    async def compose_route(request: Request) -> JSONResponse:
        return await daemon.json_route(request, lambda body: compose(daemon, body))

    return [
        Route("/api/context", get_route, methods=["GET"]),
        Route("/api/context/volatile", put_route, methods=["PUT"]),
        Route("/api/context/compose", compose_route, methods=["POST"]),
    ]
