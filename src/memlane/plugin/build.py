"""Write a local Claude Code marketplace holding the memlane plugin, bound to one memlane executable.

The packaged plugin runs ``memlane`` from PATH. ``build`` copies it into ``DEST/memlane/`` with every
``memlane`` invocation (hooks, MCP server, the Bash lines of the commands) pointing at this
installation's executable, and writes ``DEST/.claude-plugin/marketplace.json`` so that

    /plugin marketplace add DEST
    /plugin install memlane@memlane-local

installs it (``claude plugin marketplace add DEST`` / ``claude plugin install memlane@memlane-local``
from a shell). Rebuilding replaces a previous build in place.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

from memlane import __version__
from memlane.install import HOOKS, InstallError, hook_group
from memlane.plugin import MARKER, plugin_dir

PLUGIN = "memlane"
MARKETPLACE = "memlane-local"
_PLUGIN_FILES = (".claude-plugin", "hooks", "commands", ".mcp.json", "README.md")
_BASH_MEMLANE = re.compile(r"(?<=[`(])memlane(?= )")


def hooks_config(command: str = "memlane") -> dict[str, Any]:
    """hooks/hooks.json: ``install.HOOKS`` (same events, async, timeouts, matchers) with the plugin marker."""
    hooks = {event: [hook_group(event, f"{command} hook {event} {MARKER}")] for event in HOOKS}
    return {
        "description": "memlane capture and injection: the same hooks as `memlane install`; each steps aside "
        "when `memlane install` already registered it (see memlane.plugin.guard)",
        "hooks": hooks,
    }


def mcp_config(command: str = "memlane") -> dict[str, Any]:
    return {"mcpServers": {PLUGIN: {"command": command, "args": ["mcp"]}}}


def marketplace_config(name: str = MARKETPLACE) -> dict[str, Any]:
    manifest = json.loads((Path(plugin_dir()) / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    return {
        "name": name,
        "owner": {"name": "memlane"},
        "description": "memlane, built locally by `memlane plugin build`",
        "plugins": [
            {
                "name": PLUGIN,
                "source": f"./{PLUGIN}",
                "description": manifest.get("description", ""),
                "version": __version__,
            }
        ],
    }


def _dump(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _is_previous_build(dest: Path) -> bool:
    try:
        data = json.loads((dest / ".claude-plugin" / "marketplace.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and any(p.get("name") == PLUGIN for p in data.get("plugins") or [])


def copy_plugin(target: Path, command: str = "memlane") -> None:
    """The plugin's files (no Python modules) into ``target``, invoking ``command``."""
    source = Path(plugin_dir())
    target.mkdir(parents=True)
    for name in _PLUGIN_FILES:
        src = source / name
        if src.is_dir():
            shutil.copytree(src, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.py", "*.pyc"))
        else:
            shutil.copy2(src, target / name)
    shell = shlex.quote(command)
    _dump(target / "hooks" / "hooks.json", hooks_config(shell))
    _dump(target / ".mcp.json", mcp_config(command))
    manifest = json.loads((target / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    _dump(target / ".claude-plugin" / "plugin.json", {**manifest, "version": __version__})
    for md in (target / "commands").glob("*.md"):
        md.write_text(_BASH_MEMLANE.sub(lambda _m: shell, md.read_text(encoding="utf-8")), encoding="utf-8")


def build(dest: Path, command: str, marketplace: str = MARKETPLACE) -> Path:
    """A marketplace at ``dest`` with the plugin in ``dest/memlane``; returns the plugin folder."""
    dest = dest.expanduser().resolve()
    if dest.exists() and any(dest.iterdir()) and not _is_previous_build(dest):
        raise InstallError(f"{dest} is not empty and not a previous `memlane plugin build`; choose another folder")
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest, prefix=".build-") as tmp:
        staged = Path(tmp) / PLUGIN
        copy_plugin(staged, command)
        (Path(tmp) / ".claude-plugin").mkdir()
        _dump(Path(tmp) / ".claude-plugin" / "marketplace.json", marketplace_config(marketplace))
        for name in (PLUGIN, ".claude-plugin"):
            if (dest / name).exists():
                shutil.rmtree(dest / name)
            (Path(tmp) / name).replace(dest / name)
    return dest / PLUGIN
