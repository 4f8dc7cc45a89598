"""What reaches Claude, on every corpus: search recall and the two injection tiers, per corpus and split.

    python benchmarks/injection.py [--split dev|test|all] [--corpus replay,replay-ko,replay-para,lme,conversation,…]
                                   [--lme PATH] [--lme-stride 4] [--cache DIR] [--json] [--dump FILE]

Corpora (each with a fixed dev and test split; tune on dev, report test):

- **replay**: the coding replay (``benchmarks/coding_replay/``): one dense project's Claude Code and Codex
  history, 91 prompts with an answer and 36 without (English and Korean).
- **replay-ko**: the same store, asked the English prompts of the replay (and its no-match prompts) in Korean
  as a Korean developer would write them (``coding_replay/queries_ko.jsonl``), with the same answers.
- **replay-para**: the same prompts as another developer would ask them without the exact names (identifiers,
  libraries, error text described in other words: ``coding_replay/queries_para.jsonl``), with the same answers.
  Both were written by another writer than the replay's prompts, without looking at how memlane searches.
- **lme**: LongMemEval-S (``--lme``, default ``../shared/data/longmemeval/…``; skipped with a note when
  absent), every ``--lme-stride``-th question of the split; its abstention questions (``_abs``) are the
  no-match prompts. Answer-bearing memories are the turns marked ``has_answer``.
- **conversation**: long two-person dialogues, one store each (``benchmarks/conversation/``), with
  questions they answer and on-topic questions they do not.
- **conversation-other**: the English dialogues with another writer's questions (``conversation/other/``),
  written in LoCoMo's style without seeing the corpus's own questions or memlane's code.

Per corpus and split it prints:

  search@5    an answer-bearing memory among the first 5 results of ``Memory.search`` (current first)
  reachable   an answer-bearing memory injected in either tier (full, or as an index line)
  full        an answer-bearing memory in the full tier;  full prec: share of all full-tier items (one
              exchange each: the memories of one prompt and what followed it; every prompt's) that bear it
  nm empty    no-match prompts with an empty full tier;  nm tokens: their index lines' tokens, median / p90
  replaced    prompts shown a replaced memory (a stale answer) without a memory that bears the current one
  ko reach    Korean prompts (and cross-lingual ones) reachable

Each prompt goes through what the hook runs: ``Retriever.search`` → ``select.by_support`` →
``select.choose`` (``Engine.relevant``'s steps), with the query's own ``now``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

CORPORA = ("replay", "replay-ko", "replay-para", "lme", "conversation", "conversation-other")


def default_lme() -> Path:
    """LongMemEval beside the repository (``../shared/data``) or beside its worktree's parent."""
    from longmemeval import default_data

    return default_data()


# ---- one prompt ------------------------------------------------------------------------------------------


def ask(store: Any, retriever: Any, index: Any, cfg: Any, query: str, now: datetime | None) -> dict[str, Any]:
    """What the hook path gives ``query``: search order and the two tiers, with the candidates behind them."""
    from memlane.capture.inject import candidates_kept
    from memlane.retrieval.engine import store_is_dialogue, tiers
    from memlane.retrieval.select import by_support, index_line, tokens

    hits = retriever.search(query, limit=cfg.retrieval.candidates, now=now, current_first=False)
    chosen = tiers(query, by_support(hits, candidates_kept(cfg)), index, cfg, store, store_is_dialogue(store))
    ranked = retriever.search(query, limit=10, now=now)
    return {
        "search": [h.event.id for h in ranked],
        "full": [h.event.id for h in chosen.full],
        # an item shows its memories and, as context, the prompt that asked (when it is not one of them)
        "items": [[h.event.id for h in item.hits] + ([item.asked.id] if item.asked else []) for item in chosen.items],
        "index": [h.event.id for h in chosen.index],
        "index_tokens": sum(tokens(index_line(h.event, cfg.injection.gist_chars)) for h in chosen.index),
        "candidates": [
            {
                "id": h.event.id,
                "type": h.event.type,
                "P": round(h.score, 4),
                "lift": round(h.sources.get("lift", 0.0), 3),
                "conf": h.confidence,
            }
            for h in hits[:30]
        ],
    }


