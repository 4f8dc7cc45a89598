"""The optional LLM extractor against a real HTTP server on loopback (an OpenAI-compatible stub, which also speaks
the Anthropic and Ollama shapes): off unless configured, quotes only (aligned, or the insight stays unverified),
usage recorded, the daily budget enforced (it stops and says so), and a rebuild reusing the answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from kn_support import Log

from llm_stub import Stub
from memlane import config
from memlane.knowledge import llm
from memlane.memory import Memory


@pytest.fixture
def stub() -> Iterator[Stub]:
    s = Stub()
    yield s
    s.close()


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    with Memory.open(root) as m:
        yield m


def configure(monkeypatch: pytest.MonkeyPatch, stub: Stub, provider: str = "openai", **more: Any) -> config.Config:
    base = f"http://127.0.0.1:{stub.port}" + ("/v1" if provider == "openai" else "")
    settings = {"provider": provider, "model": "stub-model", "url": base, "input_usd_per_mtok": 1.0,
                "output_usd_per_mtok": 4.0, **more}  # fmt: skip
    for key, value in settings.items():
        monkeypatch.setenv(f"MEMLANE_LLM_{key.upper()}", str(value).lower() if isinstance(value, bool) else str(value))
    return config.load()


def session(mem: Memory) -> Log:
    log = Log(mem.store)
    log.prompt("Let's pick a queue for the background jobs.")
    log.answer("We went with RQ: it is simpler than Celery and Redis is already there.")
    log.prompt("Also: branches are named feature/<ticket> here.")
    log.add("session_end", "Session ended (exit)")
    mem.store.db.execute("UPDATE sessions SET ended_at = last_activity")
    mem.catch_up()
    return log


def test_off_unless_configured_and_nothing_is_sent(mem: Memory, stub: Stub) -> None:
    session(mem)
    report = llm.run(mem.store, config.load(), idle=False)
    assert report.off and report.line().startswith("the LLM extractor is off")
    assert stub.requests == []


def test_quotes_are_aligned_and_nothing_else_the_model_says_is_kept(
    mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    session(mem)
    cfg = configure(monkeypatch, stub)
    stub.answer = "Here you go:\n" + json.dumps(
        {
            "insights": [
                {"type": "decision", "title": "Queue choice", "confidence": 0.99,
                 "quotes": [{"message": 1, "text": "We went with RQ: it is simpler than Celery", "why": "x"}]},
                {"type": "convention", "quotes": [{"message": 2, "text": "branches are named feature/<ticket> here"}]},
                {"type": "preference", "quotes": [{"message": 0, "text": "The user loves queues and wants more"}]},
                {"type": "summary", "quotes": [{"message": 0, "text": "Let's pick a queue"}]},
                {"type": "decision", "quotes": [{"message": 9, "text": "no such message"}]},
            ]
        }
    )  # fmt: skip
    report = llm.run(mem.store, cfg, idle=False)
    assert (report.calls, report.insights, report.input_tokens, report.output_tokens) == (1, 3, 1000, 50)
    assert report.cost_usd == pytest.approx(1000 * 1.0 / 1e6 + 50 * 4.0 / 1e6)
    ((path, body),) = stub.requests
    assert path == "/v1/chat/completions" and body["model"] == "stub-model"
    assert "[1] agent: We went with RQ" in body["messages"][1]["content"]
    (kept,) = mem.store.db.execute("SELECT response, input_tokens, output_tokens, cost_usd FROM llm_extractions")
    assert json.loads(kept[0]) == {"insights": [
        {"type": "decision", "quotes": [{"message": 1, "text": "We went with RQ: it is simpler than Celery"}]},
        {"type": "convention", "quotes": [{"message": 2, "text": "branches are named feature/<ticket> here"}]},
        {"type": "preference", "quotes": [{"message": 0, "text": "The user loves queues and wants more"}]},
    ]}  # fmt: skip
    assert kept[1:] == (1000, 50, pytest.approx(0.0012))
    mem.catch_up()
    found = {i["insight_type"]: i for i in mem.store.list_insights(limit=50) if "llm" in i["origin"]}
    assert found["decision"]["content"] == "We went with RQ: it is simpler than Celery"
    assert found["decision"]["evidence_aligned"] and found["convention"]["evidence_aligned"]
    assert not found["preference"]["evidence_aligned"], "a quote not in its message is never verified"
    assert found["preference"]["content"] == "(its quote is not in its source)"
    assert llm.spent_today()["calls"] == 1
    # read once: a second run sends nothing
    assert llm.run(mem.store, cfg, idle=False).calls == 0 and len(stub.requests) == 1


@pytest.mark.parametrize(("provider", "path"), [("anthropic", "/v1/messages"), ("ollama", "/api/chat")])
def test_anthropic_and_ollama_shapes(
    mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch, provider: str, path: str
) -> None:
    session(mem)
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-123")
    cfg = configure(monkeypatch, stub, provider, api_key_env="TEST_LLM_KEY")
    stub.answer = json.dumps(
        {"insights": [{"type": "decision", "quotes": [{"message": 1, "text": "We went with RQ"}]}]}
    )
    report = llm.run(mem.store, cfg, idle=False)
    assert report.calls == 1 and report.insights == 1
    assert stub.requests[0][0] == path
    mem.catch_up()
    assert [i["content"] for i in mem.store.list_insights(types=["decision"]) if "llm" in i["origin"]] == [
        "We went with RQ"
    ]


def test_the_daily_token_budget_stops_it_and_says_so(mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    session(mem)
    log = Log(mem.store)
    log.prompt("A second session about the cache.", session="s2")
    log.answer("We settled on Redis for the cache.", session="s2")
    mem.store.db.execute("UPDATE sessions SET ended_at = last_activity")
    mem.catch_up()
    stub.usage = (2000, 100)
    cfg = configure(monkeypatch, stub, daily_token_budget=3800)
    report = llm.run(mem.store, cfg, idle=False, max_calls=10)
    assert report.calls == 1, "the first call fits; the second's worst case (input + 1,500 out) does not"
    assert report.stopped == "the daily token budget (3,800) is reached: 2,100 used today (llm.daily_token_budget)"
    assert len(stub.requests) == 1
    assert llm.run(mem.store, cfg, idle=False).stopped.startswith("the daily token budget")
    assert len(stub.requests) == 1, "nothing is sent past the budget"
    result = CliRunner().invoke(
        __import__("memlane.cli.main", fromlist=["cli"]).cli, ["-C", str(mem.project.root), "insights", "extract"]
    )
    assert result.exit_code == 0
    assert result.output.strip() == (
        "nothing new to read; stopped: the daily token budget (3,800) is reached: 2,100 used today "
        "(llm.daily_token_budget)"
    )
    assert (
        llm.budget_line(cfg)
        == "LLM extractor (openai stub-model): today 1 call(s), 2,100 of 3,800 tokens, $0.0024 of $1.00"
    )


def test_the_daily_cost_budget_stops_it_too(mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    session(mem)
    cfg = configure(monkeypatch, stub, daily_cost_usd=0.001, input_usd_per_mtok=10.0, output_usd_per_mtok=10.0)
    report = llm.run(mem.store, cfg, idle=False)
    assert report.calls == 0 and report.stopped.startswith("the daily cost budget ($0.00) is reached")
    assert stub.requests == []


def test_a_quiet_session_waits_until_it_has_been_idle(mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    log = Log(mem.store)
    log.prompt("We went with RQ.")
    mem.store.db.execute("UPDATE sessions SET last_activity = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')")
    mem.catch_up()
    cfg = configure(monkeypatch, stub)
    assert llm.run(mem.store, cfg).calls == 0, "still active: not read yet"
    assert llm.run(mem.store, cfg, idle=False).calls == 1


def test_an_unreachable_endpoint_stops_with_its_reason(
    mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    session(mem)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = configure(monkeypatch, stub, url=f"http://127.0.0.1:{port}/v1")
    report = llm.run(mem.store, cfg, idle=False)
    assert report.calls == 0
    assert report.stopped.startswith(f"LLM endpoint http://127.0.0.1:{port}/v1/chat/completions unreachable")
    assert llm.spent_today()["calls"] == 0 and stub.requests == []


def test_rebuild_reuses_the_answers_instead_of_asking_again(
    mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    session(mem)
    cfg = configure(monkeypatch, stub)
    stub.answer = json.dumps(
        {"insights": [{"type": "decision", "quotes": [{"message": 1, "text": "We went with RQ"}]}]}
    )
    llm.run(mem.store, cfg, idle=False)
    mem.catch_up()
    before = mem.store.db.execute("SELECT * FROM insights ORDER BY id").fetchall()
    mem.rebuild()
    assert mem.store.db.execute("SELECT * FROM insights ORDER BY id").fetchall() == before
    assert len(stub.requests) == 1
