"""LongMemEval retrieval through memlane's own store and retrieval code, one isolated store per question.

    python benchmarks/longmemeval.py [--data PATH] [--limit N] [--stride K] [--mode text|hybrid] [--cache DIR]

Every haystack turn becomes an event (user → user_prompt, assistant → agent_response) in a fresh
SQLite store (and, in hybrid mode, a fresh LanceDB index filled with the passages memlane's worker
would embed: window chunks of every turn and each sentence of a user turn); the question
is run through ``memlane.retrieval.hybrid.Retriever``. Prints session-level recall_any@5,
recall_all@5, nDCG@10 and turn-level recall_any@10 over non-abstention questions.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

DEFAULT_DATA = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval" / "longmemeval_s_cleaned_498q.json.gz"
)


def load(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
        return list(json.load(fh))


def iso(date: str) -> str:
    # "2023/04/10 (Mon) 03:02" → ISO
    moment = datetime.strptime(date.split(" (")[0] + " " + date.split(") ")[-1], "%Y/%m/%d %H:%M")
    return moment.strftime("%Y-%m-%dT%H:%M:00.000Z")


def ndcg(ranked: list[str], relevant: set[str], k: int) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, sid in enumerate(ranked[:k]) if sid in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def build(
    question: dict[str, Any], workdir: Path, embedder: Any, cache: Path | None = None
) -> tuple[Any, Any, dict[str, str]]:
    from memlane import config
    from memlane.store import NewEvent, Store

    store = Store(workdir / "memory.db", "lme")
    turn_ids: dict[str, str] = {}
    batch = []
    keys = []
    for sid, date, session in zip(
        question["haystack_session_ids"], question["haystack_dates"], question["haystack_sessions"], strict=True
    ):
        for i, turn in enumerate(session):
            kind = "user_prompt" if turn["role"] == "user" else "agent_response"
            batch.append(NewEvent(kind, sid, turn["content"] or " ", f"{i}", {}, ts=iso(date)))
            keys.append(f"{sid}#{i}" if turn.get("has_answer") else "")
    result = store.append(batch)
    for key, event_id in zip(keys, result.inserted, strict=False):
        if key:
            turn_ids[event_id] = key
    index = None
    if embedder is not None:
        from memlane.vectors import process_outbox  # noqa: F401 - fails early if missing

        index = _index(store, embedder, workdir, config.Config(), cache, question["question_id"])
    return store, index, turn_ids


def _index(store: Any, embedder: Any, workdir: Path, cfg: Any, cache: Path | None, qid: str) -> Any:
    import numpy as np

    from memlane.embed.passages import passages
    from memlane.vectors import VectorIndex

    os.environ["MEMLANE_HOME"] = str(workdir / "home")
    index = VectorIndex("lme", embedder.version, embedder.dim, cfg.vectors)
    rows = []
    events = list(store.iter_events())
    for event in events:
        for n, chunk in enumerate(passages(event.type, event.content, embedder)):
            rows.append((event, n, chunk))
    # Embedding a haystack takes ~30 s here; --cache keeps the vectors so ranking changes can be
    # re-measured in minutes. The file name carries the model version, so a model change re-embeds.
    saved = cache / f"{qid}.{embedder.version.replace('/', '_')}.npy" if cache else None
    if saved is not None and saved.exists() and len(loaded := np.load(saved)) == len(rows):
        vectors = list(loaded)
    else:
        vectors = embedder.embed_passages([c for _, _, c in rows])
        if saved is not None:
            saved.parent.mkdir(parents=True, exist_ok=True)
            np.save(saved, np.asarray(vectors, dtype=np.float32))
    index.upsert(
        [
            {"event_id": e.id, "chunk": n, "vector": v, "type": e.type, "session_id": e.session_id, "ts": e.ts}
            for (e, n, _), v in zip(rows, vectors, strict=True)
        ]
    )
    return index


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--limit", type=int, default=0, help="only the first N questions (CI-sized runs)")
    ap.add_argument("--stride", type=int, default=1, help="every K-th question: a sample across all question types")
    ap.add_argument("--mode", choices=["text", "hybrid"], default="hybrid")
    ap.add_argument("--cache", type=Path, help="keep haystack vectors here between runs (hybrid mode)")
    args = ap.parse_args()
    if not args.data.exists():
        raise SystemExit(f"no data at {args.data} (pass --data)")
    from memlane import config
    from memlane.retrieval.hybrid import Retriever

    questions = [q for q in load(args.data) if not q["question_id"].endswith("_abs")]
    questions = questions[:: max(1, args.stride)]
    if args.limit:
        questions = questions[: args.limit]
    embedder = None
    if args.mode == "hybrid":
        from memlane.embed import get_embedder

        embedder = get_embedder(config.Config().embedding)
    cfg = config.Config()
    metrics: dict[str, list[float]] = {"recall_any@5": [], "recall_all@5": [], "ndcg@10": [], "turn_recall_any@10": []}
    latencies = []
    started = time.time()
    for n, q in enumerate(questions, 1):
        workdir = Path(tempfile.mkdtemp(prefix="lme-"))
        try:
            store, index, answer_turns = build(q, workdir, embedder, args.cache)
            retriever = Retriever(store, cfg, embedder, index)
            t0 = time.perf_counter()
            # The question is asked on its own date: "two weeks ago" means two weeks before that.
            asked = datetime.fromisoformat(iso(q["question_date"]).replace("Z", "+00:00"))
            hits = retriever.search(q["question"], limit=50, now=asked)
            latencies.append((time.perf_counter() - t0) * 1000)
            sessions: list[str] = []
            for hit in hits:
                if hit.event.session_id not in sessions:
                    sessions.append(hit.event.session_id)
            relevant = set(q["answer_session_ids"])
            top5 = set(sessions[:5])
            metrics["recall_any@5"].append(float(bool(top5 & relevant)))
            metrics["recall_all@5"].append(float(relevant <= top5))
            metrics["ndcg@10"].append(ndcg(sessions, relevant, 10))
            if answer_turns:
                top_turns = {h.event.id for h in hits[:10]}
                metrics["turn_recall_any@10"].append(float(bool(top_turns & set(answer_turns))))
            store.close()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if n % 10 == 0 or n == len(questions):
            summary = "  ".join(f"{k} {statistics.mean(v):.3f}" for k, v in metrics.items() if v)
            print(f"\r[{n}/{len(questions)}] {summary}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    print(
        f"LongMemEval ({args.data.name}), {len(questions)} non-abstention questions, mode={args.mode}, "
        f"{time.time() - started:.0f} s"
    )
    for key, values in metrics.items():
        print(f"  {key:<22} {statistics.mean(values):.4f}   (n={len(values)})")
    print(f"  search latency        p50 {statistics.median(latencies):.1f} ms")


if __name__ == "__main__":
    main()
