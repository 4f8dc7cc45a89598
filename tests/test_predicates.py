"""A Korean prompt's conjugated verbs reach the glossary through their roots (``retrieval.predicates``)."""

from __future__ import annotations

import pytest

from memlane.retrieval import glossary
from memlane.retrieval.predicates import glossary_root, prompt_roots


@pytest.mark.parametrize(
    ("word", "root"),
    [
        ("줄였더라", "줄이"),  # 줄이 + 었 + 더라: ㅣ+ㅓ merged into 였
        ("멈춰버려요", "멈추"),  # the auxiliary 버리다 and 요, then ㅜ+ㅓ merged into 춰
        ("닫아서", "닫"),
        ("깨졌네", "깨지"),
        ("컸잖아", "크"),  # ㅡ dropped before 었
        ("바꿨었지", "바꾸"),  # 지, then 었, then 바꿨
        ("봤어", "보"),
        ("죽고", "죽"),
        ("길면", "길"),
    ],
)
def test_a_conjugated_verb_gives_its_root(word: str, root: str) -> None:
    assert root in prompt_roots(word)


def test_a_word_without_a_verb_ending_gives_no_root() -> None:
    assert prompt_roots("가") == [], "one syllable"
    assert prompt_roots("주소") == [] and prompt_roots("배포") == [], "nouns end in no ending"
    assert prompt_roots("") == [] and prompt_roots("deploy") == [] and glossary_root("") is None, "not Korean"
    assert glossary.english("") == () and glossary.english("3월에") == (), "nothing to translate, no error"


def test_a_glossary_word_made_from_a_verb_gives_the_verb_s_root() -> None:
    assert [glossary_root(w) for w in ("닫기", "멈춤", "깨진", "느린", "빠르게", "죽은", "찾을")] == [
        "닫", "멈추", "깨지", "느리", "빠르", "죽", "찾",
    ]  # fmt: skip
    assert glossary_root("주소") is None and glossary_root("변경") is None


def test_the_glossary_translates_a_prompt_s_conjugated_verbs() -> None:
    assert glossary.english("줄였더라") == ("shrink",), "줄이기 in the glossary"
    assert glossary.english("닫아서") == ("clos",), "닫기"
    assert glossary.english("깨졌네") == ("broken",), "깨진"
    assert glossary.english("멈춰버려요") == ("stopp",), "멈춤"
    assert glossary.english("삭제했어") == ("delet",), "a 하다 verb as before"
    assert glossary.english("주소") == ("address",), "a noun as before"
