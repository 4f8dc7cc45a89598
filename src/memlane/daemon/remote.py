"""The daemon's warm embedding model, used from another process (CLI ``process``, ``import``, ``vectors``).

``RemoteEmbedder`` has the ``Embedder`` interface, so the outbox worker and the vector commands run unchanged
while the model stays loaded once per user, in the daemon. Vectors cross as JSON lists of float32 values
(exact: every float32 is a float64).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memlane.config import EmbeddingConfig
from memlane.daemon import client, state
from memlane.embed import EmbeddingError

BATCH = 64  # texts per request: a few hundred KB of JSON, a second or two of embedding on a slow machine
DEADLINE_MS = 120_000  # a batch of long texts on a loaded 2-core machine; a dead daemon fails at once instead


class RemoteEmbedder:
    def __init__(self, info: dict[str, Any]) -> None:
        self.model_id = str(info["model"])
        self.version = str(info["version"])
        self.dim = int(info["dim"])

    def _call(self, op: str, texts: list[str]) -> dict[str, Any]:
        answer = client.call("/api/embed", {"op": op, "texts": texts}, DEADLINE_MS)
        if answer is None or answer.get("version") != self.version:
            # Gone, restarted with another model, or too slow: the job fails and is retried by the worker.
            raise EmbeddingError("the daemon did not answer an embedding request (stopped or model changed)")
        return answer

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        parts = [
            np.asarray(self._call("passages", texts[i : i + BATCH])["vectors"], dtype=np.float32).reshape(-1, self.dim)
            for i in range(0, len(texts), BATCH)
        ]
        return np.vstack(parts) if parts else np.zeros((0, self.dim), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._call("query", [text])["vectors"][0], dtype=np.float32)

    def chunk(self, text: str) -> list[str]:
        return [str(c) for c in self._call("chunk", [text])["chunks"][0]]


def connect(cfg: EmbeddingConfig) -> RemoteEmbedder | None:
    """The daemon's model when the daemon is up and runs the model this config names; else None."""
    if not state.read_info():
        return None
    info = client.call("/api/embed", {"op": "info", "texts": []}, DEADLINE_MS)
    if not info or info.get("model") != cfg.model or info.get("provider") != cfg.provider:
        return None
    try:
        return RemoteEmbedder(info)
    except (KeyError, TypeError, ValueError):
        return None
