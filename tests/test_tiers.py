"""The two injection tiers (full memories, index lines), their text, and the log of what each prompt was told."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import payload
from memlane import config
from memlane.capture import inject
from memlane.memory import Memory
from memlane.retrieval.hybrid import Hit
from memlane.retrieval.select import Injection, Item, choose, index_line, tokens
from memlane.store import NewEvent


def _event(mem: Memory, kind: str, text: str, session: str = "s1", pos: str = "0") -> Any:
    result = mem.store.append([NewEvent(kind, session, text, pos)])
    return mem.store.get(result.inserted[0])


def test_tokens_count_four_characters_and_each_cjk_character() -> None:
    assert tokens("") == 0
    assert tokens("abcd") == 1 and tokens("abcde") == 2
    assert tokens("한국어") == 3
    assert tokens("ab한") == 2


def test_the_text_has_a_section_per_tier_and_every_line_keeps_its_citation(proj: Path) -> None:
    mem = Memory.open(proj)
    asked = _event(mem, "user_prompt", "why does checkout time out under load?", pos="0")
    answer = _event(mem, "agent_response", "The pool held connections on timeout; it now releases them. " * 30, pos="1")
    line = _event(mem, "agent_response", "Stripe webhooks are retried three times with backoff " * 5, "s2")
    cfg = mem.config
    chosen = Injection([Item([Hit(answer, 0.8, {}, "high")], asked)], [Hit(line, 0.2, {}, "suggested")])
    text = inject.hits_context(chosen, cfg)
    lines = text.splitlines()
    assert lines[0] == inject.HEADER
    full_at, index_at = lines.index(inject.FULL_TITLE), lines.index(inject.INDEX_TITLE)
    assert full_at < index_at
    full, index = lines[full_at + 1 : index_at], lines[index_at + 1 :]
    assert full[0].startswith(f"- [{answer.cite}] (high, 0.80)")
    assert 900 < len(full[0]) <= cfg.injection.full_chars  # the answer, up to its share
    assert full[1] == f"  · [{asked.cite}] user prompt: {asked.content}"  # the prompt that asked, as context
    assert index == [index_line(line, cfg.injection.gist_chars)]
    assert index[0].startswith(f"- [{line.cite}] ") and len(index[0].split(": ", 1)[1]) <= cfg.injection.gist_chars
    assert all(re.search(r"\[mem:[0-9a-z]{6}\]", ln) for ln in full + index)
    mem.close()


def _cited_choice(mem: Memory) -> tuple[Injection, Any, Any, Any]:
    asked = _event(mem, "user_prompt", "why does checkout time out under load?", pos="0")
    answer = _event(mem, "agent_response", "The pool held connections; see [mem:zzzzzz]. " * 30, pos="1")
    line = _event(mem, "agent_response", "Stripe webhooks are retried three times with backoff", "s2")
    chosen = Injection([Item([Hit(answer, 0.8, {}, "high")], asked)], [Hit(line, 0.2, {}, "suggested")])
    return chosen, asked, answer, line


def test_footnote_citations_number_the_full_tier_and_list_the_citations_after(
    proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_CITATIONS_FORMAT", "footnote")
    mem = Memory.open(proj)
    chosen, asked, answer, line = _cited_choice(mem)
    lines = inject.hits_context(chosen, config.load()).splitlines()
    full = lines[lines.index(inject.FULL_TITLE) + 1 : lines.index(inject.INDEX_TITLE)]
    assert full[0].startswith("- [1] (high, 0.80) ") and "[mem:zzzzzz]" in full[0]  # the memory's own text stays
    assert full[1] == f"  · [2] user prompt: {asked.content}"
    assert full[2:] == ["---", f"[1] {answer.cite} {answer.ts[:10]}", f"[2] {asked.cite} {asked.ts[:10]}"]
    assert lines[lines.index(inject.INDEX_TITLE) + 1].startswith(f"- [{line.cite}] ")  # a line is its citation
    mem.close()


def test_reference_citations_leave_the_lines_bare_and_list_date_and_session(
    proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_CITATIONS_FORMAT", "reference")
    mem = Memory.open(proj)
    chosen, asked, answer, _line = _cited_choice(mem)
    lines = inject.hits_context(chosen, config.load()).splitlines()
    full = lines[lines.index(inject.FULL_TITLE) + 1 : lines.index(inject.INDEX_TITLE)]
    assert full[0].startswith("- (high, 0.80) ") and full[1] == f"  · user prompt: {asked.content}"
    assert full[2:] == [
        inject.REFERENCES_TITLE,
        f"- [{answer.cite}] {answer.ts[:10]}, session {answer.session_id[:8]}",
        f"- [{asked.cite}] {asked.ts[:10]}, session {asked.session_id[:8]}",
    ]
    mem.close()


@pytest.mark.parametrize("setting", ["MEMLANE_CITATIONS_INCLUDE_IN_CONTEXT", "MEMLANE_CITATIONS_ENABLED"])
def test_without_citations_in_context_the_lines_are_bare_and_there_is_no_index_tier(
    proj: Path, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    monkeypatch.setenv(setting, "false")
    mem = Memory.open(proj)
    cfg = config.load()
    chosen, asked, answer, line = _cited_choice(mem)
    text = inject.hits_context(chosen, cfg)
    assert answer.cite not in text and asked.cite not in text and "memlane show" not in text
    assert text.splitlines()[0] == "memlane: relevant memory from earlier sessions in this project."
    hits = [Hit(answer, 0.9, {}, "high"), Hit(line, 0.2, {}, "suggested")]
    picked = choose(hits, None, cfg, mem.store)
    assert [h.event.id for h in picked.full] == [answer.id] and picked.index == []  # nothing to open a line by
    assert dict((h.event.id, why) for h, why in picked.left_out)[line.id].startswith("no index tier")
    assert picked.record("text")["index"] == []  # the log says what was shown: the learning loop counts no "listed"
    mem.close()


def test_a_long_full_tier_with_footnotes_stays_within_the_budget(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_INJECTION_MAX_CHARS", "1500")
    monkeypatch.setenv("MEMLANE_CITATIONS_FORMAT", "footnote")
    mem = Memory.open(proj)
    big = [_event(mem, "agent_response", f"answer {n} " + "details " * 300, f"s{n}") for n in range(4)]
    text = inject.hits_context(Injection([Item([Hit(e, 0.9, {}, "high")]) for e in big]), config.load())
    assert len(text) <= 1500
    numbered = re.findall(r"^- \[(\d)\] ", text, re.M)
    notes = re.findall(r"^\[(\d)\] (mem:[0-9a-z]+) ", text, re.M)
    assert numbered and [n for n, _ in notes] == numbered  # every number shown has its note, none more
    assert [c for _, c in notes] == [e.cite for e in big[: len(notes)]]
    mem.close()


def test_an_injected_memory_carries_its_level_and_the_insight_it_states(proj: Path) -> None:
    """The learning loop's view of a full-tier memory reaches its line: L2 and up beside the tier, and the
    insight it is evidence of on a line of its own; both read through the real projector and settle."""
    mem = Memory.open(proj)
    decided = _event(mem, "agent_response", "Decision: we use RQ instead of Celery for the task queue.", "s1")
    plain = _event(mem, "agent_response", "The zebrafinch parser skips BOM bytes now.", "s1", pos="1")
    for n in range(3):  # cited from three later sessions: three uses, other sessions, confidence 1.0
        _event(mem, "agent_response", f"Going by [{decided.cite}], queue jobs with RQ.", f"later{n}")
    mem.catch_up()
    learned = mem.learned([decided.id, plain.id])
    assert learned[decided.id]["level"] == 2 and learned[decided.id]["insight"]["type"] == "decision"
    assert plain.id not in learned
    chosen = Injection([Item([Hit(decided, 0.8, {}, "high")]), Item([Hit(plain, 0.7, {}, "high")])])
    text = inject.hits_context(chosen, mem.config, learned=inject.learned_of(mem.store, chosen))
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"- [{decided.cite}]"))
    assert lines[at].startswith(f"- [{decided.cite}] (high, 0.80, L2) ")
    assert lines[at + 1] == "  · insight (decision, L2): Decision: we use RQ instead of Celery for the task queue."
    assert any(line.startswith(f"- [{plain.cite}] (high, 0.70) ") for line in lines)  # no level, no insight
    without = text.replace(lines[at + 1] + "\n", "").replace(lines[at], lines[at].replace("0.80, L2)", "0.80)"))
    assert inject.hits_context(chosen, mem.config) == without  # nothing learned: the lines as before
    mem.close()


def test_index_lines_come_alone_and_an_empty_choice_says_nothing(proj: Path) -> None:
    mem = Memory.open(proj)
    line = _event(mem, "agent_response", "Label PDFs render with WeasyPrint.")
    text = inject.hits_context(Injection([], [Hit(line, 0.2, {}, "suggested")]), mem.config)
    assert inject.FULL_TITLE not in text and inject.INDEX_TITLE in text and line.cite in text
    assert inject.hits_context(Injection(), mem.config) == ""
    mem.close()


def test_a_long_full_tier_keeps_the_index_lines_within_the_budget(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_INJECTION_MAX_CHARS", "1500")
    mem = Memory.open(proj)
    cfg = config.load()
    big = [_event(mem, "agent_response", f"answer {n} " + "details " * 300, f"s{n}") for n in range(4)]
    small = _event(mem, "agent_response", "a short memory worth a line", "s9")
    chosen = Injection([Item([Hit(e, 0.9, {}, "high")]) for e in big], [Hit(small, 0.2, {}, "suggested")])
    text = inject.hits_context(chosen, cfg)
    assert len(text) <= 1500
    assert small.cite in text  # the cheap line is never what the budget drops
    assert big[0].cite in text
    mem.close()


def test_the_tiers_follow_the_labels_and_the_index_respects_count_and_tokens(proj: Path) -> None:
    mem = Memory.open(proj)
    cfg = config.load()
    cfg.injection.index_max = 2
    high = _event(mem, "agent_response", "the answer", "a")
    sugg = [_event(mem, "agent_response", f"maybe {n} " + "x" * 60, f"b{n}") for n in range(4)]
    none = _event(mem, "agent_response", "unrelated", "c")
    hits = [Hit(high, 0.9, {}, "high"), *[Hit(e, 0.2, {}, "suggested") for e in sugg], Hit(none, 0.01, {}, "none")]
    chosen = choose(hits, None, cfg, mem.store)
    assert [h.event.id for h in chosen.full] == [high.id]
    assert [h.event.id for h in chosen.index] == [sugg[0].id, sugg[1].id]  # index_max
    reasons = {h.event.id: why for h, why in chosen.left_out}
    assert reasons[none.id] == "below the index tier" and sugg[3].id in reasons
    cfg.injection.index_tokens = tokens(index_line(sugg[0], cfg.injection.gist_chars))
    assert [h.event.id for h in choose(hits, None, cfg, mem.store).index] == [sugg[0].id]  # the token budget
    mem.close()


def test_the_full_tier_is_one_item_per_exchange_led_by_its_answer(proj: Path) -> None:
    mem = Memory.open(proj)
    cfg = config.load()
    prompt = _event(mem, "user_prompt", "checkout fails with PoolTimeout", pos="0")
    output = _event(mem, "tool_observation", "E   PoolTimeout: pool exhausted after 30s", pos="1")
    answer = _event(mem, "agent_response", "Connections leaked on timeout; fixed in pool.py", pos="2")
    hits = [Hit(output, 0.9, {}, "high"), Hit(answer, 0.6, {}, "high")]
    chosen = choose(hits, None, cfg, mem.store)
    assert len(chosen.items) == 1
    item = chosen.items[0]
    assert item.lead.event.id == answer.id and [h.event.id for h in item.hits] == [answer.id, output.id]
    assert item.asked is not None and item.asked.id == prompt.id
    mem.close()


def test_a_prompt_logs_what_it_was_told_and_forgetting_it_removes_the_log(hook: Any, proj: Path) -> None:
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt_id="p1", prompt="fix the zebrafinch parser"))
    hook("Stop", payload("05-Stop.json", last_assistant_message="The zebrafinch parser now skips BOM bytes."))
    out = hook(
        "UserPromptSubmit",
        payload("02-UserPromptSubmit.json", session_id="s2", prompt_id="p2", prompt="zebrafinch parser again?"),
    )
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    with Memory.open(proj) as mem:
        told = mem.injections()
        prompt, record = told[0]
        assert prompt.type == "user_prompt" and prompt.content == "zebrafinch parser again?"
        assert record["mode"] == "text"  # no daemon in this test: the hook's full-text path
        shown = record["full"] + record["index"]
        assert shown and all(row["cite"] in context for row in shown)
        assert {"id", "cite", "score", "confidence"} <= set(shown[0])
        assert all("content" not in row for row in shown + record["left_out"])  # ids and scores, never content
        assert mem.injections(session="s2")[0][0].id == prompt.id
        mem.forget(ids=[prompt.id])
        assert prompt.id not in {p.id for p, _ in mem.injections()}


def test_the_log_write_gives_up_quickly_when_another_writer_holds_the_store(proj: Path) -> None:
    import sqlite3

    mem = Memory.open(proj)
    prompt = _event(mem, "user_prompt", "anything at all")
    other = sqlite3.connect(mem.project.db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(sqlite3.OperationalError):
            mem.store.record_injection(prompt.id, prompt.session_id, {"mode": "text"})
        # and the hook's wrapper logs it instead of failing the prompt
        inject.record(mem.store, [prompt.id], Injection(), "text")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert mem.store.db.execute("PRAGMA busy_timeout").fetchone()[0] == mem.config.store.busy_timeout_ms
    mem.close()


def test_a_retired_setting_in_the_file_still_loads_and_config_set_names_its_replacement(memlane_home: Path) -> None:
    from click.testing import CliRunner

    from memlane.cli.main import cli

    memlane_home.mkdir(parents=True, exist_ok=True)
    (memlane_home / "config.toml").write_text("[retrieval]\ninject_threshold = 0.2\n")
    assert config.load().retrieval.suggest_lift == config.RetrievalConfig().suggest_lift
    result = CliRunner().invoke(cli, ["config", "set", "retrieval.inject_threshold", "0.3"])
    assert result.exit_code != 0 and "suggest_lift" in result.output
    assert CliRunner().invoke(cli, ["config", "unset", "retrieval.inject_threshold"]).exit_code == 0
    assert "inject_threshold" not in (memlane_home / "config.toml").read_text()


def test_a_short_question_s_line_shows_its_reply(proj: Path) -> None:
    """In a dialogue the question matches and the answer is the next turn; a question that fits its line says
    nothing its reply does not. A longer turn ending with a question keeps its line (it says things). Only
    with vectors: the similarity rule that keeps stale lines out needs them."""
    from memlane.embed import get_embedder
    from memlane.retrieval.engine import Engine
    from memlane.vectors import process_outbox

    mem = Memory.open(proj)
    cfg = config.load()
    ask = _event(mem, "agent_response", "So when is the surgery now?", pos="0")
    reply = _event(mem, "user_prompt", "June 6. She wants me on the new pills for two months first.", pos="1")
    long_ask = _event(mem, "user_prompt", "I bought cedar strips and epoxy for the canoe, and the garage is "
                      "finally clear. Which varnish holds up on the water?", "s2", pos="0")  # fmt: skip
    _event(mem, "agent_response", "Spar varnish, three coats.", "s2", pos="1")
    lonely = _event(mem, "user_prompt", "And the knee?", "s3", pos="0")
    offer = _event(mem, "agent_response", "Want me to add a test for the empty cart case too?", "s4", pos="0")
    _event(mem, "user_prompt", "yes please", "s4", pos="1")  # an acknowledgement: the question says more
    process_outbox(mem, get_embedder(mem.config.embedding))
    index = Engine(cfg).index(mem.project.id)
    assert index is not None
    hits = [Hit(e, 0.3, {"lift": 1.2}, "suggested") for e in (ask, long_ask, lonely, offer)]
    chosen = choose(hits, index, cfg, mem.store)
    assert [h.event.id for h in chosen.index] == [reply.id, long_ask.id, lonely.id, offer.id]
    assert chosen.index[0].score == 0.3 and chosen.index[0].confidence == "suggested"  # the question's match
    reasons = {h.event.id: why for h, why in chosen.left_out}
    assert reasons == {ask.id: "a short question: its reply is shown instead"}
    text = inject.hits_context(chosen, cfg)
    assert reply.cite in text and ask.cite not in text and "June 6." in text
    # Its reply already a line of its own: the question's line is left out, not shown twice.
    both = choose([Hit(reply, 0.35, {}, "suggested"), hits[0]], index, cfg, mem.store)
    assert [h.event.id for h in both.index] == [reply.id]
    assert dict((h.event.id, why) for h, why in both.left_out)[ask.id].startswith("a short question")
    # In the full tier the reply leads the question's item.
    item = choose([Hit(ask, 0.9, {}, "high")], index, cfg, mem.store).items[0]
    assert [h.event.id for h in item.hits] == [reply.id, ask.id] and item.lead.score == 0.9
    # Without vectors (the hooks' full-text fallback) the question keeps its line.
    assert [h.event.id for h in choose(hits, None, cfg, mem.store).index] == [ask.id, long_ask.id, lonely.id, offer.id]
    mem.close()


def test_a_question_longer_than_the_gist_is_still_short_enough_to_give_way(proj: Path) -> None:
    """A question is short by ``select.SHORT_QUESTION_CHARS`` (90), not by the gist (50): one of 60 characters
    still shows its reply (tied to the gist, such questions lost their replies: conversations dev 0.63 → 0.62)."""
    from memlane.embed import get_embedder
    from memlane.retrieval.engine import Engine
    from memlane.vectors import process_outbox

    mem = Memory.open(proj)
    cfg = config.load()
    ask = _event(mem, "agent_response", "Congratulations! Do you have a call sign of your own yet?", pos="0")
    reply = _event(mem, "user_prompt", "KG7FDL. The last three letters are my initials.", pos="1")
    process_outbox(mem, get_embedder(mem.config.embedding))
    assert cfg.injection.gist_chars < len(ask.content) <= 90
    chosen = choose([Hit(ask, 0.3, {"lift": 1.2}, "suggested")], Engine(cfg).index(mem.project.id), cfg, mem.store)
    assert [h.event.id for h in chosen.index] == [reply.id]
    mem.close()


def test_a_reply_already_shown_beside_a_full_item_is_not_shown_again(proj: Path) -> None:
    """The prompt that asked for a full item is shown with it; a question whose reply is that prompt gives
    no line of its own."""
    from memlane.embed import get_embedder
    from memlane.retrieval.engine import Engine
    from memlane.vectors import process_outbox

    mem = Memory.open(proj)
    cfg = config.load()
    offer = _event(mem, "agent_response", "Should the label worker move to RQ as well?", pos="0")
    prompt = _event(mem, "user_prompt", "Yes, move the label worker to RQ and drop Celery everywhere.", pos="1")
    answer = _event(mem, "agent_response", "Moved the label worker to RQ; Celery is gone from requirements.", pos="2")
    process_outbox(mem, get_embedder(mem.config.embedding))
    index = Engine(cfg).index(mem.project.id)
    chosen = choose([Hit(answer, 0.9, {}, "high"), Hit(offer, 0.3, {}, "suggested")], index, cfg, mem.store)
    assert [h.event.id for h in chosen.full] == [answer.id] and chosen.items[0].asked.id == prompt.id
    assert chosen.index == []  # the offer's reply is the prompt shown beside the answer
    reasons = {h.event.id: why for h, why in chosen.left_out}
    assert reasons[offer.id] == "a short question: its reply is shown instead"
    mem.close()


def test_a_line_freed_by_a_reply_already_shown_goes_to_the_next_candidate(
    proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five lines are taken; a short question whose reply is one of them gives no line, and the sixth
    candidate takes the line it freed (before, the prompt got four lines and the sixth was never offered)."""
    from memlane.embed import get_embedder
    from memlane.retrieval.engine import Engine
    from memlane.vectors import process_outbox

    monkeypatch.setenv("MEMLANE_INJECTION_INDEX_MAX", "5")
    mem = Memory.open(proj)
    cfg = config.load()
    ask = _event(mem, "agent_response", "The one where they wanted to put condos?", "s1", pos="0")
    reply = _event(mem, "user_prompt", "They're building the condos. Five stories. Construction starts in spring.",
                   "s1", pos="1")  # fmt: skip
    others = [
        _event(mem, "agent_response", "The red bicycle, two cats and about a hundred plants.", "s2"),
        _event(mem, "user_prompt", "My sister is moving into the blue house on Elm Street in May.", "s3"),
        _event(mem, "agent_response", "The neighbourhood association meets on the first Monday.", "s4"),
        _event(mem, "user_prompt", "The developer went bankrupt and the city bought the lot for a park.", "s5"),
    ]
    process_outbox(mem, get_embedder(mem.config.embedding))
    index = Engine(cfg).index(mem.project.id)
    order = [reply, ask, others[0], others[1], others[2], others[3]]
    hits = [Hit(e, 0.5 - n * 0.05, {"lift": 1.2}, "suggested") for n, e in enumerate(order)]
    assert cfg.injection.index_max == 5
    chosen = choose(hits, index, cfg, mem.store)
    shown = [h.event.id for h in chosen.index]
    assert shown == [reply.id] + [e.id for e in others], "the sixth candidate has the freed line"
    assert dict((h.event.id, why) for h, why in chosen.left_out)[ask.id].startswith("a short question")
    mem.close()


