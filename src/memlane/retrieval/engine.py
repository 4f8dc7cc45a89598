"""The search service: holds the embedding model and each project's vector index, warm.

Used in-process by the CLI and MCP server, and by the daemon (which is what keeps it warm for hooks).
Without the vector stack (or while the model loads) it answers from full-text search alone.
"""

from __future__ import annotations

import threading
from typing import Any

from memlane import config
from memlane.logs import log
from memlane.memory import Memory
from memlane.retrieval.hybrid import Hit, Retriever
from memlane.retrieval.select import select_for_injection


class Engine:
    def __init__(self, cfg: config.Config | None = None, *, vectors: bool = True) -> None:
        self.cfg = cfg or config.load()
        self.vectors = vectors
        self._embedder: Any = None
        self._indexes: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.model_error: str | None = None

    @property
    def embedder(self) -> Any:
        """The embedding model, loaded on first use (None when vectors are off or it cannot load)."""
        if not self.vectors or self.model_error:
            return None
        with self._lock:
            if self._embedder is None:
                try:
                    from memlane.embed import get_embedder

                    self._embedder = get_embedder(self.cfg.embedding)
                except Exception as exc:  # noqa: BLE001 - degrade to text search, say why
                    self.model_error = f"{type(exc).__name__}: {exc}"
                    log("retrieval", "error", f"embedding model unavailable, text search only: {self.model_error}")
                    return None
            return self._embedder

    def index(self, project_id: str) -> Any:
        embedder = self.embedder
        if embedder is None:
            return None
        with self._lock:
            if project_id not in self._indexes:
                from memlane.vectors import VectorIndex

                self._indexes[project_id] = VectorIndex(project_id, embedder.version, embedder.dim, self.cfg.vectors)
            return self._indexes[project_id]

    def retriever(self, memory: Memory) -> Retriever:
        index = self.index(memory.project.id) if self.vectors else None
        return Retriever(memory.store, memory.config, self.embedder if index is not None else None, index)

    def search(self, memory: Memory, query: str, **filters: Any) -> list[Hit]:
        return self.retriever(memory).search(query, **filters)

    def relevant(self, memory: Memory, prompt: str, exclude_ids: list[str] | None = None) -> list[Hit]:
        """Memories worth injecting for a prompt: above the inject threshold, at most max_results."""
        cfg = memory.config
        if len(prompt.strip()) < cfg.injection.min_prompt_chars:
            return []
        if self.embedder is None or self.index(memory.project.id) is None:
            # Without vectors: the text-only model and the same gate, as the hooks' fallback uses.
            from memlane.capture.inject import prompt_hits

            return prompt_hits(memory.store, prompt, cfg, exclude_ids or [])
        hits = self.search(memory, prompt, limit=cfg.injection.max_results * 3, exclude_ids=exclude_ids or [])
        if cfg.retrieval.cross_project:
            hits.extend(self._other_projects(memory, prompt, cfg.injection.max_results))
            hits.sort(key=lambda h: -h.score)
        return select_for_injection(hits, self.index(memory.project.id), cfg)

    def _other_projects(self, memory: Memory, prompt: str, limit: int) -> list[Hit]:
        """Only when the user enabled ``retrieval.cross_project``: memories of their other projects."""
        from memlane import project

        hits: list[Hit] = []
        for entry in project.known_projects()[:20]:
            if entry.get("id") == memory.project.id:
                continue
            try:
                with Memory.open(project_id=str(entry["id"]), cfg=self.cfg, create=None) as other:
                    hits.extend(self.search(other, prompt, limit=limit))
            except Exception as exc:  # noqa: BLE001 - one broken store must not break injection
                log("retrieval", "warning", f"cross-project search skipped {entry.get('id')}: {exc!r}")
        return hits

