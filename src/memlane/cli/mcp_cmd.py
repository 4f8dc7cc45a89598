"""``memlane mcp``: run the MCP server, or register it with an MCP client."""

from __future__ import annotations

import os
from pathlib import Path

import click

from memlane.mcp import install as mcp_install

CLIENT = click.Choice(mcp_install.CLIENTS)
SCOPE = click.Choice(mcp_install.SCOPES)


def _root(ctx: click.Context) -> Path:
    from memlane import project

    obj = ctx.find_root().obj
    return project.find_root(getattr(obj, "cwd", None) or os.getcwd())


def _default_project(ctx: click.Context, option: str | None) -> str | None:
    """``--project``, else the global ``-C``; a client variable passed through unexpanded counts as unset."""
    if option and "${" in option:
        click.echo(f"memlane mcp: ignoring unexpanded --project {option!r}; using the working directory", err=True)
        option = None
    return option or getattr(ctx.find_root().obj, "cwd", None)


@click.group("mcp", invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for clients that start the server; http: streamable HTTP on 127.0.0.1.",
)
@click.option("--port", default=37778, show_default=True, type=click.IntRange(1, 65535), help="HTTP port.")
@click.option("--project", help="Default project directory for calls that name none (default: working directory).")
@click.option("--text-only", is_flag=True, help="Full-text search only (never load the embedding model).")
@click.option("--no-auth", is_flag=True, help="HTTP: do not require the bearer token (Host/Origin still checked).")
@click.pass_context
def mcp_group(
    ctx: click.Context, transport: str, port: int, project: str | None, text_only: bool, no_auth: bool
) -> None:
    """Run memlane's MCP server (stdio by default), or manage client configs: `memlane mcp install --help`."""
    if ctx.invoked_subcommand is not None:
        return
    default = _default_project(ctx, project)
    if default is not None and not os.path.isdir(default):
        raise click.BadParameter(f"'{default}' is not a directory", param_hint="--project")
    engine = None
    if not text_only:
        from memlane import config
        from memlane.retrieval.engine import Engine

        # Started before the MCP SDK is imported (~0.3 s), so the daemon or model loads while it does.
        engine = Engine(config.load(), via_daemon=True)
        engine.warm_in_background(default or os.getcwd())
    from memlane.mcp import server

    server.run(transport, port=port, default_project=default, semantic=not text_only, auth=not no_auth, engine=engine)


def _show(change: mcp_install.Change, dry_run: bool) -> None:
    verbs = {
        "installed": ("Would add", "Added"),
        "updated": ("Would update", "Updated"),
        "removed": ("Would remove", "Removed"),
    }
    if change.action == "unchanged":
        click.echo(f"memlane MCP server already configured for {change.client} in {change.path}")
        return
    if change.action == "absent":
        click.echo(f"No memlane MCP server configured for {change.client} in {change.path}")
        return
    verb = verbs[change.action][0 if dry_run else 1]
    where = {"installed": "to", "updated": "in", "removed": "from"}[change.action]
    click.echo(f"{verb} the memlane MCP server {where} {change.client} config {change.path}")
    if dry_run and change.entry is not None and change.action != "removed":
        click.echo(mcp_install.preview(change.client, change.entry))
    if change.backup:
        click.echo(f"Backup of the previous file: {change.backup}")


# Codex ignores a project's .codex/config.toml until the user trusts the project: without this note a
# project-scope install looks broken.
_CODEX_TRUST = {
    "project": "Note: Codex reads a project's .codex/config.toml only once the project is trusted (Codex asks "
    "the first time it starts there); until then use --scope user.",
    "user": "Note: this entry is user-wide, so it works in every project; a project's .codex/config.toml "
    "(--scope project) is read only once Codex trusts the project.",
}


@mcp_group.command("install")
@click.option("--client", required=True, type=CLIENT, help="The MCP client to configure.")
@click.option("--scope", type=SCOPE, default="user", show_default=True, help="user: all projects; project: this one.")
@click.option("--command", "command", help="Executable to write (default: this installation's memlane, absolute).")
@click.option("--dry-run", is_flag=True, help="Show what would change, write nothing.")
@click.pass_context
def install_cmd(ctx: click.Context, client: str, scope: str, command: str | None, dry_run: bool) -> None:
    """Add memlane's MCP server to a client's config (merged with its other servers; backed up; idempotent)."""
    change = mcp_install.install(client, scope, _root(ctx), command=command, dry_run=dry_run)
    _show(change, dry_run)
    if change.changed and not dry_run:
        click.echo(f"Restart {client} to load it; its tools are mem-search, mem-timeline, mem-details, "
                   "mem-source, mem-context-pack, mem-stats, mem-projects, mem-tasks, mem-insights.")  # fmt: skip
    if client == "codex":
        click.echo(_CODEX_TRUST[scope])


@mcp_group.command("uninstall")
@click.option("--client", required=True, type=CLIENT, help="The MCP client to take memlane out of.")
@click.option("--scope", type=SCOPE, default="user", show_default=True, help="user: all projects; project: this one.")
@click.option("--dry-run", is_flag=True, help="Show what would change, write nothing.")
@click.pass_context
def uninstall_cmd(ctx: click.Context, client: str, scope: str, dry_run: bool) -> None:
    """Remove memlane's MCP server (only memlane's) from a client's config. Memory is kept."""
    _show(mcp_install.uninstall(client, scope, _root(ctx), dry_run=dry_run), dry_run)