def test_one_full_item_per_session_and_the_rest_as_lines(proj: Path) -> None:
    """With ``retrieval.session_items`` 1 (a store of dialogue), a session's second exchange that stands out is
    offered as an index line, not in full; another session's item stays in full. 0 (code) keeps them all."""
    mem = Memory.open(proj)
    _event(mem, "user_prompt", "What did we pick for the kitchen floor?", "s1", pos="0")
    first = _event(mem, "agent_response", "We picked the blue tiles for the kitchen floor.", "s1", pos="1")
    asked = _event(mem, "user_prompt", "And the kitchen counters, what wood?", "s1", pos="2")
    second = _event(mem, "agent_response", "The kitchen counters will be oak, oiled twice a year.", "s1", pos="3")
    other = _event(mem, "agent_response", "The kitchen lights are on a dimmer now.", "s2", pos="1")
    hits = [Hit(first, 0.9, {}, "high"), Hit(second, 0.85, {}, "high"), Hit(asked, 0.84, {}, "high"),
            Hit(other, 0.8, {}, "high")]  # fmt: skip
    cfg = config.load()
    assert [i.lead.event.id for i in choose(hits, None, cfg, mem.store).items] == [first.id, second.id, other.id]
    cfg.retrieval.session_items = 1
    chosen = choose(hits, None, cfg, mem.store)
    assert [i.lead.event.id for i in chosen.items] == [first.id, other.id]
    # The exchange over the count is one line, by its lead (its answer), not a line for its prompt too.
    assert [h.event.id for h in chosen.index] == [second.id]
    reasons = {h.event.id: why for h, why in chosen.left_out}
    assert reasons[asked.id] == "its session has an item in full already"
    cfg.injection.index_max = 0
    reasons = {h.event.id: why for h, why in choose(hits, None, cfg, mem.store).left_out}
    assert reasons[second.id] == "its session has an item in full already"
    mem.close()


