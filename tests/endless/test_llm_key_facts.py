"""Endless mode's LLM-assisted key facts against a real model endpoint on loopback (``llm_stub``), real SQLite and
the daemon's real job: only when an LLM is configured and the project is in endless mode; the memory's key facts
are the model's quotes from its sources (anything else is refused); the daily budget stops it and it says so;
``rebuild`` reproduces the memories without asking again; private text and tool output never reach the model;
and without an LLM everything is what the extractive consolidation gave before this path existed
(``extractive_golden.json``, made by main's code before the LLM path: see ``test_without_an_llm_…``)."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from en_support import Log, dump, history, snapshot

from conftest import payload
from llm_stub import Stub
from memlane import config, paths
from memlane.cli.main import cli
from memlane.daemon.jobs import EndlessKeyFacts, Upkeep
from memlane.endless import assist, consolidation, inject, service, summaries
from memlane.knowledge import llm
from memlane.memory import Memory
from memlane.store.db import Store

GOLDEN = Path(__file__).with_name("extractive_golden.json")
MESSAGE = re.compile(r"\n\n\[(\d+)\] (\w+) \(\d{4}-\d\d-\d\d\): ")


@pytest.fixture
def stub() -> Iterator[Stub]:
    s = Stub()
    yield s
    s.close()


def configure(monkeypatch: pytest.MonkeyPatch, stub: Stub, **more: Any) -> config.Config:
    settings = {"provider": "openai", "model": "stub-model", "url": f"http://127.0.0.1:{stub.port}/v1",
                "input_usd_per_mtok": 1.0, "output_usd_per_mtok": 4.0, **more}  # fmt: skip
    for key, value in settings.items():
        monkeypatch.setenv(f"MEMLANE_LLM_{key.upper()}", str(value))
    return config.load()


def messages_of(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(who, text) of each numbered message of a key-facts request."""
    prompt = body["messages"][1]["content"]
    parts = MESSAGE.split(prompt)
    return [(parts[i + 1], parts[i + 2]) for i in range(1, len(parts) - 1, 3)]


def quoting(body: dict[str, Any]) -> str:
    """A model that does as it is told: the first sentence of each agent message (else of the first message)."""
    found = messages_of(body)
    picked = [i for i, (who, _) in enumerate(found) if who == "agent"] or [0]
    facts = [{"message": i, "text": found[i][1].split(". ")[0].split("\n")[0]} for i in picked]
    return "Sure! Here are the facts:\n" + json.dumps({"facts": facts, "title": "ignored", "confidence": 0.99})


@pytest.fixture
def mem(proj: Path) -> Iterator[Memory]:
    with Memory.open(proj) as m:
        yield m


def endless(mem: Memory) -> Log:
    """The history of three long-running topics, projected and consolidated, in a project in endless mode."""
    service.set_mode(mem.store, "endless")
    log = Log(mem.store)
    history(log)
    log.project(mem.config)
    return log


def memory(store: Store, kind: str, key_part: str) -> dict[str, Any]:
    (found,) = [m for m in store.consolidated(limit=100) if m["kind"] == kind and key_part in m["key"]]
    return found


