"""Preferences learned from what the user told the agent: "always use pnpm here", "I prefer small
commits", "never push to main", "from now on write tests first". Stdlib only: the UserPromptSubmit
hook calls ``learn`` on every prompt.

No model and no LLM: a sentence of the user's own prompt that states a standing rule (a cue below,
not a question) is kept, newest first, deduplicated, at most ``context.learned_preferences`` of them,
as the persistent entry ``learnedPreferences`` — one line each, with the citation of the prompt it
came from. The prompt is stored after the privacy filter, and only that stored text is read here, so
nothing ``<private>`` or secret is learned. Forgetting the prompt forgets the preference (``prune``);
``memlane context unset learnedPreferences --persistent`` forgets them all.
"""

from __future__ import annotations

import re

from memlane.context.scope import ContextScope, PersistenceKind
from memlane.context.store import project_store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memlane.store.db import Event, Store

KEY = "learnedPreferences"
MIN_CHARS = 12
MAX_CHARS = 240  # a longer sentence is rarely a rule; it would also eat the persistent budget
SCAN_PROMPTS = 2000  # newest prompts read by ``relearn`` (after an import)

# A standing rule, not a one-off request: "always"/"never" said of how to work, a stated preference,
# "X instead of Y", or "from now on". One-off asks ("can you fix…", "I want you to…") are not cues.
_CUE = re.compile(
    r"""(?ix)
    ^(?:please\s+|and\s+|also\s+|but\s+)?(?:always|never|don'?t\s+ever|do\s+not\s+ever)\b
    | \b(?:i|we)\s+(?:always|never|prefer|would\s+rather|'d\s+rather)\b
    | \bmy\s+preference\s+is\b
    | \b(?:use|prefer|choose)\s+\S+(?:\s+\S+)?\s+(?:instead\s+of|rather\s+than)\b
    | \b(?:from\s+now\s+on|going\s+forward|as\s+a\s+rule)\b
    | \bin\s+this\s+(?:project|repo|repository|codebase)\b.{0,40}\b(?:always|never|use|prefer)\b
    """
)
_SENTENCE_END = re.compile(r"(?<=[.!;])\s+|\n+")
_LINE = re.compile(r"^- (?P<text>.*) \[(?P<cite>mem:[0-9a-z]{6,8})\]$")


def extract(text: str) -> list[str]:
    """The sentences of ``text`` that state a standing preference, in order."""
    found = []
    for raw in _SENTENCE_END.split(text):
        sentence = " ".join(raw.split()).strip("-*> ")
        if not MIN_CHARS <= len(sentence) <= MAX_CHARS or sentence.endswith("?") or "```" in sentence:
            continue
        if _CUE.search(sentence):
            found.append(sentence)
    return found


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def parse(value: object) -> list[tuple[str, str]]:
    """(sentence, citation) pairs of a stored ``learnedPreferences`` value; lines not in its form are dropped."""
    if not isinstance(value, str):
        return []
    return [(m["text"], m["cite"]) for line in value.splitlines() if (m := _LINE.match(line.strip()))]


def render(items: list[tuple[str, str]]) -> str:
    return "\n".join(f"- {text} [{cite}]" for text, cite in items)


def merge(current: list[tuple[str, str]], new: list[tuple[str, str]], limit: int) -> list[tuple[str, str]]:
    """``new`` (newest first) ahead of ``current``; a sentence said again moves up rather than repeating."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for text, cite in [*new, *current]:
        key = _norm(text)
        if key and key not in seen:
            seen.add(key)
            out.append((text, cite))
    return out[:limit]


def _remember(project_id: str, found: list[tuple[str, str]], limit: int) -> int:
    """Put ``found`` (newest first) ahead of what is known, under the file's lock (two sessions'
    prompts at once must not lose one's preference); returns how many are known afterwards."""
    ctx = project_store(project_id, ContextScope.APP, PersistenceKind.PERSISTENT)
    with ctx.lock():
        current = parse(ctx.snapshot().get(KEY))
        merged = merge(current, found, limit)
        if merged != current:
            ctx.put_all({KEY: render(merged)})
    return len(merged)


def learn(project_id: str, event: Event, limit: int) -> list[str]:
    """Learn from one stored user prompt; returns the sentences learned (usually none, and then nothing
    is read or written)."""
    if limit <= 0 or event.type != "user_prompt":
        return []
    sentences = extract(event.content)
    if sentences:
        _remember(project_id, [(s, event.cite) for s in sentences], limit)
    return sentences


def relearn(store: Store, project_id: str, limit: int) -> int:
    """Learn from the newest ``SCAN_PROMPTS`` prompts in the store (after an import); returns how many
    preferences are known afterwards. What was learned before is kept unless said again."""
    if limit <= 0:
        return 0
    found: list[tuple[str, str]] = []
    for event in store.history(types=["user_prompt"], limit=SCAN_PROMPTS):  # newest first
        found.extend((s, event.cite) for s in extract(event.content))
    return _remember(project_id, found, limit)


def prune(store: Store, project_id: str) -> int:
    """Drop preferences whose prompt is gone (forgotten); returns how many were dropped."""
    ctx = project_store(project_id, ContextScope.APP, PersistenceKind.PERSISTENT)
    with ctx.lock():
        current = parse(ctx.snapshot().get(KEY))
        kept = [(text, cite) for text, cite in current if store.get(cite) is not None]
        if len(kept) != len(current):
            ctx.put_all({KEY: render(kept)} if kept else {}, remove=[] if kept else [KEY])
    return len(current) - len(kept)
