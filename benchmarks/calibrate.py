"""Fit the retrieval score's logistic weights on the DEV split of the retrieval benchmarks.

    python benchmarks/calibrate.py --lme PATH --cache DIR [--lme-stride 4] [--replay]
                                   [--conversation --conversation-cache DIR]

For every dev query, every candidate memlane's retriever considers becomes one row of features
(text evidence, cosine, stand-out over the neighbours' median) with label 1 when it is an
expected memory (LongMemEval: a turn marked ``has_answer``; coding replay: the expected memory). A
logistic regression with a little L2 is fitted twice: the hybrid model and the text-only model (used
when there are no vectors). It prints the weights to put in ``RetrievalConfig.hybrid_weights`` and
``text_weights``. Only dev queries are read; the test split stays for reporting
(``benchmarks/retrieval.py``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from memlane.retrieval.scoring import HYBRID_FEATURES, TEXT_FEATURES

sys.path.insert(0, str(Path(__file__).resolve().parent))

Rows = tuple[list[list[float]], list[int]]


def lme_cases(
    path: Path, cache: Path, stride: int, hybrid: bool, cached_only: bool = False
) -> Iterator[tuple[Any, str, Any, set[str]]]:
    """(retriever, question, asked-at, ids of evidence turns) for LongMemEval dev questions."""
    from datetime import datetime

    import longmemeval as lme

    from memlane import config
    from memlane.retrieval.hybrid import Retriever

    cfg = config.load()  # MEMLANE_* overrides apply: MEMLANE_EMBEDDING_MODEL fits the weights for another model
    embedder = None
    if hybrid:
        from memlane.embed import get_embedder

        embedder = get_embedder(cfg.embedding)
    questions = [q for q in lme.load(path) if not q["question_id"].endswith("_abs")]
    questions = [q for q in questions if lme.split_of(q["question_id"]) == "dev"][:: max(1, stride)]
    for q in questions:
        if cached_only and embedder is not None and not any(cache.glob(f"{q['question_id']}.*.npy")):
            continue
        workdir = Path(tempfile.mkdtemp(prefix="cal-"))
        try:
            store, index, answer_turns = lme.build(q, workdir, embedder, cache)
            if not answer_turns:
                store.close()
                continue
            asked = datetime.fromisoformat(lme.iso(q["question_date"]).replace("Z", "+00:00"))
            yield Retriever(store, cfg, embedder, index), q["question"], asked, set(answer_turns)
            store.close()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


def replay_cases(hybrid: bool, cache: Path) -> Iterator[tuple[Any, str, Any, set[str]]]:
    """(retriever, prompt, asked-at, ids of expected memories) for the coding replay's dev match queries."""
    from datetime import datetime

    import coding_replay as cr

    from memlane.retrieval.hybrid import Retriever

    cr.load_sessions(cr.HERE / "transcripts")
    workdir = cache.resolve() / cr.cache_key(cr.HERE / "transcripts", not hybrid)
    if (workdir / "stats.json").exists():
        memory, embedder, _ = cr.reopen(workdir, not hybrid, True)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
        memory, embedder, _ = cr.build(cr.HERE / "transcripts", workdir, not hybrid, True)
    index = None
    if hybrid:
        from memlane.retrieval.engine import Engine

        engine = Engine(memory.config)
        engine._embedder = embedder
        index = engine.index(memory.project.id)
    events = [e for e in memory.store.iter_events() if e.type not in cr.SKIP_TYPES]
    retriever = Retriever(memory.store, memory.config, embedder, index)
    for q in cr.load_queries(cr.HERE / "queries.jsonl", "dev"):
        if q.get("expect"):
            positives = {e.id for e in events if cr.matches(e, q["expect"])}
            yield retriever, q["query"], datetime.fromisoformat(q["now"]), positives


