"""Prompt composition: persistent block + volatile block + body, chosen per task type, within budgets.

Format (docs/context.md)::

    <header line>
    ## Project context (persistent)
    key: value
    rules/AGENTS.md:
    ```
    multi-line values go in a fence longer than any backtick run inside them
    ```
    ## Current state (volatile)
    workingDirectory: /abs/path
    ## <body title>
    <body lines>

Budgets: every block has a character budget (``[context]`` in the config); the whole text stays within
the task's total (``injection.max_chars`` for hooks) and never above Claude Code's 10,000-character cut.
Over budget, the lowest-priority entries are shortened or dropped, each time with a visible marker;
body lines are dropped whole from the end. A cut never splits a ``[mem:abc123]`` citation.

Stdlib only: the hooks compose with this.

Why one module (~550 lines): what the injected text looks like is decided here as a whole: task types,
how values are serialised and escaped, the fence rules, and how each block is fitted to its budget.
Reading one section without the others does not tell a reviewer what reaches the model. The sections
are marked (``# ---- task types``, ``serialisation``, ``budgets``).
"""

from __future__ import annotations

import json
import re

from memlane.context.scope import ContextError, ContextScope, PersistenceKind, RefreshStatus
from memlane.context.service import PromptContext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from memlane.config import Config

CLAUDE_CODE_LIMIT = 10_000  # hook additionalContext longer than this is cut to a preview by Claude Code
PERSISTENT_TITLE = "## Project context (persistent)"
VOLATILE_TITLE = "## Current state (volatile)"
MIN_ENTRY_CHARS = 48  # below this much room, an entry is dropped rather than shortened to a stub
MIN_BLOCK_CHARS = 64  # below this much room, a block is left out entirely

# Compiled on first use: most hook runs need none of them (~0.6 ms of start-up saved).
_PATTERNS = {
    "citation": r"\[?mem:[0-9a-z]{6,8}\]?",
    "control": r"[\x00-\x08\x0b-\x1f\x7f\u0085\u2028\u2029]",
    "key_unsafe": r"[^A-Za-z0-9_./@-]",
    "backticks": r"`+",
}
_compiled: dict[str, re.Pattern[str]] = {}
_KEY_SAFE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./@-")


def _re(name: str) -> re.Pattern[str]:
    pattern = _compiled.get(name)
    if pattern is None:
        pattern = _compiled[name] = re.compile(_PATTERNS[name])
    return pattern


def _has_control(text: str) -> bool:
    if text.replace("\n", "").replace("\t", "").isprintable():
        return False  # the common case, without a regex
    return _re("control").search(text) is not None


VOLATILE_ORDER = ("currentFile", "selection", "workingDirectory", "gitBranch", "filesTouched", "projectRoot")


# ---- task types --------------------------------------------------------------------------------


class TaskSpec:
    """Which blocks a task type uses and how.

    - ``persistent``: ``"always"``, ``"on_change"`` (only when the last refresh reloaded it) or ``"never"``.
    - ``volatile_scopes``: scopes merged into the volatile block, later ones overriding earlier ones.
    - ``require``: blocks of which at least one must have content, else the composition is empty
      (a hook with nothing new to say injects nothing).
    - ``hide_keys``: volatile keys the consumer knows already; ``hide_agent_loaded``: leave out rule
      files the agent loads itself (``context.agent_loaded_files``).
    - ``budget``: where the default total comes from: ``"injection"`` (``injection.max_chars``) or
      ``"context"`` (``context.max_total_chars``).
    """

    __slots__ = (
        "body_title",
        "budget",
        "description",
        "hide_agent_loaded",
        "hide_keys",
        "name",
        "persistent",
        "require",
        "volatile_scopes",
    )

    def __init__(
        self,
        name: str,
        description: str,
        *,
        persistent: str = "always",
        volatile_scopes: tuple[ContextScope, ...] = (ContextScope.APP, ContextScope.SESSION, ContextScope.LLM_TASK),
        require: tuple[str, ...] = (),
        body_title: str | None = None,
        hide_keys: tuple[str, ...] = (),
        hide_agent_loaded: bool = False,
        budget: str = "context",
    ) -> None:
        if persistent not in ("always", "on_change", "never"):
            raise ValueError(f"persistent must be always, on_change or never, not {persistent!r}")
        self.name = name
        self.description = description
        self.persistent = persistent
        self.volatile_scopes = volatile_scopes
        self.require = require
        self.body_title = body_title
        self.hide_keys = hide_keys
        self.hide_agent_loaded = hide_agent_loaded
        self.budget = budget


