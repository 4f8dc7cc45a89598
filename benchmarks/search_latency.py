"""Hybrid search latency on synthetic stores of 10k / 100k / 1M events, plus embedding throughput.

    python benchmarks/search_latency.py [--sizes 10000,100000,1000000] [--queries 50] [--dir DIR]

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
