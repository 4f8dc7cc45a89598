"""The torch-free runtime against sentence-transformers' own output for all-MiniLM-L6-v2 (float32 weights).

``tests/fixtures/minilm_reference.json`` holds vectors and chunk boundaries that sentence-transformers 5 produced
for all-MiniLM-L6-v2 (texts chosen for the tokenizer's edge cases: CJK, accents, emoji, empty, past the window),
so these tests run without torch installed. The default model, the same with int8 weights, is in test_int8.py.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest

from memlane.config import EmbeddingConfig
from memlane.embed import MINILM_FP32, BertEmbedder, EmbeddingError, bert, get_embedder

REFERENCE = json.loads((Path(__file__).parents[1] / "fixtures" / "minilm_reference.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def embedder() -> BertEmbedder:
    return BertEmbedder(EmbeddingConfig(model=MINILM_FP32))


def test_default_model_runs_on_numpy() -> None:
    assert isinstance(get_embedder(EmbeddingConfig()), BertEmbedder)
    assert isinstance(get_embedder(EmbeddingConfig(model=MINILM_FP32)), BertEmbedder)


def test_version_matches_the_sentence_transformers_one(embedder: BertEmbedder) -> None:
    # Same vectors, same version: stores embedded by the torch runtime keep their vectors.
    assert embedder.version == REFERENCE["model_version"]


def test_passage_vectors_match_sentence_transformers(embedder: BertEmbedder) -> None:
    ours = embedder.embed_passages(REFERENCE["texts"])
    theirs = np.array(REFERENCE["vectors"], dtype=np.float32)
    cosines = (ours * theirs).sum(axis=1) / np.linalg.norm(theirs, axis=1)
    assert cosines.min() >= 0.9999, list(zip(REFERENCE["texts"], cosines.tolist(), strict=True))


def test_query_vector_is_the_passage_vector_for_the_same_text(embedder: BertEmbedder) -> None:
    text = REFERENCE["texts"][0]
    assert float(embedder.embed_query(text) @ embedder.embed_passages([text])[0]) == pytest.approx(1.0, abs=1e-6)


def test_vectors_are_unit_length_and_independent_of_batching(embedder: BertEmbedder) -> None:
    texts = REFERENCE["texts"]
    together = embedder.embed_passages(texts)
    alone = np.vstack([embedder.embed_passages([t]) for t in texts])
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert np.allclose(together, alone, atol=1e-5)  # padding in a batch must not leak into a text's vector


def test_passes_side_by_side_give_the_same_vectors(embedder: BertEmbedder) -> None:
    """The daemon's worker runs its passes beside a query's, without the encoder's lock (a pass keeps no shared
    state): four threads at once must give exactly what one locked call gives."""
    from concurrent.futures import ThreadPoolExecutor

    texts = REFERENCE["texts"]
    expected = embedder.embed_passages(texts)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: embedder.embed_passages_concurrent(texts), range(8)))
        query = pool.submit(embedder.encoder.encode, [texts[0]], exclusive=False).result()
    for got in results:
        assert np.allclose(got, expected, atol=1e-6)
    assert np.allclose(query[0], embedder.encoder.encode([texts[0]])[0], atol=1e-6)


def test_chunks_are_cut_where_sentence_transformers_cuts_them(embedder: BertEmbedder) -> None:
    assert embedder.chunk(REFERENCE["long_text"]) == REFERENCE["long_text_chunks"]


def test_empty_batch(embedder: BertEmbedder) -> None:
    assert embedder.embed_passages([]).shape == (0, embedder.dim)


def test_gelu_is_the_exact_erf_form() -> None:
    xs = np.linspace(-10, 10, 20001, dtype=np.float32)
    exact = np.array([0.5 * x * (1 + math.erf(x / math.sqrt(2))) for x in xs.astype(np.float64)])
    assert np.abs(bert._gelu(xs) - exact).max() < 1e-6


def test_read_safetensors(tmp_path: Path) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([7, 8], dtype=np.int64)
    header = {
        "__metadata__": {"format": "pt"},
        "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "b": {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]},
    }
    raw = json.dumps(header).encode()
    path = tmp_path / "t.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + a.tobytes() + b.tobytes())
    tensors = bert.read_safetensors(str(path))
    assert sorted(tensors) == ["a", "b"]
    assert np.array_equal(tensors["a"], a)
    assert np.array_equal(tensors["b"], b)


def _non_bert_model(tmp_path: Path) -> Path:
    model = tmp_path / "xlmr"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "xlm-roberta", "hidden_act": "gelu"}))
    return model


def test_other_architectures_are_refused_by_the_numpy_runtime(tmp_path: Path) -> None:
    with pytest.raises(bert.UnsupportedModel, match="not a BERT model"):
        bert.BertEncoder(str(_non_bert_model(tmp_path)))


def test_runtime_numpy_says_why_it_cannot_run_a_model(tmp_path: Path) -> None:
    cfg = EmbeddingConfig(model=str(_non_bert_model(tmp_path)), runtime="numpy")
    with pytest.raises(EmbeddingError, match=r"runtime is numpy but .*not a BERT model"):
        get_embedder(cfg)


def test_other_pooling_is_refused(tmp_path: Path) -> None:
    model = tmp_path / "cls"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_act": "gelu"}))
    (model / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False})
    )
    with pytest.raises(bert.UnsupportedModel, match="mean pooling"):
        bert.BertEncoder(str(model))


def test_repeated_queries_come_from_the_cache(embedder: BertEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    first = embedder.embed_query("where is the connection pool configured?")
    calls = []
    monkeypatch.setattr(embedder.encoder, "encode", lambda *a, **k: calls.append(a) or np.zeros((1, embedder.dim)))
    again = embedder.embed_query("where is the connection pool configured?")
    assert calls == [] and np.array_equal(first, again)
    assert not again.flags.writeable  # one cached array is shared: nobody may change it in place


def test_batches_respect_both_limits() -> None:
    lengths = [5, 5, 5, 300, 300, 40, 40, 40, 40, 40]
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches = bert._batches(order, lengths, batch_size=4)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))  # every text once
    for b in batches:
        assert len(b) <= 4
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= bert.TOKENS_PER_BATCH


def test_torch_runtime_without_the_extra_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as in a default install: not there
    with pytest.raises(EmbeddingError, match=r"pip install 'memlane\[torch\]'"):
        get_embedder(EmbeddingConfig(model=MINILM_FP32, runtime="torch"))


def test_a_pass_pauses_before_every_layer_and_gives_the_same_vectors(embedder: BertEmbedder) -> None:
    """The daemon's worker waits between layers while a request is in flight: the pause runs once per layer of
    every pass, and a pass that paused gives exactly the vectors of one that did not."""
    texts = REFERENCE["texts"][:3]
    calls: list[int] = []
    got = embedder.embed_passages_concurrent(texts, pause=lambda: calls.append(1))
    passes = len(bert._batches(list(range(len(texts))), [4] * len(texts), embedder.batch_size))
    assert len(calls) == passes * len(embedder.encoder.layers) > 0
    assert np.allclose(got, embedder.embed_passages(texts), atol=1e-6)


def test_a_pause_that_raises_abandons_the_pass(embedder: BertEmbedder) -> None:
    """The worker's pause raises when the daemon stops: the pass ends there instead of running to its end."""
    calls: list[int] = []

    def pause() -> None:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        embedder.embed_passages_concurrent(["one short text"], pause=pause)
    assert len(calls) == 2
