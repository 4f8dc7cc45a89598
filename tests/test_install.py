from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlane import install as inst
from memlane.cli.main import cli

THEIRS = {
    "model": "opus",
    "hooks": {
        "PostToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "prettier --write"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "say hi"}]}],
    },
}


def settings(tmp_path: Path, content: object = THEIRS) -> Path:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, indent=2))
    return path


def test_install_merges_with_existing_hooks_and_backs_up(tmp_path: Path) -> None:
    path = settings(tmp_path)
    change = inst.install(path, command="/opt/memlane hook")
    assert change.changed and change.backup and json.loads(change.backup.read_text()) == THEIRS
    data = json.loads(path.read_text())
    assert data["model"] == "opus"
    assert data["hooks"]["PostToolUse"][0] == THEIRS["hooks"]["PostToolUse"][0]
    assert data["hooks"]["Notification"] == THEIRS["hooks"]["Notification"]
    ours = inst.installed_events(path)
    assert set(ours) == set(inst.HOOKS)
    post = data["hooks"]["PostToolUse"][1]
    assert post["matcher"] == "*" and post["hooks"][0]["async"] is True
    assert "async" not in data["hooks"]["UserPromptSubmit"][0]["hooks"][0]


def test_install_is_idempotent(tmp_path: Path) -> None:
    path = settings(tmp_path)
    inst.install(path, command="/opt/memlane hook")
    first = path.read_text()
    change = inst.install(path, command="/opt/memlane hook")
    assert not change.changed and change.backup is None and path.read_text() == first
    assert sum(len(g["hooks"]) for g in json.loads(first)["hooks"]["Stop"]) == 2


def test_reinstall_with_new_path_replaces_ours_only(tmp_path: Path) -> None:
    path = settings(tmp_path)
    inst.install(path, command="/old/memlane hook")
    inst.install(path, command="/new/memlane hook")
    cmds = [
        h["command"] for groups in json.loads(path.read_text())["hooks"].values() for g in groups for h in g["hooks"]
    ]
    assert not any(c.startswith("/old/") for c in cmds) and "prettier --write" in cmds


def test_uninstall_removes_only_ours(tmp_path: Path) -> None:
    path = settings(tmp_path)
    inst.install(path, command="/opt/memlane hook")
    change = inst.uninstall(path)
    assert change.removed == len(inst.HOOKS)
    assert json.loads(path.read_text()) == THEIRS


def test_uninstall_of_only_ours_leaves_clean_file(tmp_path: Path) -> None:
    path = settings(tmp_path, {"theme": "dark"})
    inst.install(path, command="memlane hook")
    inst.uninstall(path)
    assert json.loads(path.read_text()) == {"theme": "dark"}


@pytest.mark.parametrize("bad", ["{not json", "[1, 2]", '{"hooks": []}'])
def test_broken_settings_are_never_overwritten(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(bad)
    with pytest.raises(inst.InstallError):
        inst.install(path)
    assert path.read_text() == bad


def test_cli_install_scopes(tmp_path: Path, proj: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["-C", str(proj), "install", "--scope", "project"])
    assert result.exit_code == 0, result.output
    assert (proj / ".claude" / "settings.json").exists()
    result = runner.invoke(cli, ["-C", str(proj), "install", "--scope", "local"])
    assert (proj / ".claude" / "settings.local.json").exists()
    result = runner.invoke(cli, ["-C", str(proj), "install"])  # user scope: $HOME/.claude/settings.json
    assert (Path.home() / ".claude" / "settings.json").exists()
    result = runner.invoke(cli, ["-C", str(proj), "install"])
    assert "already installed" in result.output
    result = runner.invoke(cli, ["-C", str(proj), "doctor"])
    assert "duplicates" in result.output
    result = runner.invoke(cli, ["-C", str(proj), "uninstall"])
    assert result.exit_code == 0 and result.output.count("Removed") == 3
    assert inst.installed_events(proj / ".claude" / "settings.json") == {}


def test_cli_install_refuses_broken_settings(tmp_path: Path, proj: Path) -> None:
    target = proj / ".claude" / "settings.json"
    target.parent.mkdir()
    target.write_text("{oops")
    result = CliRunner().invoke(cli, ["-C", str(proj), "install", "--scope", "project"])
    assert result.exit_code == 1 and "bad JSON at line 1, column 2" in result.output
    assert "Traceback" not in result.output
    assert target.read_text() == "{oops"
