"""Registering memlane's MCP server with MCP clients, and taking it out again.

| client         | user scope                                         | project scope          | format |
|----------------|----------------------------------------------------|------------------------|--------|
| claude-desktop | claude_desktop_config.json (OS-specific folder)     | —                      | JSON   |
| claude-code    | ~/.claude.json                                     | <root>/.mcp.json       | JSON   |
| codex          | $CODEX_HOME/config.toml (~/.codex)                 | <root>/.codex/config.toml | TOML |
| cursor         | ~/.cursor/mcp.json                                 | <root>/.cursor/mcp.json | JSON  |
| vscode         | <VS Code user folder>/mcp.json                     | <root>/.vscode/mcp.json | JSON ("servers") |

Only the ``memlane`` server entry is touched: other servers, other settings, key order (JSON) and
comments (TOML) are kept. A changed file is backed up first (into ``~/.memlane/backups/``) and
replaced atomically; installing twice changes nothing the second time.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlane.install import InstallError, memlane_executable, read_json_object, read_text, write_with_backup

SERVER = "memlane"
CLIENTS = ("claude-desktop", "claude-code", "codex", "cursor", "vscode")
SCOPES = ("user", "project")


@dataclass
class Change:
    client: str
    path: Path
    changed: bool
    backup: Path | None
    entry: dict[str, Any] | None
    action: str  # "installed" | "updated" | "unchanged" | "removed" | "absent"


def memlane_command() -> str:
    """This installation's ``memlane`` executable, by absolute path when it can be found."""
    return memlane_executable()


def config_path(client: str, scope: str, project_root: Path) -> Path:
    home = Path.home()
    if client == "claude-desktop":
        if scope != "user":
            raise InstallError("Claude Desktop has only a user-wide configuration: use --scope user")
        if sys.platform == "darwin":
            return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
        if sys.platform == "win32":
            appdata = Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
            return appdata / "Claude" / "claude_desktop_config.json"
        return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "Claude" / "claude_desktop_config.json"
    if client == "claude-code":
        return home / ".claude.json" if scope == "user" else project_root / ".mcp.json"
    if client == "codex":
        base = Path(os.environ.get("CODEX_HOME") or home / ".codex") if scope == "user" else project_root / ".codex"
        return base / "config.toml"
    if client == "cursor":
        return (home if scope == "user" else project_root) / ".cursor" / "mcp.json"
    if client == "vscode":
        return project_root / ".vscode" / "mcp.json" if scope == "project" else _vscode_user_dir() / "mcp.json"
    raise InstallError(f"unknown client '{client}' (one of: {', '.join(CLIENTS)})")


def _vscode_user_dir() -> Path:
    """VS Code's per-user settings folder (where it keeps the user-wide ``mcp.json``)."""
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Code" / "User"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming") / "Code" / "User"
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "Code" / "User"


def servers_key(client: str) -> str:
    """VS Code's mcp.json lists servers under "servers"; the other JSON clients under "mcpServers"."""
    return "servers" if client == "vscode" else "mcpServers"


def preview(client: str, entry: dict[str, Any]) -> str:
    """memlane's entry as it will appear in the client's file, in that file's own syntax (TOML for Codex)."""
    if client == "codex":
        return _toml_block(entry).rstrip("\n")
    return json.dumps({servers_key(client): {SERVER: entry}}, indent=2, ensure_ascii=False)


def server_entry(client: str, command: str | None = None) -> dict[str, Any]:
    """The client's config entry for memlane's stdio server.

    Claude Code and Codex start the server in the project directory, which becomes the default project;
    Claude Desktop has no project directory (the tools take ``project``; mem-projects lists them).
    Cursor is given ``--project ${workspaceFolder}`` (Cursor expands it; the server ignores the option
    if a client passes it through unexpanded). ``MEMLANE_HOME`` is passed on when it is set, since GUI
    clients do not inherit the shell's environment.
    """
    entry: dict[str, Any] = {"command": command or memlane_command(), "args": ["mcp"]}
    if client in ("claude-code", "vscode"):
        entry = {"type": "stdio", **entry}
    if client in ("cursor", "vscode"):
        entry["args"] = ["mcp", "--project", "${workspaceFolder}"]
    if os.environ.get("MEMLANE_HOME"):
        entry["env"] = {"MEMLANE_HOME": os.path.abspath(os.path.expanduser(os.environ["MEMLANE_HOME"]))}
    return entry


# ---- files -------------------------------------------------------------------------------------


# ---- JSON clients ------------------------------------------------------------------------------


def _read_json(path: Path, client: str = "claude-code") -> dict[str, Any]:
    return read_json_object(path, servers_key(client))


