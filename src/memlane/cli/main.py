"""``memlane`` commands. Thin wrappers over the library API (``memlane.memory``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from memlane import __version__, config, paths, project
from memlane.cli import render
from memlane.cli.params import WHEN
from memlane.memory import Memory, MemoryError_
from memlane.store.db import EVENT_TYPES

json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")


class Ctx:
    def __init__(self, cwd: str | None, project_id: str | None) -> None:
        self.cwd = cwd
        self.project_id = project_id

    def memory(self) -> Memory:
        return Memory.open(self.cwd, project_id=self.project_id)


pass_ctx = click.make_pass_decorator(Ctx)


class Group(click.Group):
    """Turns memlane's user errors into one-line messages with exit status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        from memlane.install import InstallError

        try:
            return super().invoke(ctx)
        except (config.ConfigError, MemoryError_, InstallError) as exc:
            raise click.ClickException(str(exc)) from exc


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="memlane")
@click.option(
    "-C", "--cwd", type=click.Path(file_okay=False), help="Act on the project containing this folder (default: .)."
)
@click.option("--project-id", help="Act on a registered project by id (see `memlane projects`).")
@click.pass_context
def cli(ctx: click.Context, cwd: str | None, project_id: str | None) -> None:
    """memlane — local-first memory for AI coding agents."""
    ctx.obj = Ctx(cwd, project_id)


# ---- reading -----------------------------------------------------------------------------------


