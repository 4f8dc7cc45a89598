"""English words for the Korean loanwords of a prompt, read from the store's own vocabulary.

Korean developers write most technical terms as Hangul loanwords — 마이그레이션 (migration), 커넥션 풀
(connection pool), 도커 이미지 (docker image), 인보이스 (invoice) — while the history they ask about
(tool output, code, the agent's answers) says them in English. memlane's default model is English-only,
so a Korean prompt about English memories shared no word and no meaning with them: on the coding replay
about half of such prompts reached their answer.

A loanword keeps the English word's consonants in order, in a handful of classes (p/b/f/v → ㅂ/ㅍ,
t/d → ㄷ/ㅌ, l/r → ㄹ, ...), and marks with an inserted ㅡ where English has no vowel (스트 for "st"). So
both sides reduce to one **key**: consonant classes, with a dot where a real vowel stands between two of
them (마이그레이션 and "migration" are both ``M.KL.S.N``). English spelling needs a few rules to get there
(a final silent e, r before a consonant, -tion, ch/sh/th, soft c and g; ambiguous letters give
several keys). A Korean word's key is looked up among the keys of the English words this store holds,
and the first vowel must be one the loanword could spell that way, which keeps most native Korean words
from meeting an English word by chance (작업 is ``S.KB`` and "skip" ``SK.B``: no match).

Only the store's words are candidates, so a prompt is expanded with what its project actually says. The
lexicon is built on a thread of the process that searches (the daemon), never in a hook process; a lookup
costs well under a millisecond. Stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memlane.retrieval import glossary
from memlane.retrieval.cjk import content_word, jamo
from memlane.retrieval.per_store import PerStore

# ---- Hangul ---------------------------------------------------------------------------------------------

# Initial consonants ㄱㄲㄴㄷㄸㄹㅁㅂㅃㅅㅆㅇㅈㅉㅊㅋㅌㅍㅎ as classes (ㅇ is silent at the start of a syllable).
_INITIAL = ("K", "K", "N", "T", "T", "L", "M", "B", "B", "S", "S", "", "S", "S", "S", "K", "T", "B", "H")
# Final consonants (none, ㄱ ㄲ ㄳ ㄴ ㄵ ㄶ ㄷ ㄹ ㄺ ㄻ ㄼ ㄽ ㄾ ㄿ ㅀ ㅁ ㅂ ㅄ ㅅ ㅆ ㅇ ㅈ ㅊ ㅋ ㅌ ㅍ ㅎ): a final
# ㅅ is how a loanword writes a final t (인터넷, 챗봇), a final ㅇ an English ng (class G).
_FINAL = (
    "", "K", "K", "K", "N", "N", "N", "T", "L", "LK", "LM", "LB", "L", "L", "L", "L",
    "M", "B", "B", "T", "T", "G", "T", "T", "K", "T", "B", "",
)  # fmt: skip
_SILENT = 11  # ㅇ as an initial: the syllable opens with its vowel
_EU = 18  # ㅡ: the vowel Korean inserts where English has none
# The vowels ㅏㅐㅑㅒㅓㅔㅕㅖㅗㅘㅙㅚㅛㅜㅝㅞㅟㅠㅡㅢㅣ, each with the English vowel letters a loanword spells
# with it at the start of a word's first vowel (digraphs need only their first letter).
_SPELLED = (
    "aoiuy", "ae", "ay", "ae", "eouai", "eai", "eiy", "ey", "oa", "wo", "w", "w", "oy", "uo", "wo", "w", "w",
    "uey", "", "e", "iey",
)  # fmt: skip

MIN_SYLLABLES = 2  # one-syllable words (뭘, 좀, 잘) are mostly native: too many chance matches
# Native words frequent enough in any Korean prompt that their chance match with an English word of the
# store (어떻게 ~ outage, 다음 ~ time, 나는 ~ none) would add it to most queries.
_NATIVE_WORDS = """
나는 너는 저는 우리 다음 했어 했다 어떻게 어떤 같이 같아 같은 회사 시간 처음 제일
바로 가서 가고 가는 먹고 많이 만에 사는 지금 정도 아직 벌써 그래서 그리고 그런데
하지만 너무 정말 진짜 그냥 이제 다시 나중 오늘 내일 어제 여기 거기 저기 이거 그거
저거 무슨 어디 언제 누구 이번 지난 요즘 계속 모두 다른 새로 먼저 위해 때문 있어
없어 있는 없는 좋아 좋은 싶어 알려 해줘 뭐였 됐어 되어 보는 보고 말고
"""
NATIVE = frozenset(_NATIVE_WORDS.split())


def _syllables(word: str) -> list[tuple[int, int, int]] | None:
    out = []
    for ch in word:
        if (parts := jamo(ch)) is None:
            return None
        out.append(parts)
    return out


def _key(units: Iterable[str]) -> str:
    """A key from consonant classes and vowel marks ("V"): consonants in order, a dot where a vowel stood
    between two of them; leading and trailing vowels dropped, a consonant met twice in a row kept once."""
    out: list[str] = []
    vowel = False
    for u in units:
        if u == "V":
            vowel = True
            continue
        for c in u:
            if out and vowel:
                out.append(".")
            elif out and out[-1] == c:
                vowel = False
                continue
            out.append(c)
            vowel = False
    return "".join(out)


_I = 20  # ㅣ: after ㅅ, ㅈ or ㅊ it may be the vowel a loanword adds to sh, ch, ge (대시보드, 캐시, 이미지)


def hangul_keys(word: str) -> tuple[set[str], int] | None:
    """(keys, first real vowel) of a Hangul word, or None when it is not all Hangul syllables. A 시, 지 or
    치 before another consonant also counts as the consonant alone (dashboard 대시보드)."""
    syl = _syllables(word)
    if not syl:
        return None
    units: list[str] = []
    inserted: list[str] = []
    first = -1
    for n, (lead, vowel, final) in enumerate(syl):
        if _INITIAL[lead]:
            units.append(_INITIAL[lead])
            inserted.append(_INITIAL[lead])
        added = vowel == _I and _INITIAL[lead] == "S" and not final and n + 1 < len(syl) and syl[n + 1][0] != _SILENT
        if vowel != _EU:
            units.append("V")
            if not added:
                inserted.append("V")
            if first < 0:
                first = vowel
        if _FINAL[final]:
            units.append(_FINAL[final])
            inserted.append(_FINAL[final])
    return {_key(units), _key(inserted)}, first


# ---- English --------------------------------------------------------------------------------------------

_VOWELS = "aeiouy"
_PLAIN = {"b": "B", "p": "B", "f": "B", "v": "B", "d": "T", "t": "T", "k": "K", "q": "K", "l": "L",
          "m": "M", "n": "N", "s": "S", "z": "S", "j": "S"}  # fmt: skip
MAX_VARIANTS = 8


def english_keys(word: str) -> set[str]:
    """The keys a Korean loanword of ``word`` (lower-case a-z) may have: one per reading of its ambiguous
    letters (soft or hard c and g, th as ㅅ or ㄷ, ng as ㅇ or ㅇ+ㄱ), at most ``MAX_VARIANTS``."""
    readings: list[list[str]] = [[]]
    i, n = 0, len(word)

    def add(*options: str) -> None:
        nonlocal readings
        readings = [[*r, o] for r in readings for o in options][:MAX_VARIANTS]

    while i < n:
        ch, rest = word[i], word[i + 1 :]
        nxt = rest[:1]
        if ch in "aeiou" or (ch == "y" and i > 0) or ch == "w":
            # a silent final e (code, image, table) is no vowel: 코드, 이미지, 테이블 end without one
            if not (ch == "e" and i == n - 1 and i >= 2 and word[i - 1] not in _VOWELS):
                add("V")
            i += 1
        elif ch == "y":  # y opening a word is a glide of the vowel after it
            i += 1
        elif (ch in "ts" and rest.startswith(("ion", "ia"))) or (ch == "t" and rest.startswith("ure")):
            add("S")  # -tion, -sion, -tial, -ture: 션, 셜, 처
            i += 1
        elif ch in "cs" and nxt == "h":
            add("S", "K") if ch == "c" else add("S")
            i += 2
        elif ch == "t" and nxt == "h":
            add("S", "T", "TH")
            i += 2
        elif ch == "p" and nxt == "h":
            add("B")
            i += 2
        elif ch == "g" and nxt == "h":  # night, through: silent
            i += 2
        elif ch == "c" and nxt == "k":
            add("K")
            i += 2
        elif (ch == "d" and nxt == "g") or (i == 0 and ch + nxt in ("kn", "wr")):
            i += 1  # silent: the d of edge (엣지), the k of know, the w of write
        elif ch == "q" and nxt == "u":
            add("K")
            i += 1  # the u is the vowel (큐, 쿼리)
        elif ch == "n" and nxt == "g":  # string 스트링, single 싱글; before a vowel also n + g: hangul 한글
            add("G", "GK", "NK") if rest[1:2] and rest[1] in _VOWELS else add("G", "GK")
            i += 2
        elif ch == "x":
            add("KS")
            i += 1
        elif ch == "c":
            add("S" if nxt and nxt in "eiy" else "K")
            i += 1
        elif ch == "g":
            add("S", "K") if nxt and nxt in "eiy" else add("K")
            i += 1
        elif ch == "r":  # r sounds (ㄹ) only before a vowel: server 서버, report 리포트, not core 코어
            if nxt and nxt in _VOWELS and rest != "e":
                add("L")
            i += 1
        elif ch == "h":  # heard before a vowel, also inside a compound: webhook 웹훅, github 깃허브
            if nxt and nxt in _VOWELS:
                add("H")
            i += 1
        elif ch in _PLAIN:
            add(_PLAIN[ch])
            i += 1
        else:
            i += 1
    keys = {_key(r) for r in readings}
    # An unstressed last vowel before n, l or m is often not written: token 토큰, label 레이블, button 버튼.
    return keys | {k[:-2] + k[-1] for k in keys if len(k) > 2 and k[-2] == "." and k[-1] in "NLM"}


def hangul_ends(word: str) -> tuple[bool, bool]:
    """(opens with a vowel, ends in an open syllable: a vowel other than the inserted ㅡ, no final consonant)."""
    syl = _syllables(word) or [(0, _EU, 0)]
    _, vowel, final = syl[-1]
    return syl[0][0] == _SILENT, vowel != _EU and not final


def english_ends(word: str) -> tuple[bool, bool]:
    """The same of the loanword an English word would give: it opens with a vowel (or y, w) and ends open
    (a vowel sound, an r-coloured one as in docker 도커, sh/ch/ge as in cache 캐시, image 이미지)."""
    opens = word[:1] in "aeiouyw" and not word.startswith(("wh", "wr"))
    last = word[-1:]
    if last == "e" and len(word) > 2 and word[-2] not in "aeiou":  # a silent e: open only after g, ch, sh
        ends_open = word[-2] in "gr" or word.endswith(("che", "she"))  # image 이미지, core 코어
    else:
        ends_open = last in "aiouyw" or last == "e" or last == "r" or word.endswith(("sh", "ch"))
    return opens, ends_open


def first_vowel(word: str) -> str:
    """The letter that opens an English word's first vowel sound ("" if none)."""
    for i, ch in enumerate(word):
        if ch in "aeiou" or (ch == "y" and i > 0) or ch == "w":
            if ch == "u" and i and word[i - 1] == "q":  # query 쿼리: /kw/
                return "w"
            if ch == "u" and word[i + 1 : i + 2] == "i" and i and word[i - 1] in "bg":  # build 빌드, guide 가이드
                return "i"
            return ch
    return ""


