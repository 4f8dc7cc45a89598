"""The composer: blocks per task type, budgets and markers, citations kept whole, awkward values."""

from __future__ import annotations

import json
import re

import pytest

from memlane import config
from memlane.context import (
    CLAUDE_CODE_LIMIT,
    TASKS,
    ContextError,
    PromptComposer,
    PromptContext,
    RefreshStatus,
    TaskSpec,
    register_task,
    serialize,
)
from memlane.context.compose import PERSISTENT_TITLE, VOLATILE_TITLE, fit_block, render_entry, safe_cut, shorten

CITE = re.compile(r"\[mem:[0-9a-z]{6}\]")


def ctx(status: RefreshStatus | None = RefreshStatus.UNCHANGED, **persistent: str) -> PromptContext:
    return PromptContext(
        {"rules/AGENTS.md": "Use uv.", "rules/CLAUDE.md": "Claude reads this itself.", **persistent},
        {"projectRoot": "/p", "workingDirectory": "/p/src", "gitBranch": "main", "currentFile": "src/a.py"},
        {"sessionId": "s1", "filesTouched": ["a.py", "b.py"]},
        status=status,
        project_root="/p",
    )


@pytest.fixture
def composer() -> PromptComposer:
    return PromptComposer(config.Config())


def test_final_prompt_is_persistent_then_volatile_then_body(composer: PromptComposer) -> None:
    text = composer.compose("llm_task", ctx(), "Explain the pool.", header="HEAD")
    assert text.index("HEAD") < text.index(PERSISTENT_TITLE) < text.index(VOLATILE_TITLE) < text.index("## Task")
    assert text.endswith("## Task\nExplain the pool.")
    assert "rules/CLAUDE.md: Claude reads this itself." in text and "sessionId: s1" in text


def test_session_start_hides_what_claude_code_already_has(composer: PromptComposer) -> None:
    text = composer.compose("session_start", ctx(), "Previous session: pool fix", header="H")
    assert "rules/AGENTS.md: Use uv." in text
    assert "CLAUDE.md" not in text and "projectRoot" not in text and "sessionId" not in text
    assert "gitBranch: main" in text and 'filesTouched: ["a.py", "b.py"]' in text
    assert "## Recent work\nPrevious session: pool fix" in text


def test_session_start_with_only_volatile_state_injects_nothing(composer: PromptComposer) -> None:
    empty = PromptContext({}, {"workingDirectory": "/p"}, status=RefreshStatus.UNCHANGED)
    assert composer.compose("session_start", empty, "", header="H") == ""
    assert composer.compose("session_start", ctx(), "", header="H").startswith("H\n" + PERSISTENT_TITLE)


def test_prompt_injection_repeats_rules_only_when_they_changed(composer: PromptComposer) -> None:
    body = "- [mem:abc123] pool fix"
    unchanged = composer.compose("prompt_injection", ctx(RefreshStatus.UNCHANGED), body, header="H")
    assert PERSISTENT_TITLE not in unchanged and VOLATILE_TITLE in unchanged and body in unchanged
    assert composer.compose("prompt_injection", ctx(RefreshStatus.LOADED), body, header="H") == unchanged
    changed = composer.compose("prompt_injection", ctx(RefreshStatus.RELOADED), body, header="H")
    assert "rules/AGENTS.md: Use uv." in changed and "CLAUDE.md" not in changed
    assert composer.compose("prompt_injection", ctx(RefreshStatus.UNCHANGED), "", header="H") == ""
    assert "Use uv." in composer.compose("prompt_injection", ctx(RefreshStatus.RELOADED), "", header="H")


def test_context_pack_and_preview_include_everything(composer: PromptComposer) -> None:
    for task_type in ("mcp_context_pack", "dashboard_preview"):
        text = composer.compose(task_type, ctx(), "body", header="H")
        assert "rules/CLAUDE.md" in text and "projectRoot: /p" in text
    assert composer.compose("mcp_context_pack", None, "just the body") == "just the body"


