"""The root of a Korean verb or adjective as a prompt conjugates it, so the glossary can translate it.

The glossary (``glossary``) is learned from software's messages, which name actions by their nominal forms —
닫기 (close), 줄이기 (shrink), 멈춤 (stopped), 깨진 (broken), 느린 (slow) — while a prompt conjugates them:
"어떻게 줄였더라?", "브라우저가 멈춰버려요", "CI 또 깨졌네", "탭 닫아서". Neither form is the other, so such a
prompt's verbs found no English, and a Korean prompt about English history shared nothing with it but its nouns.

Both sides are reduced to the verb's root (줄이, 멈추, 깨지, 닫): a glossary word by its derivational ending (-기,
-ㅁ/-음, the adnominal -ㄴ/-은/-는/-을, the adverbial -게), a prompt's word by its sentence endings (-잖아, -더라,
-네, -어요, -고, -면, …), the auxiliary 버리다 and the past tense (-었-, -았-), with the vowel contractions the
conjugation made undone (줄였 → 줄이+었, 멈춰 → 멈추+어, 컸 → 크+었, 봤 → 보+았). A word yields roots only when
it ends in one of those endings, and a root translates only when a glossary word has it, so a noun is left as
it is. Stdlib only.
"""

from __future__ import annotations

from memlane.retrieval.cjk import jamo, syllable

# Vowel indices (ㅏ ㅐ ㅑ ㅒ ㅓ ㅔ ㅕ ㅖ ㅗ ㅘ ㅙ ㅚ ㅛ ㅜ ㅝ ㅞ ㅟ ㅠ ㅡ ㅢ ㅣ) and final-consonant indices used here.
V_A, V_EO, V_YEO, V_O, V_WA, V_U, V_WO, V_EU, V_I = 0, 4, 6, 8, 9, 13, 14, 18, 20
F_N, F_M, F_SS = 4, 16, 20
_SILENT = 11  # ㅇ as an initial consonant
MAX_STEPS = 4  # endings and contractions undone one after another, at most

# What a prompt puts after a verb's stem, each tried, one after another (멈춰버려요 → 멈춰 → 멈추).
_ENDINGS = (
    "더라고요", "더라고", "잖아요", "거든요", "는데요", "더라", "잖아", "거든", "는데", "은데", "던데", "네요",
    "지요", "어요", "아요", "여요", "어서", "아서", "으면", "니까", "버려요", "버렸", "버려", "버린",
    "네", "죠", "지", "고", "면", "니", "요", "서",
)  # fmt: skip
# What software's messages put after it to make a noun, adjective or adverb of it (닫기, 닫음, 닫은, 빠르게).
_DERIVED = ("기", "음", "은", "는", "을", "게")


def _with_last(word: str, vowel: int | None = None, final: int = 0) -> str:
    """``word`` with its last syllable's vowel (when given) and final consonant replaced."""
    parts = jamo(word[-1])
    assert parts is not None
    return word[:-1] + syllable(parts[0], parts[1] if vowel is None else vowel, final)


# A contracted last syllable (the stem's vowel merged with the ending's 어/아) and the stem vowels it may stand
# for: 줄여 (ㅣ+ㅓ), 멈춰 (ㅜ+ㅓ), 봐 (ㅗ+ㅏ), 꺼 (ㅡ dropped: 끄+어), 가 (가+아).
_UNDONE = {V_YEO: (V_I, V_YEO), V_WO: (V_U,), V_WA: (V_O,), V_EO: (V_EU, V_EO), V_A: (V_EU, V_A)}


def _uncontract(word: str) -> list[str]:
    """The stems a last syllable of vowel ㅕ, ㅝ, ㅘ, ㅓ or ㅏ (no final, or the past's ㅆ) may have merged from."""
    parts = jamo(word[-1])
    if parts is None or parts[2] not in (0, F_SS):
        return []
    if parts[1] in (V_EO, V_A) and parts[0] == _SILENT:  # 었 / 았 / 어 / 아 on their own: the stem is before them
        return [word[:-1]] if len(word) > 1 else []
    return [_with_last(word, vowel) for vowel in _UNDONE.get(parts[1], ())]


def prompt_roots(word: str) -> list[str]:
    """The roots a prompt's word may conjugate (줄였더라 → 줄이; 멈춰버려요 → 멈추; 닫아서 → 닫; 깨졌네 → 깨지),
    nearest first; [] for a word of one syllable or one that ends in no verb ending."""
    if len(word) < 2 or jamo(word[-1]) is None:
        return []
    seen: dict[str, None] = {}
    layer = [word]
    for _ in range(MAX_STEPS):  # 바꿨었지: 지, then 었, then 바꿨 → 바꾸
        nxt: list[str] = []
        for form in layer:
            nxt += [form[: -len(e)] for e in _ENDINGS if form.endswith(e) and len(form) > len(e)]
            nxt += _uncontract(form)
        layer = [f for f in dict.fromkeys(nxt) if f and f not in seen and f != word]
        seen.update(dict.fromkeys(layer))
    return list(seen)


def glossary_root(word: str) -> str | None:
    """The root of a glossary word made from a verb (닫기 → 닫, 멈춤 → 멈추, 깨진 → 깨지, 빠르게 → 빠르), or None."""
    if len(word) < 2:
        return None
    for ending in _DERIVED:
        if word.endswith(ending):
            return word[: -len(ending)]
    parts = jamo(word[-1])
    if parts is not None and parts[2] in (F_M, F_N):  # 멈춤, 느린: the ending is the last syllable's final ㅁ / ㄴ
        return _with_last(word, final=0)
    return None
