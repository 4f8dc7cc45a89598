"""Registering memlane's hooks in Claude Code's settings files, and taking them out again.

The merge touches only hook entries whose command runs memlane's hook (``is_ours``): anyone else's hooks, and
every other setting, are left exactly as they were. A changed file is backed up first and written
atomically; installing twice changes nothing the second time.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memlane import atomic
from memlane.errors import MemlaneError
from memlane.plugin import guard

Scope = Literal["user", "project", "local"]
MARK = guard.MARK
LAUNCHER = "hook_launcher.py"
RELAY_PREFIX = "hook-relay-"  # memlane.relay's binaries
# Hooks that return context must be synchronous; capture-only hooks run async so Claude never waits —
# except Stop: `claude -p` exits right after the turn ends and kills async hooks still running, which
# lost every final answer in our end-to-end runs. Stop costs ~15 ms after the answer is shown, and stores
# the turn's tool calls whose async PostToolUse/PostToolUseFailure was killed (capture/catchup.py).
HOOKS: dict[str, dict[str, Any]] = {
    "SessionStart": {"async": False, "timeout": 10},
    "UserPromptSubmit": {"async": False, "timeout": 10},
    "PostToolUse": {"async": True, "timeout": 30, "matcher": "*"},
    "PostToolUseFailure": {"async": True, "timeout": 30, "matcher": "*"},
    "Stop": {"async": False, "timeout": 30},
    "SubagentStop": {"async": True, "timeout": 30},
    "SessionEnd": {"async": True, "timeout": 30},
    "PreCompact": {"async": True, "timeout": 30},
}


class InstallError(MemlaneError, RuntimeError):
    """A settings file we must not touch (unreadable, not JSON, wrong shape)."""


@dataclass
class Change:
    path: Path
    changed: bool
    backup: Path | None
    added: list[str]
    removed: int


def settings_path(scope: Scope, project_root: Path) -> Path:
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    name = "settings.json" if scope == "project" else "settings.local.json"
    return project_root / ".claude" / name


def memlane_executable() -> str:
    """This installation's own ``memlane`` script, by absolute path when it can be found."""
    script = Path(sys.prefix) / "bin" / "memlane"
    if script.exists():
        return str(script)
    return shutil.which("memlane") or "memlane"


def hook_command(relay: bool = True, build: bool = True) -> str:
    """The command Claude Code runs, the event appended: this interpreter with ``-I -S`` on memlane's hook
    launcher file (``memlane.hook_launcher``: no ``site``, capture finished in a detached child), behind the
    C hook relay where one could be built (``memlane.relay``: with the daemon up, no Python starts at all).
    Where the package is not a folder of files (a zip), ``memlane hook`` through the console script."""
    launcher = Path(__file__).resolve().with_name(LAUNCHER)
    if launcher.is_file() and sys.executable:
        python = f"{shlex.quote(sys.executable)} -I -S {shlex.quote(str(launcher))}"
        from memlane import relay as c_relay

        # ``build=False`` (a dry run) names the relay that would be built, and writes nothing.
        built = (c_relay.path() if build else c_relay.planned()) if relay else None
        return f"{shlex.quote(str(built))} {python}" if built else python
    return f"{memlane_executable()} hook"


def is_ours(hook: Any) -> bool:
    """A hook entry memlane registered: this release's launcher command, or ``memlane hook`` (earlier
    releases, and the plugin), so reinstalling or uninstalling replaces either."""
    return isinstance(hook, dict) and guard.is_memlane_command(str(hook.get("command") or ""))


def program_of(command: str) -> str:
    """What runs a registered hook command, without the event (and ``--plugin``): for ``status``."""
    words = command.split()
    while words and (words[-1] in HOOKS or words[-1] == "--plugin"):
        words.pop()
    if words and words[-1] == "hook":
        words.pop()
    return " ".join(words)


def program_exists(command: str) -> bool:
    """Whether a registered hook command can run: its executable, and the launcher file it names if any."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if not words:
        return False
    found = os.access(words[0], os.X_OK) or words[0] == "memlane"  # a bare name: PATH's, when Claude Code runs it
    if found and os.path.basename(words[0]).startswith(RELAY_PREFIX):  # the relay runs the Python hook after it
        found = len(words) > 1 and os.access(words[1], os.X_OK)
    files = [w for w in words[1:] if w.endswith(LAUNCHER)]
    return found and all(os.path.isfile(f) for f in files)


def read_text(path: Path) -> str:
    """A config file's text; "" when it does not exist yet."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallError(f"{path}: cannot read ({exc})") from exc


