"""The MCP server end to end over stdio, driven by the official SDK's own client."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters
from mcp_support import SECRET, fill, server_command, server_env

from mcp import Client

TOOLS = {"mem-search", "mem-timeline", "mem-details", "mem-source", "mem-context-pack", "mem-stats", "mem-projects",
         "mem-tasks", "mem-insights"}  # fmt: skip
CITE = re.compile(r"\[(mem:[0-9a-z]{6})\]")


@pytest.fixture
def store(proj: Path) -> dict[str, Any]:
    return fill(proj)


def params(cwd: Path, *args: str) -> StdioServerParameters:
    cmd = server_command()
    return StdioServerParameters(command=cmd[0], args=[*cmd[1:], *args], cwd=str(cwd), env=server_env())


def session(cwd: Path, body: Callable[[Client], Awaitable[Any]], *args: str) -> Any:
    """Start ``memlane mcp`` in ``cwd`` as a subprocess, run ``body`` with a connected client."""
    out: list[Any] = []

    async def main() -> None:
        async with Client(params(cwd, "--text-only", *args), read_timeout_seconds=60) as client:
            out.append(await body(client))

    anyio.run(main)
    return out[0]


async def text(client: Client, tool: str, **arguments: Any) -> tuple[bool, str]:
    result = await client.call_tool(tool, arguments)
    assert len(result.content) == 1 and result.content[0].type == "text"
    return bool(result.is_error), result.content[0].text


def test_lists_tools_with_schemas_and_workflow_instructions(store: dict[str, Any], proj: Path) -> None:
    async def body(client: Client) -> Any:
        return client.instructions, (await client.list_tools()).tools

    instructions, tools = session(proj, body)
    assert {t.name for t in tools} == TOOLS
    by_name = {t.name: t for t in tools}
    for tool in tools:
        if tool.name != "mem-projects":
            assert "project" in tool.input_schema["properties"], tool.name
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint == (tool.name != "mem-tasks"), "only mem-tasks changes anything"
    search = by_name["mem-search"].input_schema
    assert "required" not in search  # a tool-history listing (tool, file, failed) needs no query
    assert search["properties"]["failed"]["type"] == "boolean"
    assert search["properties"]["limit"]["minimum"] == 1 and search["properties"]["limit"]["maximum"] == 50
    assert "user_prompt" in str(search["properties"]["types"])
    assert by_name["mem-details"].input_schema["required"] == ["refs"]
    assert "mem-timeline" in by_name["mem-search"].description and "mem-details" in by_name["mem-search"].description
    assert instructions is not None
    steps = [instructions.index(name) for name in ("1. mem-search", "2. mem-timeline", "3. mem-details")]
    assert steps == sorted(steps)


def test_search_then_timeline_then_details(store: dict[str, Any], proj: Path) -> None:
    async def body(client: Client) -> Any:
        error, found = await text(client, "mem-search", query="pool timeout", limit=5)
        assert not error
        cites = CITE.findall(found)
        answer = next(line for line in found.splitlines() if "quokka" in line)
        cite = CITE.search(answer).group(1)  # type: ignore[union-attr]
        return (
            found,
            cites,
            cite,
            await text(client, "mem-timeline", ref=cite),
            await text(client, "mem-details", refs=[cite, cites[-1]]),
        )

    found, cites, cite, (t_err, timeline), (d_err, details) = session(proj, body)
    assert found.startswith('5 memories for "pool timeout" in shop')
    assert len(cites) == 5 and len(set(cites)) == 5
    row = next(line for line in found.splitlines() if cite in line)
    assert re.match(
        r"- \[mem:\w{6}\] \d\.\d\d \((high|suggested|none)\) \d{4}-\d\d-\d\d \d\d:\d\d agent response: ", row
    )
    assert "Next: mem-timeline" in found
    assert not t_err and f"→ [{cite}]" in timeline
    assert "user prompt: The DB connection pool times out" in timeline  # the prompt that led to it
    assert timeline.index("pool times out") < timeline.index(f"→ [{cite}]")
    assert not d_err and f"## [{cite}] agent response" in details
    assert "Fixed: the pool now releases connections on timeout; raised the limit to 20 (quokka)." in details
    assert details.count("## [mem:") == 2


def test_source_context_pack_stats_projects(store: dict[str, Any], proj: Path) -> None:
    failed = next(e for e in store["events"] if e.metadata.get("success") is False)

    async def body(client: Client) -> Any:
        return [
            await text(client, "mem-source", citation=f"[{failed.cite}]", window=1),
            await text(client, "mem-context-pack", task="payment webhook retries", max_chars=3000),
            await text(client, "mem-stats"),
            await text(client, "mem-projects"),
            await text(client, "mem-context-pack", max_chars=300),
        ]

    (s_err, source), (p_err, pack), (st_err, stats), (_e, projects), (_e2, small) = session(proj, body)
    assert not (s_err or p_err or st_err)
    assert source.startswith(f"[{failed.cite}]: tool observation")
    assert "no recorded end" in source and "expected 3 attempts" in source
    assert source.count("\n  [mem:") + source.count("\n→ [mem:") == 3  # itself and one neighbour each side
    assert len(pack) <= 3000
    for heading in ("## Recent sessions", "## Open threads", "## Recent failed tool runs", "## Memories relevant"):
        assert heading in pack, heading
    threads = pack.split("## Open threads")[1].split("##")[0]
    assert "marker ocelot" in threads and "zebrafinch" not in threads  # the first session ended
    assert "Add retries to the payment webhook handler" in pack.split("## Memories relevant")[1]
    assert len(small) <= 300 and small.startswith("memlane context pack")
    assert f"events: {len(store['events'])} in 2 session(s)" in stats and "search: full-text only" in stats
    assert str(proj) in projects and "default" in projects


def test_input_errors_are_clear_tool_errors(store: dict[str, Any], proj: Path, tmp_path: Path) -> None:
    (tmp_path / "a-file.txt").write_text("x")
    (tmp_path / "empty-project").mkdir()
    calls: list[tuple[str, dict[str, Any], str]] = [
        ("mem-search", {"query": "   "}, "empty search query: say what to look for"),
        ("mem-search", {"query": "pool", "limit": 0}, "limit must be a whole number from 1 to 50, got 0"),
        ("mem-search", {"query": "pool", "limit": 51}, "limit must be a whole number from 1 to 50"),
        ("mem-search", {"query": "pool", "types": ["nonsense"]}, "unknown event type 'nonsense'"),
        ("mem-search", {"query": "pool", "since": "last tuesday"}, "since: 'last tuesday' is not a date"),
        ("mem-timeline", {"ref": "mem:zzzzzz"}, "unknown memory 'mem:zzzzzz' in project shop"),
        ("mem-timeline", {"ref": "mem:!!"}, "malformed citation 'mem:!!'"),
        ("mem-timeline", {"ref": "mem:abc123", "before": 21}, "before must be a whole number from 0 to 20"),
        ("mem-details", {"refs": []}, "refs is empty"),
        ("mem-details", {"refs": ["mem:zzzzzz"]}, "unknown memory mem:zzzzzz"),
        ("mem-details", {"refs": [f"mem:{i:06d}" for i in range(21)]}, "at most 20 refs per call"),
        ("mem-source", {"citation": ""}, "citation is empty"),
        ("mem-stats", {"project": str(tmp_path / "a-file.txt")}, "is not a directory"),
        ("mem-stats", {"project": str(tmp_path / "missing")}, "does not exist"),
        ("mem-stats", {"project": str(tmp_path / "empty-project")}, f"projects with memory: {proj}"),
        ("mem-context-pack", {"max_chars": 10}, "max_chars must be a whole number from 200"),
    ]

    async def body(client: Client) -> Any:
        return [(tool, await text(client, tool, **args), expected) for tool, args, expected in calls]

    for tool, (error, message), expected in session(proj, body):
        assert error, (tool, message)
        assert message.startswith(f"Error executing tool {tool}: "), message
        assert expected in message, (expected, message)
        assert "\n" not in message and "Traceback" not in message


def test_output_is_privacy_filtered(store: dict[str, Any], proj: Path) -> None:
    leaked = next(e for e in store["events"] if "marker ibis" in e.content)
    assert SECRET in leaked.content  # stored unfiltered, as by an older version: output must still hide it

    async def body(client: Client) -> Any:
        return [
            await text(client, "mem-search", query="GITHUB_TOKEN CI settings"),
            await text(client, "mem-details", refs=[leaked.cite]),
            await text(client, "mem-timeline", ref=leaked.id),
            await text(client, "mem-source", citation=leaked.cite),
            await text(client, "mem-context-pack", task="CI settings token"),
        ]

    outputs = session(proj, body)
    for error, output in outputs:
        assert not error
        assert SECRET not in output and SECRET[:12] not in output
    assert all("GITHUB_TOKEN=[REDACTED]" in output for _e, output in outputs)


def test_default_project_is_the_server_directory(store: dict[str, Any], proj: Path, tmp_path: Path) -> None:
    (proj / "src" / "pool").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    async def stats(client: Client) -> Any:
        return await text(client, "mem-stats")

    async def with_project(client: Client) -> Any:
        return await text(client, "mem-stats"), await text(client, "mem-stats", project=str(proj / "src"))

    error, inside = session(proj / "src" / "pool", stats)  # a subfolder belongs to the git project
    assert not error and f"shop ({proj})" in inside
    (no_default, message), (error, explicit) = session(elsewhere, with_project)
    assert no_default and f"no memory for project {elsewhere}" in message and str(proj) in message
    assert not error and f"shop ({proj})" in explicit
    error, by_option = session(elsewhere, stats, "--project", str(proj))
    assert not error and f"shop ({proj})" in by_option
    error, unexpanded = session(proj, stats, "--project", "${workspaceFolder}")  # a client that did not expand it
    assert not error and f"shop ({proj})" in unexpanded


def test_search_with_whatever_embedding_stack_is_installed(store: dict[str, Any], proj: Path) -> None:
    """No --text-only: the server's Engine uses vectors when memlane.embed/vectors work, else full text."""

    async def main() -> Any:
        async with Client(params(proj), read_timeout_seconds=300) as client:
            return await text(client, "mem-search", query="pool exhausted timeout"), await text(client, "mem-stats")

    out: list[Any] = []

    async def run() -> None:
        out.append(await main())

    anyio.run(run)
    (error, found), (_e, stats) = out[0]
    assert not error and "narwhal" in found
    assert re.search(r"search: (hybrid|full-text only)", stats)