def outcome(answer: dict[str, Any], good: set[str], stale: set[str]) -> dict[str, Any]:
    shown = [i for item in answer["items"] for i in item] + answer["index"]
    return {
        "search5": bool(good & set(answer["search"][:5])),
        "reachable": bool(good & set(shown)),
        "full_hit": bool(good & {i for item in answer["items"] for i in item}),
        "full_n": len(answer["items"]),
        "full_good": sum(1 for item in answer["items"] if good & set(item)),
        "index_n": len(answer["index"]),
        "index_tokens": answer["index_tokens"],
        "replaced_alone": bool(stale & set(shown)) and not (good & set(shown)),
    }


# ---- corpora ---------------------------------------------------------------------------------------------


TEXT_ONLY = False  # --text-only: the hooks' full-text fallback (no vectors), as when the daemon is down
LOANWORDS = True  # --no-loanwords: Korean prompts without the store's English words for their loanwords


def lexicon(store: Any) -> Any:
    """The store's loanword lexicon, as the daemon holds it (none for the hooks' full-text fallback)."""
    from memlane.retrieval import loanwords

    return loanwords.of_store(store) if LOANWORDS and not TEXT_ONLY else None


def people(store: Any) -> Any:
    """The speakers' names of a dialogue store, as the daemon takes them out of its queries (none in the fallback)."""
    from memlane.retrieval import speakers
    from memlane.retrieval.engine import store_is_dialogue

    return speakers.of_store(store) if not TEXT_ONLY and store_is_dialogue(store) else None


def replay_rows(split: str, cache: Path | None, variant: str = "") -> Iterator[dict[str, Any]]:
    """The coding replay's prompts; with a ``variant``, the other writer's versions of its English prompts
    (``ko``: in Korean, ``queries_ko.jsonl``; ``para``: in other words, ``queries_para.jsonl``), as corpus
    ``replay-ko`` / ``replay-para``."""
    import coding_replay as cr

    from memlane.retrieval.engine import fitted_config, shaped_config, store_is_dialogue
    from memlane.retrieval.hybrid import Retriever

    queries = cr.load_queries(cr.HERE / (f"queries_{variant}.jsonl" if variant else "queries.jsonl"), split)
    cr.load_sessions(cr.HERE / "transcripts")
    workdir = (cache.resolve() / cr.cache_key(cr.HERE / "transcripts", False)) if cache else None
    temp = None
    if workdir is None:
        workdir = temp = Path(tempfile.mkdtemp(prefix="injection-replay-"))
    try:
        if (workdir / "stats.json").exists():
            memory, embedder, _ = cr.reopen(workdir, False, True)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
            memory, embedder, _ = cr.build(cr.HERE / "transcripts", workdir, False, True)
        cfg = shaped_config(fitted_config(memory.config, embedder), store_is_dialogue(memory.store))
        from memlane.vectors import VectorIndex

        index = VectorIndex(memory.project.id, embedder.version, embedder.dim, cfg.vectors)
        retriever = Retriever(memory.store, cfg, embedder, index, lexicon(memory.store), people(memory.store))
        if TEXT_ONLY:
            index, retriever = None, Retriever(memory.store, memory.config)
        events = [e for e in memory.store.iter_events() if e.type not in cr.SKIP_TYPES]
        cr.pin_clock()
        for q in queries:
            now = datetime.fromisoformat(q["now"])
            cr.CLOCK.now = now.timestamp()
            good = {e.id for e in events if q.get("expect") and cr.matches(e, q["expect"])}
            stale = {e.id for e in events if q.get("stale") and cr.matches(e, q["stale"])}
            answer = ask(memory.store, retriever, index, cfg, q["query"], now)
            yield row(f"replay-{variant}" if variant else "replay", q["id"], q["split"], q["category"],
                      q.get("lang", "en"), bool(q.get("expect")), answer, good, stale)  # fmt: skip
        memory.close()
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


