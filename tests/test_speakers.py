"""A dialogue store's speakers' names, read from how the two people address each other, are taken out of the
questions searched in it ("Where does Mina live now?" matched "Good. Mina, I need to ask about Japan.", not the
turn that answers). Real model, real store and vectors for the search tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlane.memory import Memory
from memlane.retrieval import speakers
from memlane.retrieval.engine import Engine
from memlane.retrieval.hybrid import Prepared, searched
from memlane.store import NewEvent, Store
from memlane.vectors import process_outbox

# Mina's turns are the user prompts, Joel's the answers: a conversation captured as Claude Code would.
DIALOGUE = [
    ("Mina", "Hey Joel! How was the weekend? Did the canoe survive the lake?"),
    ("Joel", "Mina, it floats! I took it out on Saturday and only got a little wet."),
    ("Mina", "Our apartment on Alberta has a balcony the size of a bath mat. Biscuit hates it."),
    ("Joel", "Poor Biscuit. A dog that size needs a yard."),
    ("Mina", "I found a duplex in the Highlands with a small fenced yard. I signed the lease yesterday."),
    ("Joel", "Congratulations! Biscuit gets grass at last."),
    ("Mina", "Joel, how is the Japan planning going? Did Kwame finish the spreadsheet?"),
    ("Joel", "Good. Mina, I need to ask about Japan. Can you come in April instead of September?"),
    ("Mina", "April works. I have to ask my manager first."),
    ("Joel", "Ice the ankle, Mina. And tell me what your manager says."),
]


def _turns(repeat: int = 6) -> list[NewEvent]:
    """The dialogue and filler chat, past the 50 events that make a store a dialogue."""
    events = []
    for n, (who, text) in enumerate(DIALOGUE):
        events.append(NewEvent("user_prompt" if who == "Mina" else "agent_response", "s1", text, f"d{n}", {}))
    for n in range(repeat * 8):
        kind = "user_prompt" if n % 2 == 0 else "agent_response"
        events.append(NewEvent(kind, f"f{n // 8}", f"small talk {n}: the weather, the traffic and lunch", f"f{n}", {}))
    return events


def test_names_are_the_words_people_are_addressed_by() -> None:
    people = speakers.names(text for _, text in DIALOGUE)
    assert people.names == frozenset({"Mina", "Joel"})
    # Interjections at the start of a turn ("Congratulations!") and words also written in lower case are not names.
    assert "Congratulations" not in people.names and "Good" not in people.names


def test_a_word_also_written_in_lower_case_or_used_once_is_not_a_name() -> None:
    texts = ["Sure, Will, see you.", "Will you come?", "I will, Will!", "Okay, Dana.", "Dana, hi."]
    assert speakers.names(texts).names == frozenset({"Dana"}), "will is a word of the store; Dana is used twice"
    assert speakers.names(["Thanks, Sam!"]).names == frozenset(), "one use is not enough"
    places = ["Denver, though, is sunny.", "Denver, wow.", "I start June 12 in Denver.", "Hi Sam!", "Sam, look."]
    assert speakers.names(places).names == frozenset({"Sam"}), "a place is named after in, from, at or near"


def test_shouting_a_name_and_closing_with_it_count() -> None:
    texts = ["MINA! Congratulations!", "That's amazing, Mina.", "Oh. Okay."]
    assert speakers.names(texts).names == frozenset({"Mina"})


def test_a_name_written_into_every_turn_is_a_label_and_stays() -> None:
    """A harness that writes "Sofia: …" into each turn makes the name match her turns: then it helps search."""
    texts = [f"Sofia: turn {n}, Frank." if n % 2 else f"Frank: turn {n}, Sofia!" for n in range(20)]
    assert speakers.names(texts).names == frozenset()


def test_korean_vocatives_and_not_verb_stems() -> None:
    texts = [
        "민호야 시험 어땠어?",
        "지수야 나 합격했어!",
        "민호야 나 부산 왔어.",
        "지수야! 축하해.",
        "괜찮아 걱정 마.",
        "괜찮아 진짜로.",
        "그거 괜찮다.",  # 괜찮 is a stem: 괜찮다
        '이름은 "민호네 빵집".',  # 네 after a name: the bakery of Minho
    ]
    assert speakers.names(texts).names == frozenset({"민호", "지수"})


def test_a_query_without_the_names() -> None:
    people = speakers.People(frozenset({"Mel", "Mina", "민호"}))
    assert people.without("Where does Mina live now?") == "Where does they live now?"
    assert people.without("What is mina's dog called?") == "What is their dog called?", "any case: never lower-case"
    assert people.without("What did Melanie paint?") == "What did they paint?", "a longer form of a name"
    assert people.without("Did Melody win?") == "Did they win?"
    assert people.without("Tomorrow, Minas Tirith") == "Tomorrow, they Tirith"
    assert people.without("민호가 준비하던 시험은 무슨 시험이었어?") == "준비하던 시험은 무슨 시험이었어?"
    assert people.without("민호네 빵집 이름은?") == "민호네 빵집 이름은?", "a longer Hangul word is not the name"
    assert searched("Mina's dog?", people) == "their dog?"
    assert searched("Mina?", people) == "Mina?", "nothing else left: the query as it is"
    assert searched("Mina's", people) == "Mina's"
    assert searched("Where is Mina?", people) == "Where is Mina?", "nor when only stop words are left"
    assert searched("민호", people) == "민호"
    assert searched("Where does Mina live?", None) == "Where does Mina live?"
    assert not speakers.People(frozenset())


def test_no_names_for_a_store_without_a_file_of_its_own(tmp_path: Path) -> None:
    class Remote:
        backend = "postgres"
        file = "postgresql://user:***@host/db"

    assert speakers.of_store(Remote()) is None
    store = Store(tmp_path / "m.db", "p")
    store.append(_turns(1))
    found = speakers.of_store(store)
    assert found is not None and found.names == frozenset({"Mina", "Joel"})
    # A pasted log is read only as far as a turn's opening: names, not megabytes.
    store.append([NewEvent("user_prompt", "s9", "Joel, look at this: " + "x = 1\n" * 200_000, "big", {})])
    from memlane.store import peek

    turns = peek.recent_turns(store.file, speakers.TURNS, speakers.TURN_CHARS)
    assert max(len(t) for t in turns) == speakers.TURN_CHARS
    assert speakers.of_store(store).names == frozenset({"Mina", "Joel"})  # type: ignore[union-attr]
    store.close()


@pytest.fixture
def chat(tmp_path: Path) -> Memory:
    root = tmp_path / "letters"
    (root / ".git").mkdir(parents=True)
    mem = Memory.open(root)
    mem.store.append(_turns())
    engine = Engine(mem.config)
    process_outbox(mem, engine.embedder)
    return mem


def _first(hits: list, *texts: str) -> str:  # type: ignore[type-arg]
    """Which of ``texts`` the hits reach first."""
    for h in hits:
        for t in texts:
            if t in h.event.content:
                return t
    return ""


ANSWER, ADDRESS = "signed the lease", "Mina, I need to ask"


def test_a_question_about_one_of_the_people_finds_what_they_said(chat: Memory) -> None:
    question = "Where does Mina live now?"
    engine = Engine(chat.config)
    assert engine.speakers.get(chat.project.id, chat.store, wait=True) is not None
    assert engine.people(chat) is not None and engine.people(chat).names == frozenset({"Mina", "Joel"})
    hits = engine.search(chat, question, limit=10)
    assert _first(hits, ANSWER, ADDRESS) == ANSWER

    # As before: with the name in the query, the turn that addresses her comes first.
    engine.speakers.get = lambda *a, **k: None  # type: ignore[method-assign]
    assert _first(engine.search(chat, question, limit=10), ANSWER, ADDRESS) == ADDRESS


def test_a_coding_store_keeps_its_names(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    mem = Memory.open(root)
    events = _turns()
    events += [NewEvent("tool_observation", "s1", f"Bash: pytest run {n}", f"t{n}", {}) for n in range(40)]
    mem.store.append(events)
    assert Engine(mem.config).people(mem) is None, "not a dialogue: 'Thanks, Claude!' does not make Claude a speaker"
    mem.close()


def test_a_prepared_query_is_the_searched_text(chat: Memory) -> None:
    """The hook's early embedding is of the query without the names; one made before the names were read is
    not used (the search embeds its own), so the answer does not depend on when they were read."""
    question = "Where does Mina live now?"
    engine = Engine(chat.config)
    engine.speakers.get(chat.project.id, chat.store, wait=True)
    other = Engine(chat.config)
    other.speakers.get(chat.project.id, chat.store, wait=True)
    plain = [h.event.id for h in other.relevant(chat, question).hits]
    assert engine.prepare(chat, question)
    assert engine._prepared[question].result().query == "Where does they live now?"
    assert [h.event.id for h in engine.relevant(chat, question).hits] == plain

    stale = Prepared.make(engine.embedder, engine.index(chat.project.id), question, 41)  # names not taken out
    retriever = engine.retriever(chat, question)
    fresh = [h.event.id for h in retriever.search(question, limit=10)]
    assert [h.event.id for h in retriever.search(question, limit=10, query_vector=stale)] == fresh


def test_a_name_written_in_hangul_is_no_loanword_to_look_for(chat: Memory) -> None:
    """미나는 reads as "mina" to the loanword lexicon: a Korean question about the English conversation would
    look for the turns that address her, as an English one did before her name was taken out."""
    question = "미나는 지금 어디에 살아?"
    engine = Engine(chat.config)
    engine.speakers.get(chat.project.id, chat.store, wait=True)
    lexicon = engine.lexicons.get(chat.project.id, chat.store, wait=True)
    assert lexicon is not None and "mina" in lexicon.expand(question)
    assert "mina" not in engine.retriever(chat, question)._english_of_korean(question)


def test_a_past_question_in_a_dialogue_keeps_older_memories(chat: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Engine.relevant`` asks ``choose`` for the older memories too when a dialogue's question is about what
    happened; a question about now, or any question in a coding store, keeps the similarity rule."""
    from memlane.retrieval import engine as engine_mod

    asked: list[bool] = []
    real = engine_mod.choose
    monkeypatch.setattr(engine_mod, "choose", lambda *a, **k: asked.append(a[4]) or real(*a, **k))
    engine = Engine(chat.config)
    engine.relevant(chat, "Where did Mina find the duplex with a yard?")
    engine.relevant(chat, "Where does Mina live now?")
    assert asked == [True, False]
