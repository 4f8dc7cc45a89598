"""Citations Claude makes, from a real Claude Code turn (tests/fixtures/claude-code/citations/, captured with the
harness in ../shared/claude-code with 2.1.328): the turn's first text ("Going by [mem:k3v9qa], …") was written
before its tool call and is only in the transcript; the final answer (``last_assistant_message``) cites
[mem:k3v9qa] and [mem:7hx2mb]. The Stop hook stores the answer and notes the earlier text's citations on it
(``cites``); the learning projector counts one cited use per memory, in the turn's session."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import CLAUDE_CODE
from memlane import project
from memlane.memory import Memory
from memlane.store.db import NewEvent

CITED = CLAUDE_CODE / "citations"
SESSION = "5ed9bb08-e046-4344-8d4f-8d7c5d3b2e8b"


def captured(tmp_path: Path, names: dict[str, str]) -> tuple[dict[str, Any], Path]:
    """The Stop payload and its transcript, with the recorded citations swapped for the test store's."""
    text = (CITED / f"{SESSION}.jsonl").read_text()
    stop = (CITED / "Stop.json").read_text()
    for recorded, real in names.items():
        text, stop = text.replace(recorded, real), stop.replace(recorded, real)
    path = tmp_path / "claude" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return {**json.loads(stop), "transcript_path": str(path)}, path


def test_a_real_turn_cites_two_memories_once_each(hook: Callable[..., str], proj: Path, tmp_path: Path) -> None:
    with Memory.open(proj) as mem:
        mem.store.append([NewEvent("agent_response", "earlier", "The pool limit was raised to 20.", "t1", {}),
                          NewEvent("agent_response", "earlier", "Connections leak on timeout.", "t2", {})])  # fmt: skip
        pool, leak = mem.store.history(limit=2, oldest_first=True)
    stop, _ = captured(tmp_path, {"k3v9qa": pool.citation, "7hx2mb": leak.citation})
    hook("Stop", stop)
    p = project.identify(proj)
    with Memory.existing(p) as mem:
        (answer,) = mem.store.history(session=SESSION, types=["agent_response"], limit=5)
        assert answer.content == stop["last_assistant_message"]
        assert answer.metadata.get("cites") is None, "both citations are in the answer itself"
        mem.catch_up()
        for memory in (pool, leak):
            assert mem.usage(memory.id)["counts"]["cited"] == 1
            assert [s["session_id"] for s in mem.usage(memory.id)["cited_in"]] == [SESSION]


def test_a_citation_only_in_the_turns_earlier_text_is_counted(
    hook: Callable[..., str], proj: Path, tmp_path: Path
) -> None:
    """The final answer without the first citation: only the transcript's earlier text block names it."""
    with Memory.open(proj) as mem:
        mem.store.append([NewEvent("agent_response", "earlier", "The pool limit was raised to 20.", "t1", {})])
        (pool,) = mem.store.history(limit=1)
    stop, _ = captured(tmp_path, {"k3v9qa": pool.citation})
    stop["last_assistant_message"] = "Fixed: the pool now releases connections on timeout."
    hook("Stop", stop)
    with Memory.existing(project.identify(proj)) as mem:
        (answer,) = mem.store.history(session=SESSION, types=["agent_response"], limit=5)
        # the transcript's own final text still names [mem:7hx2mb]: a memory this store does not have
        assert answer.metadata["cites"] == [pool.citation, "7hx2mb"]
        mem.catch_up()
        assert mem.usage(pool.id)["counts"]["cited"] == 1
        assert mem.store.usage_totals()["cited"] == 1


def test_no_citations_noted_when_tracking_is_off(
    hook: Callable[..., str], proj: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("MEMLANE_CITATIONS_TRACK_USAGE", "false")
    stop, _ = captured(tmp_path, {})
    stop["last_assistant_message"] = "Fixed."
    hook("Stop", stop)
    with Memory.existing(project.identify(proj)) as mem:
        (answer,) = mem.store.history(session=SESSION, types=["agent_response"], limit=5)
        assert "cites" not in answer.metadata


def test_what_the_prompt_hook_injected_is_counted_from_its_log_then_cited(hook: Callable[..., str], proj: Path) -> None:
    """Injected and listed uses come from the injection log the UserPromptSubmit hook wrote (``injections``), not
    from a guess at what the prompt was shown; the answer that then cites one of them adds a cited use."""
    from conftest import payload

    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt_id="p1", prompt="fix the zebrafinch parser"))
    hook("Stop", payload("05-Stop.json", last_assistant_message="The zebrafinch parser now skips BOM bytes."))
    out = hook(
        "UserPromptSubmit",
        payload("02-UserPromptSubmit.json", session_id="s2", prompt_id="p2", prompt="zebrafinch parser again?"),
    )
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    with Memory.existing(project.identify(proj)) as mem:
        prompt, record = mem.injections(session="s2", limit=1)[0]
        full = [row["id"] for row in record["full"]]
        index = [row["id"] for row in record["index"]]
        assert full, "the earlier answer is shown in full"
        assert all(row["cite"] in context for row in record["full"] + record["index"])
        mem.catch_up()
        for event_id in full:
            assert mem.usage(event_id)["counts"]["injected"] == 1
            assert [s["session_id"] for s in mem.usage(event_id)["used_in"]] == ["s2"]
        for event_id in index:
            assert mem.usage(event_id)["counts"]["listed"] == 1
        shown = mem.store.by_ids(full)
        assert mem.store.usage_totals()["injected"] == len(full)
    cite = shown[0].cite
    hook("Stop", payload("05-Stop.json", session_id="s2", last_assistant_message=f"Going by [{cite}], it skips BOMs."))
    with Memory.existing(project.identify(proj)) as mem:
        mem.catch_up()
        counts = mem.usage(shown[0].id)["counts"]
        assert counts["injected"] == 1 and counts["cited"] == 1
        assert mem.usage(shown[0].id)["level"]["level"] >= 1
        assert prompt.id in {p.id for p, _ in mem.injected_into(shown[0].id)}
