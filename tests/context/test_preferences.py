"""Preferences learned from the user's prompts: what counts, where it goes, and how it is forgotten."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import payload
from memlane import project
from memlane.cli.main import cli
from memlane.context import preferences
from memlane.context.compose import PERSISTENT_TITLE
from memlane.context.scope import ContextScope, PersistenceKind
from memlane.context.store import project_store
from memlane.memory import Memory
from memlane.store import NewEvent

Hook = Callable[..., str]


@pytest.mark.parametrize(
    ("prompt", "learned"),
    [
        ("Always use pnpm, not npm. Add lodash please", ["Always use pnpm, not npm."]),
        ("please never push straight to main", ["please never push straight to main"]),
        ("Fix the login bug. From now on write the test first!", ["From now on write the test first!"]),
        ("I prefer small commits with imperative messages", ["I prefer small commits with imperative messages"]),
        ("use httpx instead of requests in this service", ["use httpx instead of requests in this service"]),
        ("In this repo we always run ruff before committing", ["In this repo we always run ruff before committing"]),
    ],
)
def test_standing_rules_are_found(prompt: str, learned: list[str]) -> None:
    assert preferences.extract(prompt) == learned


@pytest.mark.parametrize(
    "prompt",
    [
        "Can you fix the login bug?",
        "should we always use pnpm?",  # a question is not a rule
        "I want you to add a retry to the webhook",  # a one-off request
        "the cache never expires, why?",
        "always",  # too short to say anything
        "It always fails on CI when the pool is full and I don't know why " * 5,  # too long to be a rule
    ],
)
def test_requests_questions_and_reports_are_not_rules(prompt: str) -> None:
    assert preferences.extract(prompt) == []


def learned(proj: Path) -> list[tuple[str, str]]:
    pid = project.identify(str(proj)).id
    value = project_store(pid, ContextScope.APP, PersistenceKind.PERSISTENT).snapshot().get(preferences.KEY)
    return preferences.parse(value)


def prompt(hook: Hook, text: str, n: int) -> None:
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt=text, prompt_id=f"p{n}"))


def test_the_prompt_hook_learns_newest_first_without_repeats_and_never_private_text(hook: Hook, proj: Path) -> None:
    prompt(hook, "Always use pnpm, not npm. Add lodash please", 1)
    prompt(hook, "what does the pool do?", 2)
    prompt(hook, "I prefer small commits.", 3)
    prompt(hook, "<private>always use the token sk-live-123 for staging</private> deploy it", 4)
    prompt(hook, "always use pnpm, NOT npm!", 5)  # said again: moves up, not repeated
    got = learned(proj)
    assert [t for t, _ in got] == ["always use pnpm, NOT npm!", "I prefer small commits."]
    assert all(c.startswith("mem:") for _, c in got)
    with Memory.open(str(proj)) as mem:
        source = mem.store.get(got[0][1])
        assert source is not None and source.type == "user_prompt" and "pnpm" in source.content

    # SessionStart shows them in the persistent block.
    text = json.loads(hook("SessionStart", payload("07-SessionStart.json", session_id="s2")))
    context = text["hookSpecificOutput"]["additionalContext"]
    assert PERSISTENT_TITLE in context and "learnedPreferences:" in context
    assert "I prefer small commits. [mem:" in context and "sk-live" not in context


def test_forgetting_the_prompt_forgets_its_preference(hook: Hook, proj: Path) -> None:
    prompt(hook, "Always use pnpm, not npm.", 1)
    prompt(hook, "Never push to main.", 2)
    pnpm = learned(proj)[1]
    with Memory.open(str(proj)) as mem:
        mem.forget(ids=[pnpm[1]])
    assert [t for t, _ in learned(proj)] == ["Never push to main."]


def test_off_means_nothing_is_learned(hook: Hook, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_CONTEXT_LEARNED_PREFERENCES", "0")
    prompt(hook, "Always use pnpm, not npm.", 1)
    assert learned(proj) == []


def test_relearn_reads_history_and_the_cli_lists_it(proj: Path) -> None:
    with Memory.open(str(proj)) as mem:
        mem.store.append(
            [
                NewEvent("user_prompt", "old", "We always squash merge. Fix CI", "1", {}),
                NewEvent("agent_response", "old", "Always use pnpm, says the agent", "2", {}),
                NewEvent("user_prompt", "old", "how do I run the tests?", "3", {}),
            ]
        )
    result = CliRunner().invoke(cli, ["-C", str(proj), "context", "learn"])
    assert result.exit_code == 0, result.output
    assert "We always squash merge." in result.output and "says the agent" not in result.output
    result = CliRunner().invoke(cli, ["-C", str(proj), "context", "learn", "--json"])
    assert [p["preference"] for p in json.loads(result.output)] == ["We always squash merge."]


def _learn_at_once(barrier: Any, project_id: str, event: Any) -> None:
    barrier.wait()
    preferences.learn(project_id, event, 20)


def test_prompts_of_parallel_sessions_each_keep_their_preference(proj: Path) -> None:
    """Each hook process reads, merges and writes the file; the lock keeps one from overwriting another."""
    import multiprocessing

    with Memory.open(str(proj)) as mem:
        ids = mem.store.append(
            [NewEvent("user_prompt", f"s{i}", f"Always run check number {i} first.", "1", {}) for i in range(8)]
        ).inserted
        events = mem.store.by_ids(ids)
        pid = mem.project.id
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(len(events))
    workers = [ctx.Process(target=_learn_at_once, args=(barrier, pid, e)) for e in events]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
        assert w.exitcode == 0
    assert sorted(t for t, _ in learned(proj)) == sorted(f"Always run check number {i} first." for i in range(8))