def test_unknown_task_type_and_new_task_types(composer: PromptComposer) -> None:
    with pytest.raises(ContextError, match="unknown task type 'nope'"):
        composer.compose("nope", ctx(), "x")
    try:
        register_task(TaskSpec("review", "Code review: rules only.", persistent="always", volatile_scopes=()))
        text = composer.compose("review", ctx(), "diff here")
        assert "Use uv." in text and VOLATILE_TITLE not in text and text.endswith("diff here")
    finally:
        TASKS.pop("review")
    with pytest.raises(ValueError, match="persistent must be"):
        TaskSpec("x", "y", persistent="sometimes")


def test_service_is_accepted_as_context(composer: PromptComposer) -> None:
    class Service:
        def context_for_prompt(self) -> PromptContext:
            return ctx()

    assert "Use uv." in composer.compose("llm_task", Service(), "b")
    with pytest.raises(ContextError):
        composer.compose("llm_task", object(), "b")


def test_context_disabled_leaves_body_only() -> None:
    cfg = config.Config()
    cfg.context.enabled = False
    assert PromptComposer(cfg).compose("llm_task", ctx(), "b", header="H") == "H\n## Task\nb"


# ---- budgets -----------------------------------------------------------------------------------


def test_persistent_over_budget_is_shortened_with_a_marker() -> None:
    cfg = config.Config()
    cfg.context.persistent_chars = 400
    long_rules = "\n".join(f"- rule {i}: keep the pool small and the timeouts short" for i in range(60))
    many = {"rules/AGENTS.md": long_rules, "rules/CLAUDE.md": long_rules.upper()}
    parts = PromptComposer(cfg).compose_parts("llm_task", ctx(**many), "b")
    block = parts.blocks[0]
    assert len(block.text) <= 400 and "rules/AGENTS.md" in block.shortened
    assert re.search(r"… \[\+\d+ chars\]", block.text)
    assert block.shortened == ["rules/AGENTS.md", "rules/CLAUDE.md"]  # the second gets what is left, marked
    cfg.context.persistent_chars = 150
    block = PromptComposer(cfg).compose_parts("llm_task", ctx(**many), "b").blocks[0]
    assert block.shortened == ["rules/AGENTS.md"] and block.dropped == ["rules/CLAUDE.md"]
    assert block.text.endswith("\n… left out to fit the budget: rules/CLAUDE.md") and len(block.text) <= 150


def test_lowest_priority_entries_go_first() -> None:
    entries = [(f"k{i}", "v" * 60) for i in range(10)]
    block = fit_block("volatile", "## T", entries, 300, 1200)
    assert block.included == ["k0", "k1", "k2"] and block.dropped[0] == "k3"  # k3 fit, but not with the marker
    assert len(block.text) <= 300 and block.text.endswith("k3, k4, k5 (+4 more)")
    assert fit_block("volatile", "## T", entries, 40, 1200).text == ""  # too small: the block is left out


def test_volatile_order_puts_editor_state_first(composer: PromptComposer) -> None:
    block = composer.compose_parts("llm_task", ctx(), "b").blocks[1]
    assert block.included[:4] == ["currentFile", "workingDirectory", "gitBranch", "filesTouched"]


def test_body_lines_dropped_whole_with_marker_and_citations_intact(composer: PromptComposer) -> None:
    lines = [f"- [mem:{i:06d}] memory number {i} " + "detail " * 30 for i in range(40)]
    for budget in (150, 400, 900, 2000, 4000):
        text = composer.compose("prompt_injection", ctx(), "\n".join(lines), header="H", max_chars=budget)
        assert len(text) <= budget
        body = text.split("## Relevant memories\n", 1)[1] if "## Relevant memories" in text else ""
        for line in body.splitlines():
            assert line in lines or line.startswith("… (+")
        assert all(len(c) == 12 for c in CITE.findall(text))
    assert "left out to fit the budget" in composer.compose("prompt_injection", ctx(), "\n".join(lines), header="H")


