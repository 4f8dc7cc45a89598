"""``memlane serve``: the HTTP API on 127.0.0.1 (starlette + uvicorn) and the embedding worker.

Security: binds loopback only; every request needs ``Authorization: Bearer <token>`` (token file 0600
in the data dir); the Host header must name this server and an Origin, when sent, must be this
server's own — which defeats DNS rebinding from a web page. One instance per user: an exclusive
``flock`` on ``daemon.lock`` (not a pid guess). Exits after ``daemon.idle_timeout_s`` without
requests or work. The embedding worker is a thread of this process sharing its model (see embed_worker).
"""

from __future__ import annotations

import fcntl
import hmac
import json
import os
import signal
import socket
import sqlite3
import statistics
import sys
import threading
import time
from collections import deque
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from memlane import __version__, config
from memlane.daemon import context_routes, state, warm
from memlane.daemon.embed_worker import Gate, Stopping, Worker
from memlane.daemon.inbox import DRAIN_S as INBOX_DRAIN_S
from memlane.daemon.inbox import Delivery, Inbox
from memlane.daemon.jobs import FIRST_RUN_S, Upkeep, default_jobs
from memlane.errors import InputError, MemlaneError
from memlane.logs import log
from memlane.memory import Memory
from memlane.retrieval.engine import Engine
from memlane.web.auth import PROJECT_COOKIE

SWITCH_INTERVAL_S = 0.001
HOOK_TIMES_KEPT = 200  # per event, for the median in /api/health
INBOX_SETTLE_S = 0.25  # a handed-over delivery is stored once no hook has come for this long ...
INBOX_MOST_WAIT_S = 2.0  # ... or after this long at most (a steady stream of tool calls)


def _close_all(stores: list[Any]) -> None:
    for store in stores:
        store.close()


class DaemonError(MemlaneError, RuntimeError):
    """A daemon that cannot start (already running, port taken); one-line message."""


