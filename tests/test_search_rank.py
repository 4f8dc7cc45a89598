"""Search's number column is what the list is sorted by; its match column is the injection tier (issues 36, 31)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memlane import config
from memlane.cli.main import cli
from memlane.memory import Memory
from memlane.retrieval import scoring
from memlane.store.db import NewEvent

QUERY = "pool timeout checkout pgbouncer"


def _store(proj: Path) -> None:
    events = [
        NewEvent("user_prompt", "a", "why does the checkout pool timeout under load with pgbouncer", "a1"),
        NewEvent("agent_response", "a", "the pool timeout came from pgbouncer; raised pool_size", "a2"),
        NewEvent("tool_observation", "a", "pytest: PoolTimeout in checkout", "a3"),
        NewEvent("user_prompt", "b", "pool timeout", "b1"),
        *(NewEvent("user_prompt", f"c{i}", f"unrelated note {i} about styling buttons", "c") for i in range(20)),
        NewEvent("user_prompt", "d", "checkout is slow, what is the pgbouncer pool timeout setting", "d1"),
        NewEvent("agent_response", "d", "pgbouncer pool timeout setting is 30s in checkout", "d2"),
    ]
    with Memory.open(proj) as mem:
        mem.store.append(events)


def test_the_rank_column_falls_while_p_need_not(proj: Path) -> None:
    _store(proj)
    rows = json.loads(CliRunner().invoke(cli, ["-C", str(proj), "search", QUERY, "--text-only", "--json"]).stdout)
    ranks = [r["rank"] for r in rows]
    assert ranks == sorted(ranks, reverse=True)
    # What people saw before: P (``score``) carries a session's whole support, the order a bounded part of it,
    # so P read top to bottom is not sorted ("0.24" above "0.36") — which is why the table shows ``rank``.
    scores = [r["score"] for r in rows]
    assert scores != sorted(scores, reverse=True)
    table = CliRunner().invoke(cli, ["-C", str(proj), "search", QUERY, "--text-only"]).stdout.splitlines()
    assert table[0].split("\t") == ["citation", "rank", "match", "level", "time", "type", "summary"]
    assert [float(line.split("\t")[1]) for line in table[1:]] == [round(r, 2) for r in ranks]


def test_the_match_column_falls_with_the_rank_and_json_also_gives_the_tier(proj: Path) -> None:
    """``match`` is the tier rule read from the rank shown beside it, so no "high" sits under a "suggested";
    ``tier`` is what a prompt would do with the memory (from P, which keeps the whole support of its exchange)."""
    _store(proj)
    rows = json.loads(CliRunner().invoke(cli, ["-C", str(proj), "search", QUERY, "--text-only", "--json"]).stdout)
    cfg = config.RetrievalConfig()
    order = {"high": 2, "suggested": 1, "none": 0}
    shown = [order[r["confidence"]] for r in rows]
    assert shown == sorted(shown, reverse=True) and shown[0] == 2
    with Memory.open(proj) as mem:  # the tier is what the search's hits carry, read from P and its lift
        hits = {h.event.cite: h for h in mem.search(QUERY, semantic=False)}
    for r in rows:
        hit = hits[r["citation"]]
        assert r["tier"] == hit.confidence == scoring.tier(hit.score, hit.sources["lift"], cfg)
    assert any(r["tier"] != r["confidence"] for r in rows)  # the two differ where support lifted P
