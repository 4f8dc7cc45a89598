"""``memlane`` commands. Thin wrappers over the library API (``memlane.memory``).

Why one module (~440 lines): the root group, the one place CLI errors become ``Error: <message>``
(``Group``, ``storage_message``), the everyday commands (history, show, timeline, search, sessions, stats,
export, forget, projects, hook) and the explicit registration of every group at the end. ``Ctx`` lives in
``cli/invocation.py`` so groups need not import this module.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import click

from memlane import __version__, atomic, paths, project
from memlane.cli import (
    admin,
    config_cmd,
    context_cmd,
    daemon_cmd,
    dashboard_cmd,
    importer,
    mcp_cmd,
    plugin_cmd,
    privacy_cmd,
    regions,
    render,
    vectors,
    workflow,
)
from memlane.cli.invocation import Ctx, pass_ctx
from memlane.cli.params import EVENT_TYPE, WHEN
from memlane.errors import MemlaneError
from memlane.memory import Memory, check_query
from memlane.store.db import StoreDamaged, is_damage

json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")


def storage_message(exc: sqlite3.DatabaseError) -> str:
    """One line for a SQLite failure that escaped a command."""
    if isinstance(exc, StoreDamaged):
        return str(exc)
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if is_damage(exc):
        return f"the memory store is damaged ({first}); run `memlane doctor --repair`"
    return f"memory store unavailable ({first})"


class Group(click.Group):
    """The one place the CLI turns a ``MemlaneError`` (any command, any group) into ``Error: <message>``
    and exit status 1; anything else is a bug and keeps its traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemlaneError as exc:
            raise click.ClickException(str(exc)) from exc
        except sqlite3.DatabaseError as exc:  # a damaged, locked or full store: one line, never a traceback
            raise click.ClickException(storage_message(exc)) from exc


EPILOG = """\b
Exit status: 0 success; 1 an error (one line on stderr) or `doctor` found a problem; 2 bad usage.
Shell completion (bash, zsh, fish): eval "$(_MEMLANE_COMPLETE=bash_source memlane)"
Colour: off when NO_COLOR is set or output is not a terminal; piped tables are tab-separated, in full."""


@click.group(
    cls=Group,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
    epilog=EPILOG,
    invoke_without_command=True,
)
@click.version_option(__version__, "--version", "-V", prog_name="memlane", help="Show the version and exit.")
@click.option(
    "-C", "--cwd", metavar="PATH", help="Act on the project containing this folder (default: the current one)."
)
@click.option("--project-id", help="Act on a registered project by id (see `memlane projects`).")
@click.pass_context
def cli(ctx: click.Context, cwd: str | None, project_id: str | None) -> None:
    """memlane — local-first memory for AI coding agents."""
    if cwd is not None and not os.path.isdir(cwd):
        raise click.ClickException(f"-C {cwd}: no such folder")
    ctx.obj = Ctx(cwd, project_id)
    if ctx.invoked_subcommand is None:  # a bare `memlane` is a request for help, not a usage error
        click.echo(ctx.get_help())


# ---- reading -----------------------------------------------------------------------------------


@cli.command()
@click.option("--session", "-s", help="Only this session id.")
@click.option("--type", "-t", "types", multiple=True, type=EVENT_TYPE, help="Event type (repeatable).")
@click.option("--since", type=WHEN, help="From this time (2026-11-01, 7d, 12h).")
@click.option("--until", type=WHEN, help="Before this time.")
@click.option("--limit", "-n", default=30, show_default=True, type=click.IntRange(1, 100000), help="At most this many.")
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
    """Recent events, newest first (by when they happened, so imported history sorts in place)."""
    with obj.reading(as_json) as mem:
        if mem is None:
            return
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
    with obj.memory(create=False) as mem:
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
@click.option("--before", "-B", default=3, show_default=True, type=click.IntRange(0, 1000), help="Events before it.")
@click.option("--after", "-A", default=3, show_default=True, type=click.IntRange(0, 1000), help="Events after it.")
@json_option
@pass_ctx
def timeline(obj: Ctx, ref: str, before: int, after: int, as_json: bool) -> None:
    """The events around one event in its session."""
    with obj.memory(create=False) as mem:
        events = mem.timeline(ref, before, after)
        if as_json:
            render.emit_json([e.as_dict() for e in events])
        else:
            render.events_table(events, title=f"session {events[0].session_id}")


@cli.command()
@click.argument("query", nargs=-1, required=True)
@click.option("--limit", "-n", default=10, show_default=True, type=click.IntRange(1, 200), help="At most this many.")
@click.option("--session", "-s", help="Only this session id.")
@click.option("--type", "-t", "types", multiple=True, type=EVENT_TYPE, help="Event type (repeatable).")
@click.option("--since", type=WHEN, help="From this time (2026-11-01, 7d, 12h).")
@click.option("--until", type=WHEN, help="Before this time.")
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

    text = check_query(" ".join(query))  # refused even where no store exists yet (reading() answers "empty")
    with obj.reading(as_json) as mem:
        if mem is None:
            return
        if not text_only:
            _warn_unembedded(mem)
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


def _warn_unembedded(mem: Memory) -> None:
    """Events still in the outbox have no vector: say so, or a search by meaning misses them silently."""
    waiting = mem.store.stats()["outbox"]
    count = sum(n for status, n in waiting.items() if status != "done")
    if count:
        render.err_console.print(
            f"{count} event(s) not embedded yet; results for them are full-text only "
            "(the daemon embeds them, or run `memlane process`)."
        )


