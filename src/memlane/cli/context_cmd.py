"""``memlane context show|set|unset|compose``: the context blocks behind every injection.

The CLI works on the library directly. ``set``/``unset`` write the project's small volatile file
(``<data dir>/projects/<id>/context/app-volatile.json``, read by hooks and by the daemon when it first
serves the project) and, when the daemon is running, send the same change to it so it applies at
once. ``--persistent`` writes a user key (``preferences`` …) into the persistent file instead.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any
from urllib.parse import quote

import click

from memlane import config, paths, project
from memlane.cli import render
from memlane.context import rules
from memlane.context.compose import PERSISTENT_TITLE, TASKS, VOLATILE_TITLE, PromptComposer, serialize
from memlane.context.scope import ContextScope, PersistenceKind
from memlane.context.service import AppContextService, PromptContext, RefreshTrigger, normalize
from memlane.context.store import check_layer, layer_names, layer_store, project_store
from memlane.memory import Memory

DAEMON_DEADLINE_MS = 1500


def _project(ctx: click.Context) -> project.Project:
    obj = ctx.find_root().obj
    return project.resolve(getattr(obj, "cwd", None), getattr(obj, "project_id", None))


def _service(proj: project.Project, cfg: config.Config) -> AppContextService:
    """The project's context service; for a project memlane keeps nothing for, one that writes nothing (the
    rules are read into memory, not cached in a new ``projects/<id>/context`` folder: reads create nothing)."""
    if paths.project_dir(proj.id).is_dir():
        return AppContextService(proj.root_str, cfg, project_id=proj.id)
    from memlane.context.store import MemoryContextStore

    persistent = MemoryContextStore(ContextScope.APP, PersistenceKind.PERSISTENT)
    return AppContextService(proj.root_str, cfg, project_id=proj.id, persistent=persistent)


def _daemon(path: str, body: dict[str, Any] | None = None, method: str = "GET") -> dict[str, Any] | None:
    from memlane.daemon import client

    return client.call(path, body, DAEMON_DEADLINE_MS, method=method)


def _context(proj: project.Project, cfg: config.Config, session: str | None) -> tuple[PromptContext, str]:
    """The project's context and where its volatile part came from (``daemon`` or ``local``)."""
    query = f"/api/context?projectRoot={quote(proj.root_str)}" + (f"&sessionId={quote(session)}" if session else "")
    live = _daemon(query)
    if live is not None and isinstance(live.get("volatile"), dict):
        from memlane.context.scope import RefreshStatus

        status = RefreshStatus(live["persistentStatus"]) if live.get("persistentStatus") else None
        ctx = PromptContext(
            dict(live.get("persistent") or {}),
            dict(live["volatile"]),
            dict(live.get("session") or {}),
            status=status,
            project_root=proj.root_str,
        )
        return ctx, "daemon"
    svc = _service(proj, cfg)
    status = svc.refresh_persistent_if_needed(RefreshTrigger())
    svc.ensure_volatile_working_directory(os.getcwd())
    session_values: dict[str, Any] = {}
    if session:
        session_values = {"sessionId": session}
        if proj.db_path.exists():
            from memlane.context.gather import session_values as gather_session

            with Memory.existing(proj, cfg) as mem:
                session_values = gather_session(mem.store, session, proj.root_str, cfg)
    ctx = svc.context_for_prompt(session_values)
    ctx.status = status
    return ctx, "local"


@click.group("context")
def context_group() -> None:
    """Persistent + volatile context composed into every injection (docs/context.md)."""


@context_group.command("show")
@click.option("--session", "-s", help="Include this session's scope (files touched).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output (full values).")
@click.pass_context
def show(ctx: click.Context, session: str | None, as_json: bool) -> None:
    """The project's persistent and volatile context (rules are reloaded first if they changed)."""
    cfg = config.load()
    proj = _project(ctx)
    snap, source = _context(proj, cfg, session)
    if as_json:
        render.emit_json({**snap.as_dict(), "projectId": proj.id, "volatileSource": source})
        return
    status = snap.status.value if snap.status else "unknown"
    click.echo(f"project {proj.name} ({proj.root_str}), persistent context {status}, volatile from {source}")
    limit = cfg.context.max_value_chars
    for title, values in (
        (PERSISTENT_TITLE, snap.persistent),
        (VOLATILE_TITLE, {**snap.volatile, **snap.session}),
    ):
        click.echo(title)
        click.echo(serialize(values, limit) if values else "(empty)")


