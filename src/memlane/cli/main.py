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

from memlane import __version__, atomic, config, paths, project
from memlane.cli import (
    admin,
    config_cmd,
    context_cmd,
    daemon_cmd,
    dashboard_cmd,
    endless_cmd,
    importer,
    knowledge_cmd,
    learning_cmd,
    mcp_cmd,
    plugin_cmd,
    privacy_cmd,
    regions,
    render,
    team_cmd,
    vectors,
    workflow,
)
from memlane.cli.invocation import CWD_HELP, PROJECT_ID_HELP, Ctx, check_cwd, no_memory_line, pass_ctx, project_options
from memlane.cli.params import EVENT_TYPE, OUTPUT_FILE, WHEN
from memlane.errors import MemlaneError
from memlane.memory import Memory, NoMemoryYet, check_query, check_window
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


def os_message(exc: OSError) -> str:
    """One line for a file-system failure: what went wrong, and on which path."""
    what = exc.strerror or type(exc).__name__
    if exc.filename is None:
        return what
    return f"{exc.filename}: {what}" + (f" (and {exc.filename2})" if exc.filename2 else "")


class Group(click.Group):
    """The one place the CLI turns a ``MemlaneError`` (any command, any group) into ``Error: <message>``
    and exit status 1; anything else is a bug and keeps its traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except NoMemoryYet as exc:  # a state, not an error: the same line and exit status 0 for every command
            click.echo(no_memory_line(exc))
            return None
        except MemlaneError as exc:
            raise click.ClickException(str(exc)) from exc
        except sqlite3.DatabaseError as exc:  # a damaged, locked or full store: one line, never a traceback
            raise click.ClickException(storage_message(exc)) from exc
        except OSError as exc:  # a file or folder the user named (or the disk) refused: one line
            raise click.ClickException(os_message(exc)) from exc


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
@click.option("-C", "--cwd", metavar="PATH", help=CWD_HELP)
@click.option("--project-id", help=PROJECT_ID_HELP)
@click.option("--server", is_flag=True, help="Read the team server's copy of a shared project (database.url).")
@click.pass_context
def cli(ctx: click.Context, cwd: str | None, project_id: str | None, server: bool) -> None:
    """memlane — local-first memory for AI coding agents."""
    checked = check_cwd(cwd) if cwd is not None else None
    _read_storage_path()
    ctx.obj = Ctx(checked, project_id, server)
    if ctx.invoked_subcommand is None:  # a bare `memlane` is a request for help, not a usage error
        click.echo(ctx.get_help())


def _read_storage_path() -> None:
    """``storage.path`` moves the project stores (``paths.projects_root``): read the config before any command
    touches one. Nothing is created; a broken config is left for the command that needs it to report."""
    if not os.path.exists(os.path.join(paths.home_path(), "config.toml")):
        return
    try:
        config.load()
    except config.ConfigError:
        pass


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
    check_window(since, until)  # refused even where no store exists yet
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
    with obj.reading(as_json, empty=None) as mem:
        if mem is None:
            return
        event = mem.find(ref)  # with retrieval.cross_project on, another project's citation opens too
        info: dict[str, Any] = {}
        usage: dict[str, Any] = {}
        if event.project_id == mem.project.id:  # what replaced it (the knowledge model), brought up to date
            mem.fetched([event.id], "cli")  # opened in full: a use (the learning loop)
            knowledge_cmd.catch_up(mem, quiet=True)
            info = mem.supersession(event.id)
            usage = mem.usage(event.id)
        if as_json:
            render.emit_json(
                {**event.as_dict(), **({"supersession": info} if info else {}), **({"usage": usage} if usage else {})}
            )
            return
        render.kv_table(
            [
                ("citation", event.cite),
                ("id", event.id),
                ("type", event.type),
                ("time", event.ts),
                ("session", event.session_id),
                ("project", event.project_id),
                *render.supersession_rows(info),
                *(learning_cmd.usage_rows(event.cite, usage) if usage else []),
                *((key, value) for key, value in sorted(event.metadata.items()) if value not in (None, "", {})),
            ]
        )
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
    with obj.reading(as_json) as mem:
        if mem is None:
            return
        events = mem.timeline(ref, before, after)
        if as_json:
            render.emit_json([e.as_dict() for e in events])
        else:
            render.events_table(events, title=f"session {events[0].session_id}")


@cli.command()
@click.argument("query", nargs=-1)
@click.option("--limit", "-n", default=10, show_default=True, type=click.IntRange(1, 200), help="At most this many.")
@click.option("--session", "-s", help="Only this session id.")
@click.option("--type", "-t", "types", multiple=True, type=EVENT_TYPE, help="Event type (repeatable).")
@click.option("--since", type=WHEN, help="From this time (2026-11-01, 7d, 12h).")
@click.option("--until", type=WHEN, help="Before this time.")
@click.option("--tool", metavar="NAME", help="Only tool calls of this tool (Bash, Edit, Read, …).")
@click.option("--file", "file", metavar="PATH", help="Only tool calls that read, wrote or named this file (or a part).")
@click.option("--failed", is_flag=True, help="Only tool calls that failed (non-zero exit, tool error).")
@click.option(
    "--disclosure",
    "-d",
    type=click.Choice(["index", "timeline", "full", "smart"]),
    default="index",
    show_default=True,
    help="index: one line each; timeline: + session neighbours; full: everything; "
    "smart: full detail for a clear winner, timelines when several match equally.",
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
    tool: str | None,
    file: str | None,
    failed: bool,
    disclosure: str,
    budget: int,
    text_only: bool,
    as_json: bool,
) -> None:
    """Search memory by meaning and words (hybrid: BM25 + vectors + recency).

    With --tool, --file or --failed the QUERY may be left out: tool calls are then listed newest first.
    """
    from memlane.knowledge.learning import mark_learned
    from memlane.memory import check_tool_filters
    from memlane.retrieval.disclosure import disclose, mark_superseded
    from memlane.retrieval.engine import Engine

    tools = check_tool_filters(tool, file, failed, list(types))
    check_window(since, until)  # refused even where no store exists yet
    if not query and tools:
        _tool_runs(obj, tools, session, since, until, limit, as_json)
        return
    text = check_query(" ".join(query))  # refused even where no store exists yet (reading() answers "empty")
    with obj.reading(as_json) as mem:
        if mem is None:
            return
        if not text_only:
            _warn_unembedded(mem)
        # The daemon's warm model answers when it is up: no model load in this process.
        # Started by a search only where daemon.search_starts says so: a read starts nothing by default.
        engine = Engine(
            mem.config, vectors=not text_only, via_daemon=True, start_daemon=mem.config.daemon.search_starts
        )
        hits = mem.search(
            text, limit=limit, session=session, types=list(types), since=since, until=until, engine=engine, **tools
        )

        def mark(rows: list[dict[str, Any]]) -> None:  # counted against the budget with the rows
            mark_superseded(mem.store, rows)  # what replaced a result (the knowledge model), said in its row
            mark_learned(mem.store, rows)  # its level, and the insight it is evidence of (the learning loop)

        shown = disclose(hits, disclosure, budget, mem.neighbours, mem.config.retrieval, mark=mark)
        others = {h.event.project_id for h in hits} - {mem.project.id}
        where = mem.project.name + (f" and {len(others)} other project(s)" if others else "")
        if engine.model_error:  # never silently text-only
            render.err_console.print(
                f"embedding model '{mem.config.embedding.model}' cannot be used ({engine.model_error}); "
                "these are full-text results only (`memlane doctor` says how to fix it)",
                markup=False,
            )
    if as_json:
        render.emit_json(shown.rows)
    elif not shown.rows:
        render.console.print(f"Nothing found for '{text}'.")
    else:
        render.search_results(shown.rows, text)
        if disclosure == "smart" or shown.meta["shown"] < shown.meta["matches"] or others:
            render.err_console.print(_disclosure_note(shown.meta, where), markup=False)


def _disclosure_note(meta: dict[str, Any], where: str) -> str:
    """One line on stderr: where the results come from and what the layer and budget did."""
    parts = [f"from {where}"]
    if meta["layer"] == "smart":
        parts.append(f"smart: {meta['expansion'].replace('_', ' ')}, {meta['expanded']} expanded")
    if meta["shown"] < meta["matches"]:
        parts.append(f"{meta['shown']} of {meta['matches']} shown within the budget")
    parts.append(f"~{meta['estimated_tokens']} of {meta['budget_tokens']} tokens")
    return "; ".join(parts)


def _tool_runs(
    obj: Ctx,
    tools: dict[str, Any],
    session: str | None,
    since: str | None,
    until: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """``search --failed`` / ``--tool`` / ``--file`` without a query: the tool calls, newest first."""
    with obj.reading(as_json) as mem:
        if mem is None:
            return
        events = mem.tool_runs(session=session, since=since, until=until, limit=limit, **tools)
    if as_json:
        render.emit_json([e.as_dict() for e in events])
    elif not events:
        render.console.print("No tool calls match.")
    else:
        what = ", ".join(f"{k} {v}" if k != "failed" else "failed" for k, v in tools.items())
        render.events_table(events, title=f"tool calls ({what}) — {len(events)}, newest first")


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
        knowledge_cmd.catch_up(mem, quiet=True)
        data["learning"] = mem.learning_stats()
    if as_json:
        render.emit_json(data)
        return
    learned = data["learning"]
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
            f"{p['chars_filtered']} chars filtered in {p['events_filtered']} event(s)"
            + (f", {p['unclosed_tags']} unclosed private tag(s) left unfiltered" if p.get("unclosed_tags") else "")
            + (f", {p['anonymized']} anonymized" if p.get("anonymized") else ""),
        ),
        ("outbox", ", ".join(f"{k} {v}" for k, v in data["outbox"].items()) or "empty"),
        ("forgotten", f"{data['tombstones']} forget operation(s)"),
        ("levels", ", ".join(f"{k} {v}" for k, v in learned["levels"].items())),
        ("uses", ", ".join(f"{k} {v}" for k, v in learned["uses"].items())),
        ("insights", _insights_line(learned)),
        ("store", f"{render.human_bytes(data['db_bytes'])}  {data['db_path']}"),
    ]
    endless = data.get("endless")
    if endless:
        rows.append(("mode", endless["mode"]))
        rows.append(("continuity", endless_cmd.continuity_text(endless["continuity"])))
        rows.extend(("", reason) for reason in (endless["continuity"] or {}).get("detail", {}).get("reasons", []))
    render.kv_table(rows)


def _insights_line(learned: dict[str, Any]) -> str:
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(learned["insights"].items())) or "none"
    levels = ", ".join(f"{k} {v}" for k, v in learned["insight_levels"].items() if v)
    return f"{kinds}; {levels}" if levels else kinds


@cli.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "jsonl", "markdown"]),
    default="jsonl",
    show_default=True,
    help="Output format.",
)
@click.option("--output", "-o", type=OUTPUT_FILE, help="File to write (default: stdout).")
@click.option("--session", "-s", help="Only this session id.")
@click.option("--since", type=WHEN, help="From this time (2026-11-01, 7d, 12h).")
@pass_ctx
def export(obj: Ctx, fmt: str, output: str | None, session: str | None, since: str | None) -> None:
    """Export events as JSON, JSON lines or Markdown."""
    filters = {k: v for k, v in {"session": session, "since": since}.items() if v}
    with obj.reading(False) as mem:
        if mem is None:
            return
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
    with obj.reading(as_json) as mem:
        if mem is None:
            return
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


@cli.command()
@click.option("--max-mb", type=click.IntRange(1, 10_000_000), help="The cap (default: storage.max_size_mb).")
@json_option
@pass_ctx
def prune(obj: Ctx, max_mb: int | None, as_json: bool) -> None:
    """Bring the store under its size cap now: the oldest low-value events go first (the daemon does this
    on its own when storage.max_size_mb is set). Protected and recent events stay (docs/retention.md)."""
    from memlane import retention

    with obj.memory(create=False) as mem:
        cap = max_mb if max_mb is not None else mem.config.storage.max_size_mb
        if not cap:
            raise click.ClickException("no size cap: set storage.max_size_mb (memlane config set) or pass --max-mb")
        report = retention.prune(mem, cap * 1024 * 1024)
    if as_json:
        render.emit_json(report.as_dict())
    else:
        render.console.print(report.line(), markup=False)


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
    knowledge_cmd.tasks_group,
    knowledge_cmd.rebuild,
    learning_cmd.citations_group,
    learning_cmd.insights_group,
    endless_cmd.endless_group,
    team_cmd.team_group,
    team_cmd.migrate,
):
    cli.add_command(_command)
project_options(cli)  # -C / --project-id after the subcommand too (`memlane history --project-id X`)


def run() -> None:
    try:
        cli(prog_name="memlane")
    except BrokenPipeError:  # `memlane history | head`
        sys.exit(0)
