"""UserPromptSubmit tells the daemon its prompt first (``/api/prepare``): the query embedding starts while the
hook loads and stores the prompt, and the answer is the same as without it. Real model, real store, real
daemon process; what is embedded for a query is the prompt as stored (private sections out)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conftest import payload, run_hook_process
from memlane import config
from memlane.capture import inject
from memlane.daemon import client, prepare, state
from memlane.memory import Memory
from memlane.retrieval.engine import PREPARED_KEEP, Engine
from memlane.retrieval.select import Injection
from memlane.vectors import process_outbox

MEMORIES = [
    "The checkout connection pool times out under load: raise pool_size to 40 in settings.py",
    "Invoices are rendered with WeasyPrint; the PDF fonts live in static/fonts",
    "The nightly report job runs from cron at 02:00 UTC and mails the finance team",
]


@pytest.fixture
def embedded(memlane_home: Path, hook, proj: Path) -> Memory:  # type: ignore[no-untyped-def]
    for n, text in enumerate(MEMORIES):
        hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt_id=f"m{n}", prompt=text))
    mem = Memory.open(str(proj))
    engine = Engine(mem.config)
    assert process_outbox(mem, engine.embedder).processed >= len(MEMORIES)
    return mem


def _ids(chosen: Injection) -> list[str]:
    return [h.event.id for h in chosen.hits]


def test_prepared_prompt_gets_the_same_answer_and_its_vector_is_used(embedded: Memory) -> None:
    prompt = "why does the checkout pool time out when traffic is high?"
    plain = Engine(embedded.config).relevant(embedded, prompt)
    engine = Engine(embedded.config)
    assert engine.prepare(embedded, prompt)
    assert engine.prepare(embedded, prompt)  # a second prepare of the same prompt starts nothing new
    assert engine.prepared == {"started": 1, "used": 0}
    prepared = engine.relevant(embedded, prompt)
    assert plain and _ids(prepared) == _ids(plain)
    assert [round(h.score, 6) for h in prepared.hits] == [round(h.score, 6) for h in plain.hits]
    assert engine.prepared == {"started": 1, "used": 1} and not engine._prepared


def _counting(engine: Engine, mem: Memory) -> list[int]:
    """Count the vector searches the engine's index runs for ``mem`` from now on."""
    index = engine.index(mem.project.id)
    calls: list[int] = []
    real = index.nearest
    index.nearest = lambda *a, **k: calls.append(1) or real(*a, **k)  # type: ignore[method-assign]
    return calls


def test_prepared_neighbours_are_reused_for_the_hooks_question(embedded: Memory) -> None:
    """The hook asks with its stored prompt excluded (one id): the neighbours found ahead are that search's
    own, so none is run again, and the answer is what a search without ``prepare`` gives."""
    prompt = "why does the checkout pool time out when traffic is high?"
    stored = embedded.store.history(types=["user_prompt"], limit=1)[0].id
    plain = Engine(embedded.config).relevant(embedded, prompt, [stored])
    engine = Engine(embedded.config)
    calls = _counting(engine, embedded)
    assert engine.prepare(embedded, prompt)
    engine._prepared[prompt].result()
    assert len(calls) == 1  # found ahead
    prepared = engine.relevant(embedded, prompt, [stored])
    assert len(calls) == 1, "the search ran its own vector query"
    assert plain and _ids(prepared) == _ids(plain)
    assert [round(h.score, 6) for h in prepared.hits] == [round(h.score, 6) for h in plain.hits]


def test_prepared_neighbours_are_not_used_once_the_table_changed(embedded: Memory) -> None:
    """A vector written between prepare and the question (the worker embedding a new event) may be a
    neighbour: the search asks the index again and finds it, as it would have without ``prepare``."""
    prompt = "why does the checkout pool time out when traffic is high?"
    engine = Engine(embedded.config)
    calls = _counting(engine, embedded)
    assert engine.prepare(embedded, prompt)
    engine._prepared[prompt].result()
    hook_stored = embedded.store.history(types=["user_prompt"], limit=1)[0].id
    fresh = embedded.store.append(
        [payload_event("Checkout pool timeouts under high traffic were fixed by raising pool_size")]
    ).inserted
    assert process_outbox(embedded, engine.embedder).processed >= 1
    hits = engine.relevant(embedded, prompt, [hook_stored])
    assert len(calls) == 2
    assert fresh[0] in _ids(hits)
    # Asked without the one exclusion the neighbours were found for, the search also runs its own.
    assert engine.prepare(embedded, prompt + " again")
    engine.relevant(embedded, prompt + " again")
    assert len(calls) == 4


def payload_event(text: str):  # type: ignore[no-untyped-def]
    from memlane.store import NewEvent

    return NewEvent("agent_response", "s-later", text, "later")


def test_prepare_skips_what_search_would_not_embed_and_stays_bounded(embedded: Memory) -> None:
    engine = Engine(embedded.config)
    assert not engine.prepare(embedded, "ok")  # under injection.min_prompt_chars: no search at all
    assert not engine.prepare(embedded, "커넥션 풀 타임아웃은 왜 나지?")  # cjk_vectors off: text only
    for n in range(PREPARED_KEEP + 5):
        assert engine.prepare(embedded, f"question number {n} about the invoices")
    assert len(engine._prepared) == PREPARED_KEEP  # prompts never asked about are dropped, oldest first
    assert Engine(embedded.config, vectors=False).prepare(embedded, "the invoices and their fonts") is False


