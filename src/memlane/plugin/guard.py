"""Never register memlane's hooks twice: the plugin's hooks step aside for ``memlane install``'s.

A user may both install the plugin and run ``memlane install``. Claude Code would then run each hook
twice: storage is deduplicated, but SessionStart and UserPromptSubmit would inject the same context
twice and every capture would cost double. So the plugin's hook commands carry ``--plugin``, and such a
delivery does nothing when the same event is already registered by ``memlane install`` in a settings
file Claude Code reads for this session (user ``~/.claude/settings.json``, the project's
``.claude/settings.json`` and ``.claude/settings.local.json``). Settings hooks win because they are the
explicit, per-scope choice; uninstalling them hands the events back to the plugin with no other step.

Stdlib only and a few small file reads: this runs inside every plugin hook (≤ 50 ms budget).
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MARK = "memlane hook"  # ``memlane hook <Event>``: the plugin's commands, and what earlier releases installed
LAUNCHER_MARK = "memlane/hook_launcher.py"  # what ``memlane install`` registers now (``install.hook_command``)
PLUGIN_MARKER = "--plugin"


def is_memlane_command(command: str) -> bool:
    """Whether a hook command runs memlane's hook, in any form memlane has ever registered."""
    return MARK in command or LAUNCHER_MARK in command.replace("\\", "/")


def settings_files(project_dir: str | None) -> list[str]:
    """The settings files ``memlane install`` writes that Claude Code reads for a session in ``project_dir``."""
    home = os.path.expanduser("~")
    files = [os.path.join(home, ".claude", "settings.json")]
    if project_dir:
        files.append(os.path.join(project_dir, ".claude", "settings.json"))
        files.append(os.path.join(project_dir, ".claude", "settings.local.json"))
    return list(dict.fromkeys(files))


def _events_in(path: str) -> set[str]:
    try:
        with open(path, encoding="utf-8") as fh:
            data: Any = json.load(fh)
    except (OSError, ValueError):
        return set()
    hooks = data.get("hooks") if isinstance(data, dict) else None
    found: set[str] = set()
    for event, groups in (hooks or {}).items() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            for hook in group.get("hooks", []) if isinstance(group, dict) else ():
                command = str(hook.get("command") or "") if isinstance(hook, dict) else ""
                if is_memlane_command(command) and PLUGIN_MARKER not in command.split():
                    found.add(event)
    return found


def registered_by_install(event: str, project_dir: str | None) -> str | None:
    """The settings file where ``memlane install`` registered ``event`` for this session, or None."""
    for path in settings_files(project_dir):
        if event in _events_in(path):
            return path
    return None


def project_dir_of(raw: bytes) -> str | None:
    """Where Claude Code runs: ``CLAUDE_PROJECT_DIR`` (set for hook commands), else the payload's cwd."""
    env = os.environ.get("CLAUDE_PROJECT_DIR")
    if env:
        return env
    try:
        payload = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        return None
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    return cwd if isinstance(cwd, str) and cwd else None


def shadowed(event: str, raw: bytes) -> str | None:
    """For a plugin hook delivery: the settings file that already handles ``event`` (so skip it), or None."""
    return registered_by_install(event, project_dir_of(raw))


def plugin_enabled(settings_path: str | None = None) -> list[str]:
    """Enabled memlane plugin ids (``memlane@<marketplace>``) in the user's Claude Code settings."""
    path = settings_path or os.path.join(os.path.expanduser("~"), ".claude", "settings.json")
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return []
    enabled = data.get("enabledPlugins") if isinstance(data, dict) else None
    if not isinstance(enabled, dict):
        return []
    return sorted(k for k, v in enabled.items() if v and str(k).split("@")[0] == "memlane")
