"""``memlane context show|set|unset|compose`` and the MCP context pack through the composer."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import payload
from memlane import config
from memlane.cli.main import cli
from memlane.context import AppContextService
from memlane.mcp.tools import MemoryTools


def run(proj: Path, *args: str, input: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["-C", str(proj), "context", *args], input=input)
    return result.exit_code, result.output


@pytest.fixture
def root(proj: Path) -> Path:
    (proj / "AGENTS.md").write_text("Use uv (rule marker heron).\n")
    (proj / "CLAUDE.md").write_text("Claude's own file (marker kestrel).\n")
    return proj


def test_set_show_unset(root: Path) -> None:
    assert run(root, "set", "currentFile", "src/app.py") == (0, 'currentFile = "src/app.py"  [volatile]\n')
    code, out = run(root, "set", "selection", "-", input="def f():\n    return 1\n")
    assert code == 0 and "selection" in out
    assert run(root, "set", "--persistent", "preferences", "Answer briefly.")[0] == 0
    assert run(root, "set", "--json", "openFiles", '["a.py", "b.py"]')[0] == 0
    code, out = run(root, "show")
    assert code == 0 and out.startswith(
        f"project shop ({root.resolve()}), persistent context loaded, volatile from local"
    )
    assert "preferences: Answer briefly." in out and "heron" in out and "kestrel" in out
    assert "currentFile: src/app.py" in out and "selection:\n```\ndef f():\n    return 1\n```" in out
    data = json.loads(run(root, "show", "--json")[1])
    assert data["volatile"]["openFiles"] == ["a.py", "b.py"] and data["volatileSource"] == "local"
    assert data["persistent"]["preferences"] == "Answer briefly."
    assert run(root, "unset", "currentFile") == (0, "currentFile removed [volatile]\n")
    assert run(root, "unset", "--persistent", "preferences")[0] == 0
    data = json.loads(run(root, "show", "--json")[1])
    assert "currentFile" not in data["volatile"] and "preferences" not in data["persistent"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("set", "currentFile", "/etc/passwd"), "outside the project"),
        (("set", "currentFile", "../../x.py"), "outside the project"),
        (("set", "bad key", "x"), "bad context key"),
        (("set", "--persistent", "rules/AGENTS.md", "x"), "edit the file instead"),
        (("set", "--json", "n", "{oops"), "not JSON"),
        (("compose", "--task", "nope"), "Invalid value for '--task'"),
        (("compose", "--task", "prompt_injection"), "needs --prompt"),
    ],
)
def test_errors_are_one_line(root: Path, args: tuple[str, ...], message: str) -> None:
    code, out = run(root, *args)
    assert code != 0 and message in out and "Traceback" not in out


def test_compose_native_and_custom(root: Path, hook: Callable[..., str]) -> None:
    for name in ("01-SessionStart.json", "02-UserPromptSubmit.json", "05-Stop.json"):
        data = payload(name)
        hook(data["hook_event_name"], data)
    code, out = run(root, "compose", "--task", "session_start")
    assert code == 0 and out.startswith("memlane: where this project left off") and "heron" in out
    assert "kestrel" not in out and "zebrafinch" in out
    code, out = run(root, "compose", "--task", "prompt_injection", "--prompt", "connection pool times out again")
    assert code == 0 and "[mem:" in out and "## Project context" not in out
    code, out = run(root, "compose", "--task", "mcp_context_pack", "--prompt", "connection pool")
    assert code == 0 and out.startswith("memlane context pack") and "kestrel" in out
    code, out = run(root, "compose", "--task", "llm_task", "--body", "-", "--json", input="Explain the pool.")
    data = json.loads(out)
    assert data["prompt"].endswith("## Task\nExplain the pool.") and data["blocks"][0]["name"] == "persistent"
    code, out = run(root, "compose", "--task", "dashboard_preview", "--max-chars", "90")
    assert code == 0 and len(out.rstrip("\n")) <= 90


def test_mcp_context_pack_includes_the_stored_context_without_reading_project_files(
    root: Path, hook: Callable[..., str]
) -> None:
    hook("SessionStart", payload("01-SessionStart.json"))  # the hook refreshed the persistent snapshot
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    (root / "AGENTS.md").write_text("changed after the snapshot (marker egret)")
    AppContextService.for_path(str(root)).volatile_file().put("currentFile", "db/pool.py")
    reply = MemoryTools(config.Config(), default_project=str(root)).context_pack("connection pool", max_chars=3000)
    text = reply.text
    assert text.startswith("memlane context pack") and len(text) <= 3000
    assert "heron" in text and "egret" not in text  # the snapshot, not the file: MCP reads no project file
    assert "kestrel" in text and "currentFile: db/pool.py" in text
    assert text.index("## Project context") < text.index("## Current state") < text.index("## Recent sessions")
    assert [b["name"] for b in reply.data["context"]] == ["persistent", "volatile", "body"]
