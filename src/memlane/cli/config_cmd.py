"""``memlane config show|get|set|unset|path``."""

from __future__ import annotations

from typing import Any

import click
import tomli_w

from memlane import atomic, config, paths
from memlane.cli import render


def render_toml(values: dict[str, dict[str, Any]], user_set: dict[str, dict[str, Any]] | None) -> str:
    """A documented config file. With ``user_set``, keys the user did not set are commented out."""
    out = ["# memlane configuration — every setting, with its default. Environment: MEMLANE_<SECTION>_<KEY>.", ""]
    docs = config.docs()
    current = None
    for section, key, default, doc in docs:
        if section != current:
            if current is not None:
                out.append("")
            out.append(f"[{section}]")
            current = section
        out.append(f"# {doc}")
        value = values[section][key]
        line = tomli_w.dumps({key: value}).strip()
        if user_set is not None and key not in user_set.get(section, {}):
            line = "\n".join("# " + part for part in tomli_w.dumps({key: default}).strip().splitlines())
        out.append(line)
    return "\n".join(out) + "\n"


def _write(data: dict[str, dict[str, Any]]) -> None:
    cfg = config.Config()
    config._apply(cfg, data, "config")  # validate the whole file before writing anything
    path = paths.config_path()
    atomic.write_text(path, render_toml(config.as_dict(cfg), data), atomic.PRIVATE)


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
    section, _, name = key.partition(".")
    config.get_value(config.Config(), key if name else f"{key}.")  # names the typo, if any
    if not name:
        raise click.UsageError("give a key as section.key, e.g. injection.max_chars")
    data = config.read_file(paths.config_path())
    data.setdefault(section, {})[name] = config.parse_value(value)
    _write(data)
    click.echo(f"{key} = {tomli_w.dumps({'v': config.get_value(config.load(), key)})[4:].strip()}")


@config_group.command("unset")
@click.argument("key")
def unset(key: str) -> None:
    """Return section.key to its default."""
    section, _, name = key.partition(".")
    if key not in config.RETIRED:  # a retired setting can still be taken out of the file
        config.get_value(config.Config(), key)
    data = config.read_file(paths.config_path())
    data.get(section, {}).pop(name, None)
    _write({k: v for k, v in data.items() if v})
    click.echo(f"{key} reset to its default")


@config_group.command("path")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
def path(as_json: bool) -> None:
    """Where the config file is."""
    if as_json:
        render.emit_json({"path": str(paths.config_path()), "exists": paths.config_path().exists()})
        return
    click.echo(str(paths.config_path()))