def test_retrieval_query_leaves_private_sections_out_and_is_stable() -> None:
    cfg = config.Config()
    prompt = "fix the pool timeout <private>the prod password is hunter2-horse</private> in settings.py"
    query = inject.retrieval_query(prompt, cfg)
    assert "hunter2" not in query and "pool timeout" in query and "settings.py" in query
    # The hook sends the stored (filtered) prompt; the daemon filters again and must land on the same key.
    assert inject.retrieval_query(query, cfg) == query
    assert prepare.MAX_CHARS == inject.QUERY_HEAD_CHARS + inject.QUERY_TAIL_CHARS


@pytest.mark.parametrize("raw", [b"not json", b"\xff\xfe", b"[1, 2]", b'{"cwd": "/tmp"}'])
def test_prepare_start_sends_nothing_without_a_prompt(memlane_home: Path, raw: bytes) -> None:
    assert prepare.start(raw) is False


def test_prepare_start_needs_a_daemon(memlane_home: Path, proj: Path) -> None:
    assert prepare.start(json.dumps({"prompt": "fix the pool timeout", "cwd": str(proj)}).encode()) is False


def _health() -> dict:  # type: ignore[type-arg]
    answer = client.call("/api/health", None, 5000, method="GET")
    assert answer is not None
    return answer


def test_hook_process_prepares_then_asks_and_stores_once(embedded: Memory, daemon, proj: Path) -> None:  # type: ignore[no-untyped-def]
    # The model loads on the first request; then the hook's own deadline is the usual one.
    assert client.call("/api/inject", {"cwd": str(proj), "prompt": "warm up the model please"}, 60_000) is not None
    before = _health()["prepared"]
    ask = payload(
        "02-UserPromptSubmit.json",
        prompt_id="q1",
        prompt="why does the checkout pool time out when traffic is high?",
        cwd=str(proj),
    )
    done = run_hook_process("UserPromptSubmit", ask, env={"MEMLANE_DAEMON_HOOK_DEADLINE_MS": "20000"})
    assert done.returncode == 0 and not done.stderr, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "pool_size to 40" in context
    # The prompt reached the daemon ahead of the question (whether it was in time to be used depends on the
    # machine's load: either way the answer is the same, as the engine test above shows).
    end = time.monotonic() + 10
    while (after := _health()["prepared"])["started"] == before["started"] and time.monotonic() < end:
        time.sleep(0.1)
    assert after["started"] == before["started"] + 1 and after["used"] - before["used"] in (0, 1)
    stored = [e for e in embedded.store.history(limit=20) if "traffic is high" in e.content]
    assert len(stored) == 1


def test_prepare_route_checks_its_input(daemon, proj: Path) -> None:  # type: ignore[no-untyped-def]
    import urllib.error
    import urllib.request

    def post(body: dict) -> tuple[int, dict]:  # type: ignore[type-arg]
        req = urllib.request.Request(
            f"http://127.0.0.1:{state.read_info()['port']}/api/prepare",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {state.read_token()}"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    assert post({"cwd": str(proj), "prompt": 3}) == (400, {"error": "prompt must be a string"})
    status, body = post({"prompt": "the pool"})
    assert status == 400 and "\n" not in body["error"]
    assert post({"cwd": str(proj), "prompt": "ok"}) == (200, {"prepared": False})  # too short to search


def test_prepare_start_sends_a_small_payload_and_skips_a_huge_one(daemon, proj: Path) -> None:  # type: ignore[no-untyped-def]
    small = {"prompt": "fix the pool timeout", "cwd": str(proj)}
    assert prepare.start(json.dumps(small).encode()) is True
    huge = {**small, "pasted": "x" * prepare.MAX_PAYLOAD_BYTES}  # parsed once, by the hook, not here too
    assert prepare.start(json.dumps(huge).encode()) is False


def test_the_daemon_prepares_nothing_for_what_the_hook_would_not_ask(daemon, proj: Path) -> None:  # type: ignore[no-untyped-def]
    """``prepare.start`` forwards the payload unparsed, so the daemon checks it: a bad or relative cwd, a
    prompt that is not text, a paste longer than a query, a subagent's report: nothing is prepared."""
    notice = "<task-notification>\n<task-id>a1</task-id>\n<result>the pool is fine</result>\n</task-notification>"
    bad = [
        b'{"prompt": "fix the pool", "cwd": "relative/dir"}',
        json.dumps({"prompt": 7, "cwd": str(proj)}).encode(),
        json.dumps({"prompt": "x " * prepare.MAX_CHARS, "cwd": str(proj)}).encode(),
        json.dumps({"prompt": notice, "cwd": str(proj)}).encode(),
        b'{"prompt": "fix the pool", "cwd": "/tmp/x\\u0000y"}',
        b'{"prompt": "unterminated',
    ]
    before = _health()["prepared"]["started"]
    for raw in bad:
        assert prepare.start(raw) is True  # sent: the daemon decides
    good = json.dumps({"prompt": "why does the checkout pool time out under load?", "cwd": str(proj)}).encode()
    assert prepare.start(good) is True
    end = time.monotonic() + 10
    while _health()["prepared"]["started"] == before and time.monotonic() < end:
        time.sleep(0.05)
    time.sleep(0.3)  # any straggler among the bad ones would have been counted by now
    assert _health()["prepared"]["started"] == before + 1  # the good one only
