"""A store of dialogue (prompts and answers, no tool calls) gets its own index-tier line
(``retrieval.dialogue_suggest_lift``); a store of code memories keeps ``retrieval.suggest_lift``."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import on_both_backends
from memlane import config
from memlane.memory import Memory
from memlane.retrieval import engine as engine_mod
from memlane.retrieval.engine import Engine, is_dialogue, shaped_config, store_is_dialogue
from memlane.store import NewEvent, Store

backend = on_both_backends(__name__)


def _chat(n: int, tools_every: int = 0) -> list[NewEvent]:
    out = []
    for i in range(n):
        kind = "user_prompt" if i % 2 == 0 else "agent_response"
        if tools_every and i % tools_every == 0:
            kind = "tool_observation"
        out.append(NewEvent(kind, "s", f"turn {i} about the canoe and the marathon", str(i), {}))
    return out


def test_the_latest_events_say_whether_a_store_is_a_dialogue(tmp_path: Path) -> None:
    store = Store(tmp_path / "d.db", "p")
    store.append(_chat(30))
    assert store.recent_type_counts(10) == {"user_prompt": 5, "agent_response": 5}
    assert not store_is_dialogue(store), "too few events to tell"
    store.append(_chat(40)[30:] + [NewEvent("user_prompt", "s2", f"more {i}", f"m{i}", {}) for i in range(40)])
    assert store_is_dialogue(store)
    store.append(_chat(60, tools_every=3)[:60])  # a coding session: a third of its events are tool calls
    store.append([NewEvent("tool_observation", "s3", f"Bash: pytest {i}", f"t{i}", {}) for i in range(10)])
    assert not store_is_dialogue(store)
    store.close()


def test_is_dialogue_counts() -> None:
    assert is_dialogue({"user_prompt": 40, "agent_response": 40})
    assert not is_dialogue({"user_prompt": 40, "agent_response": 40, "tool_observation": 20})
    assert not is_dialogue({"user_prompt": 10, "agent_response": 10}), "fewer than DIALOGUE_MIN_EVENTS"


def test_the_dialogue_line_applies_unless_the_user_set_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = config.load()
    assert shaped_config(cfg, True).retrieval.suggest_lift == cfg.retrieval.dialogue_suggest_lift == 0.5
    assert shaped_config(cfg, False) is cfg
    monkeypatch.setenv("MEMLANE_RETRIEVAL_SUGGEST_LIFT", "0.9")
    mine = config.load()
    assert shaped_config(mine, True).retrieval.suggest_lift == 0.9, "a value the user set always wins"


def test_a_dialogue_gets_one_full_item_per_session_unless_the_user_set_a_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = config.load()
    assert cfg.retrieval.session_items == 0, "no limit in a store of code: a session's error and its fix"
    assert shaped_config(cfg, True).retrieval.session_items == cfg.retrieval.dialogue_session_items == 1
    monkeypatch.setenv("MEMLANE_RETRIEVAL_SESSION_ITEMS", "2")
    assert shaped_config(config.load(), True).retrieval.session_items == 2


def test_the_engine_reads_the_shape_again_only_as_the_store_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "chat"
    (root / ".git").mkdir(parents=True)
    mem = Memory.open(root)
    mem.store.append(_chat(80))
    engine = Engine(mem.config, vectors=False)
    reads: list[int] = []
    real = engine_mod.store_is_dialogue

    def counting(store: object) -> bool:
        reads.append(1)
        return real(store)

    monkeypatch.setattr(engine_mod, "store_is_dialogue", counting)
    assert engine.retriever(mem).cfg.retrieval.suggest_lift == 0.5
    assert engine.retriever(mem).cfg.retrieval.suggest_lift == 0.5 and len(reads) == 1, "cached"
    # The project turns into a coding one: its shape is read again once it has grown enough.
    mem.store.append([NewEvent("tool_observation", "s9", f"Edit: app.py {i}", f"e{i}", {}) for i in range(300)])
    assert engine.retriever(mem).cfg.retrieval.suggest_lift == 1.0 and len(reads) == 2
    mem.close()


def test_a_turn_s_reply_is_what_the_other_party_said_next(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db", "p")
    ids = store.append(
        [
            NewEvent("user_prompt", "s", "when is the surgery now?", "0", {}),
            NewEvent("agent_response", "s", "Looking at the calendar.", "1", {}),
            NewEvent("tool_observation", "s", "Read: calendar.md", "2", {}),
            NewEvent("agent_response", "s", "June 6, after two months on the new pills.", "3", {}),
            NewEvent("user_prompt", "u", "the follow-up?", "0", {}),
            NewEvent("agent_response", "u", "It is on June 10. Want me to move it to the week after?", "1", {}),
            NewEvent("user_prompt", "u", "yes, to the week after", "2", {}),
            NewEvent("agent_response", "u", "Moved it to June 13.", "3", {}),
            NewEvent("user_prompt", "t", "and the knee?", "0", {}),
        ]
    ).inserted
    ask, early, _, answer, _, offer, yes, _, last = (store.get(i) for i in ids)
    replies = store.replies([ask, early, answer, offer, yes, last])
    assert replies[ask.id].id == answer.id, "a prompt's reply is its exchange's last answer, not what came on the way"
    assert early.id not in replies and answer.id not in replies, "the same party went on, or nothing came after"
    assert replies[offer.id].id == yes.id, "the user answering the agent's question"
    assert replies[yes.id].content == "Moved it to June 13."
    assert last.id not in replies, "nothing after it in its session"
    assert store.replies([]) == {}
    store.close()
