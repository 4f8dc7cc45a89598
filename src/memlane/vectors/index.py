"""One project's vectors in LanceDB: one table per embedding model version, so vectors never mix.

Rows are keyed by ``<event id>:<chunk>`` and upserted with ``merge_insert``, so re-running a job never
duplicates. An ANN index (IVF with scalar quantisation, cosine) is built once a table reaches
``vectors.index_min_rows``; below that, exact search is fast enough and exact.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from memlane import atomic, paths
from memlane.config import VectorsConfig

FIRSTS_KEPT = 4096  # opening vectors kept per index for the supersession check (~6 MB at 384 dimensions)
# Tables up to this size are searched exactly in memory (``_Snapshot``): a LanceDB flat search costs 2-3 ms even
# over 300 vectors (query planning, its threads), numpy 0.03 ms over 2,000; reading the table after a write
# ~1-1.5 ms. At 384 dimensions the copy is at most 7.7 MB, kept only by the long-lived daemon's handles.
SNAPSHOT_MAX_ROWS = 5000


class Neighbour(NamedTuple):
    similarity: float
    type: str
    ts: str
    session_id: str


class _Snapshot(NamedTuple):
    """A whole (small) table as it was at ``version``, for exact search without LanceDB."""

    version: int
    event_ids: list[str]
    chunks: list[int]
    types: list[str]
    ts: list[str]
    sessions: list[str]
    vectors: np.ndarray  # (rows, dim) float32
    norms: np.ndarray


def table_name(version: str) -> str:
    return "v_" + hashlib.sha256(version.encode()).hexdigest()[:16]


def _connect(project_id: str) -> Any:
    from datetime import timedelta

    import lancedb

    directory = paths.vectors_dir(project_id)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    # The worker writes through one handle while searches read through another (the daemon keeps both):
    # check for a newer table version on every read, so a search never misses fresh vectors or sees
    # forgotten ones.
    return lancedb.connect(str(directory), read_consistency_interval=timedelta(0))


def _table_names(db: Any) -> list[str]:
    result = db.list_tables() if hasattr(db, "list_tables") else db.table_names()
    return list(getattr(result, "tables", result))


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class VectorIndex:
    def __init__(self, project_id: str, embedder_version: str, dim: int, cfg: VectorsConfig) -> None:
        self.project_id = project_id
        self.version = embedder_version
        self.dim = dim
        self.cfg = cfg
        self.db = _connect(project_id)
        self.name = table_name(embedder_version)
        self._table: Any = None
        self._firsts: OrderedDict[str, np.ndarray] = OrderedDict()  # opening vectors searches met (bounded)
        self._snapshot: _Snapshot | None = None
        self._write_meta()

    def _write_meta(self) -> None:
        """``tables.json``: which table holds which model version (names are hashes)."""
        meta_path = paths.vectors_dir(self.project_id) / "tables.json"
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            meta = {}
        if meta.get(self.name) != self.version:
            meta[self.name] = self.version
            atomic.write_text(meta_path, json.dumps(meta, indent=2))

    def schema(self) -> pa.Schema:
        return pa.schema(
            [
                pa.field("id", pa.string()),
                pa.field("event_id", pa.string()),
                pa.field("chunk", pa.int32()),
                pa.field("model_version", pa.string()),
                pa.field("type", pa.string()),
                pa.field("session_id", pa.string()),
                pa.field("ts", pa.string()),
                pa.field("vector", pa.list_(pa.float32(), self.dim)),
            ]
        )

    def table(self, create: bool = False) -> Any:
        if self._table is None:
            if self.name in self._names():
                self._table = self.db.open_table(self.name)
            elif create:
                self._table = self.db.create_table(self.name, schema=self.schema(), exist_ok=True)
        return self._table

    def _names(self) -> list[str]:
        return _table_names(self.db)

    def upsert(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        data = pa.table(
            {
                "id": [f"{r['event_id']}:{r['chunk']}" for r in rows],
                "event_id": [r["event_id"] for r in rows],
                "chunk": pa.array([int(r["chunk"]) for r in rows], pa.int32()),
                "model_version": [self.version] * len(rows),
                "type": [r.get("type") or "" for r in rows],
                "session_id": [r.get("session_id") or "" for r in rows],
                "ts": [r.get("ts") or "" for r in rows],
                "vector": pa.array(
                    [np.asarray(r["vector"], dtype=np.float32).tolist() for r in rows], pa.list_(pa.float32(), self.dim)
                ),
            },
            schema=self.schema(),
        )
        table = self.table(create=True)
        table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)

    def nearest(self, vector: Any, k: int, where: str | None = None) -> dict[str, Neighbour]:
        """The k nearest events, best chunk per event, best first, with the type, time and session their rows carry.

        Type and time are enough to rank a candidate, so a caller reads from the store only the events
        that make its final list (each read is a page lookup that a search pays for).
        """
        table = self.table()
        if table is None:
            return {}
        snapshot = self._fresh_snapshot(table) if where is None else None
        if snapshot is not None:
            return self._nearest_in(snapshot, vector, k)
        # Twice k: long events have several chunks and only the best one per event counts.
        query = table.search(np.asarray(vector, dtype=np.float32)).metric("cosine").limit(k * 2)
        if where:
            query = query.where(where, prefilter=True)
        # Set whether or not an index exists (a flat search ignores it): asking (``list_indices``) took ~56 ms
        # per search at 100k vectors on LanceDB 0.30, twice the search itself.
        query = query.nprobes(NPROBES)
        columns = ["event_id", "chunk", "type", "ts", "session_id", "vector", "_distance"]
        found = query.select(columns).to_arrow()
        rows = {name: found.column(name).to_pylist() for name in columns if name != "vector"}
        # The vectors come along as one numpy block: the injection's supersession check compares the hits'
        # opening vectors, and keeping those it met here saves it a second LanceDB query (~3 ms).
        vectors = found.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, self.dim)
        return self._best_per_event(
            (
                (
                    event_id,
                    rows["chunk"][i],
                    1.0 - float(rows["_distance"][i]),
                    vectors[i],
                    rows["type"][i] or "",
                    rows["ts"][i] or "",
                    rows["session_id"][i] or "",
                )
                for i, event_id in enumerate(rows["event_id"])
            ),
            k,
        )

    def _best_per_event(
        self, rows: Iterable[tuple[str, int, float, Any, str, str, str]], k: int
    ) -> dict[str, Neighbour]:
        """The k best events from rows of (event id, chunk, similarity, vector, type, time, session), best
        chunk per event; opening chunks' vectors are kept for the supersession check."""
        best: dict[str, Neighbour] = {}
        for event_id, chunk, sim, vector, kind, ts, session_id in rows:
            if chunk == 0:
                self._remember_first(event_id, vector)
            known = best.get(event_id)
            if known is None or sim > known.similarity:
                best[event_id] = Neighbour(sim, kind, ts, session_id)
        return dict(sorted(best.items(), key=lambda kv: -kv[1].similarity)[:k])

    def _fresh_snapshot(self, table: Any) -> _Snapshot | None:
        """The table in memory at its current version (read again after any write, from any handle); None for
        a table above ``SNAPSHOT_MAX_ROWS``. The version is read before the rows: rows newer than the label only
        cause one more read, never a stale answer. (A table another process dropped and made again could reach
        the old version number while this one is asked: the next write corrects it, as for ``Prepared``.)"""
        version = int(table.version)
        if self._snapshot is not None and self._snapshot.version == version:
            return self._snapshot
        self._snapshot = None
        if table.count_rows() > SNAPSHOT_MAX_ROWS:
            return None
        data = table.to_arrow().select(["event_id", "chunk", "type", "ts", "session_id", "vector"])
        vectors = data.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, self.dim)
        vectors = np.array(vectors, dtype=np.float32)  # its own memory, not the Arrow buffers'
        self._snapshot = _Snapshot(
            version,
            data.column("event_id").to_pylist(),
            data.column("chunk").to_pylist(),
            [t or "" for t in data.column("type").to_pylist()],
            [t or "" for t in data.column("ts").to_pylist()],
            [t or "" for t in data.column("session_id").to_pylist()],
            vectors,
            np.linalg.norm(vectors, axis=1),
        )
        return self._snapshot

    def _nearest_in(self, snap: _Snapshot, vector: Any, k: int) -> dict[str, Neighbour]:
        """``nearest`` over a snapshot: the same cosine and the same best-chunk-per-event rule as the LanceDB
        query (the tests compare the two)."""
        rows = len(snap.event_ids)
        if rows == 0:
            return {}
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        sims = (snap.vectors @ q) / np.maximum(snap.norms * float(np.linalg.norm(q)), 1e-12)
        m = min(rows, k * 2)
        top = np.argpartition(-sims, m - 1)[:m] if m < rows else np.arange(rows)
        order = top[np.argsort(-sims[top], kind="stable")]
        return self._best_per_event(
            (
                (
                    snap.event_ids[i],
                    snap.chunks[i],
                    float(sims[i]),
                    snap.vectors[i],
                    snap.types[i],
                    snap.ts[i],
                    snap.sessions[i],
                )
                for i in order
            ),
            k,
        )

    def table_version(self) -> int | None:
        """The table's version (it changes with every write, from any handle); None while there is no table."""
        table = self.table()
        return int(table.version) if table is not None else None

    def _remember_first(self, event_id: str, vector: np.ndarray) -> None:
        self._firsts[event_id] = np.array(vector, dtype=np.float32)  # a copy: the block is freed with the result
        self._firsts.move_to_end(event_id)
        while len(self._firsts) > FIRSTS_KEPT:
            self._firsts.popitem(last=False)

    def first_vectors(self, event_ids: list[str]) -> dict[str, Any]:
        """The first chunk's vector of each event (what it opens with: its subject), by event id.

        An event's vectors never change under one model version (its table), so those a search just met are
        taken from memory and only the others are read.
        """
        out = {e: self._firsts[e] for e in event_ids if e in self._firsts}
        missing = [e for e in event_ids if e not in out]
        table = self.table()
        if table is None or not missing:
            return out
        where = f"chunk = 0 AND event_id IN ({', '.join(_quote(e) for e in missing)})"
        rows = table.search().where(where).select(["event_id", "vector"]).limit(len(missing)).to_list()
        out.update({row["event_id"]: np.asarray(row["vector"], dtype=np.float32) for row in rows})
        return out

    def vectors_of(self, event_ids: list[str]) -> list[dict[str, Any]]:
        """Every chunk's row (event id, chunk, type, session, time, vector) of these events (team sync sends them)."""
        table = self.table()
        if table is None or not event_ids:
            return []
        out: list[dict[str, Any]] = []
        for start in range(0, len(event_ids), 500):
            chunk = event_ids[start : start + 500]
            where = f"event_id IN ({', '.join(_quote(e) for e in chunk)})"
            columns = ["event_id", "chunk", "type", "session_id", "ts", "vector"]
            rows = table.search().where(where).select(columns).limit(len(chunk) * 1000).to_list()
            out.extend({c: row[c] for c in columns} for row in rows)
        return out

    def search(self, vector: Any, k: int, where: str | None = None) -> list[tuple[str, float]]:
        """(event id, cosine similarity) of the nearest events, best first."""
        return [(event_id, n.similarity) for event_id, n in self.nearest(vector, k, where).items()]

    def delete(self, event_ids: list[str]) -> int:
        for event_id in event_ids:
            self._firsts.pop(event_id, None)
        table = self.table()
        if table is None or not event_ids:
            return 0
        before = table.count_rows()
        for start in range(0, len(event_ids), 500):
            chunk = event_ids[start : start + 500]
            table.delete(f"event_id IN ({', '.join(_quote(e) for e in chunk)})")
        return before - table.count_rows()

    def count(self) -> int:
        table = self.table()
        return int(table.count_rows()) if table is not None else 0

    def event_ids(self) -> set[str]:
        table = self.table()
        if table is None:
            return set()
        return set(table.to_arrow().column("event_id").to_pylist())

    def index_type(self) -> str | None:
        """The vector column's ANN index type (``IvfSq``, ``IvfPq``, …), or None without one."""
        table = self.table()
        if table is None:
            return None
        try:
            for ix in table.list_indices():
                if "vector" in (getattr(ix, "columns", None) or []):
                    return str(getattr(ix, "index_type", "") or "?")
        except Exception:  # noqa: BLE001 - older/newer LanceDB: treat as no index
            return None
        return None

    def has_index(self) -> bool:
        return self.index_type() is not None

    def ensure_index(self) -> bool:
        """Build the ANN index once the table is large enough; afterwards keep it fresh. True if built now."""
        table = self.table()
        if table is None:
            return False
        rows = table.count_rows()
        kind = self.index_type()
        if kind == INDEX_TYPE:
            table.optimize()
            return False
        if rows < self.cfg.index_min_rows:
            if rows <= COMPACT_MAX_ROWS:
                self._compact(table)
            return False
        # IVF with scalar-quantised vectors: measured at 100k vectors (benchmarks/search_latency.py) it
        # answers in ~7 ms with recall@10 ≈ 0.93 at 30 probes, where IVF_PQ needed a refine step (~20 ms)
        # to reach the same recall. An index of another type (older memlane) is replaced once.
        partitions = max(1, min(1024, int(rows**0.5)))
        if "config" in inspect.signature(table.create_index).parameters:  # LanceDB 0.34+ (keywords deprecated)
            from lancedb.index import IvfSq

            table.create_index("vector", config=IvfSq(distance_type="cosine", num_partitions=partitions), replace=True)
        else:  # the pinned 0.33: local tables take keywords only
            table.create_index(
                metric="cosine",
                num_partitions=partitions,
                vector_column_name="vector",
                index_type="IVF_SQ",
                replace=True,
            )
        return True

    def _compact(self, table: Any) -> None:
        """Merge the small fragments every embedding batch appends, in a small table. A flat search reads every
        fragment: over 358 vectors it took 5.5 ms in 25 fragments and 2.6 ms in one, and a store adds one or two
        fragments per turn. Only up to ``COMPACT_MAX_ROWS``: LanceDB's compaction rewrites the whole table, and
        doing that every few batches up to 10k vectors left the daemon at 480 MB resident instead of 266 MB
        (``benchmarks/daemon_memory.py --events 10000``)."""
        try:
            small = int(table.stats()["fragment_stats"]["num_small_fragments"])
        except Exception:  # noqa: BLE001 - a LanceDB without stats(): left as it is
            return
        if small >= COMPACT_AT:
            table.optimize()

    def drop(self) -> None:
        if self.name in self._names():
            self.db.drop_table(self.name)
        self._table = None
        self._snapshot = None