def _json_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# ---- TOML (Codex) ------------------------------------------------------------------------------

# A table header for our server or one of its sub-tables: [mcp_servers.memlane], [mcp_servers."memlane".env]
_OUR_HEADER = re.compile(r'^\s*\[\s*mcp_servers\s*\.\s*(?:memlane|"memlane"|\'memlane\')\s*(?:\.[^\]]*)?\]\s*(?:#.*)?$')
_ANY_HEADER = re.compile(r"^\s*\[")


def _read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    text = read_text(path)
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InstallError(f"{path}: not valid TOML ({exc}); fix or move it, memlane will not overwrite it") from exc


def _strip_toml(text: str) -> str:
    """Remove our tables (header to the next header) from the text, leaving every other line as it was."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        if _OUR_HEADER.match(line):
            skipping = True
            continue
        if skipping and _ANY_HEADER.match(line):
            skipping = False
        if not skipping:
            out.append(line)
    return "".join(out).rstrip("\n") + ("\n" if out else "")


def _toml_block(entry: dict[str, Any]) -> str:
    import tomli_w

    return tomli_w.dumps({"mcp_servers": {SERVER: entry}})


def _without_ours(data: dict[str, Any]) -> dict[str, Any]:
    servers = dict(data.get("mcp_servers") or {})
    servers.pop(SERVER, None)
    rest = {k: v for k, v in data.items() if k != "mcp_servers"}
    return {**rest, "mcp_servers": servers} if servers else rest


def _toml_change(path: Path, entry: dict[str, Any] | None) -> tuple[str, str, dict[str, Any] | None]:
    """(old text, new text, old entry) for Codex's config, with our table replaced by ``entry`` (or removed)."""
    text, data = _read_toml(path)
    servers = data.get("mcp_servers")
    if servers is not None and not isinstance(servers, dict):
        raise InstallError(f"{path}: 'mcp_servers' must be a table")
    old = (servers or {}).get(SERVER)
    if old == entry:
        return text, text, old
    new = _strip_toml(text)
    if entry is not None:
        new = (new + "\n" if new.strip() else "") + _toml_block(entry)
    # Our edit must change our entry and nothing else; otherwise the entry was written in a form we do
    # not edit (an inline table, dotted keys) and the user should change it by hand.
    try:
        parsed: dict[str, Any] | None = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        parsed = None
    if (
        parsed is None
        or parsed.get("mcp_servers", {}).get(SERVER) != entry
        or _without_ours(parsed) != _without_ours(data)
    ):
        raise InstallError(f"{path}: memlane's [mcp_servers.memlane] entry is written in a form memlane cannot "
                           "edit safely; change or remove it by hand")  # fmt: skip
    return text, new, old


# ---- install / uninstall -----------------------------------------------------------------------


def install(
    client: str, scope: str, project_root: Path, *, command: str | None = None, dry_run: bool = False
) -> Change:
    path = config_path(client, scope, project_root)
    entry = server_entry(client, command)
    if client == "codex":
        old_text, new_text, old = _toml_change(path, entry)
    else:
        key = servers_key(client)
        data = _read_json(path, client)
        old_text = read_text(path)
        old = (data.get(key) or {}).get(SERVER)
        data.setdefault(key, {})[SERVER] = entry
        new_text = old_text if old == entry else _json_text(data)
    if old == entry:
        return Change(client, path, False, None, entry, "unchanged")
    backup = None if dry_run else write_with_backup(path, new_text)
    return Change(client, path, True, backup, entry, "updated" if old is not None else "installed")


def uninstall(client: str, scope: str, project_root: Path, *, dry_run: bool = False) -> Change:
    path = config_path(client, scope, project_root)
    if not path.exists():
        return Change(client, path, False, None, None, "absent")
    if client == "codex":
        _old_text, new_text, old = _toml_change(path, None)
    else:
        data = _read_json(path, client)
        servers = data.get(servers_key(client)) or {}
        old = servers.pop(SERVER, None)
        new_text = _json_text(data)
    if old is None:
        return Change(client, path, False, None, None, "absent")
    backup = None if dry_run else write_with_backup(path, new_text)
    return Change(client, path, True, backup, old, "removed")


def installed(client: str, scope: str, project_root: Path) -> dict[str, Any] | None:
    """memlane's entry in a client's config, or None."""
    path = config_path(client, scope, project_root)
    try:
        if client == "codex":
            servers = _read_toml(path)[1].get("mcp_servers") or {}
        else:
            servers = _read_json(path, client).get(servers_key(client)) or {}
    except InstallError:
        return None
    entry = servers.get(SERVER) if isinstance(servers, dict) else None
    return entry if isinstance(entry, dict) else None