_HOOK_HIDDEN = ("projectRoot", "sessionId")
TASKS: dict[str, TaskSpec] = {}


def register_task(spec: TaskSpec) -> TaskSpec:
    """Add (or replace) a task type; this is all a new purpose needs."""
    TASKS[spec.name] = spec
    return spec


register_task(
    TaskSpec(
        "session_start",
        "Claude Code SessionStart: rules and progress, current state, where the last session left off.",
        require=("persistent", "body"),
        body_title="## Recent work",
        hide_keys=_HOOK_HIDDEN,
        hide_agent_loaded=True,
        budget="injection",
    )
)
register_task(
    TaskSpec(
        "prompt_injection",
        "Claude Code UserPromptSubmit: memories relevant to the prompt; rules again only when they changed.",
        persistent="on_change",
        require=("persistent", "body"),
        body_title=None,  # the body has a section per tier (capture.inject.hits_context)
        hide_keys=_HOOK_HIDDEN,
        hide_agent_loaded=True,
        budget="injection",
    )
)
register_task(
    TaskSpec(
        "mcp_context_pack",
        "MCP mem-context-pack: everything, for any client (rules Claude Code loads itself included).",
    )
)
register_task(
    TaskSpec("dashboard_preview", "What an agent would be given, for people to inspect.", body_title="## Body")
)
register_task(
    TaskSpec(
        "llm_task", "A prompt an editor or script builds: context blocks, then its own body.", body_title="## Task"
    )
)


def task(name: str) -> TaskSpec:
    spec = TASKS.get(name)
    if spec is None:
        raise ContextError(f"unknown task type {name!r} (one of: {', '.join(sorted(TASKS))})")
    return spec


# ---- serialisation -----------------------------------------------------------------------------


def value_text(value: Any) -> str:
    """A value as text: strings as they are; true/false; numbers; lists and objects as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))


def escape_controls(text: str) -> str:
    """Line endings to ``\\n``; other control characters (and Unicode line separators) as ``\\uXXXX``."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not _has_control(text):
        return text
    return _re("control").sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def safe_cut(text: str, limit: int) -> int:
    """An index ≤ ``limit`` to cut ``text`` at: after a line or word when one is near, and never
    inside a citation (``[mem:abc123]`` stays whole or goes whole)."""
    if limit >= len(text):
        return len(text)
    limit = max(0, limit)
    cut = limit
    newline = text.rfind("\n", 0, limit)
    if newline >= limit * 0.6:
        cut = newline
    else:
        space = text.rfind(" ", 0, limit)
        if space >= limit * 0.8:
            cut = space
    window = text[max(0, cut - 16) : cut + 16]
    if "mem:" not in window:
        return cut
    for match in _re("citation").finditer(text, max(0, cut - 16), min(len(text), cut + 16)):
        if match.start() < cut < match.end():
            cut = match.start()
    return cut


def shorten(text: str, limit: int) -> tuple[str, int]:
    """``text`` within ``limit`` characters, with a marker saying how much was left out."""
    if len(text) <= limit:
        return text, 0
    longest_marker = len(f"… [+{len(text)} chars]") + 1  # the count is at most len(text)
    cut = safe_cut(text, max(0, limit - longest_marker))
    left = len(text) - cut
    head = text[:cut].rstrip(" ")
    if not head:
        return f"… [+{left} chars]", left
    joint = "\n" if "\n" in head else " "
    return f"{head}{joint}… [+{left} chars]", left