def lme_rows(split: str, path: Path, stride: int, cache: Path | None) -> Iterator[dict[str, Any]]:
    import longmemeval as lme

    from memlane import config
    from memlane.embed import get_embedder
    from memlane.retrieval.engine import fitted_config, shaped_config, store_is_dialogue
    from memlane.retrieval.hybrid import Retriever

    questions = [q for q in lme.load(path) if lme.split_of(q["question_id"]) == split][:: max(1, stride)]
    embedder = get_embedder(config.load().embedding)
    for q in questions:
        workdir = Path(tempfile.mkdtemp(prefix="injection-lme-"))
        try:
            store, index, turns = lme.build(q, workdir, embedder, cache)
            cfg = shaped_config(fitted_config(config.load(), embedder), store_is_dialogue(store))
            asked = datetime.fromisoformat(lme.iso(q["question_date"]).replace("Z", "+00:00"))
            if TEXT_ONLY:
                index, cfg = None, config.load()
            retriever = Retriever(store, cfg, embedder if index else None, index, lexicon(store), people(store))
            answer = ask(store, retriever, index, cfg, q["question"], asked)
            abstain = q["question_id"].endswith("_abs")
            yield row("lme", q["question_id"], split, q["question_type"], "en", not abstain, answer,
                      set() if abstain else set(turns), set())  # fmt: skip
            store.close()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


def conversation_rows(split: str, cache: Path | None, other: bool = False) -> Iterator[dict[str, Any]]:
    try:
        import conversation as conv
    except ImportError:
        print("conversation corpus: benchmarks/conversation.py not found; skipped", file=sys.stderr)
        return
    yield from conv.injection_rows(split, cache, ask, row, text_only=TEXT_ONLY, lexicon=lexicon, other=other)


def row(
    corpus: str, qid: str, split: str, kind: str, lang: str, answerable: bool,
    answer: dict[str, Any], good: set[str], stale: set[str],
) -> dict[str, Any]:  # fmt: skip
    return {
        "corpus": corpus,
        "id": qid,
        "split": split,
        "kind": kind,
        "lang": lang,
        "match": answerable,
        **outcome(answer, good, stale),
        "answer": {**answer, "good": sorted(good), "stale": sorted(stale)},
    }


# ---- report ----------------------------------------------------------------------------------------------


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    match = [r for r in rows if r["match"]]
    nomatch = [r for r in rows if not r["match"]]
    korean = [r for r in match if r["lang"] != "en"]
    full_n = sum(r["full_n"] for r in rows)
    tokens = sorted(r["index_tokens"] for r in nomatch)

    def share(sel: list[dict[str, Any]], key: str) -> float | None:
        return sum(bool(r[key]) for r in sel) / len(sel) if sel else None

    return {
        "prompts": len(rows),
        "match": len(match),
        "nomatch": len(nomatch),
        "search@5": share(match, "search5"),
        "reachable": share(match, "reachable"),
        "full": share(match, "full_hit"),
        "full_precision": sum(r["full_good"] for r in rows) / full_n if full_n else None,
        "full_per_prompt": full_n / len(rows) if rows else None,
        "index_per_prompt": sum(r["index_n"] for r in rows) / len(rows) if rows else None,
        "nm_empty_full": sum(r["full_n"] == 0 for r in nomatch) / len(nomatch) if nomatch else None,
        "nm_tokens_median": statistics.median(tokens) if tokens else None,
        "nm_tokens_p90": tokens[min(len(tokens) - 1, int(0.9 * len(tokens)))] if tokens else None,
        "replaced_alone": sum(r["replaced_alone"] for r in rows),
        "korean": len(korean),
        "korean_reachable": share(korean, "reachable"),
        "by_kind": {
            kind: {"n": len(sel), "reachable": share(sel, "reachable"), "full": share(sel, "full_hit")}
            for kind in sorted({r["kind"] for r in match})
            if (sel := [r for r in match if r["kind"] == kind])
        },
    }


def fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "-"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


COLUMNS = [
    ("search@5", "search@5"),
    ("reachable", "reachable"),
    ("full", "full"),
    ("full prec", "full_precision"),
    ("nm empty", "nm_empty_full"),
    ("nm tok med/p90", None),
    ("replaced", "replaced_alone"),
    ("ko reach", "korean_reachable"),
    ("full/idx per q", None),
]


