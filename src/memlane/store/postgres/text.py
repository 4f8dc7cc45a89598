"""Full text for PostgreSQL: the words of an event as a ``tsvector``, a query as a ``tsquery``, CJK trigrams.

The words are cut here, not by PostgreSQL's parser, so both backends index the same words: letters and
digits (``[^\\W_]+``), lower-cased, diacritics removed — what SQLite's ``unicode61 remove_diacritics 2``
tokenizer keeps and what retrieval scores with. The vector is written in ``tsvector``'s input form with
positions (``'pool':1 'manager':2``), so phrases (``pool_manager.py`` → ``'pool' <-> 'manager' <-> 'py'``)
match on adjacent words whatever the server's locale or text-search configuration.

Korean, Chinese and Japanese text has no spaces between words: as SQLite's trigram index, a CJK event also
gets the set of its lower-cased character trigrams (a GIN-indexed ``text[]``), which query trigrams overlap.
"""

from __future__ import annotations

import re
import unicodedata

_TOKEN = re.compile(r"[^\W_]+")
MAX_POSITION = 16383  # tsvector positions stop here (later ones are clamped by PostgreSQL)
MAX_POSITIONS = 256  # per lexeme, as PostgreSQL keeps at most
MAX_LEXEME_BYTES = 2046
MAX_VECTOR_BYTES = 900_000  # a tsvector must stay under 1 MB: a pasted multi-megabyte log is indexed in part
MAX_GRAMS = 20_000


def fold(token: str) -> str:
    """Without diacritics (café → cafe), as the word index stores it."""
    if token.isascii():
        return token
    return "".join(ch for ch in unicodedata.normalize("NFD", token) if not unicodedata.combining(ch))


def words(text: str) -> list[str]:
    """The indexed words of ``text``, in order."""
    return [fold(t) for t in _TOKEN.findall(text.lower())]


def quote(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector(text: str) -> tuple[str, int]:
    """(the ``tsvector`` literal of ``text``'s words with their positions, how many words there are)."""
    found = words(text)
    positions: dict[str, list[int]] = {}
    size = 0
    for n, word in enumerate(found, start=1):
        if len(word.encode()) > MAX_LEXEME_BYTES:
            continue
        slot = positions.get(word)
        if slot is None:
            size += len(word.encode()) + 16
            if size > MAX_VECTOR_BYTES:
                break
            positions[word] = slot = []
        if len(slot) < MAX_POSITIONS:
            slot.append(min(n, MAX_POSITION))
    literal = " ".join(f"{quote(w)}:{','.join(map(str, sorted(set(p))))}" for w, p in positions.items())
    return literal, len(found)


def phrase(tokens: list[str]) -> str:
    """A ``tsquery`` for adjacent words (one word is itself)."""
    return " <-> ".join(quote(t) for t in tokens)


def grams(text: str) -> list[str]:
    """The distinct lower-cased character trigrams of ``text`` (SQLite's trigram tokenizer folds case too)."""
    low = text.lower()
    out: dict[str, None] = {}
    for i in range(len(low) - 2):
        gram = low[i : i + 3]
        if not any(ch.isspace() for ch in gram):  # query trigrams never hold a space
            out[gram] = None
            if len(out) >= MAX_GRAMS:
                break
    return list(out)