def vowel_fits(vowel: int, letter: str) -> bool:
    """Whether a loanword may write an English word whose first vowel is ``letter`` with Korean vowel
    ``vowel`` (an index of ㅏ…ㅣ)."""
    return vowel < 0 or (bool(letter) and letter in _SPELLED[vowel])


# ---- the lexicon of one store ---------------------------------------------------------------------------

_ASCII_WORD = re.compile(r"[a-z]{3,}")
_HANGUL_RUN = re.compile(r"[\uac00-\ud7a3]+")


MIN_KEY = 3  # characters of a key, dots included: two consonants at least ("T.K", docker)
MAX_FORMS = 2  # forms of a translated word searched for (delete, deleted), the store's most frequent first


class Lexicon:
    """The English words of one store by key, for ``expand``."""

    def __init__(self, vocabulary: Iterable[tuple[str, int]]) -> None:
        self.by_key: dict[str, list[tuple[int, str]]] = {}
        self.forms: dict[str, list[tuple[int, str]]] = {}  # the store's forms of the glossary's words (delete, deleted)
        targets = glossary.targets()
        self.words = 0
        for term, docs in vocabulary:
            if not _ASCII_WORD.fullmatch(term):
                continue
            self.words += 1
            for key in english_keys(term):
                if len(key) >= MIN_KEY:
                    self.by_key.setdefault(key, []).append((docs, term))
            if (key := glossary.english_key(term)) in targets:
                self.forms.setdefault(key, []).append((docs, term))
        for entries in [*self.by_key.values(), *self.forms.values()]:
            entries.sort(reverse=True)

    def english(self, word: str) -> list[str]:
        """The store's English words that the Hangul ``word`` (particles already stripped) may be a loanword of."""
        if len(word) < MIN_SYLLABLES or word in NATIVE:
            return []
        found = hangul_keys(word)
        if found is None:
            return []
        keys, vowel = found
        ends = hangul_ends(word)
        entries = sorted(e for key in keys for e in self.by_key.get(key, ()))[::-1]
        out = list(
            dict.fromkeys(t for _, t in entries if vowel_fits(vowel, first_vowel(t)) and english_ends(t) == ends)
        )
        # Two consonants say little (다크 fits tag and take when the store never says dark): such a word counts
        # only when one English word fits it, or one spells the vowel the usual way (헤드: head, not had); a
        # longer one gives its most frequent fit.
        if len(out) > 1 and all(len(key.replace(".", "")) <= 2 for key in keys):
            usual = [t for t in out if vowel >= 0 and first_vowel(t) == _SPELLED[vowel][:1]]
            return usual if len(usual) == 1 else []
        return out[:1]

    def expand(self, query: str) -> list[str]:
        """English words for the Korean loanwords of ``query``, in the query's order, each once."""
        out: dict[str, None] = {}
        for run in _HANGUL_RUN.findall(query):
            bare = glossary.without_request(content_word(run, min_left=1))  # 큐는 → 큐 (too short), 캐시해줘 → 캐시
            for word in dict.fromkeys((bare, stem(bare))):
                for term in self.english(word):
                    out[term] = None
        return list(out)

    def translate(self, query: str) -> list[str]:
        """The store's words for the English that ``glossary`` gives the Korean words of ``query`` (삭제 → delete,
        deleted: the forms it holds, most frequent first), in the query's order, each once."""
        out: dict[str, None] = {}
        for run in _HANGUL_RUN.findall(query):
            word = content_word(run, min_left=1)
            # The words of any Korean question (지금, 오늘, 처음: now, today, first) say nothing of its subject.
            if word in NATIVE or glossary.stem(word) in NATIVE:
                continue
            # The run as it is first: the 이 of 고양이 is the word's own, not a particle.
            for key in glossary.english(run) or glossary.english(word):
                out.update((term, None) for _, term in self.forms.get(key, ())[:MAX_FORMS])
        return list(out)


def stem(run: str) -> str:
    """``run`` without a 하다/되다 ending (캐시해 → 캐시), or as it is."""
    return glossary.stem(run, glossary.PROMPT_ENDINGS)


def of_store(store: object) -> Lexicon | None:
    """The lexicon of ``store``'s words now (one walk of its word index, on a connection of its own, so any
    thread may build it), or None for a store without a word index file (PostgreSQL)."""
    file = getattr(store, "file", None)
    if not file or getattr(store, "ephemeral", False) or getattr(store, "backend", "sqlite") != "sqlite":
        return None
    from memlane.store import peek

    return Lexicon(peek.vocabulary(file))


class Lexicons(PerStore[Lexicon]):
    """Each project's lexicon, for the process that searches (the daemon, the MCP server, a command): built on a
    thread the first time a Korean query needs it and again when the store has grown (``per_store``); with a
    large store the first Korean prompts are searched without it, as before it existed."""

    def __init__(self) -> None:
        super().__init__(of_store, "loanword lexicon")
