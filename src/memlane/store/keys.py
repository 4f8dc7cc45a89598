"""Identifiers derived from events: ids, canonical keys, dedupe keys, citations. Stdlib only.

- Event ids sort by creation time (millisecond prefix + randomness), so ``ORDER BY id`` is chronological.
- Canonical keys follow the reference (NFKC, casefold, punctuation stripped, whitespace collapsed;
  keys over 200 characters are cut and suffixed with a hash so they stay unique).
- Dedupe keys make a hook delivered twice store once while the same words typed twice store twice:
  they combine session, event type, the turn's identity (``prompt_id`` / ``tool_use_id`` when Claude
  Code sends them) and a hash of the content.
- Citations are six base-36 characters derived from the event id; collisions take the next candidate.
"""

from __future__ import annotations

import os
import re
import time
import unicodedata

try:  # the builtin hash modules: hashlib would load OpenSSL, ~3 ms of hook start-up
    from _md5 import md5
    from _sha256 import sha256
except ImportError:  # pragma: no cover - builds without them
    from hashlib import md5, sha256

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

MAX_KEY_LENGTH = 200
_PUNCT = re.compile(r"[^\w\s]|_", re.UNICODE)
_SPACE = re.compile(r"\s+")
# Hangul, Hiragana/Katakana, CJK ideographs (+ extension A), Hangul Jamo, halfwidth forms. Compiled on
# first use: this character class takes 3–11 ms to compile (a hook's whole budget is ~45 ms), and most text
# never needs it.
_CJK_PATTERN = r"[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff66-\uff9f]"
_cjk: list[re.Pattern[str]] = []
_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def new_event_id(ts_ms: int | None = None) -> str:
    ms = int(time.time() * 1000) if ts_ms is None else ts_ms
    return f"{ms:012x}{os.urandom(10).hex()}"


def now_iso() -> str:
    return iso(time.time())


def iso(t: float) -> str:
    """``t`` (seconds since the epoch) in the stored form, UTC with milliseconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def canonical_key(text: str) -> str:
    normalized = unicodedata.normalize("NFKC", text).casefold()
    normalized = _SPACE.sub(" ", _PUNCT.sub("", normalized)).strip()
    if len(normalized) > MAX_KEY_LENGTH:
        digest = md5(normalized.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        normalized = normalized[: MAX_KEY_LENGTH - 9] + "_" + digest
    return normalized


def sha256_hex(text: str) -> str:
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def content_hash(text: str) -> str:
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def dedupe_key(session_id: str, event_type: str, turn: str, content: str) -> str:
    """``turn`` identifies the delivery (prompt_id, tool_use_id, a time bucket); see module doc."""
    return f"{session_id}:{event_type}:{turn}:{content_hash(content)}"


def _cjk_re() -> re.Pattern[str]:
    if not _cjk:
        _cjk.append(re.compile(_CJK_PATTERN))
    return _cjk[0]


def has_cjk(text: str) -> bool:
    if not text or max(text) < "\u1100":  # C-speed scan: Latin-only text never compiles the pattern
        return False
    return _cjk_re().search(text) is not None


def cjk_count(text: str) -> int:
    """How many Hangul, kana and CJK ideograph characters ``text`` holds (0 without compiling for Latin text)."""
    if not text or max(text) < "\u1100":
        return 0
    return len(_cjk_re().findall(text))


def _b36(number: int, width: int) -> str:
    out = []
    for _ in range(width):
        number, rem = divmod(number, 36)
        out.append(_B36[rem])
    return "".join(out)


CITATION_LENGTHS = (6, 7, 8)  # citations.id_length: 6 by default; existing citations keep theirs
CITATION_CHARS = r"[0-9a-z]{6,8}"


def citation_candidates(event_id: str, length: int = 6) -> Iterator[str]:
    """Candidate citations for an event, best first; endless, so a free one is always found."""
    salt = 0
    while True:
        digest = sha256(f"{event_id}:{salt}".encode()).digest()
        yield _b36(int.from_bytes(digest[:8], "big"), length)
        salt += 1


_CITATION = re.compile(rf"^\[?(?:mem:)?({CITATION_CHARS})\]?$")


def parse_citation(ref: str) -> str | None:
    """``mem:abc123``, ``[mem:abc123]`` → ``abc123``; anything else → None. Bare (without ``mem:``) only 6 or 7
    characters: 8 or more may be an event id's prefix."""
    match = _CITATION.match(ref.strip().lower())
    return match.group(1) if match and ("mem:" in ref.lower() or len(ref.strip()) in (6, 7)) else None


_CITED: list[re.Pattern[str]] = []  # compiled on first use: the hooks import this module, few of them need it
MAX_CITED = 50  # an answer citing more than this is listing, not citing


def citations_in(text: str) -> list[str]:
    """The citations a text names (``[mem:abc123]``, ``mem:abc123``), without ``mem:``, in order, each once."""
    if "mem:" not in text and "MEM:" not in text.upper():
        return []
    if not _CITED:
        _CITED.append(re.compile(rf"\bmem:({CITATION_CHARS})(?![0-9a-z])", re.IGNORECASE))
    found = dict.fromkeys(m.group(1).lower() for m in _CITED[0].finditer(text))
    return list(found)[:MAX_CITED]
