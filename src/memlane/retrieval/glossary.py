"""English words for the Korean words of a prompt: a glossary of software Korean, read from real translations.

The loanword lexicon (``loanwords``) finds 마이그레이션 → migration by sound, but much of the Korean developers
write about their code is Sino-Korean or native: 중복 (duplicate), 날짜 (date), 권한 (permission), 번역
(translation), 삭제 (delete). A prompt made of those shared no word with the English history it asks about,
and the default model cannot read Korean, so it found nothing.

``glossary_ko.tsv`` holds 3,959 such words with their English, learned by ``benchmarks/ko_glossary.py`` from the
Korean message catalogs of free software (git, PostgreSQL, GTK, LibreOffice, GIMP, …: 88,812 English messages
with their Korean translations) by how often a Korean word and an English word are in the same message and its
translation, plus the ISO names of countries and languages (일본 → Japan). A store's lexicon searches for the
English in the forms the store itself holds (``loanwords.Lexicon.translate``: delete, deleted). Stdlib only;
read once per process, by the thread that builds a lexicon.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from memlane.retrieval import predicates

# A loanword or a noun is often a verb with 하다 or 되다 in a prompt (캐시해, 배포했어, 머지된): the stem is the word.
# In this order (``loanwords.stem``): the first ending that fits is cut.
PROMPT_ENDINGS = (
    "했었는데", "했었지", "했었어", "했는데", "했어요", "했던", "했어", "했지", "하는", "하고", "하면", "해서", "해요",
    "하기", "했", "할", "한", "해", "됐어", "되는", "되면", "되어", "된", "돼", "됐",
)  # fmt: skip
# Messages of software say them formally too (삭제합니다, 설정되었습니다, 각도입니다: a 하다/되다/시키다 ending or
# the copula): those and the prompts' endings, longest first, for the glossary's words.
_FORMAL_ENDINGS = """
하시겠습니까 하겠습니까 되었습니다 되었습니까 했습니다 합니다 됩니다 되었음 하십시오 하는데 하려면 하려는
시킵니다 시키는 시킨 시키기 하지 하여 하세요 해야 했음 됐음 되지 되기 할지 입니다 이므로 이며 이고 이다 함 됨 될 하 되
"""
ENDINGS = tuple(sorted(set(PROMPT_ENDINGS) | set(_FORMAL_ENDINGS.split()), key=len, reverse=True))
MIN_SYLLABLES = 2  # a one-syllable Korean word (물, 일, 수) is too ambiguous to translate
# Words that frame a question ("how much", "for how long", "why", "how to"): their English in a question is a stop
# word ("why did CI break" is "CI가 깨진 이유"), while the glossary's English for them is a word of content
# (reason, method) or, for 얼마, a wrong one.
_FRAME = "얼마 동안 전에 방법 이유"
FRAME = frozenset(_FRAME.split())


# A request glued to its verb (캐시해 주세요, 써줘, 알려줘요): the verb is before it, and the request itself (주세요)
# is no word of the subject. A loanword lookup of the whole took 써줘 for "search" and 주세요 for "juso".
_REQUEST = re.compile(r"(?:해|하여|해서)?(?:주세요|주십시오|주실래요|줄래요|줄래|줘요|줘)$")


def without_request(word: str) -> str:
    """``word`` without a request ending (추가해줘 → 추가, 써줘 → 써, 주세요 → "")."""
    return _REQUEST.sub("", word)


def stem(word: str, endings: tuple[str, ...] = ENDINGS) -> str:
    """``word`` without the first of ``endings`` it ends with, when two syllables or more remain (삭제했어 → 삭제)."""
    for ending in endings:
        if word.endswith(ending) and len(word) - len(ending) >= MIN_SYLLABLES:
            return word[: -len(ending)]
    return word


def english_key(word: str) -> str:
    """What the inflected forms of an English word share (delete, deletes, deleted → delet; files → file)."""
    word = word.lower()
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not (suffix == "s" and word.endswith("ss")):
            return word[: -len(suffix)]
    return word


@functools.cache
def entries() -> dict[str, tuple[str, ...]]:
    """Korean word → its English words, best first (``english_key`` forms), from ``glossary_ko.tsv``."""
    text = resources.files("memlane.retrieval").joinpath("glossary_ko.tsv").read_text(encoding="utf-8")
    out: dict[str, tuple[str, ...]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        korean, _, english = line.partition("\t")
        out[korean] = tuple(english_key(w) for w in english.split(","))
    return out


@functools.cache
def targets() -> frozenset[str]:
    """Every English key the glossary gives: the only words of a store a lexicon keeps the forms of."""
    return frozenset(key for keys in entries().values() for key in keys)


def english(word: str) -> tuple[str, ...]:
    """The English keys of the Korean ``word`` (its particle already stripped): as it is, without its 하다/되다
    ending, or by the root of the verb it conjugates (``predicates``)."""
    known = entries()
    word = without_request(word)
    if word in FRAME:
        return ()
    for form in dict.fromkeys((word, stem(word))):
        if len(form) >= MIN_SYLLABLES and form in known:
            return known[form]
    # A conjugated verb (줄였더라, 멈춰버려요) by its root, as a glossary word made from the same verb has it.
    verbs = by_root()
    for root in predicates.prompt_roots(word):
        if root in verbs:
            return verbs[root]
    return ()


@functools.cache
def by_root() -> dict[str, tuple[str, ...]]:
    """The glossary's words made from a verb, by the verb's root (``predicates.glossary_root``): 닫기 → 닫. Of two
    with one root the first in the file's order (닫기 before 닫을)."""
    out: dict[str, tuple[str, ...]] = {}
    for korean, keys in entries().items():
        if (root := predicates.glossary_root(korean)) and root not in out:
            out[root] = keys
    return out