def test_a_question_about_what_happened_keeps_the_older_memory_on_its_subject(proj: Path) -> None:
    """Of two memories on one subject from different sessions only the newer is shown (a stale answer is
    never shown alone); a question about what happened (``history``, in a store of dialogue) wants both."""
    from memlane.embed import get_embedder
    from memlane.retrieval.engine import Engine
    from memlane.vectors import process_outbox

    mem = Memory.open(proj)
    cfg = config.load()
    older = _event(mem, "agent_response", "The Japan trip is planned for September 16 to 30, two weeks.", "s1")
    newer = _event(mem, "agent_response", "The Japan trip is planned for April 2024 now, two weeks.", "s2")
    process_outbox(mem, get_embedder(mem.config.embedding))
    index = Engine(cfg).index(mem.project.id)
    hits = [Hit(newer, 0.4, {"lift": 1.5}, "suggested"), Hit(older, 0.35, {"lift": 1.4}, "suggested")]
    now = choose(hits, index, cfg, mem.store)
    assert [h.event.id for h in now.index] == [newer.id]
    reasons = {h.event.id: why for h, why in now.left_out}
    assert reasons[older.id] == "older than a memory shown on the same subject"
    then = choose(hits, index, cfg, mem.store, history=True)
    assert [h.event.id for h in then.index] == [newer.id, older.id]
    mem.close()