@cli.command()
@click.option("--session", "-s", help="Only this session id.")
@click.option("--type", "-t", "types", multiple=True, type=click.Choice(EVENT_TYPES), help="Event type (repeatable).")
@click.option("--since", type=WHEN, help="From this time (2026-11-01, 7d, 12h).")
@click.option("--until", type=WHEN, help="Before this time.")
@click.option("--limit", "-n", default=30, show_default=True, type=click.IntRange(1, 100000))
@json_option
@pass_ctx
def history(
    obj: Ctx,
    session: str | None,
    types: tuple[str, ...],
    since: str | None,
    until: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """Recent events, newest first."""
    with obj.memory() as mem:
        events = mem.history(session=session, types=list(types), since=since, until=until, limit=limit)
        if as_json:
            render.emit_json([e.as_dict() for e in events])
        elif not events:
            render.console.print("No events match.")
        else:
            render.events_table(events, title=f"{mem.project.name} — {len(events)} event(s)")


@cli.command()
@click.argument("ref")
@json_option
@pass_ctx
def show(obj: Ctx, ref: str, as_json: bool) -> None:
    """One event in full, by citation (mem:abc123) or id."""
    with obj.memory() as mem:
        event = mem.get(ref)
        if as_json:
            render.emit_json(event.as_dict())
            return
        render.kv_table(
            [
                ("citation", event.cite),
                ("id", event.id),
                ("type", event.type),
                ("time", event.ts),
                ("session", event.session_id),
                ("project", event.project_id),
            ]
        )
        for key, value in sorted(event.metadata.items()):
            if value not in (None, "", {}):
                render.console.print(f"[dim]{key}:[/] {value}")
        render.console.print()
        render.console.print(event.content, markup=False)


@cli.command()
@click.argument("ref")
@click.option("--before", "-B", default=3, show_default=True, type=click.IntRange(0, 1000))
@click.option("--after", "-A", default=3, show_default=True, type=click.IntRange(0, 1000))
@json_option
@pass_ctx
def timeline(obj: Ctx, ref: str, before: int, after: int, as_json: bool) -> None:
    """The events around one event in its session."""
    with obj.memory() as mem:
        events = mem.timeline(ref, before, after)
        if as_json:
            render.emit_json([e.as_dict() for e in events])
        else:
            render.events_table(events, title=f"session {events[0].session_id}")


@cli.command()
@click.argument("query", nargs=-1, required=True)
@click.option("--limit", "-n", default=10, show_default=True, type=click.IntRange(1, 200))
@click.option("--session", "-s", help="Only this session id.")
@click.option("--type", "-t", "types", multiple=True, type=click.Choice(EVENT_TYPES), help="Event type (repeatable).")
@click.option("--since", type=WHEN)
@click.option("--until", type=WHEN)
@click.option(
    "--disclosure",
    "-d",
    type=click.Choice(["index", "timeline", "full", "smart"]),
    default="index",
    show_default=True,
    help="index: one line each; timeline: + session neighbours; full: everything; "
    "smart: full detail only for high-confidence results.",
)
@click.option("--budget", default=2000, show_default=True, type=click.IntRange(100, 100000), help="Token budget.")
@click.option("--text-only", is_flag=True, help="Full-text only (no embedding model, instant).")
@json_option
@pass_ctx
def search(
    obj: Ctx,
    query: tuple[str, ...],
    limit: int,
    session: str | None,
    types: tuple[str, ...],
    since: str | None,
    until: str | None,
    disclosure: str,
    budget: int,
    text_only: bool,
    as_json: bool,
) -> None:
    """Search memory by meaning and words (hybrid: BM25 + vectors + recency)."""
    from memlane.retrieval.disclosure import disclose
    from memlane.retrieval.engine import Engine

    text = " ".join(query)
    with obj.memory() as mem:
        # The daemon's warm model answers when it is up: no model load in this process.
        engine = Engine(mem.config, vectors=not text_only, via_daemon=True)
        hits = mem.search(
            text, limit=limit, session=session, types=list(types), since=since, until=until, engine=engine
        )
        rows = disclose(mem.store, hits, disclosure, budget)
    if as_json:
        render.emit_json(rows)
    elif not rows:
        render.console.print(f"Nothing found for '{text}'.")
    else:
        render.search_results(rows, text)


@cli.command()
@click.option("--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 100000))
@json_option
@pass_ctx
def sessions(obj: Ctx, limit: int, as_json: bool) -> None:
    """Sessions, most recent first, with their summaries."""
    with obj.memory() as mem:
        rows = mem.sessions(limit)
        if as_json:
            render.emit_json(rows)
        elif not rows:
            render.console.print("No sessions captured yet.")
        else:
            render.dict_table(rows, ["id", "started_at", "last_activity", "prompt_count", "event_count", "summary"])


@cli.command()
@json_option
@pass_ctx
def stats(obj: Ctx, as_json: bool) -> None:
    """Counts, privacy filtering and store size for the project."""
    with obj.memory() as mem:
        data = mem.stats()
    if as_json:
        render.emit_json(data)
        return
    p = data["privacy"]
    rows: list[tuple[str, Any]] = [
        ("project", f"{data['project_id']}  ({data['project_root']})"),
        ("events", data["events"]),
        ("sessions", data["sessions"]),
        ("first / last", f"{data['first_activity'] or '-'} / {data['last_activity'] or '-'}"),
        *((f"  {k}", v) for k, v in data["by_type"].items()),
        (
            "privacy",
            f"{p['private_sections']} private section(s), {p['secrets_redacted']} secret(s) redacted, "
            f"{p['chars_filtered']} chars filtered in {p['events_filtered']} event(s)",
        ),
        ("outbox", ", ".join(f"{k} {v}" for k, v in data["outbox"].items()) or "empty"),
        ("forgotten", f"{data['tombstones']} forget operation(s)"),
        ("store", f"{render.human_bytes(data['db_bytes'])}  {data['db_path']}"),
    ]
    render.kv_table(rows)


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["json", "jsonl", "markdown"]), default="jsonl", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), help="File to write (default: stdout).")
@click.option("--session", "-s")
@click.option("--since", type=WHEN)
@pass_ctx
def export(obj: Ctx, fmt: str, output: str | None, session: str | None, since: str | None) -> None:
    """Export events as JSON, JSON lines or Markdown."""
    filters = {k: v for k, v in {"session": session, "since": since}.items() if v}
    with obj.memory() as mem:
        if output:
            tmp = Path(output).with_name(f".{Path(output).name}.tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                count = mem.export(fmt, fh, **filters)
            tmp.replace(output)
            render.err_console.print(f"Exported {count} event(s) to {output}")
        else:
            mem.export(fmt, sys.stdout, **filters)


# ---- curating ----------------------------------------------------------------------------------


@cli.command()
@click.argument("refs", nargs=-1)
@click.option("--session", "-s", help="Forget a whole session.")
@click.option("--before", type=WHEN, help="Forget everything older than this.")
@click.option("--project", "everything", is_flag=True, help="Forget the whole project's memory.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--dry-run", is_flag=True, help="Say what would be removed, remove nothing.")
@pass_ctx
def forget(
    obj: Ctx, refs: tuple[str, ...], session: str | None, before: str | None, everything: bool, yes: bool, dry_run: bool
) -> None:
    """Purge events for good (events, search index, vectors), leaving a tombstone without content."""
    chosen = sum(bool(x) for x in (refs, session, before, everything))
    if chosen != 1:
        raise click.UsageError("give exactly one of: event ids/citations, --session, --before, --project")
    selector: dict[str, Any] = {"ids": list(refs), "session": session, "before": before, "everything": everything}
    selector = {k: v for k, v in selector.items() if v}
    with obj.memory() as mem:
        targets = mem.forget_preview(**selector)
        if not targets:
            render.console.print("Nothing to forget.")
            return
        what = f"{len(targets)} event(s) from project {mem.project.id}"
        if dry_run:
            render.console.print(f"Would forget {what}.")
            return
        if not yes and not click.confirm(f"Forget {what}? This cannot be undone", default=False):
            raise click.Abort()
        count = mem.forget(**selector)
        render.console.print(f"Forgot {count} event(s).")


# ---- projects, config --------------------------------------------------------------------------


@cli.command()
@json_option
def projects(as_json: bool) -> None:
    """Projects memlane has memory for."""
    rows = project.known_projects()
    for row in rows:
        db = paths.db_path(str(row["id"]))
        row["size"] = render.human_bytes(db.stat().st_size) if db.exists() else "-"
    if as_json:
        render.emit_json(rows)
    elif not rows:
        render.console.print("No projects yet: run Claude Code with memlane installed, or `memlane import`.")
    else:
        render.dict_table(rows, ["id", "name", "root", "size"])


def _register_groups() -> None:
    from memlane.cli import admin, config_cmd, daemon_cmd

    cli.add_command(config_cmd.config_group)
    cli.add_command(daemon_cmd.serve)
    cli.add_command(daemon_cmd.daemon_group)
    for command in (admin.install, admin.uninstall, admin.status, admin.doctor, admin.demo):
        cli.add_command(command)
    for module, name in (
        ("memlane.cli.regions", "regions"),
        ("memlane.cli.workflow", "workflow"),
        ("memlane.cli.vectors", "process"),
        ("memlane.cli.vectors", "vectors"),
        ("memlane.cli.importer", "import_group"),
        ("memlane.cli.mcp_cmd", "mcp_group"),
        ("memlane.cli.plugin_cmd", "plugin_group"),
        ("memlane.cli.context_cmd", "context_group"),
    ):
        try:
            mod = __import__(module, fromlist=[name])
        except ImportError:
            continue
        cli.add_command(getattr(mod, name))


_register_groups()


def run() -> None:
    try:
        cli(prog_name="memlane")
    except BrokenPipeError:  # `memlane history | head`
        sys.exit(0)
