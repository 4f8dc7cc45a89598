"""``memlane serve`` and ``memlane daemon status|start|stop|logs``."""

from __future__ import annotations

import os
import signal
import time

import click

from memlane import paths
from memlane.cli import render
from memlane.daemon import state


@click.command()
@click.option("--port", type=click.IntRange(0, 65535), help="Port (default: daemon.port, 37777; 0 = any free port).")
@click.option("--no-worker", is_flag=True, help="Serve searches only; do not embed the outbox.")
@click.option("--quiet", is_flag=True, help="No start-up message (used when started detached).")
def serve(port: int | None, no_worker: bool, quiet: bool) -> None:
    """Run the daemon in the foreground: HTTP API on 127.0.0.1 plus the embedding worker."""
    import os

    # Before numpy loads (BLAS reads these once): the daemon embeds one short query at a time, where BLAS
    # threads only spin and wake; on a busy 2-core machine they made hooks miss their deadline 28 times in 30
    # against 4 with one thread (benchmarks/hook_latency.py --daemon). The worker child inherits it.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    # Arrow (under LanceDB) allocates through glibc instead of its own mimalloc pool, so the worker's
    # malloc_trim after each step returns its freed memory too (embed_worker.release_memory).
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    from memlane.daemon.server import serve as run

    if not quiet:
        click.echo("memlane daemon starting (Ctrl-C to stop)…")
    run(port=port, worker=not no_worker)  # a DaemonError becomes one line in cli.main.Group


@click.group("daemon")
def daemon_group() -> None:
    """The background daemon (search API, embedding worker)."""


@daemon_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
def status(as_json: bool) -> None:
    """Whether it runs, where, and what it is doing."""
    from memlane.daemon.server import describe

    info = describe()
    if as_json:
        render.emit_json(info)
    elif not info["running"]:
        click.echo("daemon: not running (start it with `memlane daemon start`; SessionStart starts it too)")
    else:
        health = info.get("health") or {}
        click.echo(
            f"daemon: running, pid {info['pid']}, http://127.0.0.1:{info['port']}, "
            f"model {health.get('model') or health.get('model_error') or 'loading'}, "
            f"embedded {((health.get('worker') or {}).get('processed', 0))} event(s) since start, "
            f"ran {sum((health.get('hooks') or {}).values())} hook(s)" + _hook_times(health.get("hook_ms_p50") or {})
        )


def _hook_times(p50: dict[str, float]) -> str:
    """The median time the daemon took for the hooks Claude Code waits for, e.g. " (UserPromptSubmit 14.2 ms)"."""
    return f" (median {', '.join(f'{event} {ms} ms' for event, ms in p50.items())})" if p50 else ""


@daemon_group.command("start")
def start() -> None:
    """Start it detached (no-op when it runs)."""
    from memlane.daemon.spawn import start_detached

    pid = start_detached()
    if pid is None:
        click.echo("daemon already running")
        return
    for _ in range(100):
        if state.read_info():
            click.echo(f"daemon started (pid {pid})")
            return
        time.sleep(0.1)
    raise click.ClickException(f"daemon did not come up; see {paths.logs_dir() / 'daemon.out'}")


@daemon_group.command("stop")
def stop() -> None:
    """Stop it (SIGTERM, then wait)."""
    info = state.read_info()
    if not info:
        click.echo("daemon not running")
        return
    from memlane import proc

    pid = int(info["pid"])
    started = proc.start_time(pid)
    os.kill(pid, signal.SIGTERM)
    # Wait for the process itself, not for daemon.json: the daemon removes that file before it has
    # stopped its embedding worker and released its lock and port.
    for _ in range(150):
        if not proc.alive(pid, started):
            click.echo("daemon stopped")
            return
        time.sleep(0.1)
    raise click.ClickException(f"daemon (pid {pid}) did not stop within 15 s")


@daemon_group.command("logs")
@click.option("-n", "lines", default=40, show_default=True, type=click.IntRange(1, 100000), help="How many lines.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output (a list of lines).")
def logs(lines: int, as_json: bool) -> None:
    """The last lines of the daemon's log."""
    path = paths.logs_dir() / "daemon.log"
    tail = path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:] if path.exists() else []
    if as_json:
        render.emit_json(tail)
        return
    if not path.exists():
        click.echo("no daemon log yet")
        return
    for line in tail:
        click.echo(line)