def print_table(results: dict[str, dict[str, dict[str, Any]]]) -> None:
    head = f"{'corpus':20}{'split':6}{'n (m/nm)':>11}" + "".join(f"{name:>16}" for name, _ in COLUMNS)
    print(head)
    for corpus, splits in results.items():
        for split, s in splits.items():
            cells = []
            for name, key in COLUMNS:
                if key:
                    cells.append(fmt(s[key]))
                elif name.startswith("nm tok"):
                    cells.append(f"{fmt(s['nm_tokens_median'], 0)}/{fmt(s['nm_tokens_p90'], 0)}")
                else:
                    cells.append(f"{fmt(s['full_per_prompt'])}/{fmt(s['index_per_prompt'])}")
            if s["korean"]:
                cells[-2] = f"{cells[-2]} ({s['korean']})"
            print(f"{corpus:20}{split:6}{s['match']:>6}/{s['nomatch']:<4}" + "".join(f"{c:>16}" for c in cells))
    print("\nreachable by kind (full in brackets):")
    for corpus, splits in results.items():
        for split, s in splits.items():
            kinds = ", ".join(
                f"{k} {fmt(v['reachable'])} ({fmt(v['full'])}) n={v['n']}" for k, v in s["by_kind"].items()
            )
            print(f"  {corpus} {split}: {kinds}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=["dev", "test", "all"], default="dev")
    ap.add_argument("--corpus", default=",".join(CORPORA), help="comma-separated: " + ", ".join(CORPORA))
    ap.add_argument("--lme", type=Path, default=None, help="LongMemEval-S file (default: ../shared/data/…)")
    ap.add_argument("--lme-stride", type=int, default=4, help="every K-th LongMemEval question of the split")
    ap.add_argument("--cache", type=Path, help="keep built stores and vectors here between runs")
    ap.add_argument("--text-only", action="store_true", help="the hooks' full-text fallback (no vectors)")
    ap.add_argument("--no-loanwords", action="store_true", help="Korean prompts without the loanword lexicon")
    ap.add_argument("--json", action="store_true", help="print the summaries as JSON")
    ap.add_argument("--dump", type=Path, help="write every prompt's record (candidates, tiers) to this JSON file")
    args = ap.parse_args()
    global TEXT_ONLY, LOANWORDS
    TEXT_ONLY, LOANWORDS = args.text_only, not args.no_loanwords
    splits = ["dev", "test"] if args.split == "all" else [args.split]
    corpora = [c.strip() for c in args.corpus.split(",") if c.strip()]
    unknown = set(corpora) - set(CORPORA)
    if unknown:
        ap.error(f"unknown corpus: {', '.join(sorted(unknown))}")
    lme_path = args.lme or default_lme()
    sources: dict[str, Callable[[str], Iterator[dict[str, Any]]]] = {
        "replay": lambda split: replay_rows(split, args.cache),
        "replay-ko": lambda split: replay_rows(split, args.cache, "ko"),
        "replay-para": lambda split: replay_rows(split, args.cache, "para"),
        "lme": lambda split: lme_rows(split, lme_path, args.lme_stride, args.cache),
        "conversation": lambda split: conversation_rows(split, args.cache),
        "conversation-other": lambda split: conversation_rows(split, args.cache, other=True),
    }
    if "lme" in corpora and not lme_path.exists():
        print(f"LongMemEval not found at {lme_path}: skipped (pass --lme PATH)", file=sys.stderr)
        corpora.remove("lme")
    results: dict[str, dict[str, dict[str, Any]]] = {}
    everything: list[dict[str, Any]] = []
    for corpus in corpora:
        for split in splits:
            rows = list(sources[corpus](split))
            if rows:
                results.setdefault(corpus, {})[split] = summarise(rows)
                everything.extend(rows)
    if args.dump:
        args.dump.write_text(json.dumps(everything, ensure_ascii=False), encoding="utf-8")
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        print_table(results)


if __name__ == "__main__":
    main()
