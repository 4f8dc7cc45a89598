"""Progressive disclosure (reference specs/progressive-disclosure): the smart expansion rules (§5.1), the
token budget on every layer (§5.2), the per-layer result cache (§7), and `memlane search -d/--budget`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlane import config
from memlane.cli.main import cli
from memlane.mcp.tools import MemoryTools
from memlane.memory import Memory
from memlane.retrieval.disclosure import DisclosureCache, disclose, plan, tokens
from memlane.retrieval.hybrid import Hit
from memlane.store.db import NewEvent

RCFG = config.RetrievalConfig()


@pytest.fixture
def mem(proj: Path) -> Memory:
    with Memory.open(str(proj)) as m:
        events = []
        for s in range(4):
            for i in range(5):
                body = f"session {s} step {i}: " + ("the pool exhausted its connections; " * 60)
                events.append(
                    NewEvent("agent_response", f"s{s}", body, f"t{s}-{i}", ts=f"2026-11-0{s + 1}T10:0{i}:00Z")
                )
        m.store.append(events)
    m = Memory.open(str(proj), create=False)
    yield m
    m.close()


def hits(mem: Memory, scores: list[float], labels: list[str] | None = None) -> list[Hit]:
    """Hits on the store's latest events (one session each after the first five), labelled as given."""
    events = mem.history(limit=len(scores))
    labels = labels or ["suggested"] * len(scores)
    return [Hit(e, s, {}, c) for e, s, c in zip(events, scores, labels, strict=False)]


def test_smart_rules(mem: Memory) -> None:
    one = hits(mem, [0.7], ["high"])
    assert plan(one, RCFG).reason == "high_confidence" and plan(one, RCFG).details == [one[0].event.id]
    winner = hits(mem, [0.9, 0.5, 0.45], ["high", "suggested", "suggested"])
    decided = plan(winner, RCFG)
    assert (decided.reason, decided.details, decided.timelines) == ("clear_winner", [winner[0].event.id], [])
    close = hits(mem, [0.55, 0.5, 0.45, 0.2], ["suggested", "suggested", "suggested", "none"])
    decided = plan(close, RCFG)
    assert decided.reason == "ambiguous_results" and decided.details == []
    assert decided.timelines == [h.event.id for h in close[:3]]
    few = hits(mem, [0.55, 0.5, 0.3], ["suggested", "suggested", "none"])
    assert plan(few, RCFG).reason == "low_confidence"  # only two would be shown
    assert plan(hits(mem, [0.5]), RCFG).reason == "low_confidence"
    assert plan([], RCFG).reason == "no_results"


def test_smart_expands_what_the_rules_say(mem: Memory) -> None:
    winner = hits(mem, [0.9, 0.5, 0.45], ["high", "suggested", "suggested"])
    shown = disclose(winner, "smart", 4000, mem.neighbours, RCFG)
    assert shown.meta["expansion"] == "clear_winner" and shown.meta["expanded"] == 1
    assert "detail" in shown.rows[0] and shown.rows[0]["expansion"] == "clear_winner"
    assert not any("detail" in r or "timeline" in r for r in shown.rows[1:])
    close = hits(mem, [0.55, 0.5, 0.45, 0.44])
    shown = disclose(close, "smart", 4000, mem.neighbours, RCFG)
    assert [("timeline" in r, "detail" in r) for r in shown.rows] == [(True, False)] * 3 + [(False, False)]
    assert sum(1 for item in shown.rows[0]["timeline"] if item["current"]) == 1


