"""Decisions read from prompts and answers: what was chosen, what was replaced or removed, on which subject.

Rules, not a model, so they are precise rather than complete:

- a replacement: "switch the task queue from Celery to RQ", "migrated from X to Y", "moved X from A to B",
  "replace X with Y", "use Y instead of X" → X removed, Y introduced, the subject ("task queue") if named;
- a removal: "remove Celery", "drop X", "get rid of X", "no longer use X" → X removed;
- a choice: "we picked X", "chose X", "went with X", "settled on X", "decided on X", "decided to use X" → X
  introduced;
- any other sentence that says it is a decision ("Decision: …", "we decided …", "the decision is …") is kept as a
  decision entry without a subject.

X and Y are one name each (a library, a tool: ``Celery``, ``date-fns``, ``Node``); articles, pronouns and other
common words are not names. What a decision removes only matters where an earlier exchange *introduced* the same
name (an import, an install, a choice): the resolution rules check that, so "drop the table" retires nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memlane.knowledge.text import sentences, title_key
from memlane.store.db import Event

_END = r"(?=[\s.,;:!?)]|$)"
_NAME = r"[`\"']?(?P<{g}>[A-Za-z][\w.+@/-]{{0,40}}?)[`\"']?"
_OLD, _NEW = _NAME.format(g="old"), _NAME.format(g="new")
_SUBJECT = r"(?:the |our |a )?(?P<subject>[A-Za-z][\w -]{1,40}?)"
_REPLACE = [
    re.compile(rf"\bswitch(?:ed|ing|es)?\s+(?:{_SUBJECT}\s+)?from\s+{_OLD}\s+to\s+{_NEW}{_END}", re.I),
    re.compile(rf"\b(?:migrat\w*|mov(?:e|ed|es|ing))\s+(?:{_SUBJECT}\s+)?from\s+{_OLD}\s+to\s+{_NEW}{_END}", re.I),
    re.compile(rf"\breplac(?:e|ed|es|ing)\s+{_OLD}\s+(?:with|by)\s+{_NEW}{_END}", re.I),
    re.compile(rf"\buse\s+{_NEW}\s+instead\s+of\s+{_OLD}{_END}", re.I),
]
_REMOVE = re.compile(
    rf"\b(?:remove|removed|removing|drop|dropped|dropping|get rid of|got rid of|no longer use)\s+{_OLD}{_END}", re.I
)
_CHOOSE = re.compile(
    r"\b(?:picked|chose|chosen|went with|go with|settled on|decided on|decided to use|decision is to use)"
    rf"\s+{_NEW}{_END}",
    re.I,
)
_DECISION = re.compile(r"^\s*(?:decision\s*:|we\s+decided\b|(?:the\s+)?decision\s+(?:is|was)\b|decided\s*:)", re.I)
_NOT_NAMES = {
    "a",
    "an",
    "the",
    "it",
    "this",
    "that",
    "these",
    "those",
    "them",
    "its",
    "our",
    "my",
    "your",
    "their",
    "his",
    "her",
    "we",
    "you",
    "they",
    "all",
    "any",
    "some",
    "one",
    "each",
    "every",
    "old",
    "new",
    "now",
    "then",
    "to",
    "from",
    "with",
    "by",
    "in",
    "on",
    "of",
    "for",
    "and",
    "or",
    "not",
    "no",
    "yes",
    "there",
    "here",
    "what",
    "which",
    "who",
    "whom",
    "how",
    "why",
    "when",
    "where",
    "both",
    "either",
    "neither",
    "other",
    "others",
    "local",
    "remote",
    "default",
    "disk",
    "file",
    "files",
    "code",
    "line",
    "lines",
    "test",
    "tests",
    "table",
    "column",
    "row",
    "rows",
    "step",
    "steps",
    "check",
    "checks",
    "part",
    "parts",
    "use",
    "using",
}


@dataclass
class Decision:
    start: int
    end: int
    quote: str
    removes: list[str] = field(default_factory=list)
    introduces: list[str] = field(default_factory=list)
    subject: str | None = None


def _name(raw: str | None) -> str | None:
    if not raw:
        return None
    name = raw.strip("`\"'.,;:!?()").lower()
    if not name or name in _NOT_NAMES or len(name) < 2:
        return None
    return name


def decisions(event: Event) -> list[Decision]:
    """The decisions a prompt or an answer states, one per sentence (see the module note)."""
    if event.type not in ("user_prompt", "agent_response"):
        return []
    text = event.content
    out: list[Decision] = []
    for start, end in sentences(text):
        sentence = text[start:end]
        found = Decision(start, end, sentence)
        for pattern in _REPLACE:
            for m in pattern.finditer(sentence):
                old, new = _name(m.group("old")), _name(m.group("new"))
                if old and new and old != new:
                    found.removes.append(old)
                    found.introduces.append(new)
                    subject = m.groupdict().get("subject")
                    if subject and title_key(subject) and title_key(subject).split()[0] not in _NOT_NAMES:
                        found.subject = found.subject or title_key(subject)
        for m in _REMOVE.finditer(sentence):
            old = _name(m.group("old"))
            if old and old not in found.removes and old not in found.introduces:
                found.removes.append(old)
        for m in _CHOOSE.finditer(sentence):
            new = _name(m.group("new"))
            if new and new not in found.introduces and new not in found.removes:
                found.introduces.append(new)
        if found.removes or found.introduces or found.subject or _DECISION.search(sentence):
            out.append(found)
    return out
