"""The Claude Code plugin: files and their shape, `memlane plugin path|build`, and the double-registration guard."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp_support import payload

from memlane import install as inst
from memlane.cli.plugin_cmd import plugin_group
from memlane.install import InstallError
from memlane.memory import Memory
from memlane.plugin import build, guard, plugin_dir

ROOT = Path(plugin_dir())
COMMANDS = {
    "memory-search",
    "memory-history",
    "memory-stats",
    "memory-import",
    "memory-forget",
    "list",
    "show",
    "export",
    "workflow-memory",
    "insights",
}


def frontmatter(path: Path) -> dict[str, str]:
    text = path.read_text()
    assert text.startswith("---\n"), path
    head = text.split("---\n")[1]
    return dict(line.split(": ", 1) for line in head.strip().splitlines())


def test_manifest_and_component_files() -> None:
    manifest = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "memlane" and re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    assert manifest["description"] and isinstance(manifest["author"], dict)
    mcp = json.loads((ROOT / ".mcp.json").read_text())
    assert mcp == {"mcpServers": {"memlane": {"command": "memlane", "args": ["mcp"]}}}
    assert {p.stem for p in (ROOT / "commands").glob("*.md")} == COMMANDS
    assert (ROOT / "README.md").read_text().count(" ") >= 40


def test_hooks_match_memlane_install() -> None:
    """Same events, async flags, timeouts and matchers as `memlane install` writes; only the marker differs."""
    data = json.loads((ROOT / "hooks" / "hooks.json").read_text())
    assert data == build.hooks_config("memlane")
    assert set(data["hooks"]) == set(inst.HOOKS)
    settings: dict[str, Any] = {}
    inst.add_ours(settings, "memlane hook")
    for event, groups in data["hooks"].items():
        ours = settings["hooks"][event][0]
        assert len(groups) == 1 and groups[0].get("matcher") == ours.get("matcher")
        hook, installed = groups[0]["hooks"][0], ours["hooks"][0]
        assert hook["command"] == f"{installed['command']} --plugin" == f"memlane hook {event} --plugin"
        assert {k: v for k, v in hook.items() if k != "command"} == {
            k: v for k, v in installed.items() if k != "command"
        }
        assert inst.is_ours(hook)


def test_commands_have_frontmatter_and_use_the_plugin_tools() -> None:
    for name in COMMANDS:
        meta = frontmatter(ROOT / "commands" / f"{name}.md")
        assert meta["description"], name
        tools = meta.get("allowed-tools", "")
        for tool in re.findall(r"mcp__\S+?(?=,|$)", tools):
            assert tool.startswith("mcp__plugin_memlane_memlane__mem-"), tool
    assert frontmatter(ROOT / "commands" / "memory-forget.md")["disable-model-invocation"] == "true"
    forget = (ROOT / "commands" / "memory-forget.md").read_text()
    assert "--dry-run" in forget and "confirm" in forget
    assert "memlane import --dry-run" in (ROOT / "commands" / "memory-import.md").read_text()
    assert frontmatter(ROOT / "commands" / "list.md")["allowed-tools"] == "Bash(memlane history:*)"
    assert "`memlane history --limit 20 $ARGUMENTS`" in (ROOT / "commands" / "list.md").read_text()
    assert frontmatter(ROOT / "commands" / "show.md")["allowed-tools"] == "mcp__plugin_memlane_memlane__mem-source"
    export = (ROOT / "commands" / "export.md").read_text()
    assert "`memlane export --format markdown -o memlane-export.md $ARGUMENTS`" in export
    workflow = (ROOT / "commands" / "workflow-memory.md").read_text()
    assert "memlane already ran the user's `/workflow-memory" in workflow  # the hook's words (hooks.py)
    assert "`memlane workflow $ARGUMENTS`" in workflow


def test_build_writes_a_marketplace_bound_to_one_executable(tmp_path: Path) -> None:
    dest = tmp_path / "market"
    plugin = build.build(dest, "/opt/memlane/bin/memlane")
    assert plugin == dest.resolve() / "memlane"
    market = json.loads((dest / ".claude-plugin" / "marketplace.json").read_text())
    assert market["name"] == "memlane-local" and market["owner"]["name"]
    assert market["plugins"] == [
        {"name": "memlane", "source": "./memlane", "description": market["plugins"][0]["description"],
         "version": json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())["version"]}
    ]  # fmt: skip
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text())
    assert hooks == build.hooks_config("/opt/memlane/bin/memlane")
    assert (
        json.loads((plugin / ".mcp.json").read_text())["mcpServers"]["memlane"]["command"] == "/opt/memlane/bin/memlane"
    )
    forget = (plugin / "commands" / "memory-forget.md").read_text()
    assert "Bash(/opt/memlane/bin/memlane forget:*)" in forget and "`/opt/memlane/bin/memlane forget " in forget
    listed = (plugin / "commands" / "list.md").read_text()
    assert "Bash(/opt/memlane/bin/memlane history:*)" in listed and "`/opt/memlane/bin/memlane history " in listed
    exported = (plugin / "commands" / "export.md").read_text()
    assert "Bash(/opt/memlane/bin/memlane export:*)" in exported and "memlane export" not in exported.replace(
        "/opt/memlane/bin/memlane export", ""
    )
    assert not list(plugin.rglob("*.py")) and not list(plugin.rglob("__pycache__"))
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    build.build(dest, "/opt/memlane/bin/memlane")  # a rebuild replaces the previous one in place
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == files
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(InstallError, match="not empty and not a previous"):
        build.build(tmp_path / "other", "memlane")


def test_build_quotes_a_command_with_spaces(tmp_path: Path) -> None:
    plugin = build.build(tmp_path / "m", "/Users/a b/memlane")
    hook = json.loads((plugin / "hooks" / "hooks.json").read_text())["hooks"]["Stop"][0]["hooks"][0]
    assert hook["command"] == "'/Users/a b/memlane' hook Stop --plugin"
    assert json.loads((plugin / ".mcp.json").read_text())["mcpServers"]["memlane"]["command"] == "/Users/a b/memlane"


def test_plugin_cli(tmp_path: Path) -> None:
    result = CliRunner().invoke(plugin_group, ["path"])
    assert result.exit_code == 0 and result.output.strip() == str(ROOT)
    result = CliRunner().invoke(plugin_group, ["build", str(tmp_path / "m"), "--marketplace", "team-tools"])
    assert result.exit_code == 0, result.output
    assert f"/plugin marketplace add {(tmp_path / 'm').resolve()}" in result.output
    assert "/plugin install memlane@team-tools" in result.output
    assert json.loads((tmp_path / "m" / ".claude-plugin" / "marketplace.json").read_text())["name"] == "team-tools"


def _settings(path: Path, command: str, events: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    hooks = {e: [{"hooks": [{"type": "command", "command": f"{command} {e}"}]}] for e in events}
    path.write_text(json.dumps({"hooks": hooks}))


def test_guard_finds_install_hooks_per_event_and_scope(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "proj"
    raw = json.dumps({"session_id": "s", "cwd": str(project)}).encode()
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    assert guard.shadowed("SessionStart", raw) is None
    user = Path.home() / ".claude" / "settings.json"
    _settings(user, "/x/bin/memlane hook", ["SessionStart", "Stop"])
    assert guard.shadowed("SessionStart", raw) == str(user)
    assert guard.shadowed("PostToolUse", raw) is None  # a partial install leaves the other events to the plugin
    local = project / ".claude" / "settings.local.json"
    _settings(local, "memlane hook", ["PostToolUse"])
    assert guard.shadowed("PostToolUse", raw) == str(local)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path / "elsewhere"))  # Claude Code's project wins
    assert guard.shadowed("PostToolUse", raw) is None
    _settings(user, "memlane hook", ["UserPromptSubmit"])
    user.write_text(user.read_text().replace('UserPromptSubmit"', 'UserPromptSubmit --plugin"'))
    assert guard.shadowed("UserPromptSubmit", raw) is None  # plugin-style commands are not install hooks
    user.write_text("{broken")
    assert guard.shadowed("UserPromptSubmit", raw) is None


def test_plugin_enabled_reads_enabled_plugins(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(
        json.dumps({"enabledPlugins": {"memlane@memlane-local": True, "other@x": True, "memlane@y": False}})
    )
    assert guard.plugin_enabled(str(path)) == ["memlane@memlane-local"]
    assert guard.plugin_enabled(str(tmp_path / "missing.json")) == []


def _hook(event: str, data: dict[str, Any], *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ}
    env.pop("CLAUDE_PROJECT_DIR", None)
    return subprocess.run([sys.executable, "-m", "memlane", "hook", event, *args], input=json.dumps(data).encode(),
                          capture_output=True, env=env, timeout=60, check=False)  # fmt: skip


def test_plugin_hook_alone_captures_like_an_installed_hook(proj: Path) -> None:
    data = payload("02-UserPromptSubmit.json", cwd=str(proj))
    result = _hook("UserPromptSubmit", data, "--plugin")
    assert result.returncode == 0 and result.stderr == b""
    with Memory.open(str(proj)) as mem:
        assert [e.content for e in mem.history(types=["user_prompt"])] == [data["prompt"]]


def test_plugin_hook_steps_aside_when_memlane_install_registered_the_event(proj: Path) -> None:
    _settings(Path.home() / ".claude" / "settings.json", "/usr/bin/memlane hook", ["UserPromptSubmit"])
    data = payload("02-UserPromptSubmit.json", cwd=str(proj))
    result = _hook("UserPromptSubmit", data, "--plugin")
    assert result.returncode == 0 and result.stdout == b"" and result.stderr == b""
    assert not (Path(os.environ["MEMLANE_HOME"]) / "projects").exists() or Memory.open(str(proj)).store.count() == 0
    result = _hook("UserPromptSubmit", data)  # the installed hook itself still runs
    with Memory.open(str(proj)) as mem:
        assert mem.store.count() == 1
    tool = payload("04-PostToolUse.json", cwd=str(proj))
    assert _hook("PostToolUse", tool, "--plugin").returncode == 0  # not registered by install: the plugin's
    with Memory.open(str(proj)) as mem:
        assert mem.history(types=["tool_observation"])
