"""``memlane config show|get|set|unset|path``."""

from __future__ import annotations

import click
import tomli_w

from memlane import config, config_file, paths
from memlane.cli import render
from memlane.config_file import render_toml


@click.group("config")
def config_group() -> None:
    """Show and change settings (~/.memlane/config.toml)."""


@config_group.command("show")
@click.option("--defaults", is_flag=True, help="Show the built-in defaults instead of the effective values.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
def show(defaults: bool, as_json: bool) -> None:
    """Every setting with its documentation and effective value."""
    cfg = config.Config() if defaults else config.load()
    if as_json:
        render.emit_json(config.as_dict(cfg))
    else:
        click.echo(render_toml(config.as_dict(cfg), None), nl=False)


@config_group.command("get")
@click.argument("key")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
def get(key: str, as_json: bool) -> None:
    """One setting (section.key) or a whole section."""
    value = config.get_value(config.load(), key)
    if as_json:
        render.emit_json(value)
        return
    click.echo(tomli_w.dumps(value).strip() if isinstance(value, dict) else tomli_w.dumps({"v": value})[4:].strip())


@config_group.command("set")
@click.argument("key")
@click.argument("value")
def set_(key: str, value: str) -> None:
    """Set section.key to VALUE (TOML syntax: 3000, true, ["a", "b"], or plain text)."""
    if "." not in key:
        config.get_value(config.Config(), f"{key}.")  # names the typo, if any
        raise click.UsageError("give a key as section.key, e.g. injection.max_chars")
    # The dashboard's settings page makes this same call: both refuse a bad value with the same message.
    notes: list[str] = []
    click.echo(f"{key} = {config_file.show_value(config_file.set_text(key, value, notes))}")
    for note in notes:
        click.echo(f"Note: {note}", err=True)


@config_group.command("unset")
@click.argument("key")
def unset(key: str) -> None:
    """Return section.key to its default."""
    config_file.unset(key)
    click.echo(f"{key} reset to its default")


@config_group.command("path")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
def path(as_json: bool) -> None:
    """Where the config file is."""
    if as_json:
        render.emit_json({"path": str(paths.config_path()), "exists": paths.config_path().exists()})
        return
    click.echo(str(paths.config_path()))
