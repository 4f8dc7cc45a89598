"""Korean loanwords find the English words of the store they stand for (retrieval/loanwords.py), and a Korean
prompt about English memories reaches them through the real search with the real model."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import english_history
from memlane.retrieval import loanwords
from memlane.retrieval.loanwords import Lexicon, Lexicons, english_keys, hangul_keys
from memlane.store import NewEvent, Store, peek

# Common developer loanwords and the English they write, none taken from a benchmark's questions.
PAIRS = [
    ("마이그레이션", "migration"), ("커넥션", "connection"), ("도커", "docker"), ("이미지", "image"),
    ("인보이스", "invoice"), ("라벨", "label"), ("레이블", "label"), ("헤드", "head"), ("로그인", "login"),
    ("리포트", "report"), ("서버", "server"), ("빌드", "build"), ("폰트", "font"), ("쿠버네티스", "kubernetes"),
    ("셀러리", "celery"), ("레디스", "redis"), ("엑셀", "excel"), ("웹훅", "webhook"), ("파이썬", "python"),
    ("토큰", "token"), ("캐시", "cache"), ("세션", "session"), ("디플로이", "deploy"), ("챗봇", "chatbot"),
    ("온보딩", "onboarding"), ("모바일", "mobile"), ("데이터베이스", "database"), ("쿼리", "query"),
    ("인덱스", "index"), ("메모리", "memory"), ("테스트", "test"), ("클라이언트", "client"), ("스키마", "schema"),
    ("템플릿", "template"), ("컨테이너", "container"), ("브랜치", "branch"), ("커밋", "commit"), ("머지", "merge"),
    ("타임아웃", "timeout"), ("스레드", "thread"), ("프록시", "proxy"), ("라우터", "router"),
    ("미들웨어", "middleware"), ("컴포넌트", "component"), ("프론트엔드", "frontend"), ("대시보드", "dashboard"),
    ("웹소켓", "websocket"), ("스토리지", "storage"), ("깃허브", "github"), ("패키지", "package"),
    ("플러그인", "plugin"), ("트랜잭션", "transaction"), ("엔드포인트", "endpoint"), ("페이지", "page"),
    ("버전", "version"), ("업데이트", "update"), ("스크립트", "script"), ("마라톤", "marathon"),
]  # fmt: skip


@pytest.mark.parametrize(("korean", "english"), PAIRS)
def test_a_loanword_and_its_english_word_share_a_key(korean: str, english: str) -> None:
    found = hangul_keys(korean)
    assert found is not None
    keys, _ = found
    assert keys & english_keys(english), (korean, sorted(keys), english, sorted(english_keys(english)))
    assert Lexicon([(english, 3), ("unrelated", 9)]).english(korean) == [english]


def test_native_words_do_not_meet_english_words_by_chance() -> None:
    # The store's English words; the Korean words beside them are native, and several share a consonant key
    # with one of them (작업 S.KB ~ skip SK.B; 어떻게 T.K ~ outage; 다음 T.M ~ time; 부산 B.S.N ~ version).
    lex = Lexicon([(w, 5) for w in ["skip", "outage", "time", "version", "begin", "none", "known", "docker", "tag"]])
    for word in ["작업", "어떻게", "다음", "부산", "나는", "지금", "그래서", "했어", "생성", "두부"]:
        assert lex.english(word) == [], word
    assert lex.english("도커") == ["docker"]


def test_an_ambiguous_two_consonant_word_adds_nothing() -> None:
    # 다크 (dark) fits tag and take when the store never says "dark": neither is added.
    assert Lexicon([("tag", 4), ("take", 9)]).english("다크") == []
    assert Lexicon([("dark", 2)]).english("다크") == ["dark"]
    # ...unless one of the fits spells the vowel the usual way: 헤드 is head (ㅔ = e), not had.
    assert Lexicon([("had", 40), ("head", 3)]).english("헤드") == ["head"]


def test_ng_before_a_vowel_may_be_n_and_g() -> None:
    assert Lexicon([("hangul", 2)]).english("한글") == ["hangul"]
    assert Lexicon([("string", 2)]).english("스트링") == ["string"]


def test_expand_strips_particles_and_verb_endings_and_keeps_order() -> None:
    lex = Lexicon([("docker", 4), ("image", 7), ("cache", 2), ("migration", 3), ("head", 5)])
    assert lex.expand("도커 이미지 크기는 어떻게 줄였어?") == ["docker", "image"]
    assert lex.expand("주소 결과는 얼마나 캐시해?") == ["cache"]
    assert lex.expand("마이그레이션 헤드가 여러 개라고 에러 나면?") == ["migration", "head"]
    assert lex.expand("what changed in the docker image?") == []
    assert lex.expand("큐는 뭘 써?") == [], "one-syllable words are not looked up"


def test_the_vocabulary_is_the_stores_latin_words(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db", "p")
    store.append([NewEvent("agent_response", "s", "Switched Celery to RQ; the 도커 image is 180 MB.", "1", {})])
    words = dict(peek.vocabulary(store.file))
    assert {"switched", "celery", "the", "image"} <= set(words)
    assert "rq" not in words and "180" not in words, "three Latin letters at least"
    assert all(w.isascii() for w in words)
    lex = loanwords.of_store(store)
    assert lex is not None and lex.english("셀러리") == ["celery"]
    store.close()


def test_lexicons_rebuild_when_the_store_grows(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db", "p")
    store.append([NewEvent("agent_response", "s", "The docker build works.", "1", {})])
    lexicons = Lexicons()
    first = lexicons.get("p", store, wait=True)
    assert first is not None and first.english("도커") == ["docker"]
    assert lexicons.get("p", store) is first, "unchanged store: the same lexicon"
    store.append([NewEvent("agent_response", "s", f"Added a redis cache, step {i}.", str(i + 2), {}) for i in range(5)])
    again = lexicons.get("p", store, wait=True)
    assert again is not first and again is not None and again.english("레디스") == ["redis"]
    store.close()


def test_no_lexicon_for_a_store_without_a_word_index_file(tmp_path: Path) -> None:
    class Remote:
        backend = "postgres"
        file = "postgresql://user:***@host/db"

    assert loanwords.of_store(Remote()) is None
    assert Lexicons().get("x", Remote()) is None


def test_a_korean_prompt_reaches_english_memories_through_its_loanwords(tmp_path: Path) -> None:
    """The engine the daemon runs, with the real model and vectors: without the lexicon the Korean prompt
    shares nothing with the English history; with it, the memory about the docker image comes first, and the
    prompt's two tiers offer it."""
    from memlane.retrieval.engine import Engine

    first = "Shrank the docker image from 1.2 GB to 180 MB with a multi-stage build and a slim base image."
    mem = english_history(tmp_path / "shop", first)
    prompt = "도커 이미지 크기는 어떻게 줄였어?"
    engine = Engine(mem.config)

    engine.lexicons = Lexicons()
    engine.lexicons.get = lambda *a, **k: None  # type: ignore[method-assign]  # as before the lexicon existed
    assert not any("docker" in h.event.content for h in engine.search(mem, prompt, limit=3))

    engine = Engine(mem.config)
    assert engine.lexicons.get(mem.project.id, mem.store, wait=True) is not None  # a search waits only 50 ms
    hits = engine.search(mem, prompt, limit=3)
    assert hits and "docker image" in hits[0].event.content
    # Found through a translation, not through what the prompt says: offered as an index line, never in full.
    assert hits[0].confidence == "suggested"
    chosen = engine.relevant(mem, prompt)
    assert any("docker image" in h.event.content for h in chosen.index) and not chosen.items
    mem.close()


