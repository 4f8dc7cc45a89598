"""Query embedding while the daemon's worker embeds a backlog: is a hook's query starved?

    python benchmarks/backlog_queries.py [--model NAME ...] [--runs 3] [--texts 200]

Each model runs in a fresh process set up as ``memlane serve`` sets itself up (OMP/OpenBLAS/MKL threads = 1,
before anything loads) and as the worker embeds (``BackgroundEmbedder``: slices of 8 texts through
``embed_passages_concurrent`` on a niced thread). It embeds the coding replay's prompts one by one, first idle
and then while the worker thread embeds event-sized pieces of this repository's source in a loop, and prints
p50 / p95 / max of the query times in both states, with how many passages the worker got through.
Each query holds the worker's gate as a daemon request does (no new slice starts; the one under way goes on).
The daemon's deadline for a hook's answer (embedding included) is ``daemon.hook_deadline_ms``, 120 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import json, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from memlane.config import EmbeddingConfig
from memlane.daemon.embed_worker import BackgroundEmbedder, Gate, lower_thread_priority
from memlane.embed import get_embedder

embedder = get_embedder(EmbeddingConfig(model=sys.argv[1]))
prompts, texts = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
embedder.embed_query("warm up")

gate = Gate()

def timed(batch):
    out = []
    for p in batch:
        embedder._queries = type(embedder._queries)()  # every query computed, none from the cache
        with gate.request():  # as a daemon request does: no new slice starts, the one under way goes on
            t = time.perf_counter()
            embedder.embed_query(p)
            out.append((time.perf_counter() - t) * 1000)
    return out

def stats(ms):
    ms = sorted(ms)
    return {"p50": ms[len(ms) // 2], "p95": ms[int(len(ms) * 0.95)], "max": ms[-1]}

idle = timed(prompts)
stop, done = threading.Event(), [0]
niced = ThreadPoolExecutor(1, initializer=lower_thread_priority)
worker = BackgroundEmbedder(embedder, gate, threading.Event(), lambda: None, niced)

def backlog():
    while not stop.is_set():
        worker.embed_passages(texts[:16])
        done[0] += 16

thread = threading.Thread(target=backlog)
thread.start()
time.sleep(0.5)  # the pass is under way
start = time.perf_counter()
busy = timed(prompts)
seconds = time.perf_counter() - start
stop.set()
thread.join()
niced.shutdown()
print(json.dumps({"idle": stats(idle), "busy": stats(busy), "worker_passages_per_s": done[0] / seconds}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", help="embedding.model (default: both bundled models)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--texts", type=int, default=64)
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from embed_runtime import corpus

    models = args.model or ["all-MiniLM-L6-v2-int8", "multilingual-e5-small"]
    work = Path(os.environ.get("TMPDIR", "/tmp")) / "memlane-backlog-queries"
    work.mkdir(exist_ok=True)
    prompts = [json.loads(line)["query"] for line in (HERE / "coding_replay" / "queries.jsonl").open(encoding="utf-8")]
    (work / "prompts.json").write_text(json.dumps(prompts))
    (work / "texts.json").write_text(json.dumps(corpus(args.texts)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
    env.update(PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    results: dict[str, list[dict]] = {m: [] for m in models}
    for _ in range(args.runs):
        for m in models:  # alternated, so a change in the machine's load hits both
            cmd = [sys.executable, "-c", CHILD, m, str(work / "prompts.json"), str(work / "texts.json")]
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
            results[m].append(json.loads(out))
    print("| model | query ms, idle: p50 / p95 / max | during a backlog pass: p50 / p95 / max | worker passages/s |")
    print("|---|---|---|---|")
    for m, rs in results.items():

        def med(state: str, key: str, rs: list[dict] = rs) -> float:
            return statistics.median(r[state][key] for r in rs)

        idle = " / ".join(f"{med('idle', k):.0f}" for k in ("p50", "p95", "max"))
        busy = " / ".join(f"{med('busy', k):.0f}" for k in ("p50", "p95", "max"))
        rate = statistics.median(r["worker_passages_per_s"] for r in rs)
        print(f"| {m} | {idle} | {busy} | {rate:.1f} |")


if __name__ == "__main__":
    main()
