"""A question that asks when wants the memory that says when (``retrieval.answers``), in a store of dialogue."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlane import config
from memlane.memory import Memory
from memlane.retrieval import answers
from memlane.retrieval.engine import Engine, answer_wanted, shaped_config
from memlane.retrieval.hybrid import Hit
from memlane.retrieval.select import choose
from memlane.store import NewEvent


@pytest.mark.parametrize(
    "question",
    [
        "When did Mina sprain her ankle?",
        "Remind me, when is the trip?",
        "What year did they open the bakery?",
        "On what date did The Olive Branch open?",
        "How long ago did Joel move?",
        "조엘 아버지의 고관절 수술은 언제였어?",
        "민호의 시험은 며칠이었어?",
    ],
)
def test_questions_that_ask_when(question: str) -> None:
    assert answers.asks(question) == answers.TIME


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How many marathons has Mina run?", answers.NUMBER),
        ("How much did the Alta Vista house sell for?", answers.NUMBER),
        ("민호는 학원 다닌 지 몇 달 만에 자격증을 땄어?", answers.NUMBER),
        ("산타페 숙소는 1박에 얼마였어?", answers.NUMBER),
        ("When and how much?", answers.TIME),  # one kind: when comes first
    ],
)
def test_questions_that_ask_how_many(question: str, kind: str) -> None:
    assert answers.asks(question) == kind


@pytest.mark.parametrize(
    "text",
    [
        "Where does Sofia live now?",
        "Tell me about the day when we met",  # a statement about a time, not a question asking one
        "Fix the cron job that runs whenever the queue is empty",
        "민호는 요즘 무슨 일을 해?",
        "얼마 전에 얘기한 식당 이름이 뭐였지?",  # 얼마 전: a while ago
    ],
)
def test_other_prompts_ask_for_nothing_in_particular(text: str) -> None:
    assert answers.asks(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "I sprained it last Saturday on the trail.",
        "We're looking at September 16 to 30.",
        "The defense is on the 22nd.",
        "We met at 7pm by the pier.",
        "Flights are booked for 2024-04-02.",
        "It opened two years ago.",
        "3월에 병원 갔어.",
        "2주 전에 이사했어.",
        "지난주 토요일에 넘어졌어.",
        "The download links expire after 15 minutes.",  # a duration answers "when do they expire?"
        "The defense is in two weeks.",
    ],
)
def test_memories_that_say_when(text: str) -> None:
    assert answers.holds(answers.TIME, text)


@pytest.mark.parametrize(
    "text",
    [
        "I may go, if the knee lets me.",  # "may" and "march" are verbs unless capitalised
        "They march through the park every morning"[:34],
        "The trail was muddy and I rolled my ankle.",
        "두부가 병원에서 방광염 진단을 받았어.",
    ],
)
def test_memories_that_do_not(text: str) -> None:
    assert not answers.holds(answers.TIME, text)


@pytest.mark.parametrize(
    ("text", "holds"),
    [
        ("It sold for 1.2 million.", True),
        ("Twice a week now, down from four.", True),
        ("세 번이나 떨어졌어.", True),
        ("The house on Alta Vista finally sold!", False),
        ("두부는 요즘 다이어트 중이야.", False),
    ],
)
def test_memories_that_hold_a_number(text: str, holds: bool) -> None:
    assert answers.holds(answers.NUMBER, text) is holds


def test_only_a_question_for_a_number_in_a_dialogue_needs_one_in_full() -> None:
    assert answer_wanted("How much did the house sell for?", dialogue=True) == answers.NUMBER
    assert answer_wanted("How much did the house sell for?", dialogue=False) is None, "in a store of code"
    assert answer_wanted("When did Frank retire?", dialogue=True) is None, "a memory's own date answers when"


def test_a_full_item_without_the_number_asked_for_is_offered_as_a_line(tmp_path: Path) -> None:
    root = tmp_path / "chat"
    (root / ".git").mkdir(parents=True)
    mem = Memory.open(root)
    ids = mem.store.append(
        [
            NewEvent("user_prompt", "s1", "The house on Alta Vista finally sold!", "0", {}),
            NewEvent("user_prompt", "s2", "Our first place on Elm sold for 310,000 back then.", "0", {}),
        ]
    ).inserted
    sold, elm = (mem.store.get(i) for i in ids)
    hits = [Hit(sold, 0.9, {}, "high"), Hit(elm, 0.8, {}, "high")]
    cfg = config.load()
    asked = "How much did the Alta Vista house sell for?"
    picked = choose(hits, None, cfg, mem.store, wants=answer_wanted(asked, dialogue=True))
    assert [h.event.id for h in picked.full] == [elm.id], "the item that holds a number stays in full"
    assert [h.event.id for h in picked.index] == [sold.id], "the other is a line, to open if it is the one"
    del hits[1]
    picked = choose(hits, None, cfg, mem.store, wants=answers.NUMBER)
    assert picked.full == [] and [h.event.id for h in picked.index] == [sold.id]
    assert choose(hits, None, cfg, mem.store).full == hits, "a question asking for nothing in particular"
    mem.close()


def test_a_dialogue_weighs_the_answer_unless_the_user_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = config.load()
    assert cfg.retrieval.answer_weight == 0.0, "off in a store of code: there every memory of a deploy has a time"
    assert shaped_config(cfg, True).retrieval.answer_weight == cfg.retrieval.dialogue_answer_weight > 0
    monkeypatch.setenv("MEMLANE_RETRIEVAL_ANSWER_WEIGHT", "0.5")
    assert shaped_config(config.load(), True).retrieval.answer_weight == 0.5, "a value the user set always wins"


def _dialogue(root: Path) -> Memory:
    """A long chat (a store of dialogue): filler turns, and two about Mina's ankle, only one saying when."""
    (root / ".git").mkdir(parents=True)
    mem = Memory.open(root)
    events = []
    for i in range(60):
        kind = "user_prompt" if i % 2 == 0 else "agent_response"
        events.append(NewEvent(kind, f"s{i // 10}", f"Chat {i} about the bakery, the canoe and the cat.", str(i), {}))
    events += [
        NewEvent("user_prompt", "s7", "Mina's ankle: Mina sprained her ankle on the trail, it is swollen.", "a", {}),
        NewEvent("agent_response", "s8", "Mina sprained her ankle last Saturday, running downhill.", "b", {}),
    ]
    mem.store.append(events)
    return mem


def test_a_question_asking_when_ranks_the_turn_that_says_when_first(tmp_path: Path) -> None:
    mem = _dialogue(tmp_path / "chat")
    engine = Engine(mem.config, vectors=False)
    retriever = engine.retriever(mem)
    assert retriever.cfg.retrieval.answer_weight > 0, "the store is a dialogue"
    hits = retriever.search("When did Mina sprain her ankle?", limit=5)
    assert "last Saturday" in hits[0].event.content and hits[0].sources["answer"] == 1.0
    # The same words asked without "when": the turn with more of them first, as before.
    hits = retriever.search("Is Mina's ankle still swollen?", limit=5)
    assert hits[0].event.content.startswith("Mina's ankle") and "answer" not in hits[0].sources
    mem.close()
