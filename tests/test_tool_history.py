"""Tool-history queries (reference specs/post-tool-use-hook §8.1: failed runs, by file, by tool) in the CLI
and MCP, and the schema's promptIndex/toolIndex stored with each tool call at capture time."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import FAILURE, payload
from memlane import config
from memlane.cli.main import cli
from memlane.errors import InputError
from memlane.mcp.tools import MemoryTools
from memlane.memory import Memory

Hook = Callable[..., str]


def _tool(hook: Hook, prompt_id: str, use_id: str, name: str, tool_input: dict[str, Any], out: str) -> None:
    data = payload("04-PostToolUse.json", prompt_id=prompt_id, tool_use_id=use_id, tool_name=name)
    data["tool_input"] = tool_input
    data["tool_response"] = {"stdout": out, "stderr": "", "interrupted": False} if name == "Bash" else out
    hook("PostToolUse", data)


def _failure(hook: Hook, prompt_id: str, use_id: str, command: str) -> None:
    data = json.loads((FAILURE / "PostToolUseFailure.json").read_text())
    data.update(session_id=payload("02-UserPromptSubmit.json")["session_id"], prompt_id=prompt_id, tool_use_id=use_id)
    data["tool_input"] = {"command": command, "description": "tests"}
    hook("PostToolUseFailure", data)


@pytest.fixture
def session(hook: Hook, proj: Path) -> Path:
    """Two prompts with two tool calls each, one of them a failed pytest run on tests/test_pool.py."""
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt="why does the pool time out?", prompt_id="p1"))
    _tool(hook, "p1", "t1", "Read", {"file_path": str(proj / "src" / "pool.py")}, "class Pool: ...")
    _failure(hook, "p1", "t2", "pytest tests/test_pool.py -x")
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt="raise the pool limit to 20", prompt_id="p2"))
    _tool(hook, "p2", "t3", "Edit", {"file_path": str(proj / "src" / "pool.py"), "old_string": "10",
                                      "new_string": "20"}, "ok")  # fmt: skip
    _tool(hook, "p2", "t4", "Bash", {"command": "pytest tests/test_pool.py -x"}, "1 passed")
    return proj


def _run(proj: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["-C", str(proj), *args])
    return result.exit_code, result.output


def test_prompt_and_tool_index_are_stored_at_capture(session: Path) -> None:
    with Memory.open(str(session), create=False) as mem:
        calls = mem.history(types=["tool_observation"], oldest_first=True)
    positions = [(e.metadata["tool_name"], e.metadata["prompt_index"], e.metadata["tool_index"]) for e in calls]
    assert positions == [("Read", 1, 1), ("Bash", 1, 2), ("Edit", 2, 1), ("Bash", 2, 2)]


def test_cli_lists_failed_runs_by_tool_and_by_file_without_a_query(session: Path) -> None:
    code, out = _run(session, "search", "--failed", "--json")
    assert code == 0
    (failed,) = json.loads(out)
    assert failed["metadata"]["success"] is False and "pytest tests/test_pool.py" in failed["content"]
    code, out = _run(session, "search", "--tool", "bash", "--json")  # tool names in any case
    assert [e["metadata"]["tool_use_id"] for e in json.loads(out)] == ["t4", "t2"]  # newest first
    code, out = _run(session, "search", "--file", "src/pool.py", "--json")
    assert [e["metadata"]["tool_name"] for e in json.loads(out)] == ["Edit", "Read"]
    code, out = _run(session, "search", "--file", "test_pool.py", "--tool", "Bash", "--failed", "--json")
    assert [e["metadata"]["tool_use_id"] for e in json.loads(out)] == ["t2"]  # a Bash command that names it
    code, out = _run(session, "search", "--failed")
    assert code == 0 and out.splitlines()[0] == "citation\ttime\ttype\tcontent"  # piped: tab-separated rows
    assert len(out.splitlines()) == 2 and "\ttool_observation\tBash: pytest tests/test_pool.py -x" in out
    code, out = _run(session, "search", "--tool", "Grep")
    assert code == 0 and out.strip() == "No tool calls match."


def test_cli_filters_a_search_too(session: Path) -> None:
    code, out = _run(session, "search", "pytest", "--failed", "--text-only", "--json")
    assert code == 0
    assert [r["citation"] for r in json.loads(out)] and all(r["type"] == "tool_observation" for r in json.loads(out))
    with Memory.open(str(session), create=False) as mem:
        failed = {e.cite for e in mem.tool_runs(failed=True)}
    assert {r["citation"] for r in json.loads(out)} == failed
    code, out = _run(session, "search", "pool", "--file", "pool.py", "--text-only", "--json")
    assert {r["summary"].split(":")[0] for r in json.loads(out)} <= {"Read", "Edit", "Bash"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search"], "empty search query"),
        (["search", "--tool", " "], "tool must be a non-empty name"),
        (["search", "--failed", "--type", "user_prompt"], "tool, file and failed select tool calls"),
    ],
)
def test_cli_bad_input_is_one_line(session: Path, args: list[str], message: str) -> None:
    code, out = _run(session, *args)
    assert code == 1 and message in out and "Traceback" not in out and len(out.strip().splitlines()) == 1


def test_mcp_search_by_tool_history(session: Path) -> None:
    tools = MemoryTools(config.Config(), None, str(session))
    reply = tools.search("", failed=True)
    assert reply.text.startswith("1 tool call(s) (failed) in shop")
    (row,) = reply.data["results"]
    assert row["tool"] == "Bash" and row["success"] is False and (row["prompt_index"], row["tool_index"]) == (1, 2)
    reply = tools.search("", tool="Edit", file="pool.py")
    assert [r["tool"] for r in reply.data["results"]] == ["Edit"]
    reply = tools.search("pool limit", file="src/pool.py")
    assert reply.data["results"] and all(r["type"] == "tool_observation" for r in reply.data["results"])
    with pytest.raises(InputError, match="empty search query"):
        tools.search("")
    with pytest.raises(InputError, match="failed must be true or false"):
        tools.search("", failed="yes")  # type: ignore[arg-type]