def _parse_value(raw: str, as_json: bool) -> Any:
    if raw == "-":
        raw = sys.stdin.read()
        raw = raw[:-1] if raw.endswith("\n") else raw  # the newline that ends the input, not the value
    if not as_json:
        return raw
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="VALUE") from exc


def _change(ctx: click.Context, key: str, value: Any, persistent: bool, layer: str | None = None) -> dict[str, Any]:
    cfg = config.load()
    proj = _project(ctx)
    applied = normalize(proj.root_str, {key: value}, cfg)  # a ContextError becomes one line in cli.main.Group
    if layer is not None:
        layer_store(proj.id, layer).put_all(applied)  # the Layer scope: persistent, one file per layer
        return {"store": f"layer {layer}", "applied": applied}
    if persistent:
        if rules.owned(key):
            raise click.ClickException(f"{key} comes from the project's files; edit the file instead")
        project_store(proj.id, ContextScope.APP, PersistenceKind.PERSISTENT).put_all(applied)
        return {"store": "persistent", "applied": applied}
    project_store(proj.id, ContextScope.APP, PersistenceKind.VOLATILE).put_all(applied)
    sent = _daemon("/api/context/volatile", {"projectRoot": proj.root_str, **applied}, "PUT") is not None
    return {"store": "volatile", "applied": applied, "daemon": sent}


LAYER_OPTION = click.option(
    "--layer", metavar="NAME", help="The Layer scope: this layer's own persistent store (see `context layers`)."
)


@context_group.command("set")
@click.argument("key")
@click.argument("value")
@click.option("--persistent", is_flag=True, help="A persistent user key (e.g. preferences) instead of volatile.")
@LAYER_OPTION
@click.option("--json", "as_json", is_flag=True, help="VALUE is JSON (a list, an object, a number).")
@click.pass_context
def set_(ctx: click.Context, key: str, value: str, persistent: bool, layer: str | None, as_json: bool) -> None:
    """Set KEY to VALUE ('-' reads stdin). Paths (currentFile…) are relative to the project root."""
    if layer is not None and persistent:
        raise click.UsageError("--layer and --persistent are two different stores: give one")
    result = _change(ctx, key, _parse_value(value, as_json), persistent, layer)
    shown = result["applied"][key]
    where = result["store"] + (" (and the running daemon)" if result.get("daemon") else "")
    click.echo(f"{key} = {json.dumps(shown, ensure_ascii=False)[:200]}  [{where}]")


@context_group.command("unset")
@click.argument("key")
@click.option("--persistent", is_flag=True, help="Remove a persistent user key instead of a volatile one.")
@LAYER_OPTION
@click.pass_context
def unset(ctx: click.Context, key: str, persistent: bool, layer: str | None) -> None:
    """Remove KEY."""
    if layer is not None and persistent:
        raise click.UsageError("--layer and --persistent are two different stores: give one")
    result = _change(ctx, key, None, persistent, layer)
    click.echo(f"{key} removed [{result['store']}]")


@context_group.command("layers")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
@click.pass_context
def layers(ctx: click.Context, as_json: bool) -> None:
    """The project's layers (seed 002's Layer scope) and their entries.

    A layer is a node of a larger pipeline — an agent, a stage, a tool — with standing context of its own:
    `memlane context set --layer reviewer checklist "…"`, then `memlane context compose -t llm_task
    --layer reviewer` (or "layer" in POST /api/context/compose) puts its entries in the persistent block.
    """
    proj = _project(ctx)
    found = {name: layer_store(proj.id, name).snapshot() for name in layer_names(proj.id)}
    if as_json:
        render.emit_json(found)
    elif not found:
        click.echo("No layers yet: `memlane context set --layer NAME KEY VALUE` makes one.")
    else:
        limit = config.load().context.max_value_chars
        for name, entries in found.items():
            click.echo(f"## layer {name}")
            click.echo(serialize(entries, limit) if entries else "(empty)")


@context_group.command("learn")
@click.option("--json", "as_json", is_flag=True, help="The learned preferences as JSON.")
@click.pass_context
def learn(ctx: click.Context, as_json: bool) -> None:
    """Learn standing preferences from the project's newest prompts and list them.

    The UserPromptSubmit hook does this as you type ("always use pnpm", "never push to main"); run it
    after an import, or to see what memlane has learned. Forget a prompt to forget its preference.
    """
    from memlane.context import preferences

    cfg = config.load()
    with ctx.find_root().obj.reading(as_json) as mem:
        if mem is None:
            return
        preferences.relearn(mem.store, mem.project.id, cfg.context.learned_preferences)
        learned = preferences.parse(
            project_store(mem.project.id, ContextScope.APP, PersistenceKind.PERSISTENT).snapshot().get(preferences.KEY)
        )
    if as_json:
        render.emit_json([{"preference": text, "citation": cite} for text, cite in learned])
    elif not learned:
        click.echo("no standing preferences found in your prompts yet")
    else:
        for text, cite in learned:
            click.echo(f"[{cite}] {text}")