def conversation_cases(hybrid: bool, cache: Path | None) -> Iterator[tuple[Any, str, Any, set[str]]]:
    """(retriever, question, asked-at, ids of evidence turns) for the conversation corpus's dev questions with
    an answer (``benchmarks/conversation/``: one store per dialogue)."""
    from datetime import datetime

    import conversation as conv

    from memlane import config
    from memlane.capture.inject import retrieval_query

    cfg = config.load()
    for dialogue in conv.conversations("dev"):
        workdir = Path(tempfile.mkdtemp(prefix=f"cal-{dialogue.id}-"))
        try:
            memory, event_of = conv.build(dialogue, workdir, cfg, hybrid, cache)
            now = datetime.fromisoformat(dialogue.asked_at.replace("Z", "+00:00"))
            engine = conv._hook_engine(cfg, hybrid, {"now": now})
            retriever = engine.retriever(memory) if hybrid else None
            if retriever is None:
                from memlane.retrieval.hybrid import Retriever

                retriever = Retriever(memory.store, cfg)
            for q in dialogue.questions:
                if q["answerable"]:
                    yield retriever, retrieval_query(q["text"], cfg), now, {event_of[t] for t in q["evidence"]}
            memory.close()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


def rows(retriever: Any, query: str, now: Any, positives: set[str], hybrid: bool) -> Rows:
    hits = retriever.search(query, limit=200, now=now)
    x, y = [], []
    for hit in hits:
        s = hit.sources
        if "exchange" in s and "text" not in s:
            continue  # joined through its answer: no evidence of its own to learn from
        if hybrid:
            x.append([s.get(name, 0.0) for name in HYBRID_FEATURES])
        else:
            x.append([s.get(name, 0.0) for name in TEXT_FEATURES])
        y.append(int(hit.event.id in positives))
    return x, y


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1e-2) -> np.ndarray:
    """Logistic regression with non-negative feature weights; returns [bias, *weights].

    More evidence must never lower the score (a negative weight would let lexical evidence push the
    right memory down, which is how a fitted model overfits a benchmark's quirks), so a feature whose
    weight comes out negative is dropped and the rest refitted.
    """
    keep = list(range(x.shape[1]))
    while True:
        w = _newton(x[:, keep], y, l2)
        negative = [k for k, v in zip(keep, w[1:], strict=True) if v < 0]
        if not negative:
            out = np.zeros(x.shape[1] + 1)
            out[0] = w[0]
            out[[k + 1 for k in keep]] = w[1:]
            return out
        keep = [k for k in keep if k not in negative]


def _newton(x: np.ndarray, y: np.ndarray, l2: float, steps: int = 50) -> np.ndarray:
    a = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(a.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(a @ w)))
        grad = a.T @ (p - y) + l2 * np.r_[0, w[1:]]
        hess = (a * (p * (1 - p))[:, None]).T @ a + l2 * np.diag(np.r_[0, np.ones(len(w) - 1)])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lme", type=Path, help="LongMemEval-S data file")
    ap.add_argument("--cache", type=Path, help="haystack vector cache (as benchmarks/longmemeval.py --cache)")
    ap.add_argument("--lme-stride", type=int, default=4)
    ap.add_argument("--replay", action="store_true", help="also the coding replay's dev queries")
    ap.add_argument("--replay-cache", type=Path, default=Path(tempfile.gettempdir()) / "replay-cache")
    ap.add_argument("--cached-only", action="store_true", help="only LongMemEval questions already in --cache")
    ap.add_argument("--conversation", action="store_true", help="also the conversation corpus's dev questions")
    ap.add_argument("--conversation-cache", type=Path, help="its vectors (as injection.py --cache)")
    args = ap.parse_args()
    for hybrid in (True, False):
        xs: list[list[float]] = []
        ys: list[int] = []
        if args.lme:
            for retriever, query, now, positives in lme_cases(
                args.lme, args.cache, args.lme_stride, hybrid, args.cached_only
            ):
                x, y = rows(retriever, query, now, positives, hybrid)
                xs += x
                ys += y
        if args.replay:
            for retriever, query, now, positives in replay_cases(hybrid, args.replay_cache):
                x, y = rows(retriever, query, now, positives, hybrid)
                xs += x
                ys += y
        if args.conversation:
            for retriever, query, now, positives in conversation_cases(hybrid, args.conversation_cache):
                x, y = rows(retriever, query, now, positives, hybrid)
                xs += x
                ys += y
        w = fit(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float))
        name = "hybrid_weights" if hybrid else "text_weights"
        print(f"{name} = [{', '.join(f'{v:.3f}' for v in w)}]   # {len(ys)} candidates, {sum(ys)} positive")


if __name__ == "__main__":
    main()
