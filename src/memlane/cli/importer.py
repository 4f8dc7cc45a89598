"""``memlane import`` (Claude Code and Codex history) and ``memlane import validate``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from memlane import project
from memlane.cli import render
from memlane.cli.params import WHEN
from memlane.importers import Importer, Options, Report, discover


def scope_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by import and validate: where to look and what to read."""
    for option in reversed(
        [
            click.option(
                "--source",
                type=click.Choice(["claude", "codex", "all"]),
                default="all",
                show_default=True,
                help="Whose history to read.",
            ),
            click.option(
                "--project",
                "project_path",
                type=click.Path(exists=True, file_okay=False),
                help="Import for the project containing this folder (default: the current one).",
            ),
            click.option(
                "--session",
                "session_files",
                multiple=True,
                type=click.Path(exists=True, dir_okay=False),
                help="Only this transcript/rollout file (repeatable).",
            ),
            click.option("--all", "every", is_flag=True, help="Every project's history, each into its own project."),
            click.option("--sidechains", is_flag=True, help="Also import subagent (sidechain) messages."),
            click.option("--since", type=WHEN, help="Only history from this time (2026-06-01, 30d)."),
            click.option("--limit", type=click.IntRange(1), help="At most this many session files (newest first)."),
            click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output."),
        ]
    ):
        func = option(func)
    return func


def _project(ctx: click.Context, project_path: str | None) -> project.Project:
    obj = ctx.find_root().obj
    if project_path:
        return project.identify(project_path)
    return project.resolve(obj.cwd, obj.project_id)


def _run(ctx: click.Context, scope: dict[str, Any], dry_run: bool, force: bool) -> tuple[Report, Importer]:
    """Discover and import (or, with ``dry_run``, only count) within the scope options."""
    proj = _project(ctx, scope["project_path"])
    quiet = scope["as_json"]  # an ImportError_ (bad --session file…) becomes one line in cli.main.Group
    sources = ["claude", "codex"] if scope["source"] == "all" else [scope["source"]]
    options = Options(
        sources, scope["session_files"], scope["every"], scope["sidechains"], force, dry_run,
        scope["limit"], scope["since"],
    )  # fmt: skip
    candidates = discover(proj, options)
    importer = Importer(proj, options)
    if quiet or not candidates:
        return importer.run(candidates), importer
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=render.err_console, transient=True) as bar:
        verb = "checking" if options.dry_run else "importing"
        task = bar.add_task(f"{verb} sessions", total=len(candidates))
        report = importer.run(candidates, progress=lambda _c: bar.advance(task))
    return report, importer


@click.group("import", invoke_without_command=True)
@scope_options
@click.option("--dry-run", is_flag=True, help="Report what would be imported; write nothing.")
@click.option("--force", is_flag=True, help="Re-import: drop what earlier imports of these sessions stored first.")
@click.option("--no-embed", is_flag=True, help="Do not embed the imported events now (the daemon will later).")
@click.pass_context
def import_group(ctx: click.Context, dry_run: bool, force: bool, no_embed: bool, **scope: Any) -> None:
    """Import earlier Claude Code and Codex sessions into memory (safe to re-run: nothing is stored twice).

    \b
    memlane import                      # this project's Claude Code + Codex history
    memlane import --dry-run            # what would be imported
    memlane import --source codex --since 30d
    memlane import --all                # every project's history, each into its own store
    memlane import validate             # read-only report of what is there
    """
    if ctx.invoked_subcommand is not None:
        return
    as_json = scope["as_json"]
    report, importer = _run(ctx, scope, dry_run=dry_run, force=force)
    with importer:
        embedded = {} if dry_run or no_embed else _embed(importer, report, quiet=as_json)
    if as_json:
        render.emit_json({**report.as_dict(), "embedded": embedded})
        return
    _print_summary(report, dry_run)
    for pid, line in embedded.items():
        render.console.print(f"{pid}: {line}")


def _embed(importer: Importer, report: Report, quiet: bool) -> dict[str, str]:
    from memlane.cli.vectors import WAIT_STALL_S, describe_embedding, embed_pending

    out: dict[str, str] = {}
    for pid, mem in importer.memories.items():
        if pid not in report.projects:
            continue
        result = embed_pending(mem, quiet=quiet)
        out[pid] = (
            f"another worker (the daemon) holds the embedding and moved nothing for {WAIT_STALL_S:.0f} s; "
            f"{result.remaining} event(s) left for it to finish in the background"
            if result.busy
            else describe_embedding(result)
        )
    return out


def _print_summary(report: Report, dry_run: bool) -> None:
    data = report.as_dict()
    files = data["files"]
    if not report.files:
        render.console.print("No Claude Code or Codex history found for this project.")
        return
    verb = "would import" if dry_run else "imported"
    render.console.print(
        f"{verb} {data['new_events']} new event(s) from {files.get('imported', 0) + files.get('dry-run', 0)} "
        f"session file(s); {data['already_present']} already in memory, {files.get('unchanged', 0)} file(s) unchanged"
    )
    if data["bad_lines"]:
        bad = [f for f in report.files if f.bad_lines]
        where = ", ".join(f"{os.path.basename(f.path)} line(s) {f.bad_line_numbers[:5]}" for f in bad[:3])
        render.console.print(f"[yellow]{data['bad_lines']} unreadable line(s) skipped[/] ({where})")
    others = [f for f in report.files if f.status == "other-project"]
    if others:
        render.console.print(f"{len(others)} file(s) belong to other projects (use --all to import them there)")
    unconfirmed = files.get("unconfirmed", 0)
    if unconfirmed:
        render.console.print(f"{unconfirmed} file(s) record no working directory and were left alone")
    open_turns = sum(f.open_turn for f in report.files if f.status in ("imported", "dry-run"))
    if open_turns:
        render.console.print(
            f"{open_turns} session(s) end mid-turn (still running?): their last answer waits for a later import"
        )
    unreadable = [f for f in report.files if f.status == "unreadable"]
    if unreadable:
        render.console.print(f"[yellow]{len(unreadable)} unreadable file(s) skipped[/]")
    for f in report.files:
        if f.status in ("error", "unreadable"):
            render.console.print(f"[red]{f.status}[/] {f.path}: {f.message}")


@import_group.command("validate")
@scope_options
@click.pass_context
def validate(ctx: click.Context, **scope: Any) -> None:
    """Read-only report: which history files are there, whose they are, what they hold, what is new."""
    as_json = scope["as_json"]
    report, importer = _run(ctx, scope, dry_run=True, force=False)
    importer.close()
    if as_json:
        render.emit_json(report.as_dict())
        return
    rows = [
        {
            "source": f.source,
            "session": (f.session_id or os.path.basename(f.path))[:8],
            "when": (f.first_ts or "")[:16].replace("T", " "),
            "status": ("to import" if f.new else "in memory") if f.status == "dry-run" else f.status,
            "events": sum(f.types.values()),
            "new": f.new,
            "bad lines": f.bad_lines,
            "note": f.message,
        }
        for f in report.files
    ]
    if not rows:
        render.console.print("No Claude Code or Codex history found for this project.")
        return
    render.dict_table(rows, list(rows[0]), "history files (--json for paths and per-type counts)")
    skipped = report.skipped()
    if skipped:
        render.console.print("passed over: " + ", ".join(f"{k} {v}" for k, v in skipped.items()))
