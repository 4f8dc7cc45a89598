"""Decision signals for the injection gate, measured on the coding replay's DEV split with leave-one-out CV.

    python benchmarks/gate_signals.py --cache DIR [--json]

The gate injects the hits whose P (``scoring.probability`` plus support) is at least ``inject_threshold``.
On the replay the right memory of a paraphrased prompt is often ranked first but scores under it, while an
on-topic prompt the history cannot answer sometimes scores over it. This script asks whether another signal
separates the two. For every dev prompt it takes the 15 hits with the highest P (what ``Engine.relevant``
hands the gate) and computes, per hit:

  logit_p   log-odds of P (the current decision)
  text, cosine, standout     the evidence P is fitted on
  z_hit     the hit's cosine in standard deviations over the query's 50 nearest neighbours
  z_top     the same for the query's best neighbour (how far anything stands out from the project's baseline)
  gap       cosine of the best neighbour minus the second's (margin over the next candidate)
  agree     1 / (1 + |text rank - vector rank|) among the candidates (do both sides put it in the same place)
  coverage  IDF-weighted share of the prompt's content words (stop words out) the memory contains
  novelty   IDF-weighted share of the prompt's content words no memory contains (a query-level signal)
  hub       the memory's mean cosine to its 10 nearest other memories (a "hub" is near everything)
  csls      2·cosine − (mean of the query's 10 best cosines) − hub (hubness-corrected similarity)
  soft      IDF-weighted mean over the prompt's content words of the best cosine between that word and a word
            of the memory, each word embedded alone by the model (1 for an exact match; a paraphrase's
            synonyms land near 0.5-0.7)
  clause_cos, clause_so      the cosine and stand-out again, each clause of the prompt (split at , ; ? ! . "and"
            "but", three words or more) embedded alone, the best of the clauses and the whole prompt

and prints (1) each signal's AUC for "the right memory" (the best-P expected memory of each English match
prompt) against "the top hit of a no-match prompt"; (2) leave-one-out CV of a gate on a logistic over
``logit_p`` and one signal (weights and threshold fitted on the other 53 prompts); (3) leave-one-out CV of the
rule "P ≥ 0.15, or P ≥ b and soft ≥ c" (b, c chosen on the other prompts). The gate is simulated: threshold,
then hits within half of the best P, at most 5 — without the supersession and replacement steps of
``select_for_injection`` (so the baseline reads 0.658 / 0.875 here against the hook's 0.737 / 0.875).
``--hook-rule B C`` runs the replay's real hook path instead (``coding_replay.run``, dev) with that rule
patched in front of ``select_for_injection``: a hit with B <= P < inject_threshold and soft >= C is raised
to the threshold. Only dev prompts are read.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import statistics
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

TOP = 15  # hits handed to the gate (Engine.relevant: 3 × injection.max_results)
NEIGHBOURS = 50
HUB_K = 10
SIGNALS = ["logit_p", "text", "cosine", "standout", "z_hit", "z_top", "gap", "agree", "coverage"]
SIGNALS += ["novelty", "hub", "csls", "soft", "clause_cos", "clause_so"]
_WORD = re.compile(r"[^\W_]+")


def open_replay(cache: Path) -> tuple[Any, Any, Any, Any]:
    """(memory, embedder, retriever, vector index) of the replay store, built once into ``cache``."""
    import coding_replay as cr

    from memlane.retrieval.engine import Engine

    cr.load_sessions(cr.HERE / "transcripts")
    workdir = cache.resolve() / cr.cache_key(cr.HERE / "transcripts", False)
    if (workdir / "stats.json").exists():
        memory, embedder, _ = cr.reopen(workdir, False, True)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
        memory, embedder, _ = cr.build(cr.HERE / "transcripts", workdir, False, True)
    engine = Engine(memory.config, vectors=True)
    engine._embedder = embedder
    return memory, embedder, engine.retriever(memory), engine.index(memory.project.id)


class Vectors:
    """Every stored chunk vector, for the hub score, and word vectors (embedded once each) for ``soft``."""

    def __init__(self, index: Any, embedder: Any) -> None:
        table = index.table().to_arrow()
        self.ids = np.array(table.column("event_id").to_pylist())
        self.matrix = table.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, index.dim)
        self.embedder = embedder
        self.words: dict[str, np.ndarray] = {}
        self._hub: dict[str, float] = {}

    def hub(self, event_id: str) -> float:
        if event_id not in self._hub:
            rows = np.where(self.ids == event_id)[0]
            if not len(rows):
                return 0.0
            others = (self.matrix[rows] @ self.matrix[self.ids != event_id].T).max(0)
            self._hub[event_id] = float(np.sort(others)[::-1][:HUB_K].mean())
        return self._hub[event_id]

    def word(self, words: list[str]) -> np.ndarray:
        missing = [w for w in dict.fromkeys(words) if w not in self.words]
        if missing:
            for w, v in zip(missing, self.embedder.embed_passages(missing), strict=True):
                self.words[w] = v
        return np.stack([self.words[w] for w in words])


def content_terms(store: Any, query: str) -> list[tuple[list[str], float]]:
    """The prompt's content words (stop words out) with their IDF, as the retriever weighs them."""
    from memlane.retrieval import hybrid, scoring
    from memlane.store.db import STOPWORDS

    terms, _ = hybrid.query_terms(query)
    content = [t for t in terms if not (len(t) == 1 and t[0] in STOPWORDS)]
    total, df = hybrid.doc_freqs(store, {t for term in content for t in term})
    rows, _ = store.index_stats()
    total = rows or total
    return [(t, scoring.idf(total, min(df.get(x, 0) for x in t))) for t in content]


