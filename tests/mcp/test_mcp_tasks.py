"""``mem-tasks`` over the SDK's in-memory client: list, show, add and update, and its refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from mcp import Client
from memlane import config
from memlane.mcp.server import build_server
from memlane.memory import Memory
from memlane.store.db import NewEvent


def run(proj: Path, *calls: dict[str, Any]) -> list[tuple[bool, str]]:
    server = build_server(config.load(), default_project=str(proj), semantic=False)
    out: list[tuple[bool, str]] = []

    async def main() -> None:
        async with Client(server) as client:
            for arguments in calls:
                result = await client.call_tool("mem-tasks", arguments)
                out.append((result.is_error, str(result.content[0].text)))  # type: ignore[union-attr]

    anyio.run(main)
    return out


def test_mem_tasks_lists_shows_adds_and_updates(proj: Path) -> None:
    with Memory.open(proj) as mem:
        mem.store.append([NewEvent("user_prompt", "s1", "Today:\n- [ ] add the CSV importer\n- [x] fix login", "p1")])
    (listed, shown, added, refused, started, done, all_tasks) = run(
        proj,
        {},
        {"action": "show", "task": "add the CSV importer"},
        {"action": "add", "title": "Write the release notes", "priority": "high"},
        {"action": "update", "task": "write the release notes", "status": "done"},
        {"action": "update", "task": "write the release notes", "status": "in_progress"},
        {"action": "update", "task": "write the release notes", "status": "done", "note": "shipped"},
        {"action": "list", "all_tasks": True},
    )
    assert not listed[0] and "add the CSV importer" in listed[1] and "[pending, medium]" in listed[1]
    assert "fix login" in listed[1] and "[in_progress" in listed[1], "first seen checked: rejected, in progress"
    assert not shown[0] and "created" in shown[1] and "Named in: [mem:" in shown[1]
    assert not added[0] and "[pending, high] Write the release notes" in added[1]
    assert refused[0] and "is pending: start it first" in refused[1]
    assert not started[0] and "[in_progress, high]" in started[1]
    assert not done[0] and "[done, high]" in done[1]
    assert "Write the release notes" in all_tasks[1] and all_tasks[1].count("\n- task-") == 3


def test_mem_tasks_input_errors_are_one_line(proj: Path) -> None:
    with Memory.open(proj) as mem:
        mem.store.append([NewEvent("user_prompt", "s1", "- [ ] add the CSV importer", "p1")])
    results = run(
        proj,
        {"action": "delete"},
        {"action": "show"},
        {"action": "add"},
        {"action": "update", "task": "add the CSV importer"},
        {"action": "update", "task": "add the CSV importer", "status": "blocked"},
        {"action": "show", "task": "no such task"},
        {"action": "update", "task": "add the CSV importer", "status": "finished"},
    )
    messages = [text for error, text in results]
    assert all(error for error, _ in results)
    assert all("\n" not in m for m in messages)
    assert "unknown action 'delete'" in messages[0]
    assert "needs task" in messages[1] and "needs title" in messages[2] and "something to change" in messages[3]
    assert "needs a blocker" in messages[4] and "no task 'no such task'" in messages[5]
    assert "unknown task status 'finished'" in messages[6]
