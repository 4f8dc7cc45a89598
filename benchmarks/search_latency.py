"""Hybrid search latency on synthetic stores of 10k / 100k / 1M events, plus embedding throughput.

    python benchmarks/search_latency.py [--sizes 10000,100000,1000000] [--queries 50] [--dir DIR]

Events are generated text; their vectors are generated directly (random unit vectors mixed with a few
topic directions, so similarity search has structure) instead of running the model a million times.
Queries use the real embedding model (warm, as in the daemon). Reports p50/p95 of
``Retriever.search`` — FTS5 + LanceDB (ANN index built when the table is large enough) + fusion.
"""

from __future__ import annotations

import argparse
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


def build(size: int, base: Path, embedder: object) -> tuple[object, object]:
    from memlane import config
    from memlane.store import NewEvent, Store
    from memlane.vectors import VectorIndex

    os.environ["MEMLANE_HOME"] = str(base / "home")
    cfg = config.Config()
    store = Store(base / f"memory-{size}.db", f"bench{size}")
    dim = embedder.dim  # type: ignore[attr-defined]
    index = VectorIndex(f"bench{size}", embedder.version, dim, cfg.vectors)  # type: ignore[attr-defined]
    if store.count() >= size:
        index.ensure_index()  # a store from an older run may carry another index type
        return store, index
    rng = random.Random(size)
    nprng = np.random.default_rng(size)
    topics = nprng.normal(size=(64, dim)).astype(np.float32)
    types = ["user_prompt", "agent_response", "tool_observation", "tool_observation"]
    step = 10_000
    started = time.time()
    for start in range(0, size, step):
        n = min(step, size - start)
        events = [
            NewEvent(types[i % 4], f"s{(start + i) // 100}", sentence(rng, rng.randint(8, 40)), f"t{start + i}", {})
            for i in range(n)
        ]
        ids = store.append(events).inserted
        rows = store.by_ids(ids)
        mix = topics[nprng.integers(0, 64, size=n)] + 0.8 * nprng.normal(size=(n, dim)).astype(np.float32)
        mix /= np.linalg.norm(mix, axis=1, keepdims=True)
        index.upsert(
            [
                {"event_id": e.id, "chunk": 0, "vector": v, "type": e.type, "session_id": e.session_id, "ts": e.ts}
                for e, v in zip(rows, mix, strict=True)
            ]
        )
        store.db.execute("UPDATE outbox SET status = 'done'")
        print(f"\r  {size}: {start + n} events ({time.time() - started:.0f} s)", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    index.ensure_index()
    return store, index


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--dir", help="keep the generated stores here (reused on the next run)")
    args = ap.parse_args()
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
        store, index = build(size, base, embedder)
        retriever = Retriever(store, cfg, embedder, index)  # type: ignore[arg-type]
        queries = [
            f"why does the {rng.choice(WORDS)} {rng.choice(WORDS)} fail in {rng.choice(WORDS)}"
            for _ in range(args.queries + 5)
        ]
        lat = []
        text_only = []
        for i, q in enumerate(queries):
            t = time.perf_counter()
            retriever.search(q, limit=10)
            if i >= 5:
                lat.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            Retriever(store, cfg).search(q, limit=10)  # type: ignore[arg-type]
            if i >= 5:
                text_only.append((time.perf_counter() - t) * 1000)
        lat.sort()
        text_only.sort()
        print(
            f"{size:>9} events: hybrid p50 {statistics.median(lat):6.1f} ms"
            f"  p95 {lat[int(0.95 * len(lat)) - 1]:6.1f} ms"
            f"   | full-text only p50 {statistics.median(text_only):5.1f} ms"
            f"   | vectors {index.count()} indexed={getattr(index, 'has_index', lambda: '?')()}"
        )  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
