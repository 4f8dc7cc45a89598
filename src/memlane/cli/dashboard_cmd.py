"""``memlane dashboard``: start the daemon if needed, print a one-time login link and open the browser."""

from __future__ import annotations

import os
import time

import click

from memlane import config_file, paths, project
from memlane.cli.invocation import Ctx, pass_ctx
from memlane.daemon import state
from memlane.errors import MemlaneError

LINK_DEADLINE_MS = 5000
START_WAIT_S = 30.0  # a cold daemon loads its modules first: seconds on a busy machine


def _running_daemon() -> dict[str, object]:
    """The daemon's info, starting it (detached) when it is down."""
    info = state.read_info()
    if info:
        return info
    from memlane.daemon.spawn import start_detached

    start_detached()
    end = time.monotonic() + START_WAIT_S
    while time.monotonic() < end:
        info = state.read_info()
        if info:
            return info
        time.sleep(0.1)
    raise MemlaneError(f"the daemon did not come up; see {paths.logs_dir() / 'daemon.out'}")


def _project_id(obj: Ctx) -> str | None:
    """The project the dashboard opens on: this folder's (or --project-id's) when it has memory."""
    try:
        proj = project.resolve(obj.cwd, obj.project_id)
    except MemlaneError:
        return None
    return proj.id if os.path.exists(proj.db_file) else None


@click.command("dashboard")
@click.option("--no-open", is_flag=True, help="Print the login link only; do not open a browser.")
@click.option("--set-password", is_flag=True, help="Set a dashboard password (asked twice, stored as a hash).")
@click.option("--clear-password", is_flag=True, help="Remove the dashboard password.")
@pass_ctx
def dashboard(obj: Ctx, no_open: bool, set_password: bool, clear_password: bool) -> None:
    """Open the web dashboard: live events, sessions, search, what Claude was told, stats, settings, CLAUDE.md.

    Starts the daemon if it is down and prints a one-time login link (it works once, for ten minutes, and
    leaves the browser logged in). The dashboard listens on 127.0.0.1 only, unless daemon.host names another
    address and a password is set (--set-password).
    """
    if set_password or clear_password:
        from memlane.web.auth import hash_password

        if set_password:
            password = click.prompt("Dashboard password", hide_input=True, confirmation_prompt=True)
            config_file.set_value("dashboard.password_hash", hash_password(password))
            click.echo("Dashboard password set (a running daemon uses it once restarted: memlane daemon stop).")
        else:
            config_file.unset("dashboard.password_hash")
            click.echo("Dashboard password removed.")
        return
    from memlane.daemon import client

    info = _running_daemon()
    answer = client.call("/api/dashboard/login", {"project_id": _project_id(obj)}, LINK_DEADLINE_MS)
    if not answer or not isinstance(answer.get("path"), str):
        raise MemlaneError(
            "the running daemon did not give a login link (an older memlane?); restart it: memlane daemon stop"
        )
    url = f"http://127.0.0.1:{info['port']}{answer['path']}"
    click.echo(f"memlane dashboard: {url}")
    click.echo("(a one-time login link: it works once, for ten minutes)", err=True)
    if not no_open:
        import webbrowser

        webbrowser.open(url)
