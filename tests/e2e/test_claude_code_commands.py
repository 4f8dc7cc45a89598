"""The plugin's slash commands and memlane's hook answers, in the real Claude Code CLI.

The built plugin is installed from its local marketplace (`claude plugin marketplace add` / `plugin install`);
`/memlane:list`, `/memlane:show`, `/memlane:export` and `/memlane:workflow-memory` must then be commands Claude
Code knows (it expands them into the request; an unknown one gets a "no command with that name" reminder).
`/workflow-memory init` typed as is, and a prompt with an unclosed <private> tag, are answered by memlane's
UserPromptSubmit hook with a message for the user (`systemMessage`, recorded as a hook_system_message).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from e2e.conftest import CliSession

pytestmark = pytest.mark.e2e


def _claude(claude_bin: Path, s: CliSession, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(claude_bin), *args], env=s.env, cwd=s.project, capture_output=True, text=True, timeout=240, check=False
    )


def _user_texts(request_log: Path) -> list[str]:
    """What reached the model besides its own turns (the prompt, commands, hook context: 2.1.328 sends hook
    context in a "system" message)."""
    texts = []
    for line in request_log.read_text().splitlines():
        for message in json.loads(line)["body"].get("messages", []):
            content = message["content"]
            if message["role"] == "assistant":
                continue
            if isinstance(content, str):
                texts.append(content)
            else:
                texts.extend(str(block.get("text", "")) for block in content)
    return texts


def _hook_messages(s: CliSession) -> list[str]:
    out = []
    for transcript in (s.home / ".claude" / "projects").rglob("*.jsonl"):
        for line in transcript.read_text().splitlines():
            attachment = json.loads(line).get("attachment") or {}
            if attachment.get("type") == "hook_system_message":
                out.append(str(attachment.get("content")))
    return out


def test_plugin_commands_and_hook_answers(claude_bin: Path, stub: tuple[int, Path], tmp_path: Path) -> None:
    port, request_log = stub
    s = CliSession(tmp_path, port)
    market = tmp_path / "market"
    assert s.memlane("plugin", "build", str(market)).returncode == 0
    for args in (("plugin", "marketplace", "add", str(market)), ("plugin", "install", "memlane@memlane-local")):
        result = _claude(claude_bin, s, *args)
        assert result.returncode == 0, result.stdout + result.stderr

    for command, body in (
        ("/memlane:list", "List this project's most recent memories"),
        ("/memlane:show mem:abc123", "Show the memlane memory the user names: mem:abc123"),
        ("/memlane:export --since 7d", "Export this project's memlane memory. Options from the user: --since 7d"),
        ("/memlane:workflow-memory status", "The user ran the workflow-memory command: status"),
    ):
        request_log.write_text("")
        result = _claude(claude_bin, s, "-p", command, "--output-format", "json")
        assert result.returncode == 0, result.stderr
        texts = _user_texts(request_log)
        name = command.split()[0]
        assert any(f"<command-name>{name}</command-name>" in t for t in texts), (command, texts[:3])
        assert any(body in t for t in texts), command
        assert not any("no command with that name" in t for t in texts), command

    request_log.write_text("")
    assert _claude(claude_bin, s, "-p", "/workflow-memory init", "--output-format", "json").returncode == 0
    messages = _hook_messages(s)
    assert any(m.startswith("memlane /workflow-memory init:\nCreated workflow memory shop-") for m in messages)
    assert any("memlane already ran the user's `/workflow-memory init`" in t for t in _user_texts(request_log))
    assert s.memlane("workflow", "status", "--json").returncode == 0  # the memory exists and is linked

    prompt = "deploy with the staging key <private>sk-live-1234 and then tell me"
    assert _claude(claude_bin, s, "-p", prompt, "--output-format", "json").returncode == 0
    notes = [m for m in _hook_messages(s) if "never closed" in m]
    assert len(notes) == 1 and "`memlane forget mem:" in notes[0]
    assert not any("never closed" in t for t in _user_texts(request_log))  # for the user, not the model
