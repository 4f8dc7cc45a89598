"""The terms of a Korean, Chinese or Japanese query for its lexical score: character bigrams of its
content words.

Korean glues particles and endings to its words (문구가 / 문구는, 만료됐을 / 만료되면), so the query's
trigrams rarely met the memory's: the same subject matched two of nine. Character bigrams are the
usual unit of CJK search (Lucene's CJKAnalyzer), and a trailing particle is stripped first: a particle
says nothing about the subject, so it neither matches an unrelated memory nor dilutes a related one.
Candidates still come from the trigram index; this only decides how well a candidate matches.

A list of Korean stop words (question words, auxiliaries, pronouns: the counterparts of ``STOPWORDS``)
was tried on top and dropped: on the coding replay (dev) it found no further answer, and by shrinking the
ideal it let a Korean question that shares only ``DB`` with English history inject two unrelated memories.
"""

from __future__ import annotations

import re

from memlane.store.keys import _CJK_PATTERN, has_cjk

_RUN = _CJK_PATTERN + "+"  # compiled on first use (re caches it): Latin-only prompts never pay for it

# Particles (조사), longest first, stripped from the end of a word when two syllables or more remain.
PARTICLES = (
    "에서는", "으로는", "에게서", "에서", "으로", "에게", "한테", "까지", "부터", "처럼", "보다", "이랑", "하고",
    "은", "는", "이", "가", "을", "를", "에", "의", "로", "와", "과", "도", "만", "랑",
)  # fmt: skip


_HANGUL = "[\uac00-\ud7a3]"  # compiled on first use, like _RUN


def has_hangul(text: str) -> bool:
    """Whether ``text`` holds a Hangul syllable (a Korean prompt or memory)."""
    return re.search(_HANGUL, text) is not None


_SYLLABLE_FIRST = 0xAC00


def jamo(syllable: str) -> tuple[int, int, int] | None:
    """A Hangul syllable's (initial consonant, vowel, final consonant) indices, or None for any other character."""
    code = ord(syllable) - _SYLLABLE_FIRST
    if not 0 <= code < 11172:  # 19 initials x 21 vowels x 28 finals
        return None
    return code // 588, (code // 28) % 21, code % 28


def syllable(initial: int, vowel: int, final: int) -> str:
    """The Hangul syllable of these indices (``jamo``'s inverse)."""
    return chr(_SYLLABLE_FIRST + initial * 588 + vowel * 28 + final)


def final_consonant(syllable: str) -> int:
    """The index of a Hangul syllable's final consonant (받침): 0 for none, 20 for ㅆ (the past ending of 했, 였)."""
    return (ord(syllable) - _SYLLABLE_FIRST) % 28


def content_word(run: str, min_left: int = 2) -> str:
    """A run of CJK letters without its trailing particle, when ``min_left`` letters or more remain; "" for a run
    that is only a particle (the 에서 of ``CI에서``)."""
    if run in PARTICLES:
        return ""
    for particle in PARTICLES:
        if run.endswith(particle) and len(run) - len(particle) >= min_left:
            return run[: -len(particle)]
    return run


def bigrams(query: str) -> list[str]:
    """The distinct character bigrams of the query's CJK content words (a one-letter word as itself).

    A word is a run of CJK letters: ``반품률(return_rate)`` gives 반품률, ``한국어/영어`` two words."""
    out: dict[str, None] = {}
    if not has_cjk(query):
        return []
    for run in re.findall(_RUN, query):
        word = content_word(run)
        if len(word) == 1:
            out[word] = None
        for i in range(len(word) - 1):
            out[word[i : i + 2]] = None
    return list(out)
