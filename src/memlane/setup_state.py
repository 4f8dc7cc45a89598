"""What memlane has set up on this machine, read without changing anything: ``status`` and ``doctor`` show it.

Hooks per Claude Code settings scope, the Claude Code plugin, MCP client configs, and the daemon (running,
port, model, backlog, last error, why it failed to start). Disk use is ``status``'s own walk of the data dir.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any, cast

from memlane import install as inst
from memlane import paths
from memlane.mcp import install as mcp_install
from memlane.store import peek

SCOPES = ("user", "project", "local")


def hooks(root: Path) -> dict[str, dict[str, Any]]:
    """Per settings scope: the file and the events memlane's hooks are registered for there."""
    out: dict[str, dict[str, Any]] = {}
    for scope in SCOPES:
        path = inst.settings_path(cast(inst.Scope, scope), root)
        found = inst.installed_events(path)
        out[scope] = {
            "path": str(path),
            "events": sorted(found),
            "command": inst.program_of(next(iter(found.values()))) if found else None,
            "error": inst.settings_problem(path),  # a file Claude Code cannot read: the real problem
        }
    return out


def plugin(root: Path) -> dict[str, Any]:
    """memlane plugins enabled in any settings file Claude Code reads for this project."""
    enabled: dict[str, list[str]] = {}
    for scope in SCOPES:
        path = inst.settings_path(cast(inst.Scope, scope), root)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        plugins = data.get("enabledPlugins") if isinstance(data, dict) else None
        ids = sorted(k for k, v in (plugins or {}).items() if v and str(k).split("@")[0] == "memlane")
        if ids:
            enabled[scope] = ids
    return {"enabled": enabled}


def mcp_clients(root: Path) -> list[dict[str, Any]]:
    """Every MCP client config (client × scope) that has a memlane server entry."""
    found = []
    for client in mcp_install.CLIENTS:
        for scope in mcp_install.SCOPES:
            if client == "claude-desktop" and scope != "user":
                continue
            entry = mcp_install.installed(client, scope, root)
            if entry is not None:
                path = mcp_install.config_path(client, scope, root)
                found.append({"client": client, "scope": scope, "path": str(path), "command": entry.get("command")})
    return found


def backlog() -> int:
    """Events waiting for an embedding, across every project (read-only)."""
    total = 0
    for db in sorted(paths.projects_dir().glob("*/memory.db")) if paths.projects_dir().is_dir() else []:
        try:
            total += peek.count_unembedded(db, timeout=1)
        except sqlite3.Error:
            continue
    return total


def start_failure() -> str | None:
    """Why the last detached daemon start failed, from ``logs/daemon.out``, unless a later start succeeded.

    A daemon started by a hook writes its errors there and nowhere else; the daemon log records each
    successful start ("serving on"), so an error older than the last success is history, not a problem.
    """
    out = paths.logs_dir() / "daemon.out"
    try:
        lines = out.read_text(encoding="utf-8", errors="replace").splitlines()
        failed_at = out.stat().st_mtime
    except OSError:
        return None
    tail = [line.strip() for line in lines[-50:] if line.strip()]
    if not any(line.startswith(("Error:", "Traceback")) or "Error:" in line for line in tail):
        return None
    if _last_start() >= failed_at:
        return None
    # The last line says it: click's one-line "Error: …", or a traceback's exception.
    return tail[-1]


def _last_start() -> float:
    """When the daemon last started serving, from its log (0 when never)."""
    path = paths.logs_dir() / "daemon.log"
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return 0.0
    for line in reversed(lines):
        if "serving on" in line:
            try:
                return float(time.mktime(time.strptime(line[:20], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone)
            except ValueError:
                return 0.0
    return 0.0


def daemon() -> dict[str, Any]:
    """Running or not, pid, port, model, backlog, the worker's last error, and why a start failed."""
    from memlane.daemon.server import describe

    info = describe()
    health = info.get("health") or {}
    worker = health.get("worker") or {}
    return {
        "running": bool(info.get("running")),
        "answering": bool(health.get("ok")),
        "pid": info.get("pid"),
        "port": info.get("port"),
        "model": health.get("model"),
        "model_error": health.get("model_error"),
        "embedded_since_start": worker.get("processed"),
        "last_error": worker.get("last_error"),
        "backlog": backlog(),
        "start_failure": None if info.get("running") else start_failure(),
        "log": str(paths.logs_dir() / "daemon.out"),
    }
