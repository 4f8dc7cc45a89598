"""``memlane plugin``: the Claude Code plugin (hooks + MCP server + /memory-* commands)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from memlane.cli.params import OUTPUT_FOLDER


@click.group("plugin", context_settings={"help_option_names": ["-h", "--help"]})
def plugin_group() -> None:
    """memlane as a Claude Code plugin: an alternative to `memlane install` + `memlane mcp install`."""


@plugin_group.command("path")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
def path_cmd(as_json: bool) -> None:
    """Print the folder of the packaged plugin (it runs `memlane` from PATH)."""
    from memlane.plugin import plugin_dir

    if as_json:
        click.echo(json.dumps({"path": str(plugin_dir())}))
        return
    click.echo(plugin_dir())


@plugin_group.command("build")
@click.argument("dest", type=OUTPUT_FOLDER)
@click.option("--marketplace", default="memlane-local", show_default=True, help="Name of the local marketplace.")
@click.option("--command", "command", help="memlane executable the plugin runs (default: this installation's).")
def build_cmd(dest: Path, marketplace: str, command: str | None) -> None:
    """Write a local plugin marketplace to DEST, bound to this installation's memlane executable."""
    from memlane.mcp.install import memlane_command
    from memlane.plugin.build import PLUGIN, build

    plugin = build(dest, command or memlane_command(), marketplace)
    root = plugin.parent
    click.echo(f"Built the memlane plugin in {plugin}")
    click.echo("Install it in Claude Code with:")
    click.echo(f"  /plugin marketplace add {root}")
    click.echo(f"  /plugin install {PLUGIN}@{marketplace}")
    click.echo(
        f"(or from a shell: claude plugin marketplace add {root} && claude plugin install {PLUGIN}@{marketplace})"
    )
    click.echo("Hooks installed both ways never run twice: the plugin's hooks step aside for `memlane install`'s.")