def render_entry(key: str, value: Any, limit: int) -> tuple[str, int]:
    """One ``key: value`` entry (a fenced block for multi-line values); returns (text, chars cut)."""
    name = key if key and _KEY_SAFE_CHARS.issuperset(key) else (_re("key_unsafe").sub("_", key) or "_")
    raw = value_text(value).replace("\r\n", "\n").replace("\r", "\n")
    if "\n" not in raw and _has_control(raw):  # one line: a JSON string says it unambiguously
        text, cut = shorten(raw, limit)
        return f"{name}: {json.dumps(text, ensure_ascii=False)}", cut
    text, cut = shorten(escape_controls(raw), limit)
    if "\n" in text:
        longest = max((len(run) for run in _re("backticks").findall(text)), default=0) if "`" in text else 0
        fence = "`" * max(3, longest + 1)
        return f"{name}:\n{fence}\n{text}\n{fence}", cut
    if not text or text != text.strip() or text.startswith('"'):
        return f"{name}: {json.dumps(text, ensure_ascii=False)}", cut
    return f"{name}: {text}", cut


def serialize(entries: dict[str, Any], max_value_chars: int = 100_000) -> str:
    """Entries as ``key: value`` lines, in the given order; ``None`` values are left out."""
    return "\n".join(render_entry(k, v, max_value_chars)[0] for k, v in entries.items() if v is not None)


# ---- budgets -----------------------------------------------------------------------------------


class Block:
    """One composed block and what the budget did to it."""

    __slots__ = ("budget", "dropped", "included", "name", "shortened", "text")

    def __init__(self, name: str, budget: int) -> None:
        self.name = name
        self.budget = budget
        self.text = ""
        self.included: list[str] = []
        self.dropped: list[str] = []
        self.shortened: list[str] = []

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "chars": len(self.text),
            "budget": self.budget,
            "included": self.included,
            "dropped": self.dropped,
            "shortened": self.shortened,
        }


def _left_out(dropped: list[str]) -> str:
    names = ", ".join(dropped[:3]) + (f" (+{len(dropped) - 3} more)" if len(dropped) > 3 else "")
    marker = f"… left out to fit the budget: {names}"
    return marker if len(marker) <= 96 else f"… left out to fit the budget: {len(dropped)} entries"


def fit_block(name: str, title: str, entries: list[tuple[str, Any]], budget: int, max_value: int) -> Block:
    """``title`` and as many entries (highest priority first) as fit in ``budget`` characters.

    An entry that does not fit is shortened to the room left (if that leaves a useful amount) or
    dropped; dropped entries are named on a final marker line.
    """
    block = Block(name, budget)
    entries = [(k, v) for k, v in entries if v is not None]
    if not entries:
        return block
    if budget < MIN_BLOCK_CHARS:
        block.dropped = [k for k, _ in entries]
        return block
    taken: list[tuple[str, str]] = []
    used = len(title)
    for index, (key, value) in enumerate(entries):
        text, cut = render_entry(key, value, max_value)
        room = budget - used - 1
        if len(text) > room:  # shortened or dropped; either way leave room for the marker of what follows
            later = block.dropped + [k for k, _ in entries[index + 1 :]]
            room -= len(_left_out(later)) + 1 if later else 0
        if len(text) > room and room >= MIN_ENTRY_CHARS:
            limit = max_value
            while len(text) > room and limit > 8:
                limit = max(8, limit - (len(text) - room))
                text, cut = render_entry(key, value, limit)
        if len(text) <= room:
            taken.append((key, text))
            used += len(text) + 1
            if cut:
                block.shortened.append(key)
        else:
            block.dropped.append(key)
    while block.dropped and taken and used + 1 + len(_left_out(block.dropped)) > budget:
        key, text = taken.pop()
        used -= len(text) + 1
        block.dropped.insert(0, key)
        if key in block.shortened:
            block.shortened.remove(key)
    if not taken:
        block.dropped = [k for k, _ in entries]
        return block
    lines = [title, *(text for _, text in taken)]
    if block.dropped and used + 1 + len(_left_out(block.dropped)) <= budget:
        lines.append(_left_out(block.dropped))
    block.text = "\n".join(lines)
    block.included = [k for k, _ in taken]
    return block


