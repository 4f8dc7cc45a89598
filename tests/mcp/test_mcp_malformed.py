"""Malformed JSON-RPC gets JSON-RPC errors over stdio, and nothing large is echoed back."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp_support import fill, server_command, server_env

from memlane import config
from memlane.mcp.guard import MAX_MESSAGE_CHARS, check
from memlane.mcp.tools import MAX_QUERY_CHARS, MemoryTools, ToolInputError

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def _call(request_id: int, query: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "mem-search", "arguments": {"query": query}},
    }


def test_check_classifies_lines() -> None:
    assert check(json.dumps(INIT)) is None
    assert check("") is None
    parse = check("{not json")
    assert parse is not None and parse.error.code == -32700 and parse.id is None
    invalid = check('{"jsonrpc": "2.0", "id": 7}')
    assert invalid is not None and invalid.error.code == -32600 and invalid.id == 7
    batch = check("[1, 2]")
    assert batch is not None and batch.error.code == -32600
    huge = check(json.dumps(_call(9, "x" * (MAX_MESSAGE_CHARS + 1))))
    assert huge is not None and huge.id == 9 and len(huge.error.message) < 200


def test_tool_refuses_a_huge_query_without_echoing_it(proj: Path) -> None:
    fill(proj)
    tools = MemoryTools(config.load(), None, str(proj))
    query = "needle " * (MAX_QUERY_CHARS // 3)
    with pytest.raises(ToolInputError) as err:
        tools.search(query, project=str(proj))
    assert str(MAX_QUERY_CHARS) in str(err.value) and len(str(err.value)) < 300


def test_stdio_server_answers_every_malformed_line(proj: Path) -> None:
    fill(proj)
    big = "zebra " * 900_000  # ~5 MB
    lines = [
        json.dumps(INIT),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        "this is not json",
        '{"jsonrpc": "2.0", "id": 3}',
        "[1, 2]",
        '{"jsonrpc": "2.0", "id": "a", "method": "tools/list", "params": [1]}',
        json.dumps(_call(5, big)),
        json.dumps(_call(6, "z" * (MAX_QUERY_CHARS + 10))),
        json.dumps(_call(7, "connection pool")),
    ]
    # stdin stays open until the last reply: at EOF the SDK stops without finishing calls in flight.
    server = subprocess.Popen(
        [*server_command(), "--text-only"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=proj,
        env=server_env(),
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write("\n".join(lines) + "\n")
    server.stdin.flush()
    out: list[str] = []
    try:
        for line in server.stdout:
            out.append(line)
            if json.loads(line).get("id") == 7:
                break
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    stdout = "".join(out)
    replies = [json.loads(line) for line in out if line.strip()]
    assert len(stdout) < 50_000, "something large was echoed back"
    by_id = {r.get("id"): r for r in replies if r.get("id") is not None}
    nulls = [r for r in replies if r.get("id") is None]
    assert [r["error"]["code"] for r in nulls] == [-32700, -32600]
    assert by_id[3]["error"]["code"] == -32600
    assert by_id["a"]["error"]["code"] == -32600
    assert by_id[5]["error"]["code"] == -32600 and "limit" in by_id[5]["error"]["message"]
    assert by_id[6]["result"]["isError"] and "limit" in by_id[6]["result"]["content"][0]["text"]
    assert not by_id[7]["result"].get("isError"), "the server still works after all that"
