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
import hashlib
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

LME_FILE = Path("shared") / "data" / "longmemeval" / "longmemeval_s_cleaned_498q.json.gz"


def default_data() -> Path:
    """LongMemEval-S beside the repository (``../shared/data``), or beside a parent of it (a git worktree)."""
    here = Path(__file__).resolve().parent
    for base in here.parents:
        if (base / LME_FILE).exists():
            return base / LME_FILE
    return here.parents[1] / LME_FILE


DEFAULT_DATA = default_data()


def embed_rows(index: Any, embedder: Any, rows: list[tuple[Any, int, str]], saved: Path | None) -> None:
    """Embed (event, chunk number, text) rows into ``index``, reusing the vectors saved at ``saved`` when they
    match the rows in number (the file name carries what would change them: the model, the text)."""
    import numpy as np

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


def split_of(question_id: str) -> str:
    """A fixed dev/test split by a hash of the question id: ~30% dev (tune here), ~70% test (report here).

    It does not depend on file order or on which questions a run samples, so a question never
    moves between splits.
    """
    return "dev" if hashlib.sha256(question_id.encode()).digest()[0] < 77 else "test"


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
    embed_rows(index, embedder, rows, saved)
    return index


class BM25:
    """Plain Okapi BM25 (k1 1.2, b 0.75) over lower-cased word tokens: the baseline memlane must beat."""

    def __init__(self, docs: list[str]) -> None:
        import re
        from collections import Counter

        self._word = re.compile(r"\w+")
        self.tfs = [Counter(self._word.findall(d.lower())) for d in docs]
        self.lens = [sum(tf.values()) for tf in self.tfs]
        self.avg = sum(self.lens) / max(len(self.lens), 1)
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {t: math.log((n - f + 0.5) / (f + 0.5) + 1) for t, f in df.items()}

    def rank(self, query: str) -> list[int]:
        terms = set(self._word.findall(query.lower()))
        scores = []
        for i, tf in enumerate(self.tfs):
            score = 0.0
            for t in terms:
                if f := tf.get(t):
                    score += self.idf[t] * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * self.lens[i] / self.avg))
            scores.append(score)
        return sorted((i for i, sc in enumerate(scores) if sc > 0), key=lambda i: -scores[i])


def evaluate(
    questions: list[dict[str, Any]], mode: str, cache: Path | None = None, quiet: bool = False, cfg: Any = None
) -> dict:
    """Session recall_any@5, recall_all@5, nDCG@10, turn recall_any@10 and what the hook would inject.

    ``mode``: ``bm25`` (plain Okapi BM25 over turns), ``text`` (memlane full-text), ``hybrid``.
    """
    from memlane import config
    from memlane.capture.inject import candidates_kept
    from memlane.retrieval.hybrid import Retriever
    from memlane.retrieval.select import by_support, select_for_injection

    cfg = cfg or config.load()  # defaults and MEMLANE_* overrides: a weight or a model tried without editing
    embedder = None
    if mode == "hybrid":
        from memlane.embed import get_embedder

        embedder = get_embedder(cfg.embedding)
    keys = ["recall_any@5", "recall_all@5", "ndcg@10", "turn_recall_any@10", "injected_evidence", "injected_count"]
    metrics: dict[str, list[float]] = {k: [] for k in keys}
    latencies = []
    started = time.time()
    for n, q in enumerate(questions, 1):
        workdir = Path(tempfile.mkdtemp(prefix="lme-"))
        try:
            store, index, answer_turns = build(q, workdir, embedder, cache)
            t0 = time.perf_counter()
            if mode == "bm25":
                events = list(store.iter_events())
                ranking = [events[i] for i in BM25([e.content for e in events]).rank(q["question"])[:50]]
                injected = None
            else:
                retriever = Retriever(store, cfg, embedder, index)
                # The question is asked on its own date: "two weeks ago" means two weeks before that.
                asked = datetime.fromisoformat(iso(q["question_date"]).replace("Z", "+00:00"))
                hits = retriever.search(q["question"], limit=50, now=asked)
                ranking = [h.event for h in hits]
                # As Engine.relevant picks: the 15 best by P among the candidates, then the gate (with the store,
                # as the hook has it: one memory per exchange, and its answer).
                injected = select_for_injection(by_support(hits, candidates_kept(cfg)), index, cfg, store)
            latencies.append((time.perf_counter() - t0) * 1000)
            sessions: list[str] = []
            for event in ranking:
                if event.session_id not in sessions:
                    sessions.append(event.session_id)
            relevant = set(q["answer_session_ids"])
            top5 = set(sessions[:5])
            metrics["recall_any@5"].append(float(bool(top5 & relevant)))
            metrics["recall_all@5"].append(float(relevant <= top5))
            metrics["ndcg@10"].append(ndcg(sessions, relevant, 10))
            if answer_turns:
                top_turns = {e.id for e in ranking[:10]}
                metrics["turn_recall_any@10"].append(float(bool(top_turns & set(answer_turns))))
                if injected is not None:
                    metrics["injected_evidence"].append(float(any(h.event.id in answer_turns for h in injected)))
            if injected is not None:
                metrics["injected_count"].append(float(len(injected)))
            store.close()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if not quiet and (n % 10 == 0 or n == len(questions)):
            summary = "  ".join(f"{k} {statistics.mean(v):.3f}" for k, v in metrics.items() if v)
            print(f"\r[{n}/{len(questions)}] {summary}", end="", file=sys.stderr, flush=True)
    if not quiet:
        print(file=sys.stderr)
    out: dict[str, Any] = {k: statistics.mean(v) for k, v in metrics.items() if v}
    out.update(questions=len(questions), seconds=round(time.time() - started), p50_ms=statistics.median(latencies))
    return out


def select(path: Path, split: str = "all", stride: int = 1, limit: int = 0) -> list[dict[str, Any]]:
    questions = [q for q in load(path) if not q["question_id"].endswith("_abs")]
    if split != "all":
        questions = [q for q in questions if split_of(q["question_id"]) == split]
    questions = questions[:: max(1, stride)]
    return questions[:limit] if limit else questions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--limit", type=int, default=0, help="only the first N questions (CI-sized runs)")
    ap.add_argument("--stride", type=int, default=1, help="every K-th question: a sample across all question types")
    ap.add_argument("--split", choices=["dev", "test", "all"], default="all", help="fixed dev/test split (tune on dev)")
    ap.add_argument("--mode", choices=["bm25", "text", "hybrid"], default="hybrid")
    ap.add_argument("--cache", type=Path, help="keep haystack vectors here between runs (hybrid mode)")
    ap.add_argument("--json", action="store_true", help="print the metrics as JSON")
    ap.add_argument("--cached-only", action="store_true", help="only questions whose vectors are in --cache")
    args = ap.parse_args()
    if not args.data.exists():
        raise SystemExit(f"no data at {args.data} (pass --data)")
    questions = select(args.data, args.split, args.stride, args.limit)
    if args.cached_only and args.cache:
        questions = [q for q in questions if any(args.cache.glob(f"{q['question_id']}.*.npy"))]
    result = evaluate(questions, args.mode, args.cache)
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"LongMemEval ({args.data.name}), {len(questions)} non-abstention questions, split={args.split}, "
        f"mode={args.mode}, {result['seconds']} s"
    )
    for key, value in result.items():
        if key not in ("questions", "seconds"):
            print(f"  {key:<22} {value:.4f}")


if __name__ == "__main__":
    main()