def fit_lines(text: str, budget: int) -> tuple[str, int]:
    """Whole lines of ``text`` from the top within ``budget``; a marker says how many were left out."""
    if len(text) <= budget:
        return text, 0
    lines = text.split("\n")
    out: list[str] = []
    used = 0
    for line in lines:
        cost = len(line) + (1 if out else 0)
        if used + cost > budget:
            break
        out.append(line)
        used += cost
    left = len(lines) - len(out)

    def marker(n: int) -> str:
        return f"… (+{n} more line{'s' if n != 1 else ''} left out to fit the budget)"

    while out and used + 1 + len(marker(left)) > budget:
        used -= len(out.pop()) + (1 if out else 0)
        left += 1
    if not out:
        return "", len(lines)
    return "\n".join([*out, marker(left)]), left


# ---- the composer ------------------------------------------------------------------------------


class Composition:
    """The composed text and, per block, what was included, shortened and dropped."""

    __slots__ = ("blocks", "budget", "task", "text")

    def __init__(self, task: str, text: str, blocks: list[Block], budget: int) -> None:
        self.task = task
        self.text = text
        self.blocks = blocks
        self.budget = budget

    def as_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "prompt": self.text,
            "chars": len(self.text),
            "budget": self.budget,
            "blocks": [b.as_dict() for b in self.blocks],
        }