def test_an_item_over_its_session_s_count_led_by_a_reply_is_offered_by_its_question(proj: Path) -> None:
    """An item whose lead is a short question's reply (``answered_items``) is not a candidate itself: over its
    session's count, the item is offered by the question, whose line then shows the reply."""
    from memlane.embed import get_embedder
    from memlane.retrieval.engine import Engine
    from memlane.vectors import process_outbox

    mem = Memory.open(proj)
    cfg = config.load()
    first = _event(mem, "agent_response", "The knee surgery is at St. Mary's with Dr. Patel.", "s1", pos="1")
    ask = _event(mem, "agent_response", "So when is the knee surgery now?", "s1", pos="3")
    reply = _event(mem, "user_prompt", "June 6. She wants me on the new pills for two months first.", "s1", pos="4")
    process_outbox(mem, get_embedder(mem.config.embedding))
    index = Engine(cfg).index(mem.project.id)
    cfg.retrieval.session_items = 1
    cfg.retrieval.supersede_similarity = 0.0  # the two knee turns are one subject to the similarity rule
    chosen = choose([Hit(first, 0.9, {}, "high"), Hit(ask, 0.85, {}, "high")], index, cfg, mem.store)
    assert [i.lead.event.id for i in chosen.items] == [first.id]
    assert [h.event.id for h in chosen.index] == [reply.id]
    mem.close()