NATIVE = ("session_start", "prompt_injection", "mcp_context_pack")  # tasks whose body memlane retrieves itself


@context_group.command("compose")
@click.option("--task", "-t", "task_type", required=True, type=click.Choice(sorted(TASKS)), help="Task type.")
@click.option(
    "--body",
    "-b",
    help="Your own text as the body ('-' reads stdin), shown under '## Body', in place of what memlane would "
    "retrieve. Not a query: to see the memories a prompt gets, use --prompt.",
)
@click.option(
    "--prompt",
    "-p",
    help="The prompt memlane retrieves memories for (prompt_injection), or the task (mcp_context_pack).",
)
@click.option("--header", default="", help="A first line above the blocks.")
@click.option("--max-chars", type=click.IntRange(1, 100_000), help="Total budget (default: the task's).")
@click.option("--session", "-s", help="Include this session's scope (files touched).")
@LAYER_OPTION
@click.option("--json", "as_json", is_flag=True, help="The composition with per-block details, as JSON.")
@click.pass_context
def compose(
    ctx: click.Context,
    task_type: str,
    body: str | None,
    prompt: str | None,
    header: str,
    max_chars: int | None,
    session: str | None,
    layer: str | None,
    as_json: bool,
) -> None:
    """Print the prompt composed for a task type: persistent + volatile blocks + body.

    \b
    Two inputs, two meanings:
      --prompt TEXT  what memlane searches its memory for: the memories it finds are the body
                     (prompt_injection: "## Relevant memories"; mcp_context_pack: the task)
      --body TEXT    your own text, placed as the body as it is ("## Body"); nothing is retrieved
    Without either, session_start shows what SessionStart would inject now.
    """
    if body is not None and prompt is not None and task_type in NATIVE:
        raise click.UsageError(
            "give --prompt (memlane retrieves memories for it) or --body (your own text instead), not both"
        )
    cfg = config.load()
    proj = _project(ctx)
    snap, _source = _context(proj, cfg, session)
    snap.with_layer(proj.id, check_layer(layer) if layer is not None else None)
    if body is None and task_type in NATIVE:
        text = _native(task_type, proj, cfg, snap, prompt or "", max_chars)
        if as_json:
            render.emit_json({"task": task_type, "prompt": text, "chars": len(text)})
        else:
            click.echo(text or "(nothing would be injected)")
        return
    if body == "-":
        body = sys.stdin.read()
    # Text given with --body is the caller's, never shown as memlane's memories or recent work.
    title = "## Body" if task_type in NATIVE else None
    parts = PromptComposer(cfg).compose_parts(
        task_type, snap, body or "", header=header, max_chars=max_chars, body_title=title
    )
    if as_json:
        render.emit_json(parts.as_dict())
    else:
        click.echo(parts.text or "(empty)")


def _native(
    task_type: str, proj: project.Project, cfg: config.Config, snap: PromptContext, prompt: str, max_chars: int | None
) -> str:
    """What the hook or the MCP tool itself would produce now (full-text retrieval, no daemon search)."""
    if max_chars is not None:
        cfg.injection.max_chars = max_chars
    if task_type == "mcp_context_pack":
        from memlane.context import pack
        from memlane.errors import NotFoundError

        if not proj.db_path.exists():
            raise NotFoundError(f"no memory for project {proj.root_str}; run `memlane install` or `memlane import`")
        with Memory.existing(proj, cfg) as mem:
            # The context the MCP tool would use (daemon or stored snapshots), not this command's own.
            return pack.build(mem, prompt or None, max_chars=max_chars or 6000).text
    from memlane.capture import inject

    if task_type == "prompt_injection" and not prompt:
        raise click.UsageError("prompt_injection needs --prompt (or give --body)")
    if not proj.db_path.exists():
        return inject.compose(task_type, cfg, snap, [], inject.START_HEADER)
    with Memory.existing(proj, cfg) as mem:
        if task_type == "session_start":
            return inject.session_start_context(mem.store, "", cfg, context=snap)
        return inject.prompt_context(mem.store, prompt, cfg, context=snap)
