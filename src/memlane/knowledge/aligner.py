"""The evidence aligner (evidence-aligner-v2): a quoted span found in its source text, or not.

An extractor — memlane's rules here, an LLM later (issue 33) — hands over only *quotes*; the pipeline computes
where each one is, in three steps:

1. **exact**: the quote is a substring of the source (confidence 1.0);
2. **normalised**: equal after collapsing whitespace and case (0.95), mapped back to the original offsets;
3. **fuzzy**: the source's substring with the fewest edits (Levenshtein, infix alignment), accepted when
   ``1 - edits / len(quote) >= threshold`` (0.85 by default).

A quote that none of them places is unaligned, and ``check_stage`` refuses to make such a claim *verified*.

The fuzzy step uses **edlib** (Myers' bit-vector algorithm in C++, 1.3 MB installed): its ``HW`` mode is exactly
"the best-matching substring of the source by edit distance", with the span. rapidfuzz would do it too but
takes 12 MB installed, and the default install must stay within 400 MB (it was 393.9 MB). edlib compares
symbols of an alphabet of at most 256, so the text is mapped to bytes: each character of the quote gets its own
code and every other character of the source one shared code that matches nothing — the distance is the same.
Without edlib (a Python without its wheel) the fuzzy step is skipped: quotes still align exactly or normalised.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from memlane.errors import InputError
from memlane.store.keys import sha256_hex

THRESHOLD = 0.85
STAGES = ("raw", "working", "candidate", "verified", "certified")
NEEDS_EVIDENCE = ("verified", "certified")


class UnalignedEvidence(InputError):
    """A claim without aligned evidence was asked to become verified."""


@dataclass
class Alignment:
    quote: str
    method: str  # exact | normalized | fuzzy | none
    start: int | None = None
    end: int | None = None
    confidence: float = 0.0
    message_index: int = 0
    quote_hash: str = field(default="")

    def __post_init__(self) -> None:
        if not self.quote_hash:
            self.quote_hash = sha256_hex(self.quote)

    @property
    def aligned(self) -> bool:
        return self.method != "none"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AlignResult:
    evidence_aligned: bool
    aligned: list[Alignment]
    failed: list[str]


def normalize(text: str) -> tuple[str, list[int]]:
    """``text`` with whitespace runs as one space, NFKC and case-folded, and for each of its characters the
    offset in ``text`` it came from (so a match is mapped back to the original span)."""
    out: list[str] = []
    where: list[int] = []
    space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            space = bool(out)
            continue
        if space:
            out.append(" ")
            where.append(i - 1)
            space = False
        for piece in unicodedata.normalize("NFKC", ch).casefold():
            out.append(piece)
            where.append(i)
    return "".join(out), where


def align(quote: str, source: str, threshold: float = THRESHOLD, message_index: int = 0) -> Alignment:
    """Where ``quote`` is in ``source``: exact, then normalised, then fuzzy; ``method='none'`` if nowhere."""
    if not quote.strip():
        return Alignment(quote, "none", message_index=message_index)
    at = source.find(quote)
    if at >= 0:
        return Alignment(quote, "exact", at, at + len(quote), 1.0, message_index)
    q, _ = normalize(quote)
    s, where = normalize(source)
    if not q or not s:
        return Alignment(quote, "none", message_index=message_index)
    at = s.find(q)
    if at >= 0:
        return Alignment(quote, "normalized", where[at], where[at + len(q) - 1] + 1, 0.95, message_index)
    found = _fuzzy(q, s)
    if found is not None:
        start, end, edits = found
        confidence = round(1 - edits / len(q), 4)
        if confidence >= threshold:
            return Alignment(quote, "fuzzy", where[start], where[end - 1] + 1, confidence, message_index)
    return Alignment(quote, "none", message_index=message_index)


def _fuzzy(quote: str, source: str) -> tuple[int, int, int] | None:
    """(start, end, edits) of the substring of ``source`` closest to ``quote`` by edit distance, or None."""
    try:
        import edlib
    except ImportError:
        return None
    codes: dict[str, int] = {}
    for ch in quote:
        if ch not in codes:
            if len(codes) >= 255:
                return None  # a quote of more than 255 distinct characters: no fuzzy step
            codes[ch] = len(codes) + 1
    q = bytes(codes[ch] for ch in quote)
    s = bytes(codes.get(ch, 0) for ch in source)
    result = edlib.align(q, s, mode="HW", task="locations")
    locations = result.get("locations") or []
    if result.get("editDistance", -1) < 0 or not locations:
        return None
    start, last = locations[0]
    if start is None:
        return None
    return int(start), int(last) + 1, int(result["editDistance"])


def align_all(
    evidence: Sequence[tuple[int, str]], messages: Sequence[str], threshold: float = THRESHOLD
) -> AlignResult:
    """Align each ``(message index, quote)`` in its message. ``evidence_aligned``: there was evidence and every
    quote was placed (a quote naming a message that does not exist is a miss)."""
    done: list[Alignment] = []
    failed: list[str] = []
    for index, quote in evidence:
        if 0 <= index < len(messages):
            result = align(quote, messages[index], threshold, index)
        else:
            result = Alignment(quote, "none", message_index=index)
        done.append(result)
        if not result.aligned:
            failed.append(quote)
    return AlignResult(bool(done) and not failed, done, failed)


def check_stage(stage: str, evidence_aligned: bool) -> str:
    """``stage`` if an entry with this evidence may have it; an unaligned claim is never verified or certified."""
    if stage not in STAGES:
        raise InputError(f"unknown stage '{stage}' (one of: {', '.join(STAGES)})")
    if stage in NEEDS_EVIDENCE and not evidence_aligned:
        raise UnalignedEvidence(f"cannot make it {stage}: its evidence is not aligned with its source")
    return stage
