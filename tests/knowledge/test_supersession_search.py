"""Resolutions in search order and injection (``retrieval/resolved.py``): a replaced memory never above what
replaced it, brought in when the search missed it (within the filters), left out of what a prompt gets; and
``memlane show`` / ``memlane search`` saying so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from kn_support import Log, open_store

from memlane import config
from memlane.retrieval import resolved
from memlane.retrieval.hybrid import Hit, Retriever
from memlane.store.db import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    yield from open_store(tmp_path)


@pytest.fixture
def log(store: Store) -> Log:
    return Log(store)


def queue_story(log: Log) -> tuple[list[object], object]:
    """s1 chose Celery for the label queue; s2 decided to switch to RQ in words that share little with s1's."""
    log.prompt("We need background jobs for shipping label PDFs. Set up a task queue.", session="s1")
    old = [
        log.write("app/worker.py", "from celery import Celery\ncelery_app = Celery('labels')", session="s1"),
        log.answer(
            "Task queue for label PDF jobs: Celery with the Redis broker, workers per label queue.", session="s1"
        ),
    ]
    new = log.answer("The decision is to switch from Celery to RQ.", session="s2")
    log.project()
    return old, new


def test_a_replaced_memory_never_ranks_above_its_replacement(store: Store, log: Log) -> None:
    old, new = queue_story(log)
    hits = Retriever(store, config.load()).search("task queue for label PDF jobs", limit=5)
    cites = [h.event.cite for h in hits]
    assert new.cite in cites, "the replacement is brought in where the replaced memory was"  # type: ignore[attr-defined]
    for o in old:
        if o.cite in cites:  # type: ignore[attr-defined]
            assert cites.index(o.cite) > cites.index(new.cite)  # type: ignore[attr-defined]
            assert hits[cites.index(o.cite)].confidence == "superseded"  # type: ignore[attr-defined]
    without = Retriever(store, config.load()).search("task queue for label PDF jobs", limit=5, current_first=False)
    assert new.cite not in [h.event.cite for h in without], "the search alone does not find it"  # type: ignore[attr-defined]


def test_a_replacement_outside_the_search_filters_is_not_brought_in(store: Store, log: Log) -> None:
    _old, new = queue_story(log)
    hits = Retriever(store, config.load()).search("task queue label PDF", limit=5, types=["tool_observation"])
    assert [h.event.type for h in hits] == ["tool_observation"] * len(hits)
    assert new.cite not in [h.event.cite for h in hits]  # type: ignore[attr-defined]


def test_injection_leaves_replaced_memories_out_and_raises_a_returned_replacement(store: Store, log: Log) -> None:
    old, new = queue_story(log)
    events = {e.id: e for e in store.iter_events()}
    hits = [Hit(events[old[1].id], 0.9, {}, "high"), Hit(events[new.id], 0.2, {}, "suggested")]  # type: ignore[attr-defined]
    kept = resolved.drop_replaced(hits, store)
    assert [(h.event.id, h.score) for h in kept] == [(new.id, 0.9)]  # type: ignore[attr-defined]
    assert resolved.drop_replaced(hits, None) == hits, "without a store: unchanged"
    from memlane.retrieval.select import select_for_injection

    chosen = select_for_injection(hits, None, config.load(), store)
    assert [h.event.id for h in chosen] == [new.id]  # type: ignore[attr-defined]


def test_replacements_cost_one_lookup_whatever_the_store_holds(store: Store, log: Log) -> None:
    queue_story(log)
    ids = [e.id for e in store.iter_events()][:20]
    statements: list[str] = []
    store.db.set_trace_callback(statements.append)
    store.replacements(ids)
    store.replacements(ids, partial=True)
    store.db.set_trace_callback(None)
    assert len(statements) == 3, statements  # one read; with partial two more (the partial hops, none here)


def cli(root: Path, *args: str) -> tuple[int, str]:
    from memlane.cli.main import cli as main

    result = CliRunner().invoke(main, ["-C", str(root), *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_show_and_search_say_what_superseded_a_memory(tmp_path: Path) -> None:
    from memlane.memory import Memory

    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    with Memory.open(root) as mem:
        log = Log(mem.store)
        old, new = queue_story(log)
    code, out = cli(root, "show", old[1].cite)  # type: ignore[attr-defined]
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("superseded by"))
    assert f"{new.cite} (2026-03-01, decision)" in line and "switch from Celery to RQ" in line  # type: ignore[attr-defined]
    code, out = cli(root, "show", old[1].cite, "--json")  # type: ignore[attr-defined]
    info = json.loads(out)["supersession"]
    assert info["superseded"] and info["current"] == new.cite and info["superseded_by"][0]["rule"] == "decision"  # type: ignore[attr-defined]
    code, out = cli(root, "show", new.cite)  # type: ignore[attr-defined]
    assert "replaces" in out and old[1].cite in out  # type: ignore[attr-defined]
    code, out = cli(root, "search", "--text-only", "Celery Redis broker label queue")
    row = next(x for x in out.splitlines() if x.startswith(old[1].cite))  # type: ignore[attr-defined]
    assert f"(superseded by {new.cite})" in row and "\tsuperseded\t" in row  # type: ignore[attr-defined]
    code, out = cli(root, "search", "--text-only", "--json", "Celery Redis broker label queue")
    rows = {r["citation"]: r for r in json.loads(out)}
    assert rows[old[1].cite]["superseded_by"] == new.cite  # type: ignore[attr-defined]
