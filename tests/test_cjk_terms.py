"""Korean prompts are scored on the bigrams of their content words: particles and endings no longer
decide whether a Korean memory on the same subject passes the injection gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import on_both_backends
from memlane import config
from memlane.capture.inject import prompt_memories
from memlane.retrieval import cjk
from memlane.store import NewEvent, Store

backend = on_both_backends(__name__)  # every test here runs on SQLite and on PostgreSQL

TS = "2026-11-20T10:00:00.000Z"
ANSWER = (  # from the coding replay's fixtures: the Korean memory a dev-split question is about
    'API가 401 과 함께 code: "token_expired" 를 보내면 프론트가 auth.sessionExpired 키를 씁니다. 한국어 문구는 '
    '"세션이 만료되었습니다. 다시 로그인해 주세요." 이고 영어는 '
    '"Your session has expired. Please sign in again." 입니다.'
)
HISTORY = [
    ("expiry", "user_prompt", "토큰 만료되면 로그인 화면에 영어 에러가 나와요. 한국어 메시지로 바꿔 주세요."),
    ("expiry", "agent_response", ANSWER),
    (
        "expiry",
        "session_summary",
        "Asked: 토큰 만료되면 로그인 화면에 영어 에러가 나와요. 한국어 메시지로 바꿔 주세요.\n"
        "Files changed: web/src/locales/ko.json\nOutcome: " + ANSWER,
    ),
    ("webhook", "user_prompt", "배송 상태 웹훅이 중복으로 들어와서 같은 이벤트가 두 번씩 저장돼요. 고쳐 주세요."),
    (
        "webhook",
        "agent_response",
        "택배사가 같은 웹훅을 재전송해서 중복이 생긴 것이었습니다. 유니크 제약을 추가했습니다.",
    ),
    ("rbac", "user_prompt", "관리자 권한을 나눠야 해요. admin, operator, viewer 세 가지 역할로 만들어 주세요."),
    ("rbac", "agent_response", "역할은 admin, operator, viewer 세 가지입니다. 라우트를 의존성으로 보호합니다."),
    ("pool", "agent_response", "The 500s were QueuePool exhaustion: pool_size=25, max_overflow=10 in app/db.py."),
]


def _store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "k.db", "p")
    events = [NewEvent(kind, session, text, str(i), {}, ts=TS) for i, (session, kind, text) in enumerate(HISTORY)]
    store.append(events)
    return store


def test_bigrams_of_content_words_without_their_particles() -> None:
    grams = cjk.bigrams("토큰 만료됐을 때 보여주는 한국어 문구가 뭐였지?")
    assert {"토큰", "만료", "한국", "국어", "문구"} <= set(grams)
    assert "구가" not in grams and "됐을" not in grams, "the particles 가 and 을 are stripped"
    assert cjk.bigrams("CI에서 Python 3.13 빌드가") == ["빌드"], "에서 after an identifier is only a particle"
    assert cjk.bigrams("반품률(return_rate)은 한국어/영어") == ["반품", "품률", "한국", "국어", "영어"]
    assert cjk.bigrams("what broke in CI?") == []


def test_a_korean_question_finds_the_korean_memory_whatever_its_endings(tmp_path: Path) -> None:
    store = _store(tmp_path)
    cfg = config.Config()
    got = prompt_memories(store, "토큰 만료됐을 때 보여주는 한국어 문구가 뭐였지?", cfg)
    assert got and {e.session_id for e in got} == {"expiry"}
    store.close()


def test_unrelated_korean_history_stays_out(tmp_path: Path) -> None:
    store = _store(tmp_path)
    cfg = config.Config()
    for prompt in ("배송비 계산 공식이 뭐야?", "결제 환불 처리 로직은 어디에 있어?", "오늘 점심 뭐 먹을까?"):
        assert prompt_memories(store, prompt, cfg) == [], prompt
    store.close()


def test_short_korean_words_are_found_among_the_newest_korean_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One- and two-letter Korean words (풀) are too short for the trigram index: they are looked for in the
    events with CJK text through their own index (never a walk of the whole table), newest first, within the
    newest ``SHORT_CJK_SCAN`` of them."""
    from memlane.store import fulltext

    store = Store(tmp_path / "s.db", "p")
    store.append([NewEvent("agent_response", "s", "커넥션 풀 크기를 25로 올렸어요.", "old", {}, ts=TS)])
    store.append([NewEvent("agent_response", "s", f"English note {i}", str(i), {}, ts=TS) for i in range(30)])
    store.append([NewEvent("agent_response", "s", f"한국어 메모 {i}번", f"k{i}", {}, ts=TS) for i in range(3)])
    assert [e.content for e, _ in store.fts("풀")] == ["커넥션 풀 크기를 25로 올렸어요."]
    if getattr(store, "backend", "sqlite") == "sqlite":
        plan = " ".join(
            str(r)
            for r in store.db.execute(
                "EXPLAIN QUERY PLAN SELECT e.seq FROM events e WHERE e.has_cjk = 1 AND e.seq >= 0"
                " AND e.content LIKE '%풀%' ORDER BY e.seq DESC LIMIT 5"
            )
        )
        assert "events_cjk_seq" in plan, plan
        monkeypatch.setattr(fulltext, "SHORT_CJK_SCAN", 3)  # the three newer Korean notes only
        assert store.fts("풀") == []
    store.close()
