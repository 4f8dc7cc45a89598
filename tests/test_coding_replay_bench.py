"""The coding-memory replay benchmark, text-only on its real fixtures: the CI-sized check.

Imports all 61 recorded sessions (Claude Code and Codex) with memlane's importers, checks that every
query's markers fit the imported events, and runs a handful of queries through plain BM25, memlane's
full-text search and the hooks' full-text fallback. No model is loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "coding_replay.py"


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MEMLANE_HOME": str(home)}
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, env=env, timeout=120)


def test_fixtures_and_queries_fit_together() -> None:
    queries = [
        json.loads(x) for x in (ROOT / "benchmarks" / "coding_replay" / "queries.jsonl").read_text().splitlines()
    ]
    match = [q for q in queries if q["expect"]]
    assert len(match) >= 60 and len(queries) - len(match) >= 30
    assert {q["split"] for q in queries} == {"dev", "test"}
    assert any(q["category"] == "nomatch_ontopic" for q in queries)
    assert any(q["lang"] == "ko" and q["expect"] for q in queries) and any(q["stale"] for q in queries)
    manifest = json.loads((ROOT / "benchmarks" / "coding_replay" / "transcripts" / "manifest.json").read_text())
    assert len(manifest) >= 59 and {m["cli"] for m in manifest.values()} == {"claude", "codex"}


@pytest.mark.parametrize("variant", ["ko", "para"])
def test_the_other_writers_prompts_mirror_the_english_ones(variant: str) -> None:
    """``queries_ko.jsonl`` and ``queries_para.jsonl`` (corpora replay-ko and replay-para of benchmarks/injection.py)
    ask every English prompt again, in Korean or in other words, with the same answers, splits and clock."""
    folder = ROOT / "benchmarks" / "coding_replay"
    english = [json.loads(x) for x in (folder / "queries.jsonl").read_text().splitlines()]
    other = [json.loads(x) for x in (folder / f"queries_{variant}.jsonl").read_text(encoding="utf-8").splitlines()]
    english = [q for q in english if q["lang"] == "en"]
    assert [q["id"] for q in other] == [q["id"] for q in english]
    same = ("split", "category", "now", "expect", "stale")
    for en, q in zip(english, other, strict=True):
        assert {k: q[k] for k in same} == {k: en[k] for k in same}, en["id"]
        assert q["query"] != en["query"], en["id"]
        if variant == "ko":
            assert q["lang"] == "ko" and any("\uac00" <= ch <= "\ud7a3" for ch in q["query"]), en["id"]


def test_text_only_run(tmp_path: Path) -> None:
    done = run("--text-only", "--split", "all", "--json", "--keep", str(tmp_path / "store"), home=tmp_path / "home")
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["stats"]["files"] == 61 and result["stats"]["events"] > 250
    summary = result["splits"]["all"]
    assert summary["columns"] == ["bm25", "fts", "fallback"]
    assert summary["rows"]["ALL MATCH"]["n"] >= 60 and summary["rows"]["ALL NO-MATCH"]["n"] >= 30
    by_id = {r["id"]: r for r in result["queries"]}
    # An exact identifier is found by every full-text path.
    assert by_id["q023"]["bm25"]["hit"] and by_id["q023"]["fts"]["hit"]
    # Both tiers: at most 5 exchanges in full (a few memories each) and 5 index lines.
    assert all(r["fallback"]["n"] <= 20 for r in result["queries"])


def test_vector_path_on_a_small_store(memlane_home: Path, hook, proj: Path) -> None:  # type: ignore[no-untyped-def]
    """The replay's hybrid and hook columns (Engine.relevant through its HookEngine) with the real model on a
    three-memory store: the full fixtures take minutes to embed, but this path must not break unnoticed."""
    import importlib.util

    from conftest import payload
    from memlane.memory import Memory
    from memlane.retrieval.engine import Engine
    from memlane.vectors import process_outbox

    spec = importlib.util.spec_from_file_location("coding_replay", BENCH)
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    texts = [
        "Label jobs now run on RQ: we switched the task queue from Celery to RQ",
        "Invoices are rendered with WeasyPrint; the fonts live in static/fonts",
        "The nightly report job runs from cron at 02:00 UTC",
    ]
    for n, text in enumerate(texts):
        hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt_id=f"m{n}", prompt=text))
    mem = Memory.open(str(proj))
    embedder = Engine(mem.config).embedder
    assert process_outbox(mem, embedder).processed >= len(texts)
    query = {
        "id": "t1",
        "split": "test",
        "category": "paraphrase",
        "query": "which queue runs the label jobs?",
        "now": "2026-11-25T10:00:00+00:00",
        "expect": ["switched the task queue"],
    }
    (row,) = bench.run(mem, embedder, [query], real_clock=False)
    assert row["hybrid"]["hit"] and row["hook"]["hit"], row