LONG_ANSWER = (
    "Fixed the checkout timeouts: sessions were never returned to the pool. get_session() is now a context "
    "manager that always closes the session, and the pool is pool_size=20, max_overflow=10 with pool_pre_ping."
)


def test_a_gist_shows_the_part_of_a_long_memory_the_prompt_is_about() -> None:
    from memlane.retrieval.select import focus_words, gist

    assert gist(LONG_ANSWER, 50) == "Fixed the checkout timeouts: sessions were never …"
    centred = gist(LONG_ANSWER, 50, focus_words("What max_overflow does the pool use now?"))
    assert centred == "…and the pool is pool_size=20, max_overflow=10 wi…" and len(centred) == 50
    assert gist(LONG_ANSWER, 50, focus_words("checkout timeouts again")).startswith("Fixed the checkout"), (
        "the prompt's words are in the first 50 characters: the gist starts where the memory does"
    )
    assert gist(LONG_ANSWER, 50, focus_words("nothing of it here")) == gist(LONG_ANSWER, 50)
    assert gist("Short memory.", 50, ("memory",)) == "Short memory."
    assert focus_words("What is the pool_size now?") == ("now", "pool_size"), "no stop words, no short words"
    pasted = "Bash: pytest -q F. E TimeoutError: QueuePool limit of size 5 overflow 0 reached, connection timed out"
    opened = gist(pasted, 50, focus_words("the connection pool times out again"))
    assert opened.startswith("…connection timed out"), "at the word, or after a clause break just before it"
    ran = "Bash: DATABASE_URL=postgres://shop@localhost/shop pytest tests/test_pool.py -q .. 2 passed in 0.41s"
    assert gist(ran, 50, focus_words("pool")).startswith("…tests/test_pool.py"), "a word inside a path: the path"