@cli.command()
@click.option("--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 100000), help="At most this many.")
@json_option
@pass_ctx
def sessions(obj: Ctx, limit: int, as_json: bool) -> None:
    """Sessions, most recent first, with their summaries."""
    with obj.reading(as_json) as mem:
        if mem is None:
            return
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
    with obj.reading(as_json, empty={"events": 0, "sessions": 0, "db_path": None}) as mem:
        if mem is None:
            return
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
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "jsonl", "markdown"]),
    default="jsonl",
    show_default=True,
    help="Output format.",
)
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), help="File to write (default: stdout).")
@click.option("--session", "-s", help="Only this session id.")
@click.option("--since", type=WHEN, help="From this time (2026-11-01, 7d, 12h).")
@pass_ctx
def export(obj: Ctx, fmt: str, output: str | None, session: str | None, since: str | None) -> None:
    """Export events as JSON, JSON lines or Markdown."""
    filters = {k: v for k, v in {"session": session, "since": since}.items() if v}
    with obj.memory(create=False) as mem:
        if output:
            with atomic.replacing(output) as fh:
                count = mem.export(fmt, fh, **filters)
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
@click.option("--dry-run", is_flag=True, help="List the events that would be removed, remove nothing.")
@json_option
@pass_ctx
def forget(
    obj: Ctx,
    refs: tuple[str, ...],
    session: str | None,
    before: str | None,
    everything: bool,
    yes: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Purge events for good (events, search index, vectors), leaving a tombstone without content."""
    chosen = sum(bool(x) for x in (refs, session, before, everything))
    if chosen != 1:
        raise click.UsageError("give exactly one of: event ids/citations, --session, --before, --project")
    selector: dict[str, Any] = {"ids": list(refs), "session": session, "before": before, "everything": everything}
    selector = {k: v for k, v in selector.items() if v}
    with obj.memory(create=False) as mem:
        targets = mem.forget_preview(**selector)
        if dry_run and as_json:
            render.emit_json([mem.get(event_id).as_dict() for event_id, _type in targets])
            return
        if not targets:
            render.console.print("Nothing to forget.")
            return
        what = f"{len(targets)} event(s) from project {mem.project.id}"
        if dry_run:
            render.events_table([mem.get(event_id) for event_id, _type in targets], title=f"Would forget {what}")
            if render.layout() == "plain":
                render.err_console.print(f"Would forget {what}.")
            return
        if not yes and not click.confirm(f"Forget {what}? This cannot be undone", default=False):
            raise click.Abort()
        count = mem.forget(**selector)
        render.console.print(f"Forgot {count} event(s).")


# ---- projects, config --------------------------------------------------------------------------


@cli.command()
@json_option
def projects(as_json: bool) -> None:
    """Projects memlane has memory for (a store on disk; reads never add one)."""
    rows = []
    sizes: list[int] = []
    for row in project.known_projects():
        db = paths.db_path(str(row["id"]))
        if not db.exists():  # registered by an older memlane's read, never written: not a memory
            continue
        row["size_bytes"] = _store_bytes(db)
        sizes.append(_store_bytes(db))
        rows.append(row)
    if as_json:
        render.emit_json(rows)
    elif not rows:
        render.console.print("No projects yet: run Claude Code with memlane installed, or `memlane import`.")
    else:
        for row, size in zip(rows, sizes, strict=True):
            row["size"] = render.human_bytes(size)
        render.dict_table(rows, ["id", "name", "root", "size"])


def _store_bytes(db: Path) -> int:
    """The database with its WAL and shared-memory files: what the store takes on disk."""
    total = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            total += os.path.getsize(f"{db}{suffix}")
        except OSError:
            pass
    return total


@cli.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": ["-h", "--help"]}
)
@click.argument("event", required=False)
@click.argument("extra", nargs=-1, type=click.UNPROCESSED)
def hook(event: str | None, extra: tuple[str, ...]) -> None:
    """The Claude Code hook entry point: reads the event's JSON on stdin, always exits 0.

    EVENT is the hook event name (SessionStart, UserPromptSubmit, PostToolUse, Stop, SessionEnd,
    PreCompact, ...). Registered by `memlane install`; you do not run it by hand, except to try one:
    `memlane hook UserPromptSubmit < payload.json`. (The installed `memlane` command answers hooks
    without loading this CLI, to stay within Claude Code's time budget.)
    """
    from memlane import hooks

    if not event:
        raise click.UsageError("name the hook event, e.g. `memlane hook UserPromptSubmit < payload.json`")
    sys.exit(hooks.main([event, *extra]))


# Every command group is registered by name (imported at the top): a module that fails to import
# fails loudly, rather than its commands vanishing from the CLI.
for _command in (
    config_cmd.config_group,
    daemon_cmd.serve,
    daemon_cmd.daemon_group,
    dashboard_cmd.dashboard,
    admin.install,
    admin.uninstall,
    admin.status,
    admin.doctor,
    admin.demo,
    regions.regions,
    workflow.workflow,
    vectors.process,
    vectors.vectors,
    importer.import_group,
    mcp_cmd.mcp_group,
    plugin_cmd.plugin_group,
    context_cmd.context_group,
    privacy_cmd.privacy_group,
):
    cli.add_command(_command)


def run() -> None:
    try:
        cli(prog_name="memlane")
    except BrokenPipeError:  # `memlane history | head`
        sys.exit(0)
