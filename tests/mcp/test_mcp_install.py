"""`memlane mcp install|uninstall` against temporary client config files."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memlane import paths
from memlane.cli.mcp_cmd import mcp_group
from memlane.install import InstallError
from memlane.mcp import install as mi


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, proj: Path) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("APPDATA", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.chdir(proj)


def run(*args: str) -> Any:
    result = CliRunner().invoke(mcp_group, list(args), catch_exceptions=False)
    return result


PATHS = {
    ("claude-desktop", "user"): ".config/Claude/claude_desktop_config.json",
    ("claude-code", "user"): ".claude.json",
    ("claude-code", "project"): "PROJECT/.mcp.json",
    ("codex", "user"): ".codex/config.toml",
    ("codex", "project"): "PROJECT/.codex/config.toml",
    ("cursor", "user"): ".cursor/mcp.json",
    ("cursor", "project"): "PROJECT/.cursor/mcp.json",
}


def expected_path(client: str, scope: str, proj: Path) -> Path:
    rel = PATHS[(client, scope)]
    return proj / rel.removeprefix("PROJECT/") if rel.startswith("PROJECT/") else Path.home() / rel


def servers_of(path: Path) -> dict[str, Any]:
    if path.suffix == ".toml":
        return dict(tomllib.loads(path.read_text()).get("mcp_servers", {}))
    return dict(json.loads(path.read_text()).get("mcpServers", {}))


@pytest.mark.parametrize(("client", "scope"), sorted(PATHS))
def test_install_writes_entry_and_is_idempotent(client: str, scope: str, proj: Path, memlane_home: Path) -> None:
    path = expected_path(client, scope, proj)
    assert mi.config_path(client, scope, proj) == path
    result = run("install", "--client", client, "--scope", scope)
    assert result.exit_code == 0, result.output
    assert f"Added the memlane MCP server to {client} config {path}" in result.output
    entry = servers_of(path)["memlane"]
    assert entry["command"] == mi.memlane_command() and entry["args"][0] == "mcp"
    assert entry["env"] == {"MEMLANE_HOME": str(memlane_home)}
    if client == "claude-code":
        assert entry["type"] == "stdio"
    if client == "cursor":
        assert entry["args"] == ["mcp", "--project", "${workspaceFolder}"]
    before = path.read_bytes()
    again = run("install", "--client", client, "--scope", scope)
    assert again.exit_code == 0 and "already configured" in again.output
    assert path.read_bytes() == before
    assert not (paths.home() / "backups").exists()  # nothing existed, nothing changed


def test_merges_with_existing_servers_and_settings_and_backs_up(proj: Path) -> None:
    path = Path.home() / ".claude.json"
    original = {
        "numStartups": 12,
        "projects": {str(proj): {"allowedTools": []}},
        "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}},
    }
    path.write_text(json.dumps(original, indent=2))
    path.chmod(0o600)
    result = run("install", "--client", "claude-code")
    assert result.exit_code == 0, result.output
    data = json.loads(path.read_text())
    assert data["numStartups"] == 12 and data["projects"] == original["projects"]
    assert data["mcpServers"]["github"] == original["mcpServers"]["github"]
    assert list(data["mcpServers"]) == ["github", "memlane"]
    assert path.stat().st_mode & 0o777 == 0o600
    assert list(path.parent.glob("*.memlane-backup-*")) == []  # never beside the config: it may be committed
    backups = list((paths.home() / "backups").glob("*.claude.json.*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == original
    assert f"Backup of the previous file: {backups[0]}" in result.output

    result = run("uninstall", "--client", "claude-code")
    assert result.exit_code == 0 and "Removed the memlane MCP server" in result.output
    assert json.loads(path.read_text()) == original
    assert run("uninstall", "--client", "claude-code").output.startswith("No memlane MCP server configured")


def test_changed_command_updates_the_entry(proj: Path) -> None:
    assert run("install", "--client", "cursor", "--command", "/opt/old/memlane").exit_code == 0
    result = run("install", "--client", "cursor")
    assert "Updated the memlane MCP server" in result.output
    assert servers_of(Path.home() / ".cursor" / "mcp.json")["memlane"]["command"] == mi.memlane_command()


def test_dry_run_writes_nothing(proj: Path) -> None:
    path = Path.home() / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": {}}')
    result = run("install", "--client", "cursor", "--dry-run")
    assert result.exit_code == 0 and "Would add the memlane MCP server" in result.output
    assert '"command"' in result.output  # shows the entry it would write
    assert path.read_text() == '{"mcpServers": {}}' and not (paths.home() / "backups").exists()
    run("install", "--client", "cursor")
    assert "Would remove" in run("uninstall", "--client", "cursor", "--dry-run").output
    assert "memlane" in servers_of(path)


def test_codex_toml_keeps_comments_and_other_servers(proj: Path) -> None:
    path = Path.home() / ".codex" / "config.toml"
    path.parent.mkdir()
    original = (
        '# my codex settings\nmodel = "o4-mini"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"  # keep me\n'
        'args = ["--port", "1"]\n\n[mcp_servers.memlane]\ncommand = "/old/memlane"\nargs = ["mcp"]\n\n'
        '[mcp_servers.memlane.env]\nMEMLANE_HOME = "/old"\n\n[profiles.fast]\nmodel = "o3"\n'
    )
    path.write_text(original)
    result = run("install", "--client", "codex")
    assert result.exit_code == 0 and "Updated" in result.output, result.output
    text = path.read_text()
    assert "# my codex settings" in text and 'command = "docs-mcp"  # keep me' in text and "/old" not in text
    data = tomllib.loads(text)
    assert data["model"] == "o4-mini" and data["profiles"] == {"fast": {"model": "o3"}}
    assert data["mcp_servers"]["docs"] == {"command": "docs-mcp", "args": ["--port", "1"]}
    assert data["mcp_servers"]["memlane"]["command"] == mi.memlane_command()
    assert run("install", "--client", "codex").output.startswith("memlane MCP server already configured")
    assert run("uninstall", "--client", "codex").exit_code == 0
    after = tomllib.loads(path.read_text())
    assert "memlane" not in after["mcp_servers"] and after["profiles"] == {"fast": {"model": "o3"}}
    assert "# my codex settings" in path.read_text()


def test_codex_entry_in_an_uneditable_form_is_refused(proj: Path) -> None:
    path = Path.home() / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('[mcp_servers]\nmemlane = { command = "x", args = [] }\n')
    with pytest.raises(InstallError, match="cannot edit safely"):
        mi.install("codex", "user", proj)
    assert path.read_text() == '[mcp_servers]\nmemlane = { command = "x", args = [] }\n'


@pytest.mark.parametrize(
    ("client", "content", "message"),
    [
        ("claude-code", "{not json", "bad JSON at line 1, column 2"),
        ("claude-code", "[1, 2]", "top level must be a JSON object"),
        ("cursor", '{"mcpServers": []}', "'mcpServers' must be an object"),
        ("codex", "model = [unclosed", "not valid TOML"),
    ],
)
def test_broken_config_is_never_overwritten(client: str, content: str, message: str, proj: Path) -> None:
    path = mi.config_path(client, "user", proj)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    with pytest.raises(InstallError, match=message):
        mi.install(client, "user", proj)
    assert path.read_text() == content


def test_claude_desktop_has_no_project_scope_and_os_paths(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InstallError, match="only a user-wide configuration"):
        mi.config_path("claude-desktop", "project", proj)
    monkeypatch.setattr(sys, "platform", "darwin")
    assert mi.config_path("claude-desktop", "user", proj) == (
        Path.home() / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    )
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("APPDATA", str(proj / "AppData"))
    assert mi.config_path("claude-desktop", "user", proj) == proj / "AppData" / "Claude" / "claude_desktop_config.json"


def test_cli_errors_are_one_line(proj: Path) -> None:
    path = Path.home() / ".claude.json"
    path.write_text("{oops")
    from memlane.cli.main import cli

    added = "mcp" not in cli.commands
    if added:  # until the group is registered in cli/main.py
        cli.add_command(mcp_group)
    try:
        result = CliRunner().invoke(cli, ["mcp", "install", "--client", "claude-code"])
        assert result.exit_code == 1
        assert result.output.startswith("Error: ") and "bad JSON at line" in result.output
        assert "Traceback" not in result.output
        result = CliRunner().invoke(cli, ["mcp", "install", "--client", "nope"])
        assert result.exit_code == 2 and "'nope' is not one of" in result.output
    finally:
        if added:
            cli.commands.pop("mcp")
