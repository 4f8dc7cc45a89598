"""A torch-free BERT encoder: the forward pass of a sentence-transformers BERT model in numpy.

The default model, all-MiniLM-L6-v2, is a 6-layer BERT with mean pooling. Running its own weights
(``model.safetensors``) through the same arithmetic gives the same vectors as sentence-transformers
(cosine ≥ 0.9999, checked by tests), so stores keep their vectors and retrieval quality is unchanged by
construction — without importing torch (seconds to load, a ~2 GB install, ~400 MB resident per process).

What it needs from the model directory: ``config.json`` (a ``BertModel``), ``model.safetensors`` (float32;
or, given as ``weights_path``, an int8 ONNX export read by ``embed.onnx_int8``: the default model's weights),
``tokenizer.json`` (a BERT WordPiece one, run by ``embed.wordpiece``, which gives the ids and offsets of the
Rust ``tokenizers`` library sentence-transformers uses, without that library and its ~32 MB of dependencies) and,
when present, ``1_Pooling/config.json`` (only mean pooling is supported). ``load`` refuses anything else with
``UnsupportedModel`` so callers can hand such a model to sentence-transformers instead.
"""

from __future__ import annotations

import contextlib
import json
import math
import mmap
import os
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


class UnsupportedModel(ValueError):
    """A model directory this runtime cannot run exactly (another architecture, pooling or weight format)."""


