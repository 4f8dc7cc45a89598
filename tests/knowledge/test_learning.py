"""The learning loop on a real store: cited, fetched and injected uses, levels promoted and demoted by settle (the
daemon's graduation job), rule-based insights with aligned evidence, forget and redaction, and a store from
today's main upgrading in place."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kn_support import Log, open_store

from memlane import config, derived
from memlane.knowledge import learning
from memlane.store import schema
from memlane.store.db import Event, NewEvent, Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    yield from open_store(tmp_path)


@pytest.fixture
def log(store: Store) -> Log:
    return Log(store)


def settle(store: Store) -> None:
    derived.catch_up(store)
    derived.settle(store)


def uses(store: Store, event: Event) -> list[tuple[str, str | None]]:
    return sorted(
        store.db.execute("SELECT kind, session_id FROM memory_usage WHERE event_id = ?", (event.id,)).fetchall(),
        key=repr,
    )


def level(store: Store, event: Event) -> int:
    row = store.levels_of([event.id]).get(event.id)
    return row["level"] if row else 0


def injection(store: Store, prompt: Event, full: list[Event], index: list[Event] = (), score: float = 0.9) -> None:  # type: ignore[assignment]
    """What the injection log (``injections``) holds for a prompt: the full and index tiers (at the prompt's time:
    ``record_injection`` stamps the wall clock, and these tests run on the events' own clock)."""
    record = {"mode": "hybrid", "full": [{"id": e.id, "cite": e.cite, "score": score} for e in full],
              "index": [{"id": e.id, "cite": e.cite, "score": 0.3} for e in index], "left_out": []}  # fmt: skip
    with store.write() as db:
        db.execute(
            "INSERT OR REPLACE INTO injections (prompt_id, session_id, ts, record) VALUES (?, ?, ?, ?)",
            (prompt.id, prompt.session_id, prompt.ts, json.dumps(record)),
        )


# ---- cited ---------------------------------------------------------------------------------------------------


def test_an_answer_citing_a_memory_is_a_cited_use_in_its_session(store: Store, log: Log) -> None:
    memory = log.answer("The pool limit is 20 connections (app/db.py).")
    log.prompt("why does the pool time out again?", session="s2")
    log.answer(f"As [mem:{memory.citation}] says, the limit is 20; raise it.", session="s2")
    settle(store)
    assert uses(store, memory) == [("cited", "s2")]
    assert store.citing_sessions(memory.id)[0]["session_id"] == "s2"


def test_a_citation_of_what_does_not_exist_yet_counts_nothing(store: Store, log: Log) -> None:
    answer = log.answer("see mem:zzzzzz and [mem:abc123]")
    settle(store)
    assert store.db.execute("SELECT COUNT(*) FROM memory_usage").fetchone()[0] == 0
    assert uses(store, answer) == []


def test_the_turns_earlier_text_and_its_answer_cite_a_memory_once(store: Store, log: Log) -> None:
    """The Stop hook notes the citations of the turn's text before its tool calls (``cites``); with the answer's own
    they are one use per exchange, and an imported interim answer naming it again adds nothing."""
    a = log.answer("Pool: 20 connections.")
    b = log.answer("Retry: 3 times with backoff.")
    log.prompt("fix the pool", session="s2")
    log.add("agent_response", f"Per [mem:{a.citation}] I raised it.", session="s2", cites=[b.citation, a.citation])
    interim = NewEvent("agent_response", "s2", f"Going by [mem:{a.citation}], checking.", "import:interim",
                       {"kind": "interim"}, ts="2026-03-01T10:00:00.000Z")  # fmt: skip
    store.append([interim])
    settle(store)
    assert uses(store, a) == [("cited", "s2")]
    assert uses(store, b) == [("cited", "s2")]


def test_citations_are_not_counted_when_tracking_is_off(
    store: Store, log: Log, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_CITATIONS_TRACK_USAGE", "false")
    memory = log.answer("The pool limit is 20.")
    log.answer(f"[mem:{memory.citation}]", session="s2")
    settle(store)
    assert uses(store, memory) == []


# ---- fetched and injected ------------------------------------------------------------------------------------


def test_a_fetch_is_a_use_in_claude_codes_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memlane.memory import Memory

    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    with Memory.open(root) as mem:
        memory = Log(mem.store).answer("The pool limit is 20.")
        monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "cc-session-7")
        mem.fetched([memory.id], "mcp")
        monkeypatch.delenv("CLAUDE_CODE_SESSION_ID")
        mem.fetched([memory.id], "cli")
        mem.catch_up()
        assert uses(mem.store, memory) == [("fetched", "cc-session-7"), ("fetched", None)]
        assert mem.usage(memory.cite)["counts"] == {"injected": 0, "listed": 0, "fetched": 2, "cited": 0}
        assert [r[0] for r in mem.store.db.execute("SELECT source FROM memory_fetches ORDER BY id")] == ["mcp", "cli"]


def test_injected_and_listed_uses_come_from_the_injection_log(store: Store, log: Log) -> None:
    a = log.answer("The pool limit is 20.")
    b = log.answer("Retry 3 times.")
    p = log.prompt("why does the pool time out?", session="s2")
    injection(store, p, [a], [b])
    settle(store)
    assert uses(store, a) == [("injected", "s2")]
    assert uses(store, b) == [("listed", "s2")]
    assert level(store, a) == 1 and level(store, b) == 0  # listed on the index tier is not a use
    injection(store, p, [b], [])  # the prompt's record replaced: its old uses go
    settle(store)
    assert uses(store, a) == [] and uses(store, b) == [("injected", "s2")]


# ---- levels ------------------------------------------------------------------------------------------------


def cite_from(log: Log, memory: Event, session: str, n: int = 1) -> None:
    for i in range(n):
        log.prompt(f"question {i} in {session}", session=session)
        log.answer(f"Going by [mem:{memory.citation}].", session=session)


def test_levels_rise_with_citations_across_sessions(store: Store, log: Log) -> None:
    memory = log.answer("The checkout pool is capped at 20 connections; raise it in app/db.py.")
    cite_from(log, memory, "s2")
    settle(store)
    assert level(store, memory) == 1
    cite_from(log, memory, "s3", 2)
    settle(store)
    assert level(store, memory) == 2
    cite_from(log, memory, "s4", 2)
    settle(store)
    row = store.levels_of([memory.id])[memory.id]
    assert (row["level"], row["access"], row["cross_session"], row["confidence"]) == (3, 5, 3, 1.0)
    cite_from(log, memory, "s5", 5)
    settle(store)
    assert level(store, memory) == 4
    assert "at the top level" in store.levels_of([memory.id])[memory.id]["reason"]


def test_a_level_steps_down_as_the_projects_clock_moves_on(store: Store, log: Log) -> None:
    memory = log.answer("The checkout pool is capped at 20 connections.")
    cite_from(log, memory, "s2", 3)
    cite_from(log, memory, "s3", 2)
    settle(store)
    assert level(store, memory) == 3
    log.prompt("something else entirely", session="s9", at=60 * 24 * 100)  # 100 days later, no use
    settle(store)
    row = store.levels_of([memory.id])[memory.id]
    assert row["level"] == 2 and "not used for 99 days" in row["reason"]
    cite_from(log, memory, "s9")  # used again: back up
    settle(store)
    assert level(store, memory) == 3


def test_a_memory_replaced_after_it_was_used_falls_to_l0(store: Store, log: Log) -> None:
    edit = log.edit("app/db.py", "engine = create_engine(URL)", "engine = create_engine(URL, pool_size=10)")
    cite_from(log, edit, "s2", 2)
    cite_from(log, edit, "s3", 1)
    settle(store)
    assert level(store, edit) == 2
    log.edit("app/db.py", "engine = create_engine(URL, pool_size=10)", "engine = create_engine(URL, pool_size=25)",
             session="s4")  # fmt: skip
    settle(store)
    row = store.levels_of([edit.id])[edit.id]
    assert (row["level"], row["replaced"], row["reason"]) == (0, 2, "wholly replaced")


# ---- insights ----------------------------------------------------------------------------------------------


def insights(store: Store) -> dict[str, dict[str, object]]:
    return {i["insight_type"] + ":" + i["content"]: i for i in store.list_insights(limit=100)}


def test_rules_find_decisions_preferences_conventions_with_aligned_evidence(store: Store, log: Log) -> None:
    p = log.prompt("Decision: we use RQ instead of Celery for the task queue. Also always use pnpm here, never npm.")
    log.answer("I removed the unused import. Tests go in tests/unit by convention. Should we drop Redis?")
    settle(store)
    found = insights(store)
    assert sorted(found) == [
        "convention:Tests go in tests/unit by convention.",
        "decision:Decision: we use RQ instead of Celery for the task queue.",
        "preference:Also always use pnpm here, never npm.",
    ]
    decision = found["decision:Decision: we use RQ instead of Celery for the task queue."]
    assert decision["evidence_aligned"] and decision["level"] == 1 and decision["anchor_id"] == p.id
    (source,) = store.insight_sources([str(decision["id"])])[str(decision["id"])]
    assert p.content[source["span_start"] : source["span_end"]] == str(decision["content"])
    assert source["method"] == "exact"


def test_an_insight_said_again_in_another_session_gains_support(store: Store, log: Log) -> None:
    log.prompt("We decided to switch the task queue from Celery to RQ.")
    later = log.prompt("We decided to switch the task queue from Celery to RQ.", session="s2")
    settle(store)
    (insight,) = store.list_insights(types=["decision"])
    assert insight["support"] == 2 and insight["anchor_id"] == later.id
    assert insight["cross_session"] == 1 and insight["access"] == 1


def test_a_recurring_error_with_its_fix(store: Store, log: Log) -> None:
    first = log.bash("pytest tests/test_pool.py", "E   TimeoutError: pool exhausted after 30s", code=1)
    fix = log.edit("app/db.py", "pool_size=10", "pool_size=25")
    log.bash("pytest tests/test_pool.py", "1 passed")
    settle(store)
    assert store.list_insights(types=["error_fix"]) == [], "once is not recurring"
    again = log.bash("pytest tests/test_pool.py", "E   TimeoutError: pool exhausted after 45s", session="s2", code=1)
    settle(store)
    (insight,) = store.list_insights(types=["error_fix"])
    assert insight["content"] == (
        "E   TimeoutError: pool exhausted after 30s → fixed by: Edit: /home/dev/src/shop/app/db.py - pool_size=10 "
        "+ pool_size=25"
    ).replace("E   ", "E ")
    assert insight["anchor_id"] == again.id and insight["detail"] == {"occurrences": 2, "sessions": 2}
    roles = {(s["event_id"], s["role"]) for s in store.insight_sources([insight["id"]])[insight["id"]]}
    assert roles == {(first.id, "error"), (again.id, "error"), (fix.id, "fix")}
    assert insight["evidence_aligned"]


def test_an_error_fixed_by_a_command_and_read_only_runs_are_not_fixes(store: Store, log: Log) -> None:
    for session in ("s1", "s2"):
        log.bash("python app.py", "ModuleNotFoundError: No module named 'redis'", session=session, code=1)
        log.bash("ls", "app.py", session=session)
        install = log.bash("pip install redis", "Successfully installed redis-5.0.1", session=session)
        log.bash("python app.py", "ok", session=session)
    settle(store)
    (insight,) = store.list_insights(types=["error_fix"])
    assert insight["content"] == "ModuleNotFoundError: No module named 'redis' → fixed by: Bash: pip install redis"
    assert install.id in {s["event_id"] for s in store.insight_sources([insight["id"]])[insight["id"]]}


def test_insights_can_be_switched_off(store: Store, log: Log, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_FEATURES_INSIGHT_EXTRACTION", "false")
    log.prompt("Decision: we use RQ instead of Celery.")
    settle(store)
    assert store.list_insights() == []


def test_insight_levels_follow_the_uses_of_their_evidence(store: Store, log: Log) -> None:
    p = log.prompt("Decision: we use RQ instead of Celery for the task queue.")
    cite_from(log, p, "s2", 2)
    cite_from(log, p, "s3", 2)
    cite_from(log, p, "s4", 1)
    settle(store)
    (insight,) = store.list_insights(types=["decision"])
    assert insight["level"] == 3 and insight["evidence_aligned"]
    assert store.learned([p.id])[p.id]["insight"]["verified"] is True


# ---- forget, redaction, upgrade ------------------------------------------------------------------------------


def test_forget_takes_uses_levels_and_insights_with_it(tmp_path: Path) -> None:
    from memlane.memory import Memory

    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    with Memory.open(root) as mem:
        log = Log(mem.store)
        p = log.prompt("Decision: we use RQ instead of Celery for the task queue.")
        cite_from(log, p, "s2", 2)
        mem.fetched([p.id], "cli")
        mem.catch_up()
        assert mem.store.list_insights() and level(mem.store, p) == 2
        mem.forget(ids=[p.id])
        mem.catch_up()
        assert mem.store.list_insights() == []
        assert mem.store.levels_of([p.id]) == {}
        assert mem.store.db.execute("SELECT COUNT(*) FROM memory_fetches").fetchone()[0] == 0
        assert mem.store.db.execute("SELECT COUNT(*) FROM memory_usage").fetchone()[0] == 0


def test_an_llm_answer_goes_with_any_event_it_was_given(store: Store, log: Log) -> None:
    a = log.prompt("We settled on Postgres.")
    b = log.answer("Postgres it is.")
    row = {"session_id": "s1", "input_hash": "h1", "last_seq": b.seq, "provider": "openai", "model": "m",
           "response": {"insights": []}, "input_tokens": 1, "output_tokens": 1, "cost_usd": 0.0}  # fmt: skip
    store.add_extraction(row, [a.id, b.id])
    store.add_extraction({**row, "input_hash": "h2"}, [b.id])
    assert store.db.execute("SELECT COUNT(*) FROM llm_extractions").fetchone()[0] == 2
    store.redact([(a.id, "We settled on [REDACTED].", {})], {})
    assert [r[0] for r in store.db.execute("SELECT input_hash FROM llm_extractions")] == ["h2"]
    store.forget([(b.id, "agent_response")], "event", b.id)
    assert store.db.execute("SELECT COUNT(*) FROM llm_extractions").fetchone()[0] == 0


@pytest.mark.parametrize("before", ["schema 9", "main"])
def test_a_store_from_before_upgrades_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str) -> None:
    """A store of schema 9, or of today's main (every migration but 40: 1-10, the injection log 20, team sync 70,
    endless mode 90), gains the learning tables on open; its old answers' citations count, and so does (main)
    what its injection log says a prompt was given."""
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    if before == "main":
        with monkeypatch.context() as m:
            m.setattr(schema, "MIGRATIONS", [step for step in schema.MIGRATIONS if step[0] != 40])
            schema.migrate(db)
    else:
        schema.migrate(db, target=9)
    rows = [("agent_response", "The pool limit is 20."), ("user_prompt", "why does the pool time out?"),
            ("agent_response", "Per [mem:c00000], raise it.")]  # fmt: skip
    for i, (kind, text) in enumerate(rows):
        db.execute(
            "INSERT INTO events (id, citation, type, session_id, project_id, ts, content, canonical_key, dedupe_key,"
            " metadata) VALUES (?, ?, ?, ?, 'p', ?, ?, '', ?, '{}')",
            (f"{i:032x}", f"c{i:05d}", kind, f"s{min(i, 1)}", f"2026-01-0{i + 1}T00:00:00.000Z", text, f"k{i}"),
        )
    if before == "main":
        record = {"mode": "text", "full": [{"id": f"{0:032x}", "cite": "mem:c00000", "score": 0.7}], "index": []}
        db.execute(
            "INSERT INTO injections (prompt_id, session_id, ts, record) VALUES (?, 's1', ?, ?)",
            (f"{1:032x}", "2026-01-02T00:00:01.000Z", json.dumps(record)),
        )
    versions = {r[0] for r in db.execute("SELECT version FROM schema_migrations")}
    assert 40 not in versions and (before != "main" or {20, 70, 90} <= versions)
    db.close()
    with Store(path, "p") as store:
        assert {20, 40, 70, 90} <= {r[0] for r in store.db.execute("SELECT version FROM schema_migrations")}
        settle(store)
        counts = store.usage_counts(f"{0:032x}")
        assert counts["cited"] == 1 and counts["injected"] == (1 if before == "main" else 0)
        assert store.levels_of([f"{0:032x}"])[f"{0:032x}"]["level"] == 1


def test_l3_knowledge_is_never_pruned(tmp_path: Path) -> None:
    from memlane import retention
    from memlane.memory import Memory

    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    with Memory.open(root) as mem:
        log = Log(mem.store)
        p = log.prompt("Decision: we use RQ instead of Celery for the task queue.")
        cite_from(log, p, "s2", 2)
        cite_from(log, p, "s3", 2)
        cite_from(log, p, "s4", 1)
        other = log.answer("unrelated")
        mem.catch_up()
        assert level(mem.store, p) == 3
        protected = retention.protected_event_ids(mem)
        assert p.id in protected and other.id not in protected
        report = retention.prune(mem, 1, now=time.time() + 365 * 86400)  # everything old, a cap nothing meets
        assert report.pruned > 0
        left = {e.id for e in mem.history(limit=-1)}
        assert p.id in left and other.id not in left


def test_settle_judges_only_what_changed(store: Store, log: Log) -> None:
    memory = log.answer("The pool limit is 20.")
    cite_from(log, memory, "s2")
    settle(store)
    assert learning.settle(store, config.load()) == 0, "nothing new: nothing judged"


def test_citations_id_length_applies_to_new_memories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memlane.memory import Memory

    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    with Memory.open(root) as mem:
        old = Log(mem.store).answer("six characters")
    monkeypatch.setenv("MEMLANE_CITATIONS_ID_LENGTH", "8")
    with Memory.open(root) as mem:
        new = Log(mem.store).answer("eight characters")
        assert (len(old.citation), len(new.citation)) == (6, 8)
        assert mem.get(new.cite).id == new.id and mem.get(old.cite).id == old.id
        Log(mem.store).answer(f"see [mem:{new.citation}] and [mem:{old.citation}]", session="s2")
        mem.catch_up()
        assert mem.usage(new.id)["counts"]["cited"] == 1 and mem.usage(old.id)["counts"]["cited"] == 1
    monkeypatch.setenv("MEMLANE_CITATIONS_ID_LENGTH", "9")
    with pytest.raises(config.ConfigError, match=r"citations\.id_length: must be 6, 7 or 8, got 9"):
        config.load()