INDEX_TYPE = "IvfSq"
NPROBES = 30
COMPACT_AT = 8  # small fragments that a small table is compacted at ...
COMPACT_MAX_ROWS = 2_000  # ... while it holds at most this many vectors (each compaction rewrites it all)


def other_tables(project_id: str, keep: str) -> list[str]:
    return [n for n in _table_names(_connect(project_id)) if n != keep and n.startswith("v_")]


def forget_vectors(project_id: str, event_ids: list[str]) -> int:
    """Delete an event's vectors from every model table of the project (forget must reach them all)."""
    if not event_ids or not paths.vectors_dir(project_id).is_dir():
        return 0
    db = _connect(project_id)
    removed = 0
    for name in _table_names(db):
        table = db.open_table(name)
        before = table.count_rows()
        for start in range(0, len(event_ids), 500):
            chunk = event_ids[start : start + 500]
            table.delete(f"event_id IN ({', '.join(_quote(e) for e in chunk)})")
        removed += before - table.count_rows()
    return removed


def vector_counts(project_id: str, event_ids: list[str]) -> dict[str, int]:
    """How many vector rows each event has, over every model table (``memlane privacy scan`` reports it)."""
    counts: dict[str, int] = {}
    if not event_ids or not paths.vectors_dir(project_id).is_dir():
        return counts
    wanted = set(event_ids)
    db = _connect(project_id)
    for name in _table_names(db):
        # one column of a local table: a scan is simpler than a filter per batch of ids
        for event_id in db.open_table(name).to_arrow().column("event_id").to_pylist():
            if event_id in wanted:
                counts[event_id] = counts.get(event_id, 0) + 1
    return counts
