"""Relative time in queries: the window a phrase points at, and retrieval preferring events from then."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memlane import config
from memlane.retrieval import when
from memlane.retrieval.hybrid import Retriever
from memlane.store import NewEvent, Store

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Days, weeks and months start at the user's midnight: the figures below are for a machine on UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def ago(days: float) -> str:
    """An event time ``days`` before NOW, as the store writes it."""
    return (NOW - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def days_ago(span: tuple[datetime, datetime]) -> tuple[float, float]:
    return round((NOW - span[1]).total_seconds() / 86400, 2), round((NOW - span[0]).total_seconds() / 86400, 2)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what did I buy 10 days ago?", (7.5, 12.5)),
        ("the bug from two weeks ago", (10.5, 17.5)),
        ("a couple of days ago we changed the pool", (1.0, 3.0)),
        ("what did we change yesterday", (0.5, 2.0)),
        ("what broke today", (0.0, 1.0)),
        ("anything in the past 3 days?", (0.0, 3.0)),
        ("what did we ship last week", (3.5, 14.0)),
        ("the deploy this month", (0.0, 30.0)),
        # NOW is a Monday: "last Saturday" is two days back, "last Monday" a week back (never today)
        ("who did I go with last Saturday?", (1.0, 3.0)),
        ("the release last Monday", (6.0, 8.0)),
        ("what broke this past weekend", (0.0, 3.0)),
        ("sum the last year of invoices", (0.0, 365.0)),  # "the last year of X": the past year, not the one before
        ("what did we fix the day before yesterday", (1.5, 3.0)),
        ("the other day we changed the pool", (1.0, 7.0)),
        ("3 weeks back the build broke", (15.75, 26.25)),
        # Korean: the phrase and its particle (어제는, 지난주에, 3일 전에)
        ("어제 바꾼 설정", (0.5, 2.0)),
        ("그저께 배포한 거", (1.5, 3.0)),
        ("아까 고친 버그", (0.0, 1.0)),
        ("지난주에 고친 버그", (3.5, 14.0)),
        ("이번 주에 실패한 CI", (0.0, 7.0)),
        ("지난달 마이그레이션", (15.0, 60.0)),
        ("3일 전에 바꾼 거", (2.0, 4.0)),
        ("2주 전 배포", (10.5, 17.5)),
        ("며칠 전에 추가한 테스트", (2.0, 4.0)),
        ("지난 3일 동안 바뀐 것", (0.0, 3.0)),
        ("지난 토요일에 한 작업", (1.0, 3.0)),
    ],
)
def test_windows(query: str, expected: tuple[float, float]) -> None:
    found = when.find(query, NOW)
    assert found is not None and days_ago(found[0]) == expected
    assert "ago" not in found[1] and "yesterday" not in found[1]


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        # from the latest such month (or day) up to NOW (2026-11-23): what happened then is often told of later
        ("What did we change in October to make CI faster?", "2026-09-30T12", "2026-11-23T12"),
        ("in December we moved to RQ", "2025-11-30T12", "2026-11-23T12"),
        ("the outage in October 2025", "2025-09-30T12", "2026-11-23T12"),
        ("everything since September", "2026-08-31T12", "2026-11-23T12"),
        ("the deploy on March 15", "2026-03-14T12", "2026-11-23T12"),
        ("10월에 바꾼 CI 설정", "2026-09-30T12", "2026-11-23T12"),
        ("3월 15일 배포", "2026-03-14T12", "2026-11-23T12"),
    ],
)
def test_months_and_dates(query: str, start: str, end: str) -> None:
    found = when.find(query, NOW)
    assert found is not None
    span = tuple(t.astimezone(UTC).strftime("%Y-%m-%dT%H") for t in found[0])
    assert span == (start, end)
    assert found[1] == query, "a month or a date stays among the words matched: memories name them too"


def test_korean_phrases_leave_no_stray_particle_and_are_compiled_only_for_korean() -> None:
    when._compiled.clear()
    assert when.find("what did we change last week", NOW) is not None
    assert not [name for name in when._compiled if name.startswith("ko_")]
    found = when.find("지난주에 고친 버그", NOW)
    assert found is not None and found[1] == "고친 버그"
    found = when.find("어제는 뭐 했지?", NOW)
    assert found is not None and found[1] == "뭐 했지?"


@pytest.mark.parametrize(
    "query",
    [
        "why does the pool time out",
        "we may need a retry",  # the verb, not the month
        "in may",
        "march through the list",
        "the deploy in December 2027",  # after now: not a time asked about
        "what broke on February 30",
        "아까워",  # "what a waste", not 아까 "earlier"
        "3일 전부 다 지워",  # 전부 "all", not 전 "before"
        "오늘날 프레임워크",  # "nowadays"
        "a few retries fail",
        "days of the week enum",
        "a movie to watch tonight",
        "we deploy on Friday",
        "",
    ],
)
def test_no_time_phrase(query: str) -> None:
    assert when.find(query, NOW) is None


@pytest.mark.parametrize(
    "query",
    [
        "`date.today()` in the nightly report is off by one day again",
        "date.today() in the nightly report is off by one day",
        "datetime.date.today() - timedelta(days=1) returns the wrong day",
        "render '3 days ago' style timestamps in the activity feed",
        'the label should read "2 weeks ago" not "14 days"',
        "rename last_week_total and today_count in stats.py",
        "call get_yesterday() before the export",
        "```\nsince = now - timedelta(days=7)  # last week\n```",
    ],
)
def test_time_words_in_code_and_quotes_are_not_a_time(query: str) -> None:
    assert when.find(query, NOW) is None


def test_prose_around_code_still_names_a_time() -> None:
    found = when.find("`date.today()` broke yesterday", NOW)
    assert found is not None and days_ago(found[0]) == (0.5, 2.0)


def test_a_time_phrase_reorders_but_never_lowers_a_score(tmp_path: Path) -> None:
    """A named time is a soft preference: it cannot push a strong match under the injection gate."""
    store = Store(tmp_path / "m.db", "p")
    old = (NOW - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    store.append(
        [NewEvent("agent_response", "s", "CI failed: the postgres service container was not ready", "1", {}, ts=old)]
    )
    retriever = Retriever(store, config.Config())
    plain = retriever.search("CI failed again, postgres service container not ready", now=NOW)[0]
    timed = retriever.search("CI failed again this week, postgres service container not ready", now=NOW)[0]
    assert timed.sources["when"] < 1.0
    assert timed.score == pytest.approx(plain.score, abs=1e-9)
    store.close()


def test_closeness_falls_off_outside_the_window() -> None:
    span = (NOW - timedelta(days=2), NOW - timedelta(days=1))
    inside = (NOW - timedelta(days=1.5)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    one_width_out = (NOW - timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert when.closeness(inside, span) == 1.0
    assert when.closeness(one_width_out, span) == pytest.approx(0.5)
    assert when.closeness("not a time", span) == 0.0


def test_a_named_time_ranks_events_from_then_first(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db", "p")

    store.append(
        [
            NewEvent("agent_response", "old", "Bought a new kitchen blender for smoothies", "1", {}, ts=ago(10)),
            NewEvent("agent_response", "new", "Bought a new kitchen kettle, the old one leaked", "2", {}, ts=ago(1)),
        ]
    )
    retriever = Retriever(store, config.Config())
    assert "kettle" in retriever.search("what kitchen thing did I buy?", now=NOW)[0].event.content
    hits = retriever.search("what kitchen thing did I buy 10 days ago?", now=NOW)
    assert "blender" in hits[0].event.content and hits[0].sources["when"] == 1.0
    assert "kettle" in hits[1].event.content and hits[1].sources["when"] < 1.0
    store.close()


def test_a_named_time_also_draws_meaning_matches_from_then(tmp_path: Path) -> None:
    """Closer paraphrases from other times fill the nearest-vector candidates; the event from the time the
    query names, which shares no words with it, still comes back."""
    from memlane.embed import get_embedder
    from memlane.vectors import VectorIndex

    cfg = config.Config()
    cfg.retrieval.candidates = 2
    embedder = get_embedder(cfg.embedding)
    store = Store(tmp_path / "m.db", "p")
    texts = [
        ("The deploy failed: the staging cluster rejected the image", 30),
        ("Deploy to staging failed again, image pull error", 25),
        ("Why the deploy failed: staging cluster out of disk", 20),
        ("Rolled back release: build broke on CI", 2),
    ]
    ids = store.append(
        [NewEvent("agent_response", f"s{i}", t, str(i), {}, ts=ago(d)) for i, (t, d) in enumerate(texts)]
    )
    index = VectorIndex("p", embedder.version, embedder.dim, cfg.vectors)
    events = store.by_ids(ids.inserted)
    vectors = embedder.embed_passages([e.content for e in events])
    index.upsert(
        [
            {"event_id": e.id, "chunk": 0, "vector": v, "type": e.type, "session_id": e.session_id, "ts": e.ts}
            for e, v in zip(events, vectors, strict=True)
        ]
    )
    retriever = Retriever(store, cfg, embedder, index)
    plain = retriever.search("why did the deploy fail?", now=NOW)
    assert ids.inserted[3] not in {h.event.id for h in plain}, "not among the nearest without a time"
    hits = retriever.search("why did the deploy fail a couple of days ago?", now=NOW)
    rollback = next(h for h in hits if h.event.id == ids.inserted[3])
    assert rollback.sources["vector"] > 0 and rollback.sources["when"] == 1.0
    store.close()


def test_a_korean_time_phrase_ranks_events_from_then_first(tmp_path: Path) -> None:
    """어제 (yesterday) and 지난주 (last week) pick the memory from then among two about the same fix: with a
    time named, nearness to it takes recency's place (the newer fix went first for "last week" before)."""
    store = Store(tmp_path / "m.db", "p")

    store.append(
        [
            NewEvent("agent_response", "old", "로그인 버그 수정: 세션 쿠키 만료 시간을 늘렸어요", "1", {}, ts=ago(8)),
            NewEvent("agent_response", "new", "로그인 버그 수정: 토큰 갱신 경쟁 조건을 막았어요", "2", {}, ts=ago(1)),
        ]
    )
    retriever = Retriever(store, config.Config())
    hits = retriever.search("지난주에 고친 로그인 버그", now=NOW)
    assert "쿠키" in hits[0].event.content and hits[0].sources["when"] == 1.0
    hits = retriever.search("어제 고친 로그인 버그", now=NOW)
    assert "토큰" in hits[0].event.content and hits[0].sources["when"] == 1.0
    store.append(
        [NewEvent("agent_response", "en", "Login bug fixed: the token refresh race is closed", "3", {}, ts=ago(1))]
    )
    store.append(
        [NewEvent("agent_response", "en0", "Login bug fixed: the session cookie lives longer", "4", {}, ts=ago(8))]
    )
    hits = retriever.search("which login bug did we fix last week", now=NOW)
    assert "cookie" in hits[0].event.content
    store.close()


@pytest.mark.parametrize(
    ("query", "past"),
    [
        ("Where did Mina sprain her ankle?", True),
        ("What was the name of the first app?", True),
        ("Were the movers late?", True),
        ("Where does Mina live now?", False),
        ("Is Tom still moving to Gothenburg?", False),
        ("What did we decide, and what is it now?", False),  # a word about the present wins
        ("What is the title of the talk?", False),
        ("두부가 3월에 병원에서 받은 진단은 뭐였어?", True),
        ("지수가 광안리에서 넘어져서 어디를 다쳤어?", True),
        ("일본 여행은 지금 언제로 잡혀 있어?", False),
        ("어디 살고 있어?", False),  # 있 is not a past ending
        ("부모님은 어디 사셔?", False),
        ("run `git log --did-you-mean`", False),  # code is not prose
    ],
)
def test_a_question_about_what_happened(query: str, past: bool) -> None:
    assert when.asks_about_past(query) is past