def read_json_object(path: Path, section: str) -> dict[str, Any]:
    """A JSON config file we are about to edit ({} when absent or empty); ``section`` must be an object if present.

    Anything we cannot parse is refused rather than overwritten: it is somebody's configuration.
    """
    text = read_text(path)
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InstallError(
            f"{path}: bad JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}); "
            "fix or move it, memlane will not overwrite it"
        ) from exc
    if not isinstance(data, dict):
        raise InstallError(f"{path}: top level must be a JSON object")
    if section in data and not isinstance(data[section], dict):
        raise InstallError(f"{path}: '{section}' must be an object")
    return data


def read_settings(path: Path) -> dict[str, Any]:
    return read_json_object(path, "hooks")


def strip_ours(settings: dict[str, Any]) -> int:
    """Remove memlane's hook entries in place; empty groups and events disappear. Returns how many."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return 0
    removed = 0
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                kept = [h for h in group["hooks"] if not is_ours(h)]
                removed += len(group["hooks"]) - len(kept)
                if not kept:
                    continue
                group = {**group, "hooks": kept}
            kept_groups.append(group)
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not hooks:
        del settings["hooks"]
    return removed


def add_ours(settings: dict[str, Any], command: str) -> list[str]:
    hooks = settings.setdefault("hooks", {})
    for event in HOOKS:
        hooks.setdefault(event, []).append(hook_group(event, f"{command} {event}"))
    return list(HOOKS)


def backup_copy(path: Path) -> Path:
    """Copy ``path`` into memlane's data dir (``backups/``) before memlane changes it.

    Not beside the file: ``.claude/settings.json`` is shared with a team through git, and backups piling
    up next to it end up committed. The name keeps the original location readable
    (``backups/home-me-shop-.claude-settings.json.20261125-031500``).
    """
    from memlane import paths

    folder = paths.home() / "backups"
    paths.ensure_dir(folder)
    flat = str(path.resolve()).strip(os.sep).replace(os.sep, "-")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = folder / f"{flat}.{stamp}"
    n = 1
    while candidate.exists():
        n += 1
        candidate = folder / f"{flat}.{stamp}-{n}"
    shutil.copy2(path, candidate)
    return candidate


def hook_group(event: str, command_line: str) -> dict[str, Any]:
    """The Claude Code hook group that runs ``command_line`` for ``event`` (settings.json and the plugin)."""
    spec = HOOKS[event]
    entry: dict[str, Any] = {"type": "command", "command": command_line, "timeout": spec["timeout"]}
    if spec["async"]:
        entry["async"] = True
    group: dict[str, Any] = {"hooks": [entry]}
    if "matcher" in spec:
        group = {"matcher": spec["matcher"], **group}
    return group


def _write(path: Path, settings: dict[str, Any]) -> Path | None:
    return write_with_backup(path, json.dumps(settings, indent=2, ensure_ascii=False) + "\n")


def write_with_backup(path: Path, text: str) -> Path | None:
    """Copy the old file (if any) into memlane's data dir (``backup_copy``), then replace it atomically,
    keeping its permissions. Returns the backup. Used for every settings file memlane edits for a user."""
    backup = None
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        backup = backup_copy(path)  # in memlane's data dir, not beside a config that may be committed
    atomic.write_text(path, text)
    return backup


def install(path: Path, command: str | None = None, dry_run: bool = False) -> Change:
    settings = read_settings(path)
    before = json.dumps(settings, sort_keys=True)
    removed = strip_ours(settings)
    added = add_ours(settings, command or hook_command(build=not dry_run))
    changed = json.dumps(settings, sort_keys=True) != before
    backup = _write(path, settings) if changed and not dry_run else None
    return Change(path, changed, backup, added, removed)


def uninstall(path: Path, dry_run: bool = False) -> Change:
    settings = read_settings(path)
    removed = strip_ours(settings)
    backup = _write(path, settings) if removed and not dry_run else None
    return Change(path, bool(removed), backup, [], removed)


def settings_problem(path: Path) -> str | None:
    """Why Claude Code cannot read this settings file (bad JSON at line N…), or None: status and doctor name
    it instead of saying "not installed"."""
    try:
        read_settings(path)
    except InstallError as exc:
        return str(exc)
    return None


def installed_events(path: Path) -> dict[str, str]:
    """Event → command of memlane's hooks registered in one settings file ({} when it cannot be read)."""
    try:
        settings = read_settings(path)
    except InstallError:
        return {}
    out: dict[str, str] = {}
    for event, groups in (settings.get("hooks") or {}).items():
        for group in groups if isinstance(groups, list) else []:
            for hook in group.get("hooks", []) if isinstance(group, dict) else []:
                if is_ours(hook):
                    out[event] = str(hook.get("command"))
    return out