def test_citation_never_cut_when_values_are_shortened() -> None:
    text = " ".join(f"see [mem:{i:06d}] for the reason" for i in range(50))
    for limit in range(20, 300, 7):
        short, _ = shorten(text, limit)
        assert len(short) <= limit or short.startswith("…")
        head = short.rsplit("…", 1)[0]
        assert not re.search(r"\[?mem:[0-9a-z]{0,5}$", head.rstrip())  # no half citation at the cut
        assert head.count("[mem:") == head.count("]")
    assert safe_cut("ab [mem:abc123] cd", 8) == 3


def test_whole_injection_stays_under_claude_codes_limit() -> None:
    cfg = config.Config()
    cfg.injection.max_chars = 50_000
    cfg.context.max_total_chars = 50_000
    cfg.context.persistent_chars = 20_000
    big = {f"rules/r{i}.md": "x " * 3000 for i in range(10)}
    body = "\n".join(f"- [mem:{i:06d}] " + "y" * 200 for i in range(200))
    for task_type in ("session_start", "prompt_injection"):
        text = PromptComposer(cfg).compose(task_type, ctx(RefreshStatus.RELOADED, **big), body, header="H")
        assert 5000 < len(text) <= CLAUDE_CODE_LIMIT
    assert len(PromptComposer(config.Config()).compose("session_start", ctx(**big), body)) <= 4000
    pack = PromptComposer(cfg).compose("mcp_context_pack", ctx(**big), body, max_chars=20_000)
    assert 10_000 < len(pack) <= 20_000  # not an injection: its own max_chars holds


def test_body_function_gets_the_room_left(composer: PromptComposer) -> None:
    seen: list[int] = []

    def body(room: int) -> str:
        seen.append(room)
        return "z" * (room + 50)  # overshoots: trimmed to whole lines, here none fit

    parts = composer.compose_parts("mcp_context_pack", ctx(), body, header="H", max_chars=1000)
    assert seen and seen[0] >= 500 and len(parts.text) <= 1000
    assert parts.blocks[-1].dropped == ["body"]


# ---- serialisation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain value", "k: plain value"),
        ("", 'k: ""'),
        ("  padded ", 'k: "  padded "'),
        ('"quoted"', 'k: "\\"quoted\\""'),
        ("bell\x07and\x1besc", 'k: "bell\\u0007and\\u001besc"'),
        (3, "k: 3"),
        (2.5, "k: 2.5"),
        (True, "k: true"),
        (["a.py", "b c.py"], 'k: ["a.py", "b c.py"]'),
        ({"line": 3, "text": "x"}, 'k: {"line": 3, "text": "x"}'),
        ("한국어 값", "k: 한국어 값"),
    ],
)
def test_single_line_values(value: object, expected: str) -> None:
    assert render_entry("k", value, 1200)[0] == expected


def test_multi_line_values_are_fenced_beyond_any_backticks_inside() -> None:
    text, _ = render_entry("selection", "def f():\r\n    return 1\r\n", 1200)
    assert text == "selection:\n```\ndef f():\n    return 1\n\n```"
    nasty = "before\n```python\ncode\n```\nafter ````` five"
    text, _ = render_entry("rules/AGENTS.md", nasty, 1200)
    fence = "`" * 6
    assert text.startswith(f"rules/AGENTS.md:\n{fence}\n") and text.endswith(f"\n{fence}")
    assert text[len(f"rules/AGENTS.md:\n{fence}\n") : -len(f"\n{fence}")] == nasty
    text, _ = render_entry("k", "a\nb\x00c", 1200)
    assert "b\\u0000c" in text


def test_awkward_keys_and_very_long_values() -> None:
    assert render_entry("we ird:key\n", "v", 100)[0] == "we_ird_key_: v"
    text, cut = render_entry("log", "word " * 1000, 200)
    assert len(text) <= 210 and cut > 4000 and text.endswith(f"… [+{cut} chars]")
    text, cut = render_entry("log", "line\n" * 1000, 200)
    assert "\n… [+" in text and text.endswith("```")


def test_serialize_round_trip_of_non_str_values() -> None:
    out = serialize({"a": 1, "b": None, "c": [1, {"d": "e"}], "e": False})
    assert out.splitlines() == ["a: 1", 'c: [1, {"d": "e"}]', "e: false"]
    assert json.loads(out.splitlines()[1][3:]) == [1, {"d": "e"}]