def weighted(terms: list[tuple[list[str], float]], value: Any) -> float:
    den = sum(w for _, w in terms)
    return sum(w * value(t) for t, w in terms) / den if den else 0.0


def soft_coverage(terms: list[tuple[list[str], float]], content: str, vectors: Vectors) -> float:
    from memlane.store.db import STOPWORDS

    words = sorted(
        {w for w in _WORD.findall(content.lower()) if w.isascii() and w not in STOPWORDS and not w.isdigit()}
    )
    words = [w for w in words if len(w) < 30]
    if not words or not terms:
        return 0.0
    memory = vectors.word(words)
    return weighted(terms, lambda t: min(float((memory @ vectors.word([p])[0]).max()) for p in t))


def hit_rows(q: dict[str, Any], memory: Any, retriever: Any, vectors: Vectors, embedder: Any) -> list[dict[str, Any]]:
    """The features of the prompt's TOP hits by P, with ``good`` (an expected memory)."""
    import coding_replay as cr

    from memlane.retrieval import hybrid
    from memlane.retrieval.select import by_support

    now = datetime.fromisoformat(q["now"])
    cr.CLOCK.now = now.timestamp()
    vector = embedder.embed_query(q["query"])
    hits = retriever.search(q["query"], limit=NEIGHBOURS, now=now, query_vector=vector)
    asks_vectors = hybrid.uses_vectors(q["query"], memory.config.retrieval, embedder)
    near = sorted((n.similarity for n in retriever.index.nearest(vector, NEIGHBOURS).values()), reverse=True)
    near = near if asks_vectors else []
    mean, sd = (statistics.mean(near), statistics.pstdev(near) or 1.0) if len(near) > 2 else (0.0, 1.0)
    terms = content_terms(memory.store, q["query"])
    text_rank = {h.event.id: i for i, h in enumerate(sorted(hits, key=lambda h: -h.sources.get("text", 0.0)))}
    vector_rank = {h.event.id: i for i, h in enumerate(sorted(hits, key=lambda h: -h.sources.get("vector", 0.0)))}
    rq = float(np.mean(near[:HUB_K])) if near else 0.0
    novelty = _novelty(terms, memory)
    clauses = [
        c.strip() for c in re.split(r"[;?!.,]|\bbut\b|\band\b", q["query"].split("\n")[0]) if len(c.split()) >= 3
    ]
    clause_vecs = np.stack([embedder.embed_query(c) for c in clauses]) if clauses and asks_vectors else None
    clause_base = (
        np.median(np.sort(clause_vecs @ vectors.matrix.T, axis=1)[:, ::-1][:, :NEIGHBOURS], axis=1)
        if clause_vecs is not None
        else None
    )
    rows = []
    for h in by_support(hits, TOP):
        words = set(_WORD.findall(h.event.content.lower()))
        cosine = h.sources.get("vector", 0.0)
        hub = vectors.hub(h.event.id)
        rows.append(
            {
                "good": bool(q.get("expect")) and cr.matches(h.event, q["expect"]),
                "logit_p": math.log(max(h.score, 1e-9) / max(1 - h.score, 1e-9)),
                "p": h.score,
                "text": h.sources.get("text", 0.0),
                "cosine": cosine,
                "standout": h.sources.get("standout", 0.0),
                "z_hit": (cosine - mean) / sd if near else 0.0,
                "z_top": (near[0] - mean) / sd if near else 0.0,
                "gap": near[0] - near[1] if len(near) > 1 else 0.0,
                "agree": 1 / (1 + abs(text_rank[h.event.id] - vector_rank[h.event.id])),
                "coverage": weighted(terms, lambda t, words=words: float(all(x in words for x in t))),
                "novelty": novelty,
                "hub": hub,
                "csls": 2 * cosine - rq - hub,
                "soft": soft_coverage(terms, h.event.content, vectors),
                **_clause(h.event.id, clause_vecs, clause_base, vectors, cosine, h.sources.get("standout", 0.0)),
            }
        )
    return rows


