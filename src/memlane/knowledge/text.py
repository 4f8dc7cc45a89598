"""Text helpers the knowledge rules share: canonical keys of entities, normalised lines, code fragments.

Code fragments are the retrieval rule's (``retrieval/select.fragments``, the same definition): settings with a
literal value (``pool_size=10``), identifiers that are dotted, snake_case, camelCase or carry a digit
(``date.today``, ``fromNow``, ``ACCESS_TOKEN_TTL``), and the module of an import. Plain words are too common to
say that a memory quotes a piece of code.
"""

from __future__ import annotations

import re
import unicodedata

from memlane.retrieval import select
from memlane.store.keys import canonical_key, sha256_hex

# ---- canonical keys ----------------------------------------------------------------------------------------

_LEADING = re.compile(r"^(?:the|a|an)\s+")


def title_key(text: str) -> str:
    """A title's canonical form (NFKC, casefold, no punctuation, one space, no leading article)."""
    return _LEADING.sub("", canonical_key(text))


def entity_key(entity_type: str, identifier: str) -> str:
    """The canonical key of an entity (task-entity-system §2.2, within one project's store)."""
    if entity_type == "task":
        return f"task:{title_key(identifier)}"
    if entity_type == "condition":
        return f"cond:{title_key(identifier)}"
    return f"{entity_type}:{identifier}"


def entity_id(entity_type: str, key: str) -> str:
    """A stable id from the first key an entity was created under: rebuilding gives the same ids."""
    prefix = {"task": "task-", "condition": "cond-", "artifact": "art-"}.get(entity_type, f"{entity_type}-")
    return prefix + sha256_hex(f"{entity_type}\x00{key}")[:10]


def stable_id(*parts: object) -> str:
    return sha256_hex("\x00".join(str(p) for p in parts))[:16]


# ---- lines -------------------------------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")
_ALNUM = re.compile(r"[^\W_]+")
MIN_LINE = 8  # a removed line shorter than this ("else:", "}") says nothing about which code it was


def squash(text: str) -> str:
    """Whitespace collapsed to one space, NFKC (so a line and its re-indented copy compare equal)."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def significant_lines(text: str) -> list[str]:
    """The lines of ``text`` that identify code: squashed, at least ``MIN_LINE`` characters and two words."""
    out = []
    for line in text.splitlines():
        line = squash(line)
        if len(line) >= MIN_LINE and len(_ALNUM.findall(line)) >= 2:
            out.append(line)
    return out


def words(text: str) -> list[str]:
    """Lower-case word tokens as the full-text index splits them (``[^\\W_]+``)."""
    return [w.lower() for w in _ALNUM.findall(text)]


# ---- code fragments: one definition, retrieval's (what an edit took out that a memory quotes) ----------------

fragments = select.fragments


_BOUNDARY = re.compile(r"[.!?](?=\s|$)|\n")


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of the sentences and lines of ``text`` (a decision or a task is said in one). A full stop
    ends a sentence only before a space or the end, so ``app/queue.py`` and ``v1.2`` stay whole."""
    out: list[tuple[int, int]] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        end = match.start() if match.group() == "\n" else match.end()
        _span(text, start, end, out)
        start = match.end()
    _span(text, start, len(text), out)
    return out


def _span(text: str, start: int, end: int, out: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end - start >= 3:
        out.append((start, end))