def test_a_search_does_not_wait_for_a_long_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large store's lexicon takes seconds to build: the search goes on without it and the next one has it."""
    import threading

    release = threading.Event()
    real = loanwords.of_store

    def slow(store: object) -> Lexicon | None:
        release.wait(30)
        return real(store)

    monkeypatch.setattr(loanwords, "of_store", slow)
    store = Store(tmp_path / "m.db", "p")
    store.append([NewEvent("agent_response", "s", "The docker build works.", "1", {})])
    lexicons = Lexicons()
    assert lexicons.get("p", store) is None, "still building: this search goes on without it"
    assert lexicons.get("p", store) is None, "and a second build is not started meanwhile"
    release.set()
    for _ in range(600):
        if (lex := lexicons.get("p", store)) is not None:
            break
        threading.Event().wait(0.05)
    assert lex is not None and lex.english("도커") == ["docker"]
    store.close()


def test_a_request_ending_is_no_loanword() -> None:
    """주세요 and 써줘 (please / write it) sound like "juso" and "search": the request is cut off first, and only the
    verb before it is looked up (캐시해 주세요 → 캐시 → cache)."""
    lex = Lexicon([("juso", 6), ("search", 9), ("cache", 4), ("haiku", 1)])
    assert lex.expand("조용한 키보드 추천해 주세요") == []
    assert lex.expand("가을 하이쿠 하나 써줘") == ["haiku"]
    assert lex.expand("그 결과를 캐시해줘") == ["cache"]
    assert lex.expand("그 결과 캐시해 주세요") == ["cache"]