def _clause(event_id: str, vecs: Any, base: Any, vectors: Vectors, cosine: float, standout: float) -> dict[str, float]:
    rows = np.where(vectors.ids == event_id)[0]
    if vecs is None or not len(rows):
        return {"clause_cos": cosine, "clause_so": standout}
    best = (vecs @ vectors.matrix[rows].T).max(1)
    return {"clause_cos": max(cosine, float(best.max())), "clause_so": max(standout, float((best - base).max()))}


def _novelty(terms: list[tuple[list[str], float]], memory: Any) -> float:
    df = memory.store.doc_freqs({x for t, _ in terms for x in t})
    return weighted(terms, lambda t: float(min(df.get(x, 0) for x in t) == 0))


# ---- the simulated gate ---------------------------------------------------------------------------------


def outcome(prompt: dict[str, Any], scores: list[float], threshold: float) -> bool:
    """Right for a match prompt (an expected memory injected), silent for a no-match prompt."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    passed = [i for i in order if scores[i] >= threshold]
    if not passed:
        return prompt["kind"] == "nomatch"
    best = 1 / (1 + math.exp(-scores[passed[0]]))
    chosen = [i for i in passed if 1 / (1 + math.exp(-scores[i])) >= 0.5 * best][:5]
    return prompt["kind"] == "match" and any(prompt["rows"][i]["good"] for i in chosen)


def rates(prompts: list[dict[str, Any]], scorer: Any, threshold: float) -> tuple[float, float]:
    right = [outcome(p, scorer(p), threshold) for p in prompts if p["kind"] == "match"]
    silent = [outcome(p, scorer(p), threshold) for p in prompts if p["kind"] == "nomatch"]
    return float(np.mean(right)), float(np.mean(silent))


def best_threshold(prompts: list[dict[str, Any]], scorer: Any) -> float:
    """The threshold with the most right + silent prompts (ties: the highest, the stricter gate)."""
    grid = np.linspace(-6, 2, 161)
    return float(max(grid, key=lambda t: (sum(rates(prompts, scorer, t)), t)))


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0) -> np.ndarray:
    """Logistic regression (Newton steps, L2 on the weights, not the bias); returns [bias, weights…]."""
    x = np.c_[np.ones(len(x)), x]
    w = np.zeros(x.shape[1])
    ridge = l2 * np.diag(np.r_[0.0, np.ones(x.shape[1] - 1)])
    for _ in range(50):
        p = 1 / (1 + np.exp(-x @ w))
        w -= np.linalg.solve((x.T * (p * (1 - p))) @ x + ridge, x.T @ (p - y) + ridge @ w)
    return w


def linear(w: np.ndarray, names: list[str]) -> Any:
    return lambda p: [float(w[0] + sum(wi * r[n] for wi, n in zip(w[1:], names, strict=True))) for r in p["rows"]]


def loo_logistic(prompts: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """Leave one prompt out: fit the per-hit logistic and the threshold on the rest, judge the one left out."""
    results: dict[str, list[bool]] = {"match": [], "nomatch": []}
    for k, held in enumerate(prompts):
        rest = prompts[:k] + prompts[k + 1 :]
        x = np.array([[r[n] for n in names] for p in rest for r in p["rows"]])
        y = np.array([float(r["good"]) for p in rest for r in p["rows"]])
        scorer = linear(fit(x, y), names)
        results[held["kind"]].append(outcome(held, scorer(held), best_threshold(rest, scorer)))
    return {"right": float(np.mean(results["match"])), "silent": float(np.mean(results["nomatch"]))}


def rule(b: float, c: float) -> Any:
    """P ≥ 0.15 as now, or P ≥ b with soft coverage ≥ c (scores: log-odds of P, or −99 for "not eligible")."""
    return lambda p: [r["logit_p"] if r["p"] >= 0.15 or (r["p"] >= b and r["soft"] >= c) else -99 for r in p["rows"]]


RULE_GRID = [(b, round(c, 2)) for b in (0.04, 0.06, 0.08, 0.10, 0.12) for c in np.arange(0.40, 0.80, 0.02)]


def best_rule(prompts: list[dict[str, Any]]) -> tuple[float, float]:
    return max(RULE_GRID, key=lambda bc: (sum(rates(prompts, rule(*bc), -50)), bc[1], bc[0]))


def loo_rule(prompts: list[dict[str, Any]]) -> dict[str, Any]:
    results: dict[str, list[bool]] = {"match": [], "nomatch": []}
    for k, held in enumerate(prompts):
        b, c = best_rule(prompts[:k] + prompts[k + 1 :])
        results[held["kind"]].append(outcome(held, rule(b, c)(held), -50))
    b, c = best_rule(prompts)
    right, silent = rates(prompts, rule(b, c), -50)
    return {
        "right": float(np.mean(results["match"])),
        "silent": float(np.mean(results["nomatch"])),
        "all_dev": {"b": b, "c": c, "right": right, "silent": silent},
    }


def auc(pos: list[float], neg: list[float]) -> float:
    return float(np.mean([1.0 if a > b else 0.5 if a == b else 0.0 for a in pos for b in neg]))


def separation(prompts: list[dict[str, Any]]) -> dict[str, float]:
    """Each signal's AUC: best-P expected memory of an English match prompt vs the top hit of a no-match one."""
    english = [p for p in prompts if p["lang"] == "en" and p["rows"]]
    right = [max((r for r in p["rows"] if r["good"]), key=lambda r: r["p"], default=None) for p in english]
    pos = [r for r, p in zip(right, english, strict=True) if r is not None and p["kind"] == "match"]
    neg = [p["rows"][0] for p in english if p["kind"] == "nomatch"]
    return {n: auc([r[n] for r in pos], [r[n] for r in neg]) for n in SIGNALS}