@pytest.mark.parametrize("layer", ["index", "timeline", "full", "smart"])
@pytest.mark.parametrize("budget", [100, 250, 600, 2000])
def test_every_layer_honours_the_budget(mem: Memory, layer: str, budget: int) -> None:
    many = hits(mem, [0.9, 0.5, 0.45, 0.44, 0.43, 0.42], ["high"] + ["suggested"] * 5)
    shown = disclose(many, layer, budget, mem.neighbours, RCFG)
    spent = sum(tokens(r) for r in shown.rows)
    assert spent <= budget and shown.meta["estimated_tokens"] <= budget
    assert shown.rows, "one index row always fits the smallest budget the CLI allows"
    if budget >= 600:
        assert len(shown.rows) == 6  # the index first: every result, then expansions in what is left
    if layer == "full" and budget == 2000:  # the best whole (~600 tokens each), the next one cut to fit
        details = [r["detail"] for r in shown.rows if "detail" in r]
        assert [d.get("truncated", False) for d in details[:2]] == [False, False]
        assert all(d["truncated"] for d in details[2:])  # what no longer fits whole is cut to the room left
        assert all("detail" in r for r in shown.rows[: len(details)])  # the best results, in rank order
    if layer == "full" and budget == 600:  # what the six index rows leave is too little for a useful cut
        assert not any("detail" in r for r in shown.rows) and budget - spent < 100


def test_cache_per_layer_and_invalidated_by_writes(mem: Memory, proj: Path) -> None:
    tools = MemoryTools(config.Config(), None, str(proj))
    first = tools.search("pool exhausted", limit=3)
    again = tools.search("pool exhausted", limit=3)
    assert first.data == again.data
    assert tools.cache.stats()["index"] == {"hits": 1, "misses": 1, "entries": 1}
    cite = first.data["results"][0]["citation"]
    tools.timeline(cite)
    tools.timeline(cite)
    tools.details([cite])
    tools.details([cite])
    stats = tools.cache.stats()
    assert stats["timeline"]["hits"] == 1 and stats["details"]["hits"] >= 2
    mem.store.append([NewEvent("user_prompt", "s9", "is the pool exhausted again?", "t9")])
    tools.search("pool exhausted", limit=3)  # a new event: a new generation, never a stale answer
    assert tools.cache.stats()["index"] == {"hits": 1, "misses": 2, "entries": 2}
    later = tools.search("exhausted again", limit=3)
    assert "is the pool exhausted again?" in [r["summary"] for r in later.data["results"]]


def test_layer_cache_lifetime_and_size() -> None:
    cache = DisclosureCache()
    layer = cache.layers["index"]
    assert (layer.ttl_s, layer.size) == (60.0, 100)
    assert (cache.layers["timeline"].ttl_s, cache.layers["details"].ttl_s) == (300.0, 1800.0)
    for i in range(150):
        cache.get_or_make("index", i, lambda i=i: i)
    assert len(layer) == 100 and cache.get_or_make("index", 149, lambda: "fresh") == 149
    assert cache.get_or_make("index", 0, lambda: "made again") == "made again"  # the oldest went first
    layer.ttl_s = 0.0
    cache.get_or_make("index", "k", lambda: 1)
    assert cache.get_or_make("index", "k", lambda: 2) == 2  # expired


def _search(proj: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["-C", str(proj), "search", *args, "--text-only"])
    return result.exit_code, result.stdout, result.stderr


def test_cli_disclosure_layers_and_budget(mem: Memory, proj: Path) -> None:
    mem.store.append([NewEvent("tool_observation", "s7", "Bash: pytest\nE   narwhal7731 pool exhausted", "t7")])
    code, out, _ = _search(proj, "pool exhausted", "-d", "timeline", "--json", "-n", "3")
    rows = json.loads(out)
    assert code == 0 and all("timeline" in r for r in rows)
    code, out, _ = _search(proj, "pool exhausted", "-d", "full", "--budget", "400", "-n", "2", "--json")
    rows = json.loads(out)
    assert code == 0 and sum(tokens(r) for r in rows) <= 400 and rows[0]["detail"]["truncated"] is True
    code, out, err = _search(proj, "narwhal7731", "-d", "smart", "--budget", "1500")
    assert code == 0 and "smart: " in err and "of 1500 tokens" in err
    code, out, _ = _search(proj, "narwhal7731", "-d", "smart", "--json")
    (top,) = json.loads(out)  # a unique identifier: one result, which the matcher calls "high"
    assert top["summary"].startswith("Bash: pytest") and top["confidence"] == "high"
    assert top["expansion"] == "high_confidence" and "narwhal7731" in top["detail"]["content"]
    code, out, _ = _search(proj, "pool", "--budget", "99")
    assert code == 2 and "99 is not in the range 100<=x<=100000" in out + _