def read_safetensors(path: str) -> dict[str, np.ndarray]:
    """Tensors of a .safetensors file as read-only arrays over one memory map: no copy, pages loaded on use."""
    with open(path, "rb") as f:
        buffer = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    (header_len,) = struct.unpack("<Q", buffer[:8])
    header = json.loads(buffer[8 : 8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(info["dtype"])
        if dtype is None:
            raise UnsupportedModel(f"{path}: tensor {name} has dtype {info['dtype']}")
        start, end = info["data_offsets"]
        count = (end - start) // np.dtype(dtype).itemsize
        tensors[name] = np.frombuffer(buffer, dtype=dtype, count=count, offset=base + start).reshape(info["shape"])
    return tensors


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, 0.5·x·(1 + erf(x/√2)), to within 5e-7, in place on few buffers.

    erfc comes from Abramowitz & Stegun 7.1.26 (no scipy); the tanh approximation would be faster but moves
    outputs by up to 5e-4. Every step writes into an existing buffer: fresh 50 MB temporaries cost more in page
    faults than the arithmetic does.
    """
    z = np.abs(x)
    z *= 0.7071067811865476
    t = z * 0.3275911
    t += 1.0
    np.reciprocal(t, out=t)
    p = t * 1.061405429
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        p += c
        p *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    p *= z  # erfc(|x|/√2)
    p *= x
    p *= 0.5  # 0.5·x·erfc(|x|/√2): the answer for x < 0; x minus it for x ≥ 0
    out = np.subtract(x, p, out=z)
    np.copyto(out, p, where=x < 0)
    return out


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + np.float32(eps)) * weight + bias


@dataclass
class _Layer:
    q_t: np.ndarray
    q_b: np.ndarray
    k_t: np.ndarray
    k_b: np.ndarray
    v_t: np.ndarray
    v_b: np.ndarray
    out_t: np.ndarray
    out_b: np.ndarray
    ln1_w: np.ndarray
    ln1_b: np.ndarray
    up_t: np.ndarray
    up_b: np.ndarray
    down_t: np.ndarray
    down_b: np.ndarray
    ln2_w: np.ndarray
    ln2_b: np.ndarray


class BertEncoder:
    """Tokenize, run BERT, mean-pool and L2-normalise, like sentence-transformers' Transformer+Pooling+Normalize."""

    def __init__(self, model_dir: str, max_seq_length: int | None = None, weights_path: str | None = None) -> None:
        config = _read_json(os.path.join(model_dir, "config.json"))
        if config.get("model_type") != "bert" or config.get("position_embedding_type", "absolute") != "absolute":
            raise UnsupportedModel(f"{model_dir}: not a BERT model with absolute positions")
        if config.get("hidden_act") != "gelu":
            raise UnsupportedModel(f"{model_dir}: activation {config.get('hidden_act')!r} is not supported")
        pooling = _read_json(os.path.join(model_dir, "1_Pooling", "config.json"), default={})
        if pooling and (
            not pooling.get("pooling_mode_mean_tokens")
            or any(v for k, v in pooling.items() if k.startswith("pooling_mode_") and k != "pooling_mode_mean_tokens")
        ):
            raise UnsupportedModel(f"{model_dir}: only mean pooling is supported")
        weights_path = weights_path or os.path.join(model_dir, "model.safetensors")
        tokenizer_path = os.path.join(model_dir, "tokenizer.json")
        for path in (weights_path, tokenizer_path):
            if not os.path.exists(path):
                raise UnsupportedModel(f"{model_dir}: {os.path.basename(path)} is missing")
        self.model_dir = model_dir
        st_config = _read_json(os.path.join(model_dir, "sentence_bert_config.json"), default={})
        self.window = int(max_seq_length or st_config.get("max_seq_length") or config["max_position_embeddings"])
        self.dim = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))

        from memlane.embed.wordpiece import UnsupportedTokenizer, WordPiece

        try:
            self.tokenizer = WordPiece.from_file(tokenizer_path)
        except (UnsupportedTokenizer, KeyError) as exc:
            raise UnsupportedModel(f"{model_dir}: tokenizer.json: {exc}") from exc

        tensors: dict[str, Any]
        if weights_path.endswith(".onnx"):
            from memlane.embed.onnx_int8 import read_onnx_int8

            tensors = read_onnx_int8(weights_path)  # int8 weights; the word table stays int8 (QuantizedRows)
        else:
            tensors = read_safetensors(weights_path)
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""
        t: dict[str, Any] = {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}
        try:
            # An array, or (int8 weights) a table whose rows are dequantized as a batch looks them up.
            self.word: Any = t["embeddings.word_embeddings.weight"]
            self.position: Any = t["embeddings.position_embeddings.weight"]
            self.token_type = t["embeddings.token_type_embeddings.weight"]
            self.emb_ln = (t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
            self.layers = [self._layer(t, i) for i in range(int(config["num_hidden_layers"]))]
        except KeyError as exc:
            raise UnsupportedModel(f"{model_dir}: weight {exc} is missing") from exc
        self._lock = threading.Lock()  # one forward pass at a time: BLAS already uses every core

    @staticmethod
    def _layer(t: dict[str, Any], i: int) -> _Layer:
        def w(name: str) -> np.ndarray:  # a layer's weights are float arrays whatever the file stored
            return np.asarray(t[f"encoder.layer.{i}.{name}"], dtype=np.float32)

        # Transposed views of the mapped weights: 2-D matmuls hand BLAS the transpose flag, so nothing is copied
        # (~45 MB less per process than contiguous copies, at a few percent of speed). Mapped pages belong to
        # the page cache, so the daemon and its worker share one copy of them.
        return _Layer(
            q_t=w("attention.self.query.weight").T,
            q_b=w("attention.self.query.bias"),
            k_t=w("attention.self.key.weight").T,
            k_b=w("attention.self.key.bias"),
            v_t=w("attention.self.value.weight").T,
            v_b=w("attention.self.value.bias"),
            out_t=w("attention.output.dense.weight").T,
            out_b=w("attention.output.dense.bias"),
            ln1_w=w("attention.output.LayerNorm.weight"),
            ln1_b=w("attention.output.LayerNorm.bias"),
            up_t=w("intermediate.dense.weight").T,
            up_b=w("intermediate.dense.bias"),
            down_t=w("output.dense.weight").T,
            down_b=w("output.dense.bias"),
            ln2_w=w("output.LayerNorm.weight"),
            ln2_b=w("output.LayerNorm.bias"),
        )

    def encode(
        self,
        texts: list[str],
        batch_size: int = 32,
        *,
        exclusive: bool = True,
        pause: Callable[[], None] | None = None,
    ) -> np.ndarray:
        """Unit vectors, one row per text, in input order.

        ``exclusive=False`` skips the lock: a forward pass keeps no state between calls, so it is safe beside
        another, and the daemon's background worker uses it so a query never waits for the worker's pass.
        ``pause`` is called before every layer of every pass: the worker waits there while a request is in
        flight, so a pass already under way gives the CPU (and the GIL) back within one layer, not one batch.
        """
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = [self.tokenizer.encode_for_model(text, self.window) for text in texts]
        # Similar lengths in one batch waste little on padding (sentence-transformers sorts the same way).
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i]))
        with self._lock if exclusive else contextlib.nullcontext():
            for rows in _batches(order, [len(e) for e in encodings], max(1, batch_size)):
                out[rows] = self._forward([encodings[i] for i in rows], pause)
        return out

    def _forward(self, batch: list[list[int]], pause: Callable[[], None] | None = None) -> np.ndarray:
        size, length = len(batch), max(len(ids) for ids in batch)
        ids = np.zeros((size, length), dtype=np.int64)
        mask = np.zeros((size, length), dtype=np.float32)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        x = self.word[ids] + self.position[:length] + self.token_type[0]
        x = _layer_norm(x.reshape(size * length, self.dim), *self.emb_ln, self.eps)
        # Padded keys get the most negative float, as transformers does: exp() of it is exactly 0.
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for layer in self.layers:
            if pause is not None:
                pause()
            x = self._block(x, size, length, bias, layer)
        x = x.reshape(size, length, self.dim)
        pooled = np.einsum("bld,bl->bd", x, mask) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, 1e-12)

    def _block(self, x: np.ndarray, size: int, length: int, bias: np.ndarray, layer: _Layer) -> np.ndarray:
        """One encoder layer on (size·length, hidden) rows: 2-D matmuls and contiguous heads keep numpy on BLAS
        (a stacked matmul over strided views falls back to a loop ~15× slower)."""
        hidden = self.dim
        head_dim = hidden // self.heads

        def heads(weight_t: np.ndarray, bias: np.ndarray) -> np.ndarray:  # → (size, heads, length, head_dim)
            projected = x @ weight_t
            projected += bias
            return projected.reshape(size, length, self.heads, head_dim).transpose(0, 2, 1, 3)

        q = np.ascontiguousarray(heads(layer.q_t, layer.q_b))
        k_t = np.ascontiguousarray(heads(layer.k_t, layer.k_b).transpose(0, 1, 3, 2))
        v = np.ascontiguousarray(heads(layer.v_t, layer.v_b))
        q *= np.float32(1 / math.sqrt(head_dim))
        scores = q @ k_t
        scores += bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = np.ascontiguousarray((scores @ v).transpose(0, 2, 1, 3)).reshape(size * length, hidden)
        attended = context @ layer.out_t
        attended += layer.out_b
        attended += x
        x = _layer_norm(attended, layer.ln1_w, layer.ln1_b, self.eps)
        up = x @ layer.up_t
        up += layer.up_b
        down = _gelu(up) @ layer.down_t
        down += layer.down_b
        down += x
        return _layer_norm(down, layer.ln2_w, layer.ln2_b, self.eps)

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character spans of the text's tokens, without special tokens or truncation (for chunking)."""
        return self.tokenizer.encode(text)[1]

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text)[0])


# Padded tokens per forward pass. Attention scores grow with batch × heads × length², so 32 texts of 256 tokens
# would take ~100 MB for scores alone and ~650 MB at peak; 2,048 tokens keeps a pass near 40 MB at no cost
# in speed (the matrix products are just as wide).
TOKENS_PER_BATCH = 2048


def _batches(order: list[int], lengths: list[int], batch_size: int) -> list[list[int]]:
    """Runs of ``order`` (sorted by length) with at most ``batch_size`` texts and ``TOKENS_PER_BATCH`` tokens."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # Sorted ascending, so the newest text is the longest: it sets the padded length of the batch.
        if current and (len(current) >= batch_size or (len(current) + 1) * lengths[i] > TOKENS_PER_BATCH):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def _read_json(path: str, default: Any = None) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        if default is not None:
            return default
        raise UnsupportedModel(f"{path} is missing") from None