def hook_with_rule(memory: Any, embedder: Any, vectors: Vectors, floor: float, least: float) -> dict[str, Any]:
    """The replay's hook column on dev with the soft-coverage rule patched in (an experiment, not shipped)."""
    import coding_replay as cr

    from memlane.retrieval import engine

    asked: dict[str, str] = {}
    select, relevant = engine.select_for_injection, engine.Engine.relevant

    def raised(hits: list[Any], index: Any, cfg: Any, store: Any = None) -> list[Any]:
        threshold = cfg.retrieval.inject_threshold
        terms = content_terms(store, asked["prompt"])
        out = []
        for h in hits:
            if floor <= h.score < threshold and soft_coverage(terms, h.event.content, vectors) >= least:
                h = type(h)(h.event, threshold, {**h.sources, "soft": 1.0}, "suggested")
            out.append(h)
        return select(sorted(out, key=lambda h: -h.score), index, cfg, store)

    def remember(self: Any, mem: Any, prompt: str, exclude_ids: list[str] | None = None) -> list[Any]:
        asked["prompt"] = prompt
        return relevant(self, mem, prompt, exclude_ids)

    engine.select_for_injection, engine.Engine.relevant = raised, remember  # type: ignore[method-assign]
    try:
        rows = cr.run(memory, embedder, cr.load_queries(cr.HERE / "queries.jsonl", "dev"), False)
    finally:
        engine.select_for_injection, engine.Engine.relevant = select, relevant  # type: ignore[method-assign]
    summary = cr.summarise(rows)
    return {
        "right": summary["rows"]["ALL MATCH"]["hook"],
        "silent": summary["rows"]["ALL NO-MATCH"]["hook"],
        "superseded": f"{summary['stale']['hook']} of {summary['stale_n']}",
        **summary["injection"]["hook"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path("/tmp/gate-signals-cache"), help="replay store cache")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--hook-rule", nargs=2, type=float, metavar=("B", "C"), help="the real hook path with the rule")
    args = ap.parse_args()
    import coding_replay as cr

    memory, embedder, retriever, index = open_replay(args.cache)
    cr.pin_clock()
    vectors = Vectors(index, embedder)
    if args.hook_rule:
        print(json.dumps(hook_with_rule(memory, embedder, vectors, *args.hook_rule), indent=1))
        memory.close()
        return
    prompts = []
    for q in cr.load_queries(cr.HERE / "queries.jsonl", "dev"):
        kind = "match" if q.get("expect") else "nomatch"
        rows = hit_rows(q, memory, retriever, vectors, embedder)
        prompts.append({"id": q["id"], "kind": kind, "lang": q.get("lang", "en"), "rows": rows})
    shipped = rates(prompts, lambda p: [r["logit_p"] for r in p["rows"]], math.log(0.15 / 0.85))
    out: dict[str, Any] = {
        "prompts": len(prompts),
        "shipped_gate": {"right": shipped[0], "silent": shipped[1]},
        "auc": separation(prompts),
        "loo": {"+".join(names): loo_logistic(prompts, names) for names in _feature_sets()},
        "loo_soft_rule": loo_rule(prompts),
    }
    memory.close()
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(
        f"coding replay dev, {out['prompts']} prompts; simulated gate at P >= 0.15: right {shipped[0]:.3f}, "
        f"silent {shipped[1]:.3f}"
    )
    print(
        "AUC, right memory vs a no-match prompt's top hit (English): "
        + ", ".join(f"{n} {v:.2f}" for n, v in out["auc"].items())
    )
    print("leave-one-out, per-hit logistic + threshold fitted on the other prompts (right / silent):")
    for name, r in out["loo"].items():
        print(f"  {name:28} {r['right']:.3f} / {r['silent']:.3f}")
    r = out["loo_soft_rule"]
    print(
        f"leave-one-out, P >= 0.15 or (P >= b and soft >= c): {r['right']:.3f} / {r['silent']:.3f}; "
        f"on all of dev b={r['all_dev']['b']} c={r['all_dev']['c']}: "
        f"{r['all_dev']['right']:.3f} / {r['all_dev']['silent']:.3f}"
    )


def _feature_sets() -> list[list[str]]:
    return [["logit_p"]] + [["logit_p", s] for s in SIGNALS if s != "logit_p"] + [["text", "cosine", "standout"]]


if __name__ == "__main__":
    main()