class Guard:
    """ASGI middleware: Host and Origin checks, then the token (or the dashboard's session cookie and, on a
    mutation, its CSRF token: ``web.auth``) before any route runs."""

    def __init__(self, app: ASGIApp, token: str, port: int, web_auth: Any = None, names: tuple[str, ...] = ()) -> None:
        self.app = app
        self.token = token.encode()
        self.web_auth = web_auth
        hosts = ("127.0.0.1", "localhost", *names)
        self.hosts = {f"{h}:{port}".encode() for h in hosts}
        self.origins = {f"http://{h}:{port}".encode() for h in hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        problem = None
        if headers.get(b"host") not in self.hosts:
            problem = (403, "forbidden host")
        elif b"origin" in headers and headers[b"origin"] not in self.origins:
            problem = (403, "forbidden origin")
        else:
            auth = headers.get(b"authorization", b"")
            if not (auth.startswith(b"Bearer ") and hmac.compare_digest(auth[7:], self.token)):
                problem = (401, "missing or wrong token")
                if self.web_auth is not None and not auth:
                    problem = self.web_auth.check(scope["method"], scope["path"], headers)
        if problem:
            response: Response = JSONResponse({"error": problem[1]}, status_code=problem[0])
            if problem[0] == 401 and "text/html" in headers.get(b"accept", b"").decode("latin-1"):
                response = _login_needed()
            await response(scope, receive, send)
            return

        async def send_secured(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_secured)


# On every answer: the dashboard's pages run no script but the package's own and cannot be framed; stored
# content rendered in them is escaped, and this is the second wall if an escape were ever missed.
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        b"form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]


def _spec_search(body: dict[str, Any]) -> dict[str, Any]:
    """The web-viewer spec's search body (``filters``, ``options``) in the flat form ``_search`` takes."""
    out = dict(body)
    filters, options = body.get("filters"), body.get("options")
    if filters is not None:
        if not isinstance(filters, dict):
            raise InputError("filters must be a JSON object")
        for spec, flat in (("sessionId", "session"), ("dateFrom", "since"), ("dateTo", "until")):
            if filters.get(spec) is not None:
                out[flat] = filters[spec]
        kinds = filters.get("eventType")
        if kinds is not None:
            out["types"] = [kinds] if isinstance(kinds, str) else kinds
    if options is not None:
        if not isinstance(options, dict):
            raise InputError("options must be a JSON object")
        if "topK" in options:
            out["limit"] = options["topK"]
        if "minScore" in options:
            out["min_score"] = options["minScore"]
    return out


def _login_needed() -> Response:
    """What a browser without a session sees: how to get in, never a page of the dashboard."""
    from starlette.responses import HTMLResponse

    return HTMLResponse(
        "<!doctype html><meta charset=utf-8><title>memlane</title><h1>memlane dashboard</h1>"
        "<p>Not logged in. Run <code>memlane dashboard</code> for a one-time login link, "
        "or <a href=/login>log in with the dashboard password</a> if one is set.</p>",
        status_code=401,
    )


class Daemon:
    def __init__(self, cfg: config.Config) -> None:
        self.cfg = cfg
        self.engine = Engine(cfg)
        self.last_activity = time.monotonic()
        self.started = time.time()
        self.stop = threading.Event()
        self.gate = Gate()  # requests in flight: the worker starts no slice while there are any
        self.worker_state: dict[str, Any] = {"processed": 0, "last_error": None, "busy": False}
        self.warming = False  # loading the model for the worker: work under way, like a busy worker
        self.embed_worker: Worker | None = None
        self.sync_job: Any = None  # memlane.sync.engine.SyncJob when database.url is set
        # Hooks run here (daemon.warm): those Claude Code waits for while it waits, the capture-only ones queued.
        self.hooks_run = dict.fromkeys(warm.EVENTS + warm.CAPTURE_EVENTS, 0)
        # How long the hooks Claude Code waits for took here (ms, the last ``HOOK_TIMES_KEPT`` of each): health.
        self.hook_ms: dict[str, deque[float]] = {e: deque(maxlen=HOOK_TIMES_KEPT) for e in warm.EVENTS}
        self.inbox = Inbox(self._store_delivery, self.touch, self._yield)
        self.upkeep_state: dict[str, Any] = {}  # daemon/jobs.Upkeep (run by the worker's loop): last run, result
        self.last_hook = 0.0  # when the last hook came in (monotonic): the inbox waits for a quiet moment

    # ---- routes --------------------------------------------------------------------------------

    def touch(self) -> None:
        self.last_activity = time.monotonic()

    def memory(self, body: dict[str, Any]) -> Memory:
        cwd, pid = body.get("cwd"), body.get("project_id")
        if (cwd is not None and not isinstance(cwd, str)) or (pid is not None and not isinstance(pid, str)):
            raise InputError("cwd and project_id must be strings")
        if not cwd and not pid:
            raise InputError("give cwd or project_id")
        # The daemon's own cwd means nothing to its clients, and a read must not create a store for a
        # folder that is not there.
        if cwd and not pid and not os.path.isabs(cwd):
            raise InputError(f"cwd {cwd[:200]!r} must be an absolute path")
        if cwd and not pid and not os.path.isdir(cwd):
            raise InputError(f"cwd {cwd[:200]!r} is not a directory")
        return Memory.open(cwd, project_id=pid, cfg=self.cfg, create=None)

    async def health(self, request: Request) -> JSONResponse:
        self.touch()
        return JSONResponse(
            {
                "ok": True,
                "pid": os.getpid(),
                "version": __version__,
                "uptime_s": round(time.time() - self.started),
                "model": getattr(self.engine._embedder, "version", None),
                "model_error": self.engine.model_error,
                "worker": self.worker_state,
                "sync": self.sync_job.state if self.sync_job is not None else None,
                "prepared": self.engine.prepared,
                "hooks": self.hooks_run,
                "hooks_queued": self.inbox.pending,
                "hook_ms_p50": {e: round(statistics.median(t), 1) for e, t in self.hook_ms.items() if t},
                "jobs": self.upkeep_state,
            }
        )

    def _search(self, body: dict[str, Any]) -> dict[str, Any]:
        """One ``Memory.search`` call: the library checks the query, limit, types and since/until, so
        HTTP accepts and refuses exactly what the CLI and MCP tools do. Only JSON shapes are checked here.

        Also takes the web-viewer spec's shape (``filters: {sessionId, eventType, dateFrom, dateTo}``,
        ``options: {topK, minScore}``) and answers with the spec's ``meta`` (total matches, time, mode)."""
        body = _spec_search(body)
        for name in ("types", "exclude_ids"):
            value = body.get(name)
            if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise InputError(f"{name} must be a list of strings")
        for name in ("session", "since", "until"):
            if body.get(name) is not None and not isinstance(body[name], str):
                raise InputError(f"{name} must be a string")
        min_score = body.get("min_score", 0.0)
        if isinstance(min_score, bool) or not isinstance(min_score, int | float) or not 0 <= min_score <= 1:
            raise InputError("minScore must be a number from 0 to 1")
        cross = body.get("cross_project")
        if cross is not None and not isinstance(cross, bool):
            raise InputError("cross_project must be true or false")
        with self.memory(body) as mem:
            started = time.perf_counter()
            hits = mem.search(
                body.get("query", ""),  # a missing or non-string query is refused by Memory.search
                limit=body.get("limit", 10),
                types=body.get("types"),
                session=body.get("session"),
                since=body.get("since"),
                until=body.get("until"),
                exclude_ids=body.get("exclude_ids") or (),
                engine=self.engine,
                tool=body.get("tool"),  # tool, file, failed: checked by Memory.search
                file=body.get("file"),
                failed=body.get("failed", False),
                cross_project=cross,
            )
            elapsed = (time.perf_counter() - started) * 1000
            hits = [h for h in hits if h.score >= min_score]
            return {
                "project_id": mem.project.id,
                "results": [h.as_dict() for h in hits],
                "meta": {
                    "totalMatches": mem.count_matches(body["query"]),
                    "searchTime": round(elapsed, 1),
                    "mode": self.engine.mode(mem, body["query"]),
                },
            }

    def _inject(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt = body.get("prompt")
        if not isinstance(prompt, str):
            raise InputError("prompt must be a string")
        value = body.get("exclude_ids")
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise InputError("exclude_ids must be a list of strings")
        with self.memory(body) as mem:
            return self._inject_into(mem, body, prompt, list(value or []))

    def _inject_into(self, mem: Memory, body: dict[str, Any], prompt: str, exclude_ids: list[str]) -> dict[str, Any]:
        from memlane.capture.inject import hits_context, learned_of, record, retrieval_query

        query = retrieval_query(prompt, mem.config)
        chosen = self.engine.relevant(mem, query, exclude_ids)
        context = context_routes.inject_context(self, mem, body)
        text = hits_context(chosen, mem.config, mem.project.id, context, learned_of(mem.store, chosen), query)
        record(mem.store, exclude_ids, chosen, "hybrid" if self.engine.vectors else "text")
        return {
            "context": text,
            "results": [h.event.cite for h in chosen.hits],
            "full": [h.event.cite for h in chosen.full],
            "index": [h.event.cite for h in chosen.index],
        }

    def _inject_warm(self, body: dict[str, Any], proj: Any, store: Any) -> dict[str, Any]:
        """``/api/inject`` for a hook this daemon runs: on the hook's own project and open store (the body is
        the hook's, so it needs no checks)."""
        return self._inject_into(Memory(proj, self.cfg, store), body, body["prompt"], body["exclude_ids"])

    def _prepare(self, body: dict[str, Any]) -> dict[str, Any]:
        """A prompt the hook is about to ask ``/api/inject`` about: its query embedding starts now.

        The body is the UserPromptSubmit payload as Claude Code sent it (``daemon.prepare`` forwards it
        unparsed), so the checks the hook would have made are made here.
        """
        from memlane.capture.events import task_notification
        from memlane.capture.inject import retrieval_query
        from memlane.daemon.prepare import MAX_CHARS

        prompt = body.get("prompt")
        if not isinstance(prompt, str):
            raise InputError("prompt must be a string")
        if len(prompt) > MAX_CHARS or task_notification(prompt):
            return {"prepared": False}  # a long paste is cut before it is asked about; a report is never asked
        with self.memory(body) as mem:
            if not mem.config.injection.enabled:
                return {"prepared": False}
            return {"prepared": self.engine.prepare(mem, retrieval_query(prompt, mem.config), hold=self.gate.hold)}

    def _embed(self, body: dict[str, Any]) -> dict[str, Any]:
        """The warm model for other processes (``daemon.remote.RemoteEmbedder``): one model per user."""
        op, texts = body.get("op"), body.get("texts")
        if op not in ("info", "query", "passages", "chunk"):
            raise InputError("op must be info, query, passages or chunk")
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts) or len(texts) > 256:
            raise InputError("texts must be a list of at most 256 strings")
        embedder = self.engine.embedder
        if embedder is None:
            raise MemlaneError(f"no embedding model: {self.engine.model_error}")
        out: dict[str, Any] = {
            "model": embedder.model_id,
            "provider": self.cfg.embedding.provider,
            "version": embedder.version,
            "dim": embedder.dim,
        }
        if op == "query":
            out["vectors"] = [embedder.embed_query(t).tolist() for t in texts]
        elif op == "passages":
            out["vectors"] = embedder.embed_passages(texts).tolist() if texts else []
        elif op == "chunk":
            out["chunks"] = [embedder.chunk(t) for t in texts]
        return out

    async def embed(self, request: Request) -> JSONResponse:
        return await self.json_route(request, self._embed)

    async def answer(self, fn: Any, arg: dict[str, Any]) -> JSONResponse:
        """Run one library call off the event loop. The one place the HTTP API turns a
        ``MemlaneError`` into a 400 with its one-line message (every route comes through here)."""
        self.touch()
        try:
            from starlette.concurrency import run_in_threadpool

            with self.gate.request():
                return JSONResponse(await run_in_threadpool(fn, arg))
        except sqlite3.Error as exc:  # a damaged or locked store: a one-line answer, not a 500 with a traceback
            return JSONResponse({"error": str(exc).splitlines()[0] if str(exc) else "store error"}, status_code=503)
        except MemlaneError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        finally:
            self.touch()

    async def json_route(self, request: Request, fn: Any) -> JSONResponse:
        self.touch()
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError):
            return JSONResponse({"error": "body must be JSON"}, status_code=400)
        if not isinstance(body, dict):
            return JSONResponse({"error": "body must be a JSON object"}, status_code=400)
        return await self.answer(fn, body)

    async def search(self, request: Request) -> JSONResponse:
        # From the dashboard (its cookie), a body without cwd or project_id searches the project it shows.
        chosen = request.query_params.get("project") or request.cookies.get(PROJECT_COOKIE)

        def run(body: dict[str, Any]) -> dict[str, Any]:
            if chosen and not body.get("cwd") and not body.get("project_id"):
                body = {**body, "project_id": chosen}
            return self._search(body)

        return await self.json_route(request, run)

    async def inject(self, request: Request) -> JSONResponse:
        return await self.json_route(request, self._inject)

    async def prepare(self, request: Request) -> JSONResponse:
        return await self.json_route(request, self._prepare)

    async def hook(self, request: Request) -> Response:
        """A hook run here for its hook process (``daemon.warm``); the body is the payload as Claude Code sent
        it. SessionStart and UserPromptSubmit: the answer is what the hook prints, from the same
        ``hooks.respond`` as in the hook process, with the modules loaded and the model warm (the prompt search
        is this daemon's ``/api/inject``, called in place); the store is closed after the answer is sent
        (closing the last connection to a WAL database checkpoints it). Capture-only hooks: queued (``_accept``)."""
        from memlane import hooks

        self.touch()
        self.last_hook = time.monotonic()
        event = request.path_params["event"]
        if event not in self.hooks_run:
            return JSONResponse({"error": f"{event} is not a hook the daemon runs"}, status_code=404)
        raw = await request.body()
        try:
            cwd = bytes.fromhex(request.headers.get("x-hook-cwd", "")).decode("utf-8") or None
        except ValueError:
            return JSONResponse({"error": "x-hook-cwd must be the hex of a UTF-8 path"}, status_code=400)
        if request.headers.get("x-hook-env", "") != warm.environment().encode("utf-8", "surrogateescape").hex():
            # A setting the hook's environment gives (MEMLANE_*) that this daemon's does not: the hook runs itself.
            return JSONResponse(
                {"error": "the hook's MEMLANE_* environment differs from the daemon's"}, status_code=409
            )
        if event in warm.CAPTURE_EVENTS:
            return await self._accept(event, raw, cwd, request.headers.get("x-hook-delivered"))
        opened: list[Any] = []
        began = time.perf_counter()
        try:
            from starlette.concurrency import run_in_threadpool

            with self.gate.request():
                out = await run_in_threadpool(self._run_hook, event, raw, hooks.Warm(cwd, self._inject_warm), opened)
        finally:
            self.touch()
        self.hook_ms[event].append((time.perf_counter() - began) * 1000)
        return PlainTextResponse(out, background=BackgroundTask(_close_all, opened))

    async def _accept(self, event: str, raw: bytes, cwd: str | None, delivered: str | None) -> Response:
        """A capture-only hook: queued, answered (202), stored afterwards in order (``daemon.inbox``)."""
        try:
            when = float(delivered) if delivered else None
        except ValueError:
            return JSONResponse({"error": "x-hook-delivered must be seconds since the epoch"}, status_code=400)
        if not self.inbox.accept(Delivery(event, raw, cwd, when)):
            return JSONResponse({"error": "the daemon is stopping"}, status_code=503)  # the hook stores it itself
        return Response(status_code=202)

    def _yield(self) -> None:
        """Before the inbox stores a delivery: the hooks Claude Code is running right now go first.

        A turn's hooks come in a burst (Stop, then SessionEnd a few ms later in ``claude -p``), and storing one
        while the next is handed over makes that hook wait for the CPU and the GIL (measured: SessionEnd took
        4.4 ms longer inside a real turn). So a delivery waits until no hook has come for ``INBOX_SETTLE_S``
        (at most ``INBOX_MOST_WAIT_S``), then for any request in flight."""
        deadline = time.monotonic() + INBOX_MOST_WAIT_S
        while not self.stop.is_set():
            now = time.monotonic()
            quiet = now - self.last_hook
            if quiet >= INBOX_SETTLE_S or now >= deadline:
                break
            self.stop.wait(min(INBOX_SETTLE_S - quiet, deadline - now))
        try:
            self.gate.wait_quiet(self.stop)
        except Stopping:
            pass  # stopping: the inbox stores what it holds before the daemon exits

    def _store_delivery(self, delivery: Delivery) -> None:
        from memlane import hooks

        hooks.respond([delivery.event], delivery.raw, delivery.delivered, hooks.Warm(delivery.cwd, self._inject_warm))
        self.hooks_run[delivery.event] += 1

    def _run_hook(self, event: str, raw: bytes, host: Any, opened: list[Any]) -> str:
        from memlane import hooks

        if event == "UserPromptSubmit":
            # The prompt's embedding starts on the search pool while the hook stores the prompt, as the
            # hook process's ``/api/prepare`` does (``Engine.prepare``: the same answer, sooner).
            try:
                payload = json.loads(raw)
                if isinstance(payload, dict):
                    self._prepare(payload)
            except (ValueError, MemlaneError, sqlite3.Error, OSError):
                pass  # the hook reports a bad payload or store itself
        out = str(hooks.respond([event], raw, None, host, opened))
        self.hooks_run[event] += 1
        return out

    async def shutdown(self, request: Request) -> JSONResponse:
        self.stop.set()
        return JSONResponse({"ok": True, "stopping": True})

    def app(self, token: str, port: int) -> ASGIApp:
        from memlane import web

        self.web_auth = web.Auth(token, self.cfg.dashboard.password_hash)
        routes = [
            Route("/api/health", self.health, methods=["GET"]),
            Route("/api/search", self.search, methods=["POST"]),
            Route("/api/inject", self.inject, methods=["POST"]),
            Route("/api/prepare", self.prepare, methods=["POST"]),
            Route("/api/embed", self.embed, methods=["POST"]),
            Route("/api/shutdown", self.shutdown, methods=["POST"]),
            Route("/api/hook/{event}", self.hook, methods=["POST"]),
            *context_routes.routes(self),
            *web.routes(self),
        ]
        return Guard(Starlette(routes=routes), token, port, self.web_auth, allowed_names(self.cfg))

    def compose_context(self, body: dict[str, Any]) -> dict[str, Any]:
        """``/api/context/compose`` in-process (the dashboard's context preview), with this daemon's volatile state."""
        return context_routes.compose(self, body)

    # ---- background work -----------------------------------------------------------------------

    def warm(self) -> None:
        started = time.perf_counter()
        if self.engine.embedder is not None:
            self.engine.embedder.embed_query("warm up")
            log("daemon", "info", f"model {self.engine.embedder.version} warm in {time.perf_counter() - started:.1f} s")

    def worker(self) -> None:
        """Warm the search model, then run the background loop in this thread: embed every project's outbox with
        the model, and the background jobs (``daemon/jobs.py``; see embed_worker)."""
        self.warming = True
        try:
            self.warm()
        finally:
            self.warming = False
            self.touch()
        embedder = self.engine.embedder
        upkeep = Upkeep(self.cfg, self.stop, self.gate, state=self.upkeep_state, first_run_s=FIRST_RUN_S)
        self.embed_worker = Worker(
            self.cfg,
            embedder,
            self.gate,
            self.stop,
            self.touch,
            state=self.worker_state,
            jobs=default_jobs(self.cfg, self.gate, self.stop),
            upkeep=upkeep,
        )
        if embedder is None:  # no vectors, but the background jobs (projection, ...) still run
            self.worker_state["last_error"] = f"no embedding model: {self.engine.model_error}"
        self.embed_worker.run()

    def idle_watch(self, server: uvicorn.Server) -> None:
        while not self.stop.wait(1.0):
            if self.warming or self.inbox.pending or (self.embed_worker is not None and self.embed_worker.has_work):
                # The worker has work (from a step that finds some until a step that finds nothing to embed):
                # one slice of long texts can outlast a short idle timeout, so the clock starts after it.
                self.touch()
            elif time.monotonic() - self.last_activity > self.cfg.daemon.idle_timeout_s:
                log("daemon", "info", "idle timeout reached; exiting")
                self.stop.set()
        server.should_exit = True


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def allowed_names(cfg: config.Config) -> tuple[str, ...]:
    """Host names besides loopback that requests may name (Host, Origin): only when bound elsewhere."""
    host = cfg.daemon.host
    if host in LOOPBACK:
        return ()
    names = [*cfg.dashboard.hosts]
    if host not in ("0.0.0.0", "::"):
        names.append(host)
    else:
        names.append(socket.gethostname())
    return tuple(names)