def test_the_daemons_job_makes_the_key_facts_the_models_quotes(
    mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    endless(mem)
    extractive = {m["id"]: m for m in mem.store.consolidated(limit=100)}
    sources = {i: mem.store.consolidated_sources(i) for i in extractive}
    cfg = configure(monkeypatch, stub)
    stub.respond = quoting
    line = EndlessKeyFacts().run(cfg)
    assert line is not None and line.startswith(f"{mem.project.id}: LLM key facts: 3 call(s), 3 memories from 4 quote")
    assert len(stub.requests) == 3
    path, body = stub.requests[0]
    assert path == "/v1/chat/completions" and body["model"] == "stub-model"
    assert body["messages"][0] == {"role": "system", "content": summaries.SYSTEM}
    db = memory(mem.store, "file", "app/db.py")
    assert db["llm_answer"] and [(f["role"], f["text"], f["by"]) for f in db["facts"]] == [
        ("answer", "app/db.py now uses pool_size=10.", "llm"),
        ("answer", "QueuePool was exhausted under load, so app/db.py now uses pool_size=25 and max_overflow=10", "llm"),
    ]
    assert db["summary"] == (
        "2026-03-02 app/db.py now uses pool_size=10.\n"
        "2026-03-04 QueuePool was exhausted under load, so app/db.py now uses pool_size=25 and max_overflow=10"
    )
    # Never lose their sources; the rest of the memory is the extractive one.
    assert {i: mem.store.consolidated_sources(i) for i in extractive} == sources
    same = ("title", "confidence", "sessions", "sources", "first_ts", "last_ts")
    assert {k: db[k] for k in same} == {k: extractive[db["id"]][k] for k in same}
    # Searchable (the quotes' words) and injectable (SessionStart's long-running topics).
    fts = "SELECT summary FROM consolidated_fts WHERE memory_id = ?"
    assert mem.store.db.execute(fts, (db["id"],)).fetchone()[0] == db["summary"]
    assert [m["id"] for m in service.memories(mem.store, "max_overflow")] == [db["id"]]
    topics = inject.topics(mem.store, mem.config, set())
    assert any("uses pool_size=25 and max_overflow=10 [mem:" in t for t in topics)
    listed = CliRunner().invoke(cli, ["-C", str(mem.project.root), "endless", "memories", "max_overflow"])
    assert listed.exit_code == 0, listed.output
    assert "  key facts quoted from its sources by openai stub-model\n" in listed.output
    status = CliRunner().invoke(cli, ["-C", str(mem.project.root), "endless", "status"])
    assert "3 memories quoted by a model, 0 waiting (openai stub-model)" in status.output
    # Asked once: the next run sends nothing.
    assert EndlessKeyFacts().run(cfg) is None and len(stub.requests) == 3
    assert llm.spent_today()["calls"] == 3


def test_an_answer_that_is_not_a_quote_is_refused_and_not_asked_again(
    mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    endless(mem)
    before = {m["id"]: m for m in mem.store.consolidated(limit=100)}
    cfg = configure(monkeypatch, stub)

    def paraphrasing(body: dict[str, Any]) -> str:
        found = messages_of(body)
        return json.dumps({"facts": [
            {"message": 0, "text": "The team decided to raise the pool to fix the timeouts"},  # not in message 0
            {"message": len(found), "text": found[0][1][:40]},  # no such message
            {"message": 0, "text": found[0][1][:5]},  # too short to say anything
        ]})  # fmt: skip

    stub.respond = paraphrasing
    report = assist.run(mem.store, cfg, "endless", max_calls=10)
    assert (report.calls, report.quotes, report.refused, report.memories) == (3, 0, 9, [])
    assert "9 quote(s) refused (not in the source)" in report.line()
    assert {m["id"]: m for m in mem.store.consolidated(limit=100)} == before, "every memory stays extractive"
    kept = [json.loads(r[0]) for r in mem.store.db.execute("SELECT response FROM llm_consolidations")]
    assert kept == [{"facts": [], "refused": 3}] * 3, "nothing the model wrote is kept"
    stub.respond = lambda body: "I think the pool matters."  # not even JSON
    assert assist.run(mem.store, cfg, "endless", max_calls=10).calls == 0, "each input is asked once"
    assert len(stub.requests) == 3


def test_one_quote_kept_one_refused(mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    endless(mem)
    cfg = configure(monkeypatch, stub)
    stub.answer = json.dumps({"facts": [
        {"message": 0, "text": "Run   the\ntests."},  # whitespace aside, it is the words of message 0 (pytest)
        {"message": 0, "text": "Run the tests twice."},
    ]})  # fmt: skip
    mem.store.db.execute("DELETE FROM consolidated_memories WHERE kind != 'command' OR key NOT LIKE '%pytest%'")
    report = assist.run(mem.store, cfg, "endless", max_calls=10)
    assert (report.calls, report.quotes, report.refused) == (1, 1, 1)
    assert [f["text"] for f in memory(mem.store, "command", "pytest")["facts"]] == ["Run the tests."]


def test_the_daily_budget_stops_it_the_rest_stays_extractive_and_it_says_so(
    mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    endless(mem)
    before = {m["id"]: m for m in mem.store.consolidated(limit=100)}
    stub.usage = (2000, 100)
    stub.respond = quoting
    cfg = configure(monkeypatch, stub, daily_token_budget=3700)
    upkeep = Upkeep(cfg, threading.Event(), jobs=[EndlessKeyFacts()])
    upkeep.run_due(now=0)
    assert len(stub.requests) == 1, "the first call fits; the second's worst case (input + 1,500 out) does not"
    after = {m["id"]: m for m in mem.store.consolidated(limit=100)}
    assert sum("llm_answer" in m for m in after.values()) == 1
    extractive = [i for i in after if "llm_answer" not in after[i]]
    assert [after[i] for i in extractive] == [before[i] for i in extractive]
    stop = "stopped: the daily token budget (3,700) is reached: 2,100 used today (llm.daily_token_budget)"
    logged = Path(paths.join("logs", "daemon.log")).read_text()
    assert f"job llm-endless: {mem.project.id}: LLM key facts: 1 call(s), 1 memory from 1 quote(s)" in logged
    assert logged.count(stop) == 1 and "2 memories waiting; " + stop in logged
    status = CliRunner().invoke(cli, ["-C", str(mem.project.root), "endless", "status"])
    assert status.exit_code == 0, status.output
    assert "1 memory quoted by a model, 2 waiting (openai stub-model)" in status.output
    assert stop in status.output and "2,100 of 3,700 tokens" in status.output
    as_json = json.loads(CliRunner().invoke(cli, ["-C", str(mem.project.root), "endless", "status", "--json"]).output)
    assert as_json["llm"]["waiting"] == 2 and as_json["llm"]["last"].endswith(stop)
    # The next run asks nothing and logs nothing new: the budget is still spent.
    upkeep.run_due(now=1000)
    assert len(stub.requests) == 1
    assert Path(paths.join("logs", "daemon.log")).read_text().count(stop) == 1
    # `memlane endless consolidate` runs under the same budget.
    result = CliRunner().invoke(cli, ["-C", str(mem.project.root), "endless", "consolidate"])
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith("LLM key facts: nothing asked; 2 memories waiting; " + stop)
    assert len(stub.requests) == 1


def test_memlane_endless_consolidate_asks_the_model_too(
    mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    service.set_mode(mem.store, "endless")
    history(Log(mem.store))
    configure(monkeypatch, stub)
    stub.respond = quoting
    result = CliRunner().invoke(cli, ["-C", str(mem.project.root), "endless", "consolidate", "--json"])
    assert result.exit_code == 0, result.output
    done = json.loads(result.output)
    assert done["llm"]["calls"] == 3 and len(done["llm"]["memories"]) == 3 and done["llm"]["stopped"] == ""
    assert all("llm_answer" in m for m in mem.store.consolidated(limit=100))


def test_rebuild_reproduces_the_memories_without_asking_the_model(
    mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = endless(mem)
    cfg = configure(monkeypatch, stub)
    stub.respond = quoting
    assert assist.run(mem.store, cfg, "endless", max_calls=2).calls == 2  # one memory left extractive, waiting
    before = dump(mem.store)
    asked = len(stub.requests)
    with Memory.open(mem.project.root) as configured:  # the LLM on, one memory still waiting for it
        assert llm.configured(configured.config)
        configured.rebuild()
        assert dump(configured.store) == before
        configured.rebuild(["endless"])
        assert dump(configured.store) == before
    assert len(stub.requests) == asked, "rebuild never calls the model"
    # ... with the LLM turned off since, too: the answers are kept, nothing is asked.
    for name in ("PROVIDER", "MODEL"):
        monkeypatch.delenv(f"MEMLANE_LLM_{name}")
    with Memory.open(mem.project.root) as again:
        assert not llm.configured(again.config)
        again.rebuild()
        assert dump(again.store) == before
    assert len(stub.requests) == asked, "rebuild never calls the model"
    # A new fact changes the memory's input: the old answer no longer applies, the memory waits for a new call.
    monkeypatch.setenv("MEMLANE_LLM_PROVIDER", "openai")
    monkeypatch.setenv("MEMLANE_LLM_MODEL", "stub-model")
    assert "llm_answer" in memory(mem.store, "command", "alembic")
    log.bash("alembic upgrade head", "ERROR: relation orders already exists", "s3", hours=60, code=1)
    log.project(config.load())
    changed = memory(mem.store, "command", "alembic")
    assert "llm_answer" not in changed and "relation orders" in changed["summary"]
    assert ("command", changed["key"]) in [(k, v) for k, v, _ in mem.store.llm_waiting(2, 10)]


def test_forgetting_or_redacting_a_quoted_event_removes_the_answer(
    mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    endless(mem)
    cfg = configure(monkeypatch, stub)
    stub.respond = quoting
    assist.run(mem.store, cfg, "endless", max_calls=10)
    count = "SELECT count(*) FROM llm_consolidations"
    assert mem.store.db.execute(count).fetchone()[0] == 3
    answer = next(e for e in mem.store.iter_events() if e.content.startswith("QueuePool was exhausted"))
    mem.store.redact([(answer.id, "QueuePool was exhausted under load: [REDACTED].", {})], {})
    assert mem.store.db.execute(count).fetchone()[0] == 2
    first = next(e for e in mem.store.iter_events() if e.content.startswith("The pool test fails"))
    mem.forget(ids=[first.id])
    assert mem.store.db.execute(count).fetchone()[0] == 1
    mem.catch_up()
    service.refresh(mem.store, cfg, consolidate=True)
    db = memory(mem.store, "file", "app/db.py")
    assert "llm_answer" not in db and "max_overflow" not in db["summary"], "back to extractive, the words gone"


def test_private_text_secrets_and_tool_output_never_reach_the_model(
    hook: Any, proj: Path, stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real hooks (and their privacy filter): a <private> section, a token and a file's contents."""
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    for n, session in enumerate(("one", "two")):
        prompt = f"Raise the pool in app/db.py. <private>the staging password is narwhal-{n}</private>"
        hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", session_id=session, prompt_id=f"{session}-p",
                                         prompt=prompt))  # fmt: skip
        for tool, tool_input, response in (
            ("Read", {"file_path": f"{proj}/app/db.py"},
             {"file": {"filePath": f"{proj}/app/db.py", "content": "FILE BODY: DATABASE_URL=postgres://db/shop"}}),
            ("Edit", {"file_path": f"{proj}/app/db.py", "old_string": f"pool_size={n}",
                      "new_string": f"pool_size={n + 1}"}, {"filePath": f"{proj}/app/db.py"}),
        ):  # fmt: skip
            hook("PostToolUse", payload("04-PostToolUse.json", session_id=session, prompt_id=f"{session}-p",
                                        tool_use_id=f"{session}-{tool}", tool_name=tool, tool_input=tool_input,
                                        tool_response=response))  # fmt: skip
        answer = f"app/db.py now uses pool_size={n + 1}; token {secret} rotated."
        hook("Stop", payload("05-Stop.json", session_id=session, prompt_id=f"{session}-p",
                             last_assistant_message=answer))  # fmt: skip
    configure(monkeypatch, stub)
    stub.respond = quoting
    result = CliRunner().invoke(cli, ["-C", str(proj), "endless", "enable"])
    assert result.exit_code == 0, result.output
    assert "LLM key facts: 1 call(s), 1 memory from 2 quote(s)" in result.output
    sent = json.dumps([body for _, body in stub.requests])
    assert "Raise the pool in app/db.py" in sent and "pool_size=2" in sent
    for never in ("narwhal", secret, "FILE BODY", "DATABASE_URL", "<private>"):
        assert never not in sent, never


def test_only_in_endless_mode(mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    history(Log(mem.store))
    Log(mem.store).project(mem.config)
    cfg = configure(monkeypatch, stub)
    assert EndlessKeyFacts().run(cfg) is None and stub.requests == []
    status = service.status(mem.store, cfg)["llm"]
    assert status["asked"] is False and status["off"].startswith("the project is in session mode")
    assert status["waiting"] == 3 and status["assisted"] == 0


def test_without_an_llm_the_output_is_the_extractive_one(
    mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``extractive_golden.json`` is what main's code (before the LLM path) gave for this history: made with
    ``git archive main src`` and ``en_support.snapshot``. Unchanged with no LLM; and unchanged too with an LLM
    configured whose endpoint never answered (the memories wait for it, extractive)."""
    endless(mem)
    golden = json.loads(GOLDEN.read_text())
    assert snapshot(mem.store, mem.config) == golden
    assert EndlessKeyFacts().run(config.load()) is None
    assert stub.requests == [] and "llm" not in service.status(mem.store, mem.config)
    result = CliRunner().invoke(cli, ["-C", str(mem.project.root), "endless", "consolidate", "--json"])
    assert result.exit_code == 0 and "llm" not in json.loads(result.output)
    # An LLM configured, nothing answered yet (the endpoint is down): still the extractive memories.
    stub.close()
    cfg = configure(monkeypatch, stub)
    mem.store.mark_topics_dirty([(m["kind"], m["key"]) for m in mem.store.consolidated(limit=100)])
    service.refresh(mem.store, cfg, consolidate=True)
    report = assist.run(mem.store, cfg, "endless", max_calls=3)
    assert report.calls == 0 and report.stopped.startswith("LLM endpoint") and report.waiting == 3
    got = snapshot(mem.store, cfg)
    assert got["status"].pop("llm")["waiting"] == 3
    assert got == golden


def test_a_store_from_main_upgrades_in_place(tmp_path: Path) -> None:
    """A store of today's main (schema 90, without 91: made here by taking 91 out again) keeps its consolidated
    memories and gains the LLM columns and the answers' log on open."""
    path = tmp_path / "old.db"
    with Store(path, "p") as store:
        history(Log(store))
        Log(store).project()
    db = sqlite3.connect(path)
    for sql in ("DROP INDEX consolidated_llm_input", "ALTER TABLE consolidated_memories DROP COLUMN llm_input",
                "ALTER TABLE consolidated_memories DROP COLUMN llm_answer", "DROP TABLE llm_consolidation_events",
                "DROP TABLE llm_consolidations", "DELETE FROM schema_migrations WHERE version = 91"):  # fmt: skip
        db.execute(sql)
    db.commit()
    rows = db.execute("SELECT * FROM consolidated_memories ORDER BY id").fetchall()
    assert len(rows) == 3 and len(rows[0]) == 11
    db.close()
    with Store(path, "p") as store:
        assert 91 in {r[0] for r in store.db.execute("SELECT version FROM schema_migrations")}
        assert store.db.execute("SELECT * FROM consolidated_memories ORDER BY id").fetchall() == [
            (*r, "", None) for r in rows
        ]
        assert not store.has_llm_consolidations()
        store.mark_topics_dirty([(r[1], r[2]) for r in rows])
        assert consolidation.consolidate(store) == 3
        assert store.db.execute("SELECT * FROM consolidated_memories ORDER BY id").fetchall() == [
            (*r, "", None) for r in rows
        ]
