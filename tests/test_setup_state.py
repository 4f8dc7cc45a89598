"""What a newcomer sets up, shown and checked: status, doctor, plugin beside install, MCP clients, backups."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from conftest import payload
from memlane import install, paths
from memlane.cli.main import cli


def run(proj: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["-C", str(proj), *args])
    return result.exit_code, result.stdout, result.stderr


def test_status_json_shows_hooks_plugin_mcp_and_daemon(proj: Path) -> None:
    assert run(proj, "install", "--scope", "local")[0] == 0
    assert run(proj, "mcp", "install", "--client", "vscode", "--scope", "project")[0] == 0
    code, out, _ = run(proj, "status", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["hook_files"]["local"]["path"] == str(proj / ".claude" / "settings.local.json")
    assert len(data["hook_files"]["local"]["events"]) == len(install.HOOKS)
    assert data["hook_files"]["user"]["events"] == []
    assert data["plugin"] == {"enabled": {}}
    assert [(c["client"], c["scope"], c["path"]) for c in data["mcp_clients"]] == [
        ("vscode", "project", str(proj / ".vscode" / "mcp.json"))
    ]
    assert data["daemon"]["running"] is False and data["daemon"]["backlog"] == 0
    assert isinstance(data["data_bytes"], int)
    text = run(proj, "status")[1]
    # key<TAB>value in a pipe (cut -f2 works)
    assert f"hooks (local)\t{len(install.HOOKS)} event(s) in {proj / '.claude' / 'settings.local.json'}\n" in text
    assert f"mcp\tvscode (project): {proj / '.vscode' / 'mcp.json'}\n" in text
    assert "daemon\tnot running, backlog 0 event(s)\n" in text


def test_doctor_explains_a_daemon_that_failed_to_start(proj: Path) -> None:
    run(proj, "install")
    logs = paths.logs_dir()
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "daemon.out").write_text(
        "Error: port 37777 on 127.0.0.1 is already in use (Address already in use); stop what uses it or set "
        "daemon.port (memlane config set daemon.port 37778)\n"
    )
    code, out, _ = run(proj, "doctor")
    assert code == 1
    line = next(x for x in out.splitlines() if "daemon:" in x)
    assert line.strip().startswith("FAIL daemon: a session tried to start it and it failed: Error: port 37777")
    assert "memlane config set daemon.port 37779" in out
    checks = {c["name"]: c for c in json.loads(run(proj, "doctor", "--json")[1])}
    assert checks["daemon"]["ok"] is False

    # A later successful start makes that error history, not a problem.
    (logs / "daemon.log").write_text("2999-01-01T00:00:00Z INFO [1] serving on 127.0.0.1:37777 (pid 1)\n")
    checks = {c["name"]: c for c in json.loads(run(proj, "doctor", "--json")[1])}
    assert checks["daemon"]["ok"] is True and checks["daemon"]["detail"].startswith("not running")


def test_plugin_beside_install_is_noted_and_warned(proj: Path) -> None:
    settings = Path.home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"enabledPlugins": {"memlane@memlane-local": True}}))
    code, out, _ = run(proj, "install")
    assert code == 0 and "Note: the memlane plugin (memlane@memlane-local) is enabled too." in out
    checks = {c["name"]: c for c in json.loads(run(proj, "doctor", "--json")[1])}
    assert checks["plugin + hooks"]["warn"] is True and not checks["plugin + hooks"]["ok"]
    status = json.loads(run(proj, "status", "--json")[1])
    assert status["plugin"] == {"enabled": {"user": ["memlane@memlane-local"]}}


def test_install_backups_go_to_the_data_dir(proj: Path) -> None:
    shared = proj / ".claude" / "settings.json"
    shared.parent.mkdir(parents=True)
    shared.write_text('{"model": "opus"}\n')
    code, out, _ = run(proj, "install", "--scope", "project")
    assert code == 0
    assert sorted(p.name for p in shared.parent.iterdir()) == ["settings.json"]
    backups = list((paths.home() / "backups").iterdir())
    assert len(backups) == 1 and backups[0].read_text() == '{"model": "opus"}\n'
    assert backups[0].name.startswith(str(shared).strip("/").replace("/", "-") + ".")
    assert f"Backup of the previous file: {backups[0]}" in out


def test_vscode_mcp_config_uses_servers(proj: Path) -> None:
    code, out, _ = run(proj, "mcp", "install", "--client", "vscode", "--scope", "project")
    assert code == 0, out
    data = json.loads((proj / ".vscode" / "mcp.json").read_text())
    assert list(data) == ["servers"]
    entry = data["servers"]["memlane"]
    assert entry["type"] == "stdio" and entry["args"] == ["mcp", "--project", "${workspaceFolder}"]
    assert run(proj, "mcp", "uninstall", "--client", "vscode", "--scope", "project")[0] == 0
    assert json.loads((proj / ".vscode" / "mcp.json").read_text()) == {"servers": {}}


def test_codex_dry_run_shows_the_toml_and_the_trust_rule(proj: Path) -> None:
    code, out, _ = run(proj, "mcp", "install", "--client", "codex", "--scope", "project", "--dry-run")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"Would add the memlane MCP server to codex config {proj / '.codex' / 'config.toml'}"
    toml_text = "\n".join(lines[1:-1])
    assert tomllib.loads(toml_text)["mcp_servers"]["memlane"]["args"] == ["mcp"]
    assert lines[-1].startswith("Note: Codex reads a project's .codex/config.toml only once the project is trusted")
    assert not (proj / ".codex").exists()


def test_memlane_does_not_remember_its_own_commands(hook: Callable[..., str], proj: Path) -> None:
    own = payload("02-UserPromptSubmit.json", prompt="/memlane:memory-search pool timeout", prompt_id="p-own")
    hook("UserPromptSubmit", own)
    hook("PostToolUse", payload("04-PostToolUse.json", tool_input={"command": "memlane search pool --json"}))
    hook("Stop", payload("05-Stop.json", prompt_id="p-own", last_assistant_message="Found [mem:abc123]: pool."))
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt="fix the flaky test", prompt_id="p-2"))
    hook("Stop", payload("05-Stop.json", prompt_id="p-2", last_assistant_message="Fixed the flaky test."))
    rows = json.loads(run(proj, "history", "--json")[1])
    assert sorted(r["content"] for r in rows) == ["Fixed the flaky test.", "fix the flaky test"]
    assert not os.listdir(paths.home() / "state" / "own-turn")


def test_doctor_names_the_exception_of_a_daemon_that_crashed(proj: Path) -> None:
    logs = paths.logs_dir()
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "daemon.out").write_text(
        'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
        "ModuleNotFoundError: No module named 'uvicorn'\n"
    )
    checks = {c["name"]: c for c in json.loads(run(proj, "doctor", "--json")[1])}
    assert checks["daemon"]["detail"].startswith(
        "a session tried to start it and it failed: ModuleNotFoundError: No module named 'uvicorn' (from "
    )