def _bind(host: str, port: int, password_hash: str = "") -> socket.socket:
    if host not in LOOPBACK and not password_hash:
        raise DaemonError(
            f"daemon.host {host!r} is not a loopback address: set a dashboard password first "
            "(memlane dashboard --set-password), or bind 127.0.0.1"
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1" if host == "localhost" else host, port))
    except OSError as exc:
        sock.close()
        raise DaemonError(
            f"port {port} on {host} is already in use ({exc.strerror}); "
            f"stop what uses it or set daemon.port (memlane config set daemon.port 37778)"
        ) from exc
    sock.listen(64)
    sock.set_inheritable(True)
    return sock


def acquire_lock() -> int:
    fd = os.open(state.lock_file(), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        os.close(fd)
        info = state.read_info()
        where = f" (pid {info['pid']}, port {info['port']})" if info else ""
        raise DaemonError(f"the memlane daemon is already running{where}") from exc
    return fd


def serve(cfg: config.Config | None = None, port: int | None = None, worker: bool = True) -> None:
    """Run the daemon in this process until stopped, idle, or signalled."""
    cfg = cfg or config.load()
    port = port if port is not None else cfg.daemon.port
    # A request's thread waits for the GIL while the embedding worker or the inbox holds it: up to the switch
    # interval (5 ms by default) each time, several times a request. 1 ms keeps a hook's answer from queueing.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    lock_fd = acquire_lock()
    sock = _bind(cfg.daemon.host, port, cfg.dashboard.password_hash)
    port = sock.getsockname()[1]
    token = state.ensure_token()
    daemon = Daemon(cfg)
    server = uvicorn.Server(
        uvicorn.Config(daemon.app(token, port), log_level="warning", access_log=False, lifespan="off")
    )
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: daemon.stop.set())
    state.write_info(
        {"pid": os.getpid(), "host": "127.0.0.1", "port": port, "started": time.time(), "version": __version__}
    )
    log("daemon", "info", f"serving on 127.0.0.1:{port} (pid {os.getpid()})")
    threads = [threading.Thread(target=daemon.idle_watch, args=(server,), daemon=True)]
    if worker:
        threads.append(threading.Thread(target=daemon.worker, name="embed-worker", daemon=True))
    if cfg.database.url:  # team mode (docs/team.md): the sync job, on a thread of its own beside the worker
        from memlane.sync.engine import SyncJob

        daemon.sync_job = SyncJob(cfg, daemon.stop)
        threads.append(threading.Thread(target=daemon.sync_job.run, name="team-sync", daemon=True))
    for t in threads:
        t.start()
    try:
        server.run(sockets=[sock])
    finally:
        daemon.stop.set()
        # The worker stops between two slices (a second or two at most) and gives back its claims; should it
        # still be in a slice when the wait ends, its claims name this process and are recovered once it exits.
        for t in threads[1:]:
            t.join(timeout=12)
        daemon.inbox.close(drain_s=INBOX_DRAIN_S)  # what the hooks handed over is stored before the exit
        state.clear_info(os.getpid())
        sock.close()
        os.close(lock_fd)
        log("daemon", "info", "stopped")


def describe() -> dict[str, Any]:
    info = state.read_info()
    if not info:
        return {"running": False}
    from memlane.daemon import client

    health = client.call("/api/health", None, 2000, method="GET")
    return {"running": True, **info, "health": health}


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, default=str)
