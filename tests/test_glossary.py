"""The Korean glossary (retrieval/glossary.py, built by benchmarks/ko_glossary.py): the shipped file, the words a
prompt is looked up by, the store's forms a lexicon searches for, the build from message catalogs, and a Korean
prompt of Sino-Korean words reaching English memories through the real search with the real model."""

from __future__ import annotations

import importlib.util
import re
import struct
import sys
from pathlib import Path

import pytest

from conftest import english_history
from memlane.retrieval import glossary
from memlane.retrieval.loanwords import Lexicon

ROOT = Path(__file__).resolve().parents[1]


def test_the_shipped_glossary_is_well_formed() -> None:
    lines = (ROOT / "src" / "memlane" / "retrieval" / "glossary_ko.tsv").read_text(encoding="utf-8").splitlines()
    entries = [line for line in lines if not line.startswith("#")]
    assert len(entries) > 2000
    koreans = [line.split("\t")[0] for line in entries]
    assert koreans == sorted(set(koreans)), "sorted, each word once: a rebuild gives the same bytes"
    for line in entries:
        korean, english = line.split("\t")
        assert re.fullmatch(r"[\uac00-\ud7a3]{2,}", korean), line
        assert all(re.fullmatch(r"[a-z]{3,}", w) for w in english.split(",")) and english.count(",") <= 1, line


@pytest.mark.parametrize(
    ("korean", "english"),
    [
        ("중복", "duplicate"), ("날짜", "date"), ("권한", "permission"), ("삭제", "delete"), ("인증", "authentication"),
        ("번역", "translation"), ("주소", "address"), ("크기", "size"), ("오류", "error"), ("사용자", "user"),
        ("연결", "connection"), ("형식", "format"), ("비밀번호", "password"), ("일본", "japan"),
    ],
)  # fmt: skip
def test_common_words_of_software_have_their_english(korean: str, english: str) -> None:
    assert glossary.english(korean)[0] == glossary.english_key(english)


def test_a_prompt_word_is_looked_up_without_its_ending() -> None:
    assert glossary.stem("삭제했어") == "삭제" and glossary.stem("설정되어") == "설정"
    assert glossary.stem("각도입니다") == "각도"
    assert glossary.stem("제한") == "제한", "a stem of one syllable is no stem: 제한 is a word"
    assert glossary.english("삭제했어") == glossary.english("삭제") == (glossary.english_key("delete"),)
    assert glossary.english("얼마") == (), "a word that frames the question is not translated"
    assert glossary.english("물") == (), "one syllable: too ambiguous"
    assert glossary.english("없는말이다") == ()
    assert glossary.without_request("삭제해주세요") == "삭제"
    assert glossary.english("삭제해줘") == glossary.english("삭제")
    assert glossary.without_request("주세요") == "" and glossary.without_request("주소") == "주소"


def test_english_forms_share_a_key() -> None:
    key = glossary.english_key
    assert key("delete") == key("deleted") == key("deletes") == key("deleting")
    assert key("address") == key("addresses") and key("file") == key("files") and key("user") == key("users")
    assert key("Set") == "set"


def test_a_lexicon_searches_for_the_forms_its_store_holds() -> None:
    lex = Lexicon([("deleted", 9), ("delete", 4), ("deletes", 2), ("duplicate", 3), ("now", 50), ("date", 7)])
    assert lex.translate("삭제했던 중복 이벤트는?") == ["deleted", "delete", "duplicate"], "most frequent first, two"
    assert lex.translate("권한은 어디서 확인해?") == [], "the store never says permission"
    assert lex.translate("지금 날짜가 틀려") == ["date"], "지금 (now) is in every Korean question"
    assert lex.translate("what about the date?") == []


def test_a_word_ending_like_a_particle_is_looked_up_whole() -> None:
    """경로 (path) ends in 로, 결과 (result) in 과: cut as particles, neither was translated unless one followed."""
    lex = Lexicon([("path", 5), ("paths", 2), ("result", 4)])
    assert lex.translate("설정 파일 경로 알려줘") == ["path", "paths"]
    assert lex.translate("경로를 바꿨어") == ["path", "paths"], "with a particle of its own"
    assert lex.translate("테스트 결과 보여줘") == ["result"]


def test_a_lexicon_translates_a_conjugated_verb_by_its_root() -> None:
    """줄였더라 (줄이다, "reduce", past) meets the glossary's 줄이기 (shrink); 닫아서 its 닫기 (close)."""
    lex = Lexicon([("shrink", 3), ("shrinks", 1), ("closing", 4), ("closed", 2), ("image", 9)])
    assert lex.translate("이미지 어떻게 줄였더라?") == ["image", "shrink", "shrinks"]
    assert lex.translate("탭 닫아서 생기는 에러") == ["closing", "closed"]


