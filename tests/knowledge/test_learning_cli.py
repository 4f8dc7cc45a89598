"""The learning loop through every entry point: ``memlane citations``, ``memlane insights``, levels in ``show``,
``stats`` and ``search``, MCP (mem-details counts a fetch, mem-search and mem-insights show levels), and the
dashboard's ``/api/citations/{id}``; with a one-line error for each bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from kn_support import Log

from mcp import Client
from memlane import config
from memlane.cli.main import cli
from memlane.mcp.server import build_server
from memlane.memory import Memory
from memlane.store.db import Event


def run(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["-C", str(root), *args])
    return result.exit_code, result.stdout, result.stderr


def cite_from(log: Log, memory: Event, session: str, n: int = 1) -> None:
    for i in range(n):
        log.prompt(f"question {i} in {session}", session=session)
        log.answer(f"Going by [mem:{memory.citation}].", session=session)


@pytest.fixture
def used(proj: Path) -> dict[str, Event]:
    """A decision cited five times from three other sessions (L3, a verified decision) and a memory cited once."""
    with Memory.open(proj) as mem:
        log = Log(mem.store)
        decision = log.prompt("Decision: we use RQ instead of Celery for the task queue.")
        once = log.answer("The pool limit is 20 connections.")
        cite_from(log, decision, "s2", 2)
        cite_from(log, decision, "s3", 2)
        cite_from(log, decision, "s4", 1)
        cite_from(log, once, "s4", 1)
    return {"decision": decision, "once": once}


def test_citations_popular_and_show(proj: Path, used: dict[str, Event]) -> None:
    code, out, _ = run(proj, "citations", "popular")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "citation\tuses\tsessions\tlevel\tlast used\tsummary"
    assert lines[1].startswith(f"{used['decision'].cite}\t5\t3\tL3\t")
    assert lines[2].startswith(f"{used['once'].cite}\t1\t1\tL1\t")
    code, out, _ = run(proj, "citations", "popular", "--json", "--limit", "1")
    (row,) = json.loads(out)
    assert (row["citation"], row["uses"], row["level"]) == (used["decision"].cite, 5, "L3")
    code, out, _ = run(proj, "citations", "show", used["decision"].cite)
    assert code == 0
    assert "level\tL3 verified — L4 needs 10 uses (has 5), confidence 0.92 (has 1.00)" not in out  # 1.0 passes
    assert "level\tL3 verified — L4 needs 10 uses (has 5), 3 other session(s) (has 3)" not in out
    assert "level\tL3 verified — L4 needs 10 uses (has 5)" in out
    assert "uses\tinjected 0, listed 0, fetched 0, cited 5" in out
    assert "cited in\ts4 (1×, 2026-03-01), s3 (2×, 2026-03-01), s2 (2×, 2026-03-01)" in out
    code, out, _ = run(proj, "citations", "sessions", "--json")
    assert [(r["session_id"], r["cited"]) for r in json.loads(out)] == [("s4", 2), ("s3", 2), ("s2", 2)]


def test_show_counts_itself_as_a_fetch_and_says_the_level(proj: Path, used: dict[str, Event]) -> None:
    code, out, _ = run(proj, "show", used["once"].cite)
    assert code == 0 and "level\tL1 structured — L2 needs 3 uses (has 2)" in out
    assert "uses\tinjected 0, listed 0, fetched 1, cited 1" in out and "cited in\ts4 (1×, 2026-03-01)" in out
    code, out, _ = run(proj, "show", used["decision"].cite, "--json")
    data = json.loads(out)
    assert data["usage"]["counts"]["fetched"] == 1 and data["usage"]["level"]["level"] == 3
    assert data["usage"]["insights"][0]["insight_type"] == "decision"


def test_insights_list_show_and_query(proj: Path, used: dict[str, Event]) -> None:
    code, out, _ = run(proj, "insights")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "id\tkind\tlevel\tsupport\tcited as\tinsight"
    assert lines[1].split("\t")[1:] == [
        "decision", "L3", "1", used["decision"].cite, "Decision: we use RQ instead of Celery for the task queue."
    ]  # fmt: skip
    insight_id = lines[1].split("\t")[0]
    code, out, _ = run(proj, "insights", "show", insight_id[:9])
    assert code == 0 and "says\tDecision: we use RQ instead of Celery for the task queue." in out
    assert "evidence\taligned" in out
    assert f"  {used['decision'].cite} states (exact, 1.00): Decision: we use RQ instead of Celery" in out
    code, out, _ = run(proj, "insights", "--query", "task queue celery", "--text-only", "--json")
    assert [r["id"] for r in json.loads(out)] == [insight_id]
    code, out, _ = run(proj, "insights", "--level", "L4")
    assert out == "No insights yet.\n"
    code, out, _ = run(proj, "insights", "--type", "preference", "--json")
    assert json.loads(out) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("citations", "popular", "--by", "liked"), "Invalid value for '--by'"),
        (("insights", "--level", "L9"), "Invalid value for '--level'"),
        (("insights", "--type", "rumour"), "Invalid value for '--type'"),
        (("insights", "show", "in-nothing"), "Error: no insight 'in-nothing' in project"),
        (("citations", "show", "mem:zzzzzz"), "Error: no event 'mem:zzzzzz' in project"),
    ],
)
def test_bad_input_is_one_line(proj: Path, used: dict[str, Event], args: tuple[str, ...], message: str) -> None:
    code, out, err = run(proj, *args)
    assert code != 0 and message in err and "Traceback" not in err + out


def test_stats_and_search_show_levels(proj: Path, used: dict[str, Event]) -> None:
    code, out, _ = run(proj, "stats")
    assert code == 0
    assert "levels\tL0 " in out and "L3 1" in out
    assert "uses\tinjected 0, listed 0, fetched 0, cited 6" in out
    assert "insights\tdecision 1; L3 1" in out
    _, out, _ = run(proj, "stats", "--json")
    assert json.loads(out)["learning"]["levels"]["L3"] == 1
    _, out, _ = run(proj, "search", "--text-only", "RQ", "Celery", "task", "queue")
    assert out.splitlines()[0] == "citation\trank\tmatch\tlevel\ttime\ttype\tsummary"
    row = next(line for line in out.splitlines() if line.startswith(used["decision"].cite))
    assert "\tL3\t" in row and row.endswith(
        "[verified decision L3: Decision: we use RQ instead of Celery for the task queue.]"
    )
    _, out, _ = run(proj, "search", "--text-only", "RQ", "Celery", "--json")
    found = next(r for r in json.loads(out) if r["citation"] == used["decision"].cite)
    assert found["level"] == "L3" and found["insight"]["verified"] is True


def mcp(proj: Path, *calls: tuple[str, dict[str, Any]]) -> list[tuple[bool, str]]:
    server = build_server(config.load(), default_project=str(proj), semantic=False)
    out: list[tuple[bool, str]] = []

    async def main() -> None:
        async with Client(server) as client:
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                out.append((result.is_error, str(result.content[0].text)))  # type: ignore[union-attr]

    anyio.run(main)
    return out


def test_mcp_details_counts_a_fetch_and_tools_show_levels(
    proj: Path, used: dict[str, Event], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "cc-7")
    with Memory.open(proj, create=False) as mem:
        mem.catch_up()  # what the daemon's jobs keep up to date
    details, search, insights, bad = mcp(
        proj,
        ("mem-details", {"refs": [used["decision"].cite]}),
        ("mem-search", {"query": "RQ Celery task queue"}),
        ("mem-insights", {"query": "task queue"}),
        ("mem-insights", {"level": "L7"}),
    )
    assert not details[0] and "level L3; evidence of a verified decision (L3): Decision: we use RQ" in details[1]
    with Memory.open(proj, create=False) as mem:
        mem.catch_up()
        assert mem.usage(used["decision"].id)["used_in"][0]["session_id"] == "cc-7"
        assert mem.usage(used["decision"].id)["counts"]["fetched"] == 1
    line = next(x for x in search[1].splitlines() if x.startswith(f"- [{used['decision'].cite}]"))
    assert line.endswith("[L3; verified decision L3: Decision: we use RQ instead of Celery for the task queue.]")
    assert not insights[0] and "- L3 verified decision: Decision: we use RQ instead of Celery" in insights[1]
    assert bad[0] and "level must be one of L1, L2, L3, L4" in bad[1]