def test_a_korean_gist_counts_its_characters_as_two_columns() -> None:
    from memlane.retrieval.select import gist, tokens

    korean = "오늘 아침에 동물병원 갔는데 방광염이래. 일주일 약 먹이고 다시 오래. 그리고 사료를 처방식으로 바꾸래."
    english = "This morning I took the cat to the vet and she has cystitis, pills for a week, then a new diet."
    cut = gist(korean, 50)
    assert cut == "오늘 아침에 동물병원 갔는데 방광염이래. 일주일 약…", "about 50 columns: 22 Hangul and 6 spaces"
    assert tokens(cut) <= 0.6 * tokens(korean[:49] + "…"), "half the characters: little more than half the tokens"
    assert len(gist(english, 50)) == 50, "Latin text: 50 characters, as before"
    mixed = "CJ대한통운 클라이언트를 app/carriers/cj_logistics.py 에 추가했습니다. 송장번호는 숫자만 허용합니다"
    assert 30 < len(gist(mixed, 50)) < 50, "a line of both scripts: in between"
    assert gist("짧은 기억.", 50) == "짧은 기억.", "a short memory whole"


def test_a_korean_gist_is_centred_on_the_prompt_s_words_whatever_their_particles() -> None:
    from memlane.retrieval.select import focus_words, gist

    assert {"두부", "병원", "진단"} <= set(focus_words("두부가 병원에서 받은 진단은?")), "particles off"
    turn = "응, 아빠가 차로 데려다주신대. 그리고 이번 주말에는 두부는 케이지에 넣고 안정제도 처방받았어."
    assert gist(turn, 50).startswith("응, 아빠가")
    assert gist(turn, 50, focus_words("두부가 어떻게 이동했어?")) == "…그리고 이번 주말에는 두부는 케이지에 넣고 안정…"
    assert gist(turn, 50, focus_words("부가 뭐야?")).startswith("응,"), "a word inside another is no match"


def test_the_injected_index_line_is_centred_on_the_prompt(proj: Path) -> None:
    mem = Memory.open(proj)
    answer = _event(mem, "agent_response", LONG_ANSWER)
    chosen = Injection([], [Hit(answer, 0.2, {}, "suggested")])
    text = inject.hits_context(chosen, config.load(), prompt="which max_overflow did we set on the pool?")
    assert f"- [{answer.cite}] {answer.ts[:10]} agent response: …and the pool is pool_size=20, max_overflow=10" in text
    assert "Fixed the checkout" in inject.hits_context(chosen, config.load()), "without a prompt: its start"
    mem.close()
