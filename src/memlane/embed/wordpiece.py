"""BERT's WordPiece tokenizer in pure Python: the ``tokenizer.json`` of all-MiniLM-L6-v2 without the Rust library.

It does what Hugging Face ``tokenizers`` does for a ``BertNormalizer`` + ``BertPreTokenizer`` + ``WordPiece``
tokenizer, step by step, with the character offsets it reports (``chunk`` cuts texts on them):

1. special tokens written in the text (``[SEP]``, ``[MASK]`` …) are matched first, on the raw text;
2. normalise: drop NUL, U+FFFD and control/format characters, turn whitespace into spaces, put spaces around
   CJK ideographs, strip accents (NFD, then drop non-spacing marks) and lower-case, one character at a time;
3. split on whitespace and make every punctuation character a word of its own;
4. split each word greedily into the longest vocabulary pieces (``##`` after the first); a word with a
   piece missing, or over ``max_input_chars_per_word`` characters, becomes ``[UNK]``.

``tests/embed/test_wordpiece.py`` checks ids and offsets against the Rust tokenizer on real and generated text.
One known difference: the Rust library classifies characters with an old Unicode table, so a character that
Unicode assigned later (a recent emoji, say) is dropped there and is ``[UNK]`` here; the vector barely moves.

Replacing the library keeps ``tokenizers`` and what it pulls in (huggingface_hub, hf_xet, PyYAML, fsspec,
filelock: ~32 MB) out of the default install.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from typing import Any


class UnsupportedTokenizer(ValueError):
    """A ``tokenizer.json`` that is not a plain BERT WordPiece one."""


_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),  # sic: the Rust library starts here, not at BERT's 0x2B820
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
# ASCII characters BertNormalizer drops: controls other than tab, newline and carriage return (VT and FF too).
_ASCII_DROPPED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ASCII_WORDS = re.compile(r"[a-z0-9]+|[^a-z0-9\t\n\r ]")
_WORD_CACHE_SIZE = 50_000
# Control, format, private-use and surrogate characters are dropped; unassigned ones (Cn) are kept, as the Rust
# library keeps them (they become [UNK]).
_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs"})

# Character classes after normalisation.
_SPACE, _PUNCT, _WORD = 0, 1, 2


@lru_cache(maxsize=8192)
def _normalise_char(ch: str, lowercase: bool, strip_accents: bool, chinese: bool) -> str:
    """What BertNormalizer turns one character into ("" when it drops it)."""
    code = ord(ch)
    if ch in "\t\n\r ":
        return " "
    if code == 0 or code == 0xFFFD or unicodedata.category(ch) in _DROPPED_CATEGORIES:
        return ""
    if ch.isspace():
        return " "
    out = ch
    if chinese and any(lo <= code <= hi for lo, hi in _CJK):
        out = " " + ch + " "  # then decomposed like any other (CJK compatibility ideographs have an NFD form)
    if strip_accents:
        out = "".join(c for c in unicodedata.normalize("NFD", out) if unicodedata.category(c) != "Mn")
    if lowercase:
        out = "".join(c.lower() for c in out)
    return out


@lru_cache(maxsize=8192)
def _char_class(ch: str) -> int:
    if ch.isspace():
        return _SPACE
    if (ch.isascii() and not ch.isalnum() and ch.isprintable()) or unicodedata.category(ch)[0] == "P":
        return _PUNCT
    return _WORD


class WordPiece:
    """Ids and character offsets of a text, as ``tokenizers.Tokenizer.encode`` gives them."""

    def __init__(self, spec: dict[str, Any]) -> None:
        model = spec.get("model") or {}
        norm = spec.get("normalizer") or {}
        if (
            model.get("type") != "WordPiece"
            or norm.get("type") != "BertNormalizer"
            or (spec.get("pre_tokenizer") or {}).get("type") != "BertPreTokenizer"
        ):
            raise UnsupportedTokenizer("not a BertNormalizer + BertPreTokenizer + WordPiece tokenizer")
        self.vocab: dict[str, int] = model["vocab"]
        self.unk = self.vocab[model.get("unk_token", "[UNK]")]
        self.prefix = model.get("continuing_subword_prefix", "##")
        self.max_chars = int(model.get("max_input_chars_per_word", 100))
        self.clean_text = bool(norm.get("clean_text", True))
        self.chinese = bool(norm.get("handle_chinese_chars", True))
        self.lowercase = bool(norm.get("lowercase", True))
        strip = norm.get("strip_accents")
        self.strip_accents = self.lowercase if strip is None else bool(strip)
        if not self.clean_text:
            raise UnsupportedTokenizer("BertNormalizer without clean_text")
        added = [t for t in spec.get("added_tokens") or [] if t.get("content")]
        if any(t.get("normalized") or t.get("single_word") or t.get("lstrip") or t.get("rstrip") for t in added):
            raise UnsupportedTokenizer("added tokens with matching options")
        self.added = {t["content"]: int(t["id"]) for t in added}
        longest_first = sorted(self.added, key=len, reverse=True)
        self._added_re = re.compile("|".join(re.escape(t) for t in longest_first)) if added else None
        self.cls = self._special(spec, "[CLS]")
        self.sep = self._special(spec, "[SEP]")
        self._words: dict[str, list[tuple[int, int, int]]] = {}
        self._ascii_simple = self.lowercase and self.chinese  # the ASCII fast path assumes these

    def _special(self, spec: dict[str, Any], name: str) -> int:
        post = spec.get("post_processor") or {}
        tokens = post.get("special_tokens") or {}
        if name in tokens:
            return int(tokens[name]["ids"][0])
        if name in self.vocab:
            return self.vocab[name]
        raise UnsupportedTokenizer(f"no {name} token")

    @classmethod
    def from_file(cls, path: str) -> WordPiece:
        with open(path, encoding="utf-8") as f:
            return cls(json.load(f))

    def encode(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """(ids, offsets) without special tokens or truncation; offsets index ``text``'s characters."""
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        position = 0
        if self._added_re is not None:
            for match in self._added_re.finditer(text):
                self._encode_segment(text[position : match.start()], position, ids, offsets)
                ids.append(self.added[match.group()])
                offsets.append((match.start(), match.end()))
                position = match.end()
        self._encode_segment(text[position:], position, ids, offsets)
        return ids, offsets

    def encode_for_model(self, text: str, window: int) -> list[int]:
        """``[CLS]`` + the first ``window - 2`` ids + ``[SEP]``, as the tokenizer with truncation gives them."""
        ids, _ = self.encode(text)
        return [self.cls, *ids[: max(window - 2, 0)], self.sep]

    def _encode_segment(self, text: str, base: int, ids: list[int], offsets: list[tuple[int, int]]) -> None:
        if not text:
            return
        if self._ascii_simple and text.isascii() and not _ASCII_DROPPED.search(text):
            lowered = text.lower()  # same length: offsets are positions in ``text``
            for match in _ASCII_WORDS.finditer(lowered):
                self._word(match.group(), [base + i for i in range(match.start(), match.end())], ids, offsets)
            return
        chars: list[str] = []
        align: list[int] = []
        for i, ch in enumerate(text):
            for out in _normalise_char(ch, self.lowercase, self.strip_accents, self.chinese):
                chars.append(out)
                align.append(base + i)
        start = None
        for i, ch in enumerate(chars):
            kind = _char_class(ch)
            if kind == _WORD:
                if start is None:
                    start = i
                continue
            if start is not None:
                self._word("".join(chars[start:i]), align[start:i], ids, offsets)
                start = None
            if kind == _PUNCT:
                self._word(ch, align[i : i + 1], ids, offsets)
        if start is not None:
            self._word("".join(chars[start:]), align[start:], ids, offsets)

    def _word(self, word: str, align: list[int], ids: list[int], offsets: list[tuple[int, int]]) -> None:
        pieces = self._words.get(word)
        if pieces is None:
            pieces = self._pieces(word)
            if len(self._words) >= _WORD_CACHE_SIZE:
                self._words.clear()
            self._words[word] = pieces
        for token, start, end in pieces:
            ids.append(token)
            offsets.append((align[start], align[end - 1] + 1))

    def _pieces(self, word: str) -> list[tuple[int, int, int]]:
        """(id, start, end) of the word's pieces, ends exclusive, in the word's characters."""
        if len(word) > self.max_chars:
            return [(self.unk, 0, len(word))]
        pieces = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return [(self.unk, 0, len(word))]
            pieces.append((found, start, end))
            start = end
        return pieces