class PromptComposer:
    """Final prompt = persistent block + volatile block + body, per task type (``TASKS``)."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg

    def total_budget(self, spec: TaskSpec, max_chars: int | None) -> int:
        """Injections: ``max_chars`` or ``injection.max_chars``, never above ``context.max_total_chars``
        nor Claude Code's 10,000. Other tasks: ``max_chars`` when given, else ``context.max_total_chars``."""
        cap = min(self.cfg.context.max_total_chars, CLAUDE_CODE_LIMIT)
        if spec.budget == "injection":
            return max(0, min(self.cfg.injection.max_chars if max_chars is None else max_chars, cap))
        return max(0, cap if max_chars is None else max_chars)

    def compose(
        self,
        task_type: str,
        context: Any,
        body: str | Callable[[int], str] = "",
        *,
        header: str = "",
        max_chars: int | None = None,
    ) -> str:
        """The prompt text for ``task_type`` (see ``compose_parts``); '' when there is nothing to say."""
        return self.compose_parts(task_type, context, body, header=header, max_chars=max_chars).text

    def compose_parts(
        self,
        task_type: str,
        context: Any,
        body: str | Callable[[int], str] = "",
        *,
        header: str = "",
        max_chars: int | None = None,
        body_title: str | None = None,
    ) -> Composition:
        """Compose ``header``, the blocks ``task_type`` selects from ``context`` and ``body``.

        ``context`` is a ``PromptContext``, anything with ``context_for_prompt()`` (an
        ``AppContextService``) or None. ``body`` is text (lines are dropped from the end to fit) or a
        function given the characters left for it that returns text within them. ``body_title`` replaces
        the task's title for the body (a caller's own text is not "## Relevant memories").
        """
        spec = task(task_type)
        total = self.total_budget(spec, max_chars)
        snap = _snapshot(context)
        ctx = self.cfg.context
        header = shorten(header, total)[0] if header else ""
        used = len(header)
        body_text = body if isinstance(body, str) else None
        if body_text is not None and not body_text.strip():
            body_text, body = "", ""
        title = spec.body_title if body_title is None else body_title
        wants_body = body_text is None or bool(body_text)
        body_need = total if body_text is None else len(body_text) + (len(title) + 1 if title else 0)
        reserve = min(body_need, total // 2) if wants_body else 0
        room = total - used - reserve
        blocks: list[Block] = []
        if ctx.enabled:
            for name, title_, entries, budget in (
                ("persistent", PERSISTENT_TITLE, self._persistent(spec, snap), ctx.persistent_chars),
                ("volatile", VOLATILE_TITLE, self._volatile(spec, snap), ctx.volatile_chars),
            ):
                block = fit_block(name, title_, entries, min(budget, room - 1), ctx.max_value_chars)
                blocks.append(block)
                if block.text:
                    room -= len(block.text) + 1
                    used += len(block.text) + 1
        body_block = Block("body", 0)
        if wants_body:
            space = total - used - (1 if used else 0)
            if ctx.body_chars:
                space = min(space, ctx.body_chars)
            inner = space - (len(title) + 1 if title else 0)
            body_block.budget = max(0, space)
            if inner > 0:
                if body_text is None:
                    text = body(inner) if callable(body) else ""
                    if len(text) > inner:  # a body function that overshot: whole lines only
                        text, _ = fit_lines(text, inner)
                else:
                    text, left = fit_lines(body_text, inner)
                    if left:
                        body_block.shortened.append(f"{left} line(s)")
                if text.strip():
                    body_block.text = f"{title}\n{text}" if title else text
                    body_block.included.append("body")
            if not body_block.text:
                body_block.dropped.append("body")
        blocks.append(body_block)
        present = {b.name for b in blocks if b.text}
        if spec.require and not present.intersection(spec.require):
            return Composition(spec.name, "", blocks, total)
        text = "\n".join(part for part in (header, *(b.text for b in blocks)) if part)
        if len(text) > total:  # defensive: the arithmetic above keeps within budget
            text, _ = fit_lines(text, total)
        return Composition(spec.name, text, blocks, total)

    # ---- entries per block ---------------------------------------------------------------------

    def _persistent(self, spec: TaskSpec, snap: PromptContext) -> list[tuple[str, Any]]:
        if spec.persistent == "never":
            return []
        if spec.persistent == "on_change" and snap.status is not RefreshStatus.RELOADED:
            return []
        hidden: set[str] = set()
        if spec.hide_agent_loaded:
            hidden = {"rules/" + f.strip().strip("/") for f in self.cfg.context.agent_loaded_files}
        rule_order = {"rules/" + f.strip().strip("/"): i for i, f in enumerate(self.cfg.context.rule_files)}

        def rank(item: tuple[int, tuple[str, Any]]) -> tuple[int, int, int]:
            index, (key, _value) = item
            if key == "preferences":
                return (0, 0, index)
            if key == "learnedPreferences":
                return (0, 1, index)
            if key == "workflowProgress":
                return (2, 0, index)
            if key.startswith("rules/"):
                base = next((r for r in rule_order if key == r or key.startswith(r + "/")), None)
                return (3, rule_order[base] if base is not None else len(rule_order), index)
            if key.startswith("layer/"):
                return (1, 1, index)
            return (1, 0, index)  # what the user set by hand comes right after preferences

        items = [(k, v) for k, v in snap.persistent.items() if k not in hidden]
        # The Layer scope's entries, when the composition names a layer: after what the user set by hand.
        items += [(f"layer/{snap.layer_name}/{k}", v) for k, v in snap.layer.items()]
        return [kv for _, kv in sorted(enumerate(items), key=rank)]

    def _volatile(self, spec: TaskSpec, snap: PromptContext) -> list[tuple[str, Any]]:
        merged: dict[str, Any] = {}
        layers = snap.snapshots()
        for scope in spec.volatile_scopes:
            merged.update(layers.get((scope, PersistenceKind.VOLATILE)) or {})
        for key in spec.hide_keys:
            merged.pop(key, None)
        first = [(k, merged.pop(k)) for k in VOLATILE_ORDER if k in merged]
        return first + list(merged.items())


def _snapshot(context: Any) -> PromptContext:
    if context is None:
        return PromptContext()
    if isinstance(context, PromptContext):
        return context
    getter = getattr(context, "context_for_prompt", None)
    if getter is None:
        raise ContextError("context must be a PromptContext or have context_for_prompt()")
    snap = getter()
    if not isinstance(snap, PromptContext):
        raise ContextError("context_for_prompt() must return a PromptContext")
    return snap
