"""What of an event gets a vector: all of its text in model-sized windows, and each sentence of a prompt.

A prompt often carries several unrelated things ("… can you suggest some recipes? By the way, I just
got a smoker today"). One vector for the whole prompt blurs them, so a later question about one of
them ("what kitchen appliance did I buy?") finds it only weakly. Each sentence of a user prompt
therefore gets a vector of its own too, and search takes an event's best vector.

Only prompts: they are short and say what the user wants and knows. Agent responses and tool output
are long; a vector per sentence there would multiply the index for little gain.

``SCHEME`` is part of every embedder's version, so changing how events are cut into passages
re-embeds a store cleanly instead of mixing the old cut with the new.
"""

from __future__ import annotations

import re
from typing import Any

SCHEME = "prompt-sentences-1"
MIN_WORDS = 4  # a shorter fragment ("Thanks!", "Hi.") joins its neighbour: alone it means little
MAX_SENTENCES = 16  # a prompt with more is mostly pasted text; the windows still cover all of it
MAX_CHARS = 600  # a longer "sentence" is a paste too, and the windows cover it

_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\n+")  # CJK full stops need no space after them
_ideographs: list[re.Pattern[str]] = []  # kana and Han, written without spaces; compiled on first use (~2 ms)


def _words(text: str) -> int:
    """About how many words: spaced words, plus one per two kana or Han characters."""
    if not text or max(text) < "\u3040":
        return len(text.split())
    if not _ideographs:
        _ideographs.append(re.compile(r"[\u3040-\u30ff\u3400-\u9fff]"))
    return len(text.split()) + len(_ideographs[0].findall(text)) // 2


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (short fragments merged into their neighbours); [] if there is only one."""
    out: list[str] = []
    for part in _BREAK.split(text):
        part = part.strip()
        if not part:
            continue
        if out and _words(out[-1]) < MIN_WORDS:
            out[-1] = f"{out[-1]} {part}"
        else:
            out.append(part)
    if len(out) > 1 and _words(out[-1]) < MIN_WORDS:
        last = out.pop()
        out[-1] = f"{out[-1]} {last}"
    if len(out) < 2:
        return []
    return [s for s in out if len(s) <= MAX_CHARS][:MAX_SENTENCES]


def passages(kind: str, text: str, embedder: Any) -> list[str]:
    """The texts to embed for one event, in a stable order (their position is the vector's chunk number)."""
    pieces = list(embedder.chunk(text) or [text])
    if kind == "user_prompt":
        pieces += sentences(text)
    return pieces
