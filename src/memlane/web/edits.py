"""The dashboard's pages that change things: login, settings, CLAUDE.md regions, forget and export.

Each change is one library call, the same the CLI makes: ``config_file.set_text`` (``memlane config set``),
``memlane.regions`` edits saved through ``RegionFile`` (refused if the file changed on disk meanwhile),
``Memory.forget`` and ``Memory.export``. Regions' raw edits and auto-fix show a diff first and write only
the text that diff was made from (``expected``: a hash of the file as previewed).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from memlane import config, config_file
from memlane.errors import InputError, MemlaneError
from memlane.memory import Memory
from memlane.regions import edit
from memlane.regions.fileio import RegionFile
from memlane.regions.fix import fix, unified_diff
from memlane.regions.model import make_item
from memlane.regions.validate import candidates, exists, validate
from memlane.web import auth
from memlane.web.site import Site, remember_project

# Not editable from a browser: the password is set at the terminal (memlane dashboard --set-password).
LOCKED = ("dashboard.password_hash",)
FORGET_SHOWN = 20


def settings_rows(daemon_cfg: config.Config) -> list[dict[str, Any]]:
    """Every setting: value as ``config get`` prints it, where it comes from, and whether the running daemon
    still uses another value (it reads its settings when it starts)."""
    cfg = config.load()
    sources = config_file.sources()
    rows = []
    for section, key, default, doc in config.docs():
        dotted = f"{section}.{key}"
        value = config.get_value(cfg, dotted)
        running = config.get_value(daemon_cfg, dotted)
        secret = dotted in LOCKED
        rows.append(
            {
                "section": section,
                "key": key,
                "dotted": dotted,
                "doc": doc,
                "value": ("(set)" if value else "(not set)") if secret else config_file.show_value(value),
                "default": "" if secret else config_file.show_value(default),
                "source": sources[dotted],
                "editable": not secret,
                "restart": value != running,
            }
        )
    return rows


def file_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def routes(site: Site) -> list[Route]:
    # ---- login -----------------------------------------------------------------------------------

    async def login(request: Request) -> Response:
        code = request.query_params.get("code")
        web_auth = site.daemon.web_auth
        if code:
            ok, project_id = web_auth.use_code(code)
            if ok:
                response = RedirectResponse("/", status_code=303)
                _login(response, web_auth)
                if project_id:
                    remember_project(response, project_id)
                return response
        html = site.templates.get_template("login.html").render(
            password=bool(web_auth.password_hash),
            failed=bool(code),
            csrf="",
            projects=[],
            current=None,
            status=None,
            request_path="/login",
        )
        return HTMLResponse(html, status_code=401 if code else 200)

    async def login_password(request: Request) -> Response:
        web_auth = site.daemon.web_auth
        form = await request.form()
        password = str(form.get("password") or "")
        if web_auth.password_hash and auth.check_password(password, web_auth.password_hash):
            response = RedirectResponse("/", status_code=303)
            _login(response, web_auth)
            return response
        await asyncio.sleep(1.0)  # a guess a second, at most, per connection
        html = site.templates.get_template("login.html").render(
            password=bool(web_auth.password_hash),
            failed=True,
            csrf="",
            projects=[],
            current=None,
            status=None,
            request_path="/login",
        )
        return HTMLResponse(html, status_code=401)

    async def logout(request: Request) -> Response:
        # htmx follows a redirect inside its request and would swap the login page into the button: it is told
        # to navigate instead (HX-Redirect); a plain form post gets the redirect.
        response: Response = (
            Response(headers={"HX-Redirect": "/login"})
            if request.headers.get("hx-request")
            else RedirectResponse("/login", status_code=303)
        )
        response.delete_cookie(auth.SESSION_COOKIE, path="/")
        return response

    async def switch(request: Request) -> Response:
        """The project switcher: remember the choice, go back to the page it was made on."""
        pid = request.query_params.get("project", "")
        back = request.query_params.get("next", "/")
        if not back.startswith("/") or back.startswith("//"):
            back = "/"
        response = RedirectResponse(back, status_code=303)
        if pid:
            remember_project(response, pid)
        return response

    # ---- settings --------------------------------------------------------------------------------

    async def settings(request: Request) -> Response:
        return await site.page(request, "settings.html", lambda mem: {"rows": settings_rows(site.daemon.cfg)})

    async def setting_change(request: Request) -> Response:
        form = await request.form()
        key = str(form.get("key") or "")
        unset = request.url.path.endswith("/unset")
        error = None
        try:
            if key in LOCKED:
                raise InputError(f"{key} is set at the terminal: memlane dashboard --set-password")
            if unset:
                await site.run(config_file.unset, key)
            else:
                await site.run(config_file.set_text, key, str(form.get("value") or ""))
        except MemlaneError as exc:
            error = str(exc)  # the message `memlane config set` prints
        rows = [r for r in settings_rows(site.daemon.cfg) if r["dotted"] == key]
        html = site.templates.get_template("_setting_row.html").render(
            row=rows[0] if rows else None, error=error, key=key
        )
        return HTMLResponse(html, status_code=400 if error else 200)

    # ---- CLAUDE.md regions -----------------------------------------------------------------------

    def claude_md(mem: Memory) -> tuple[RegionFile, Path]:
        root = mem.project.root
        return RegionFile.open(root / "CLAUDE.md", create=True), root

    def regions_values(mem: Memory, **extra: Any) -> dict[str, Any]:
        rf, _root = claude_md(mem)
        return {
            "file": str(rf.path),
            "exists": rf.exists,
            "doc": rf.doc,
            "raw": {r.name: edit.raw_body(rf.doc, r.name) for r in rf.doc.regions},
            "expected": file_hash(rf.original),
            "message": None,
            **extra,
        }

    async def regions(request: Request) -> Response:
        return await site.page(request, "regions.html", regions_values)

    async def regions_change(request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        action = request.path_params["action"]

        def build(mem: Memory) -> dict[str, Any]:
            rf, root = claude_md(mem)
            message = _region_action(action, rf, root, form, site.daemon.cfg)
            if action in ("fix-preview", "raw-preview", "validate"):
                return {**regions_values(mem), **message}
            rf.save()
            return regions_values(mem, message=message.get("message"))

        return await site.fragment(request, "_regions.html", build)

    # ---- forget and export -----------------------------------------------------------------------

    def selector(params: dict[str, str]) -> dict[str, Any]:
        kind = params.get("kind", "")
        if kind == "event":
            ref = params.get("event", "").strip()
            if not ref:
                raise InputError("give the event's citation (mem:abc123) or id")
            return {"ids": [ref]}
        if kind == "session":
            sid = params.get("session", "").strip()
            if not sid:
                raise InputError("give the session id")
            return {"session": sid}
        if kind == "range":
            since, until = params.get("since", "").strip(), params.get("until", "").strip()
            if not since and not until:
                raise InputError("give since, until or both (2026-11-01, 7d, 12h)")
            return {k: v for k, v in (("since", since), ("until", until)) if v}
        raise InputError("kind must be event, session or range")

    async def forget_page(request: Request) -> Response:
        params = dict(request.query_params)
        return await site.page(request, "forget.html", lambda mem: {"params": params})

    async def forget_preview(request: Request) -> Response:
        params = dict(request.query_params)

        def build(mem: Memory) -> dict[str, Any]:
            chosen = selector(params)
            targets = mem.forget_preview(**chosen)
            shown = [mem.get(eid) for eid, _ in targets[:FORGET_SHOWN]]
            return {"targets": len(targets), "shown": shown, "params": params, "done": None}

        return await site.fragment(request, "_forget.html", build)

    async def forget(request: Request) -> Response:
        params = {k: str(v) for k, v in (await request.form()).items()}

        def build(mem: Memory) -> dict[str, Any]:
            count = mem.forget(**selector(params))
            return {"targets": 0, "shown": [], "params": params, "done": count}

        return await site.fragment(request, "_forget.html", build)

    def export_filters(params: dict[str, str]) -> dict[str, Any]:
        return {k: params[k].strip() for k in ("session", "since", "until") if params.get(k, "").strip()}

    async def export_page(request: Request) -> Response:
        params = dict(request.query_params)

        def build(mem: Memory) -> dict[str, Any]:
            filters = export_filters(params)
            return {"params": params, "count": mem.count(**filters) if filters else mem.store.count()}

        return await site.page(request, "export.html", build)

    async def export_download(request: Request) -> Response:
        params = dict(request.query_params)
        fmt = params.get("format", "jsonl")
        if fmt not in ("json", "jsonl", "markdown"):
            return await site.error_page(request, InputError("format must be json, jsonl or markdown"))
        pid = site.project_id(request)

        def call() -> tuple[str, str]:
            fd, path = tempfile.mkstemp(prefix="memlane-export-", suffix=f".{'md' if fmt == 'markdown' else fmt}")
            try:
                with site.memory(pid) as mem, os.fdopen(fd, "w", encoding="utf-8") as out:
                    mem.export(fmt, out, **export_filters(params))
                    name = f"memlane-{mem.project.name}.{'md' if fmt == 'markdown' else fmt}"
            except BaseException:
                os.unlink(path)
                raise
            return path, name

        try:
            path, name = await site.run(call)
        except MemlaneError as exc:
            return await site.error_page(request, exc)
        return FileResponse(path, filename=name, background=BackgroundTask(os.unlink, path))

    return [
        Route("/login", login, methods=["GET"]),
        Route("/login", login_password, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/switch", switch, methods=["GET"]),
        Route("/settings", settings, methods=["GET"]),
        Route("/settings/set", setting_change, methods=["POST"]),
        Route("/settings/unset", setting_change, methods=["POST"]),
        Route("/regions", regions, methods=["GET"]),
        Route("/regions/{action}", regions_change, methods=["POST"]),
        Route("/forget", forget_page, methods=["GET"]),
        Route("/forget/preview", forget_preview, methods=["GET"]),
        Route("/forget", forget, methods=["POST"]),
        Route("/export", export_page, methods=["GET"]),
        Route("/export/download", export_download, methods=["GET"]),
    ]


def _login(response: Response, web_auth: auth.Auth) -> None:
    response.set_cookie(
        auth.SESSION_COOKIE,
        web_auth.new_session(),
        max_age=auth.SESSION_TTL_S,
        httponly=True,
        samesite="strict",
        path="/",
    )


def _region_action(action: str, rf: RegionFile, root: Path, form: dict[str, str], cfg: config.Config) -> dict[str, Any]:
    """One regions action on the open file; returns what the panel shows about it."""
    doc = rf.doc
    name = form.get("region", "")
    if action == "add":
        kind = form.get("kind", "")
        fields = _item_fields(kind, form)
        item = make_item(kind, **fields)
        path = fields.get("path")
        if path and not form.get("allow_missing"):
            doc.region(name)  # an unknown region is the first thing to say
            if not exists(path, root, cfg.regions, rf.path.parent):
                tried = ", ".join(str(p) for p in candidates(path, root, cfg.regions, rf.path.parent))
                raise InputError(f"{path}: no such file (looked for {tried}); create it or tick 'allow missing'")
        under = form.get("under") or None
        added = edit.add_item(doc, name, item, "end", under)
        return {"message": f"Added {added.id} to region '{name}'."}
    if action == "delete":
        if form.get("section"):
            edit.delete_section(doc, name, form.get("item", ""))
        else:
            edit.delete_item(doc, name, form.get("item", ""))
        return {"message": f"Deleted from region '{name}'."}
    if action == "create":
        edit.create_region(doc, form.get("name", "").strip())
        return {"message": f"Created region '{form.get('name', '').strip()}'."}
    if action == "validate":
        return {"findings": validate(doc, root, cfg.regions, rf.path.parent)}
    if action in ("raw-preview", "raw-apply", "fix-preview", "fix-apply"):
        if action.endswith("apply") and file_hash(rf.original) != form.get("expected"):
            raise InputError(f"{rf.path.name} changed since the preview; nothing written, preview again")
        before = doc.render()
        if action.startswith("raw"):
            edit.set_raw(doc, name, form.get("text", ""))
            actions: list[Any] = []
        else:
            actions = fix(doc, root, cfg.regions, rf.path.parent).actions
        diff = unified_diff(before, doc.render(), rf.path.name)
        if action.endswith("preview"):
            return {
                "preview": {
                    "kind": action[:3],
                    "region": name,
                    "text": form.get("text", ""),
                    "diff": diff,
                    "actions": actions,
                    "expected": file_hash(rf.original),
                }
            }
        return {"message": "Written." if diff else "Nothing to change."}
    raise InputError(f"unknown regions action '{action}'")


def _item_fields(kind: str, form: dict[str, str]) -> dict[str, Any]:
    if kind == "heading":
        level = form.get("level") or "2"
        if not level.isdigit() or not 1 <= int(level) <= 6:
            raise InputError("a heading's level is 1 to 6")
        return {"text": form.get("text", ""), "level": int(level)}
    if kind == "direct-ref":
        return {"path": form.get("path", "")}
    if kind == "indirect-ref":
        return {"path": form.get("path", ""), "description": form.get("description", "")}
    if kind == "code-block":
        return {"content": form.get("content", ""), "language": form.get("language", "")}
    if kind == "text":
        return {"content": form.get("content", "")}
    raise InputError("kind must be heading, direct-ref, indirect-ref, code-block or text")