# ---- the build, on message catalogs written here -------------------------------------------------------------


def write_mo(path: Path, messages: dict[str, str]) -> None:
    """A GNU gettext catalog (the .mo format msgfmt writes) of ``messages``, with a UTF-8 header."""
    entries = sorted({"": "Content-Type: text/plain; charset=UTF-8\n", **messages}.items())
    ids = [k.encode() for k, _ in entries]
    strs = [v.encode() for _, v in entries]
    start = 7 * 4 + 16 * len(entries)
    table_ids: list[tuple[int, int]] = []
    table_strs: list[tuple[int, int]] = []
    blob = b""
    for data, table in [*((i, table_ids) for i in ids), *((s, table_strs) for s in strs)]:
        table.append((len(data), start + len(blob)))
        blob += data + b"\0"
    header = struct.pack("<7I", 0x950412DE, 0, len(entries), 28, 28 + 8 * len(entries), 0, 0)
    tables = b"".join(struct.pack("<2I", *t) for t in table_ids + table_strs)
    path.write_bytes(header + tables + blob)


def load_builder() -> object:
    spec = importlib.util.spec_from_file_location("ko_glossary", ROOT / "benchmarks" / "ko_glossary.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["ko_glossary"] = module
    spec.loader.exec_module(module)
    return module


def test_the_build_pairs_words_that_translate_each_other(tmp_path: Path) -> None:
    write_mo(
        tmp_path / "tool.mo",
        {
            "Delete the file": "파일을 삭제합니다",
            "Could not delete %s": "%s을(를) 삭제할 수 없습니다",
            "Delete all branches": "모든 브랜치를 삭제합니다",
            "Show the file": "파일을 표시합니다",
            "Show all branches": "모든 브랜치를 표시합니다",
            "Show hidden files": "숨김 파일을 표시합니다",
            "Wrong password": "암호가 틀렸습니다",
            "Password expired": "암호가 만료되었습니다",
            "Change the password": "암호를 변경합니다",
            "Password for %s": "%s의 암호",
            "Enter a password": "비밀번호를 입력하십시오",
            "Password required": "비밀번호가 필요합니다",
            "Password again": "비밀번호 다시",
        },
    )
    write_mo(tmp_path / "iso_3166-1.mo", {"Japan": "일본", "United States": "미국"})
    builder = load_builder()
    built = builder.build(tmp_path)  # type: ignore[attr-defined]
    assert built["삭제"] == ["delete"] and built["표시"] == ["show"]
    assert built["암호"] == ["password"]
    assert built["비밀번호"] == ["password"], "a synonym keeps the word its rival wins"
    assert "모든" not in built or built["모든"] != ["delete"], "all, not delete: the competition"
    assert built["일본"] == ["japan"] and "미국" not in built, "ISO names of one word"

    out = tmp_path / "glossary.tsv"
    sys.argv = ["ko_glossary.py", "--catalogs", str(tmp_path), "--out", str(out)]
    builder.main()  # type: ignore[attr-defined]
    first = out.read_bytes()
    builder.main()  # type: ignore[attr-defined]
    assert out.read_bytes() == first and "삭제\tdelete\n" in first.decode()


def test_the_build_needs_catalogs(tmp_path: Path) -> None:
    builder = load_builder()
    sys.argv = ["ko_glossary.py", "--catalogs", str(tmp_path)]
    with pytest.raises(SystemExit, match="no Korean catalogs"):
        builder.main()  # type: ignore[attr-defined]


# ---- a Korean prompt through the real search -------------------------------------------------------------------


def test_a_korean_prompt_reaches_english_memories_through_the_glossary(tmp_path: Path) -> None:
    """No loanword in the prompt, so only the glossary's English (duplicate, request) ties it to the history:
    without it the memory about duplicate requests is not found, with it it comes first, as an index line."""
    from memlane.retrieval.engine import Engine

    first = "Duplicate requests from the payment provider are now dropped: the handler checks the request id first."
    mem = english_history(tmp_path / "shop", first)
    prompt = "중복 요청은 어떻게 막았어?"
    engine = Engine(mem.config)
    assert engine.lexicons.get(mem.project.id, mem.store, wait=True) is not None

    real = glossary.english
    try:
        glossary.english = lambda word: ()
        assert not any("Duplicate" in h.event.content for h in engine.search(mem, prompt, limit=3))
    finally:
        glossary.english = real

    hits = engine.search(mem, prompt, limit=3)
    assert hits and hits[0].event.content.startswith("Duplicate requests")
    assert hits[0].confidence == "suggested", "found through a translation: an index line, never in full"
    chosen = engine.relevant(mem, prompt)
    assert any(h.event.content.startswith("Duplicate") for h in chosen.index) and not chosen.items
    mem.close()
