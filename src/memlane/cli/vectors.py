"""``memlane process`` and ``memlane vectors status|reconcile|rebuild|retry``."""

from __future__ import annotations

from collections.abc import Callable

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from memlane.cli import render

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memlane.memory import Memory
    from memlane.vectors.worker import ProcessReport


def _embedder(mem: object) -> object:
    """The daemon's warm model when it is up (one model per user), else this process loads it."""
    from memlane.daemon import remote
    from memlane.embed import get_embedder

    cfg = mem.config.embedding  # type: ignore[attr-defined]
    warm = remote.connect(cfg)
    if warm is not None:
        return warm
    if render.err_console.is_terminal:
        render.err_console.print("loading the embedding model…")
    # An EmbeddingError (model missing, endpoint down) becomes one line in cli.main.Group.
    return get_embedder(cfg)


WAIT_POLL_S = 0.5
RETRY_S = 2.0  # the other worker moved nothing for this long: try to take the outbox over (it may have left)
WAIT_STALL_S = 60.0  # nothing moved for this long: leave the rest to finish in the background


def embed_pending(mem: Memory, limit: int | None = None, quiet: bool = False) -> ProcessReport:
    """Drain the project's outbox into the vector index, with a progress bar unless ``quiet``.

    When another worker (the daemon's) is embedding this project already, wait while it drains the outbox:
    a command that returns before its events are embedded gives searches run right after it (a script, a
    benchmark) answers that depend on how fast that worker happens to be."""
    from memlane.vectors.worker import ProcessReport, pending_count

    waiting = pending_count(mem)
    if not waiting:
        # Nothing pending or in progress (an import that found nothing new): no model to load or ask for.
        return ProcessReport()
    embedder = _embedder(mem)
    total = waiting if limit is None else min(limit, waiting)
    if quiet or not total:
        return _drain(mem, embedder, limit, None)
    columns = (TextColumn("embedding"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=render.err_console) as bar:
        task = bar.add_task("embed", total=total)
        return _drain(mem, embedder, limit, lambda done: bar.update(task, completed=done))


def _drain(mem: Memory, embedder: object, limit: int | None, progress: Callable[[int], None] | None) -> ProcessReport:
    """``process_outbox``; while another worker holds the project (``busy``), follow its progress, and take
    over when it leaves. ``busy`` stays set only if nothing moved for ``WAIT_STALL_S``."""
    import time

    from memlane.vectors import process_outbox
    from memlane.vectors.worker import pending_count

    start = left = pending_count(mem)

    def run(limit: int | None = None) -> ProcessReport:
        base = start - left  # what was embedded before this pass: the bar counts the whole outbox
        step = (lambda n, _total: progress(base + n)) if progress else None
        return process_outbox(mem, embedder, limit=limit, progress=step)

    report = run(limit=limit)
    moved = time.monotonic()
    while report.busy and limit is None and left:
        time.sleep(WAIT_POLL_S)
        now = pending_count(mem)
        if now < left:
            moved = time.monotonic()
        left = now
        if progress:
            progress(start - left)
        idle = time.monotonic() - moved
        if idle >= WAIT_STALL_S:
            break
        if left and idle > RETRY_S:  # the other worker may have left with work undone: take over
            again = run()
            report.chunks, report.failed = report.chunks + again.chunks, report.failed + again.failed
            report.errors += again.errors
            report.busy, left = again.busy, pending_count(mem)
    report.remaining = pending_count(mem)
    report.processed = max(report.processed, start - report.remaining)
    report.busy = report.busy and bool(report.remaining)
    return report


def describe_embedding(r: ProcessReport) -> str:
    return f"embedded {r.processed} event(s) ({r.chunks} chunk(s)); {r.remaining} waiting, {r.failed} failed" + (
        f"; last error: {r.errors[-1]}" if r.errors else ""
    )


@click.command()
@click.option("--limit", type=click.IntRange(1), help="Embed at most this many events.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
@click.pass_context
def process(ctx: click.Context, limit: int | None, as_json: bool) -> None:
    """Embed the outbox into the vector index now (the daemon does this in the background)."""
    with ctx.obj.reading(as_json, empty={}) as mem:  # reads and repairs never create a store
        if mem is None:
            return
        report = embed_pending(mem, limit, quiet=as_json)
    if as_json:
        render.emit_json(report.__dict__)
        return
    if report.busy:
        raise click.ClickException(
            f"another worker (probably the daemon) holds this project's embedding and moved nothing for "
            f"{WAIT_STALL_S:.0f} s; {report.remaining} event(s) still waiting (memlane daemon status)"
        )
    click.echo(describe_embedding(report))


@click.group("vectors")
def vectors() -> None:
    """Inspect and repair the vector index."""


@vectors.command("status")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
@click.pass_context
def status_cmd(ctx: click.Context, as_json: bool) -> None:
    """Outbox counts, vector count, model, index."""
    from memlane.vectors import status

    with ctx.obj.reading(as_json, empty={}) as mem:  # reads and repairs never create a store
        if mem is None:
            return
        data = status(mem, _embedder(mem))
    if as_json:
        render.emit_json(data)
        return
    render.kv_table(
        [
            ("model", data.get("current_model")),
            ("vectors", data.get("vectors")),
            ("ANN index", data.get("indexed")),
            ("outbox", ", ".join(f"{k} {v}" for k, v in data["outbox"].items()) or "empty"),
            ("queue", render.queue_line(data["queue"])),
            ("last embedded", data["queue"]["last_done_at"] or "-"),
            *(("failed because", e) for e in data["failed_errors"]),
        ]
    )


@vectors.command("reconcile")
@click.option("--fix/--check", default=True, show_default=True, help="Repair gaps, or only report them.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
@click.pass_context
def reconcile_cmd(ctx: click.Context, fix: bool, as_json: bool) -> None:
    """Compare events with vectors: queue events without vectors, delete vectors without events."""
    from memlane.vectors import reconcile

    with ctx.obj.reading(as_json, empty={}) as mem:  # reads and repairs never create a store
        if mem is None:
            return
        report = reconcile(mem, _embedder(mem), fix=fix)
    if as_json:
        render.emit_json(report.__dict__)
        return
    verb = "queued" if fix else "missing"
    click.echo(
        f"{report.events} event(s), {report.vectors} with vectors; {verb} {report.missing}, "
        f"{'removed' if fix else 'orphaned'} {report.orphans} orphan vector set(s)"
        + ("; run `memlane process` to embed them" if fix and report.missing else "")
    )


@vectors.command("rebuild")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def rebuild_cmd(ctx: click.Context, yes: bool) -> None:
    """Drop this project's vectors and queue every event again."""
    from memlane.vectors import rebuild

    if not yes:
        click.confirm("Drop all vectors of this project and re-embed?", abort=True)
    with ctx.obj.memory(create=False) as mem:  # reads and repairs never create a store
        count = rebuild(mem, _embedder(mem))
    click.echo(f"queued {count} event(s); run `memlane process` (or let the daemon) to embed them")


@vectors.command("retry")
@click.pass_context
def retry_cmd(ctx: click.Context) -> None:
    """Put failed embedding jobs back in the queue."""
    from memlane.vectors import retry_failed

    with ctx.obj.memory(create=False) as mem:  # reads and repairs never create a store
        click.echo(f"re-queued {retry_failed(mem)} failed job(s)")
