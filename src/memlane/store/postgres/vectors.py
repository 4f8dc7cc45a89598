"""One project's vectors in pgvector: the same surface as ``vectors.index.VectorIndex`` (LanceDB).

Rows are (event, chunk, model version) in ``memlane.vectors``; a search asks the HNSW index of the model's
dimension (cosine), over the project's rows of that model version. pgvector's iterative index scan
(``hnsw.iterative_scan``, 0.8+) keeps scanning when the project and model filters drop candidates, so a
project that is small beside others in the same table still gets its k nearest. Vectors are deleted with
their events (a foreign key), so a forget reaches them in the same transaction.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, NamedTuple

import numpy as np

FIRSTS_KEPT = 4096
EF_SEARCH = 100


class Neighbour(NamedTuple):
    similarity: float
    type: str
    ts: str
    session_id: str


def literal(vector: Any) -> str:
    """A vector in pgvector's text form."""
    return "[" + ",".join(f"{float(x):.7g}" for x in np.asarray(vector, dtype=np.float32).reshape(-1)) + "]"


class PgVectorIndex:
    INDEX_TYPE = "hnsw"

    def __init__(self, store: Any, embedder_version: str, dim: int, cfg: Any = None) -> None:
        self.store = store
        self.project_id = store.project_id
        self.version = embedder_version
        self.dim = int(dim)
        self.cfg = cfg
        self.name = f"memlane.vectors[{embedder_version}]"
        self._firsts: OrderedDict[str, np.ndarray] = OrderedDict()
        self._indexed = False

    @property
    def db(self) -> Any:
        return self.store.db

    def table(self, create: bool = False) -> Any:
        return self  # rows live in one shared table; there is always "a table"

    def upsert(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        self.ensure_index()
        with self.db.transaction(), self.db.cursor() as cur:
            cur.executemany(
                "INSERT INTO memlane.vectors (project_id, event_id, chunk, model_version, type, session_id, ts, dim,"
                " embedding) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s::vector) ON CONFLICT (project_id, model_version,"
                " event_id, chunk) DO UPDATE SET embedding = excluded.embedding, type = excluded.type,"
                " session_id = excluded.session_id, ts = excluded.ts, dim = excluded.dim",
                [
                    (
                        self.project_id,
                        r["event_id"],
                        int(r["chunk"]),
                        self.version,
                        r.get("type") or "",
                        r.get("session_id") or "",
                        r.get("ts") or "",
                        self.dim,
                        literal(r["vector"]),
                    )
                    for r in rows
                ],
            )
            self._bump(cur)

    def _bump(self, cur: Any) -> None:
        cur.execute(
            "UPDATE memlane.project_stats SET vectors_version = vectors_version + 1 WHERE project_id = %s",
            (self.project_id,),
        )

    def nearest(self, vector: Any, k: int, where: str | None = None) -> dict[str, Neighbour]:
        """The k nearest events (best chunk each), best first. ``where`` is the filter retrieval builds over
        ``type``, ``session_id`` and ``ts`` (quoted literals), valid SQL here as in LanceDB."""
        d = self.dim
        extra = f" AND ({where})" if where else ""
        with self.db.transaction():
            self.db.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, 2 * k)}")
            self.db.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = self.db.execute(
                f"SELECT event_id, chunk, type, ts, session_id,"
                f" embedding::vector({d}) <=> %s::vector({d}) AS distance FROM memlane.vectors"
                f" WHERE dim = {d} AND project_id = %s AND model_version = %s{extra}"
                f" ORDER BY embedding::vector({d}) <=> %s::vector({d}) LIMIT %s",
                (literal(vector), self.project_id, self.version, literal(vector), k * 2),
            ).fetchall()
        rows = sorted(rows, key=lambda r: r[5])  # relaxed order: sort what came back
        best: dict[str, Neighbour] = {}
        # The vectors stay on the server: the supersession check reads the few opening vectors it needs
        # (``first_vectors``) instead of every neighbour's here.
        for event_id, _chunk, kind, ts, session_id, distance in rows:
            sim = 1.0 - float(distance)
            known = best.get(event_id)
            if known is None or sim > known.similarity:
                best[event_id] = Neighbour(sim, kind or "", ts or "", session_id or "")
        return dict(sorted(best.items(), key=lambda kv: -kv[1].similarity)[:k])

    def search(self, vector: Any, k: int, where: str | None = None) -> list[tuple[str, float]]:
        return [(e, n.similarity) for e, n in self.nearest(vector, k, where).items()]

    def table_version(self) -> int | None:
        return self.store._stats_row()[3]

    def _remember_first(self, event_id: str, vector: np.ndarray) -> None:
        self._firsts[event_id] = vector
        self._firsts.move_to_end(event_id)
        while len(self._firsts) > FIRSTS_KEPT:
            self._firsts.popitem(last=False)

    def first_vectors(self, event_ids: list[str]) -> dict[str, Any]:
        out = {e: self._firsts[e] for e in event_ids if e in self._firsts}
        missing = [e for e in event_ids if e not in out]
        if missing:
            rows = self.db.execute(
                "SELECT event_id, embedding::text FROM memlane.vectors WHERE project_id = %s AND model_version = %s"
                " AND chunk = 0 AND event_id = ANY(%s)",
                (self.project_id, self.version, missing),
            ).fetchall()
            out.update({e: np.asarray(_parse(v), dtype=np.float32) for e, v in rows})
        return out

    def delete(self, event_ids: list[str]) -> int:
        for event_id in event_ids:
            self._firsts.pop(event_id, None)
        if not event_ids:
            return 0
        with self.db.transaction(), self.db.cursor() as cur:
            cur.execute(
                "DELETE FROM memlane.vectors WHERE project_id = %s AND model_version = %s AND event_id = ANY(%s)",
                (self.project_id, self.version, list(event_ids)),
            )
            removed = int(cur.rowcount)
            self._bump(cur)
        return removed

    def count(self) -> int:
        return int(
            self.db.execute(
                "SELECT count(*) FROM memlane.vectors WHERE project_id = %s AND model_version = %s",
                (self.project_id, self.version),
            ).fetchone()[0]
        )

    def event_ids(self) -> set[str]:
        rows = self.db.execute(
            "SELECT DISTINCT event_id FROM memlane.vectors WHERE project_id = %s AND model_version = %s",
            (self.project_id, self.version),
        )
        return {r[0] for r in rows}

    def index_type(self) -> str | None:
        return self.INDEX_TYPE

    def has_index(self) -> bool:
        return True

    def ensure_index(self) -> bool:
        """The project's own HNSW index for this dimension (a partial index; made once, on the first upsert).

        The shared index of the dimension (384 is made by the schema) still serves a project without one."""
        if self._indexed:
            return False
        if self.dim != 384:
            self.db.execute("SELECT memlane.ensure_vector_index(%s)", (self.dim,))
        made = bool(
            self.db.execute(
                "SELECT memlane.ensure_project_vector_index(%s, %s)", (self.dim, self.project_id)
            ).fetchone()[0]
        )
        self._indexed = True
        return made

    def drop(self) -> None:
        with self.db.transaction(), self.db.cursor() as cur:
            cur.execute(
                "DELETE FROM memlane.vectors WHERE project_id = %s AND model_version = %s",
                (self.project_id, self.version),
            )
            self._bump(cur)
        self._firsts.clear()


def _parse(text: str) -> list[float]:
    return [float(x) for x in text.strip("[]").split(",")] if text and text != "[]" else []
