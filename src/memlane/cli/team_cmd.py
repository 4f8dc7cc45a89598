"""``memlane team …`` (share a project through PostgreSQL) and ``memlane migrate --to`` (docs/team.md)."""

from __future__ import annotations

import click

from memlane.cli import render
from memlane.cli.invocation import Ctx, pass_ctx

json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")


@click.group("team")
def team_group() -> None:
    """Share this project's memory with your team through a PostgreSQL server (database.url)."""


@team_group.command("init-server")
@click.option("--url", help="An administrator's URL (default: database.url / MEMLANE_DATABASE_URL).")
@pass_ctx
def init_server(obj: Ctx, url: str | None) -> None:
    """Create or upgrade memlane's tables on the server (run once, as an administrator)."""
    from memlane import config
    from memlane.sync import team

    applied = team.init_server(config.load(), url)
    render.console.print(
        f"memlane schema {'migrations ' + ', '.join(map(str, applied)) + ' applied' if applied else 'is up to date'};"
        " members of the role memlane_member can share projects."
    )


@team_group.command("share")
@click.option("--as", "name", help="The project's name on the server, the same in every clone (default: folder name).")
@click.option("--encrypt", is_flag=True, help="Seal events with the team key (team.key_file) before they leave.")
@json_option
@pass_ctx
def share(obj: Ctx, name: str | None, encrypt: bool, as_json: bool) -> None:
    """Share this project (opt-in, per project): the daemon pushes and pulls it from now on."""
    from memlane.sync import team

    with obj.memory() as mem:
        info = team.share(mem, name, encrypt=encrypt)
    if as_json:
        render.emit_json(info)
        return
    sealed = " (encrypted with the team key)" if info["encrypted"] else ""
    render.console.print(
        f"Sharing {info['project']} as '{info['remote']}' on {info['server']}{sealed}; owner {info['owner']}.",
        markup=False,
    )


@team_group.command("unshare")
@pass_ctx
def unshare(obj: Ctx) -> None:
    """Stop syncing this project (what is on the server stays there)."""
    from memlane.sync import team

    with obj.memory(create=False) as mem:
        name = team.unshare(mem)
    render.console.print(f"No longer sharing '{name}'.", markup=False)


@team_group.command("sync")
@json_option
@pass_ctx
def sync(obj: Ctx, as_json: bool) -> None:
    """Push and pull this project now (the daemon does it every team.sync_interval_s)."""
    from memlane.sync import team

    with obj.memory(create=False) as mem:
        report = team.sync_now(mem)
    data = {k: getattr(report, k) for k in ("pushed", "pulled", "vectors", "forgets_pushed", "forgets_pulled")}
    if as_json:
        render.emit_json(data)
    else:
        render.console.print(
            f"pushed {data['pushed']} event(s) ({data['vectors']} vector(s)), pulled {data['pulled']};"
            f" forgets pushed {data['forgets_pushed']}, applied {data['forgets_pulled']}"
        )


@team_group.command("status")
@json_option
@pass_ctx
def status(obj: Ctx, as_json: bool) -> None:
    """What is shared, what is waiting to be pushed, what came from teammates, the last error."""
    from memlane.sync import team

    with obj.memory(create=False) as mem:
        data = team.status(mem)
    if as_json:
        render.emit_json(data)
        return
    if not data["shared"]:
        render.console.print(f"{data['project']} is not shared (memlane team share).", markup=False)
        return
    render.kv_table(
        [
            ("project", data["project"]),
            ("shared as", f"{data['remote']} on {data['server']}"),
            ("pushed", str(data["pushed"])),
            ("pending", f"{data['pending']} event(s), {data['pending_forgets']} forget(s)"),
            ("from teammates", str(data["from_teammates"])),
            ("last sync", data["last_sync"] or "never"),
            ("last error", data["last_error"] or "none"),
        ]
    )


@team_group.command("grant")
@click.argument("role")
@pass_ctx
def grant(obj: Ctx, role: str) -> None:
    """Let a PostgreSQL role (or group role) see this project (owner only)."""
    from memlane.sync import team

    with obj.memory(create=False) as mem:
        team.grant(mem, role)
    render.console.print(f"{role} can now read and write this project.", markup=False)


@team_group.command("revoke")
@click.argument("role")
@pass_ctx
def revoke(obj: Ctx, role: str) -> None:
    """Take a role's access to this project away (owner only)."""
    from memlane.sync import team

    with obj.memory(create=False) as mem:
        team.grant(mem, role, allow=False)
    render.console.print(f"{role} no longer sees this project.", markup=False)


@team_group.command("members")
@pass_ctx
def members(obj: Ctx) -> None:
    """The roles this project is shared with (besides its owner)."""
    from memlane.sync import team

    with obj.memory(create=False) as mem:
        for role in team.members(mem):
            render.console.print(role, markup=False)


@team_group.group("key")
def key_group() -> None:
    """The team key of encrypted projects (AES-256-GCM), kept outside the database."""


@key_group.command("new")
@click.argument("path", type=click.Path(dir_okay=False))
def key_new(path: str) -> None:
    """Write a new random team key to PATH (mode 0600); share it with teammates out of band."""
    from memlane.sync.crypto import TeamKey

    TeamKey.new_file(path)
    render.console.print(f"Wrote a team key to {path} (mode 0600). Set team.key_file to it.", markup=False)


@click.command("migrate")
@click.option("--to", "url", required=True, help="postgresql://… (password from PGPASSWORD, ~/.pgpass or a service).")
@click.option("--as", "name", help="The project's name on the server (default: folder name).")
@click.option("--samples", default=20, show_default=True, type=click.IntRange(0, 1000), help="Searches to compare.")
@json_option
@pass_ctx
def migrate(obj: Ctx, url: str, name: str | None, samples: int, as_json: bool) -> None:
    """Copy this project's store to PostgreSQL, verify counts and searches, and share it from then on."""
    from memlane.sync import team

    with obj.memory(create=False) as mem:
        report = team.migrate_to(mem, url, name, samples=samples)
    if as_json:
        render.emit_json(report)
    else:
        render.console.print(
            f"Copied {report['events']} event(s) and {report['vectors']} vector(s) to '{report['remote']}' on"
            f" {report['server']}; {report['searches_agree']} of {report['searches']} sampled searches agree.",
            markup=False,
        )
        for problem in report["problems"]:
            render.err_console.print(f"mismatch: {problem}", markup=False)
    if report["problems"]:
        raise SystemExit(1)
