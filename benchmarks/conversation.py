"""Conversational memory: long two-person dialogues, one memlane project each, asked what was said in them.

    python benchmarks/conversation.py [--split dev|test|all] [--mode text|hybrid] [--cache DIR] [--json] [--show]
    python benchmarks/conversation.py --e2e [--split …] [--cache DIR]   # through the real hook and daemon

The corpus (benchmarks/conversation/data/, written for memlane; checked by benchmarks/conversation/validate.py)
holds eight conversations of 15-25 dated sessions between two people, four for tuning (dev) and four held
out (test), two of them in Korean, and ~50 questions each: single facts, facts from two sessions, dates,
paraphrases that share no content word with their evidence, knowledge updates (with the replaced turns as
``stale``), inferences from stated preferences, on-topic questions the conversation does not answer, and
cross-lingual rows (Korean questions about English conversations and the reverse).

Each conversation becomes one project store the way Claude Code capture writes it (speaker A's turns are
user prompts, B's are agent responses, through ``capture.events``; one memlane session per conversation
session, a minute per turn from the session's date), embedded with the configured model the way the
vectors worker does (window chunks of every turn, each sentence of a prompt). For every question it
measures, per split and kind:

  bm25@5 / text@5   plain Okapi BM25 and memlane full-text: an evidence turn in the top 5
  r@5 / r@10        ``Memory.search`` (the Retriever, hybrid in ``--mode hybrid``): an evidence turn in the top k
  s@10              the same top 10 holds a turn of an evidence turn's session (session recall, as LoCoMo reports)
  injected          what UserPromptSubmit injects with the daemon up (``Engine.relevant``, i.e. the daemon's
                    ``/api/inject`` → ``select_for_injection``): questions whose selection holds an evidence turn
  mem/q             memories injected per question
  precision         of the memories injected for answerable questions, the share that are evidence turns
  silent            unanswerable questions with nothing injected
  stale alone       knowledge updates where a replaced turn is injected and no evidence turn is

With ``--e2e`` every answerable question goes through `memlane hook UserPromptSubmit` in a new process with a
real daemon answering (as a held-out harness asks), and the evidence turns cited in what the hook returns are
compared with the engine's answer for the same question.

Questions are asked the day after the last session (``asked_at``), which anchors "last month" and the like.
``evaluate()`` returns one record per question (the ranked hits, the gate's candidates and the selection,
with event and turn ids, scores and confidences) so other injection decisions can be measured on it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from longmemeval import BM25, embed_rows  # the same baseline and vector cache as the LongMemEval benchmark

DATA = Path(__file__).resolve().parent / "conversation" / "data"
KINDS = ("single", "multi", "temporal", "paraphrase", "update", "inference", "unanswerable")
SEARCH_K = 10
KEEP_HITS = 20  # ranked hits kept per question record


@dataclass
class Conversation:
    id: str
    split: str
    lang: str
    speakers: dict[str, str]  # "A" (user prompts) / "B" (agent responses) → name
    relation: str
    asked_at: str
    sessions: list[dict[str, Any]]
    questions: list[dict[str, Any]] = field(default_factory=list)

    def turns(self) -> Iterable[tuple[dict[str, Any], int, dict[str, Any]]]:
        """(session, position in it, turn) in order."""
        for session in self.sessions:
            for n, turn in enumerate(session["turns"]):
                yield session, n, turn

    def digest(self) -> str:
        """A hash of the conversation's text: cached vectors are only reused for the same turns."""
        h = hashlib.sha256()
        for _, _, turn in self.turns():
            h.update(f"{turn['id']}\0{turn['speaker']}\0{turn['text']}\0".encode())
        return h.hexdigest()[:12]


OTHER = Path(__file__).resolve().parent / "conversation" / "other"  # another writer's questions (``other``)


def conversations(split: str = "all", data: Path = DATA, other: bool = False) -> list[Conversation]:
    """The corpus's conversations of ``split`` (dev, test or all), in id order; with ``other``, those that have
    another writer's questions (``conversation/other/cN.json``), with those questions instead of their own."""
    out = []
    for path in sorted(data.glob("c*.json"), key=lambda p: int(p.stem[1:])):
        raw = json.loads(path.read_text(encoding="utf-8"))
        if other:
            if not (OTHER / path.name).exists():
                continue
            raw["questions"] = json.loads((OTHER / path.name).read_text(encoding="utf-8"))
        if split in ("all", raw["split"]):
            out.append(Conversation(**raw))
    if split not in ("all", "dev", "test"):
        raise SystemExit(f"unknown split {split!r} (dev, test or all)")
    return out


def _ts(session_date: str, minute: int) -> str:
    moment = datetime.fromisoformat(session_date.replace("Z", "+00:00")) + timedelta(minutes=minute)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def build(
    conv: Conversation, workdir: Path, cfg: Any, embed: bool, cache: Path | None = None
) -> tuple[Any, dict[str, str]]:
    """``conv`` as a memlane project in ``workdir`` (its own MEMLANE_HOME): (Memory, {turn id: event id}).

    Turns go through the capture builders the hooks use (UserPromptSubmit for speaker A, Stop for B), so
    they get the same privacy filter, metadata and dedupe keys; then their timestamps are set to the
    session's date plus a minute per turn. With ``embed``, the vectors are written to the project's
    index as the vectors worker writes them (kept in ``cache`` between runs).
    """
    from memlane import project
    from memlane.capture import events as capture
    from memlane.memory import Memory
    from memlane.store import Store

    os.environ["MEMLANE_HOME"] = str(workdir / "home")
    (workdir / conv.id).mkdir(parents=True, exist_ok=True)
    proj = project.identify(workdir / conv.id)  # the project a hook run in that folder finds (``--e2e``)
    proj.db_path.parent.mkdir(parents=True, exist_ok=True)
    store = Store(proj.db_path, proj.id)
    batch, turn_ids = [], []
    for session, n, turn in conv.turns():
        sid = session["id"].replace(":", "-")
        base = {"session_id": sid, "cwd": str(proj.root), "transcript_path": "", "prompt_id": turn["id"]}
        if turn["speaker"] == conv.speakers["A"]:
            new = capture.user_prompt({**base, "hook_event_name": "UserPromptSubmit", "prompt": turn["text"]}, cfg)
        else:
            payload = {**base, "hook_event_name": "Stop", "last_assistant_message": turn["text"]}
            new = capture.agent_response(payload, cfg)
        if len(new) != 1:
            raise SystemExit(f"{turn['id']}: capture made {len(new)} events")
        new[0].ts = _ts(session["date"], n)
        batch.extend(new)
        turn_ids.append(turn["id"])
    result = store.append(batch)
    if len(result.inserted) != len(turn_ids):
        raise SystemExit(f"{conv.id}: {len(turn_ids)} turns but {len(result.inserted)} events stored")
    mapping = dict(zip(turn_ids, result.inserted, strict=True))
    memory = Memory(proj, cfg, store)
    if embed:
        _embed(memory, conv, cache)
    return memory, mapping


def _embed(memory: Any, conv: Conversation, cache: Path | None) -> None:
    """What ``vectors.worker`` does for each outbox job (same passages, same rows), with the vectors cached."""

    from memlane.embed import get_embedder
    from memlane.embed.passages import passages
    from memlane.store.schema import indexed
    from memlane.vectors import VectorIndex

    embedder = get_embedder(memory.config.embedding)
    index = VectorIndex(memory.project.id, embedder.version, embedder.dim, memory.config.vectors)
    events = [e for e in memory.store.iter_events() if indexed(e.type, e.content)]
    rows = [(e, n, chunk) for e in events for n, chunk in enumerate(passages(e.type, e.content, embedder))]
    # ~2,500 passages per conversation: minutes on a shared 2-core machine. The cache file names the model
    # version and the conversation's text, so a change to either re-embeds.
    saved = cache / f"{conv.id}.{conv.digest()}.{embedder.version.replace('/', '_')}.npy" if cache else None
    embed_rows(index, embedder, rows, saved)
    index.ensure_index()
    memory.store.outbox_complete([e.id for e in events])


# ---- evaluation -----------------------------------------------------------------------------------------

Inject = Callable[[Any, Any, str], Any]


def _hook_engine(cfg: Any, embed: bool, now: dict[str, Any]) -> Any:
    from memlane.retrieval.engine import Engine

    class HookEngine(Engine):
        """The daemon's engine with the question's ``now`` passed to its search (as the coding replay does)."""

        def search(self, mem: Any, query: str, **filters: Any) -> list[Any]:
            return super().search(mem, query, now=now["now"], **filters)

    return HookEngine(cfg, vectors=embed)


def today(engine: Any, memory: Any, query: str) -> dict[str, list[Any]]:
    """Today's selection: the daemon's ``/api/inject`` path (``Engine.relevant`` → ``select.choose``), as tiers:
    ``injected`` (both), ``full`` and ``index``."""
    chosen = engine.relevant(memory, query, [])
    return {"injected": chosen.hits, "full": chosen.full, "index": chosen.index}


def _hit(h: Any, turn_of: dict[str, str]) -> dict[str, Any]:
    return {
        "turn": turn_of.get(h.event.id),
        "event": h.event.id,
        "type": h.event.type,
        "score": round(h.score, 4),
        "confidence": h.confidence,
        "sources": {k: round(v, 4) for k, v in h.sources.items()},
    }


def evaluate(
    split: str = "all",
    mode: str = "hybrid",
    cache: Path | None = None,
    cfg: Any = None,
    inject: Inject = today,
    convs: list[Conversation] | None = None,
    quiet: bool = False,
) -> list[dict[str, Any]]:
    """One record per question of ``split``: its labels, the search ranking, the gate's candidates and the
    selection ``inject(engine, memory, query)`` made (today's hook by default; a function may return a list
    of hits or a dict of tier name → hits, kept as ``selection``)."""
    from memlane import config
    from memlane.capture.inject import retrieval_query
    from memlane.retrieval.engine import fitted_config
    from memlane.retrieval.hybrid import Retriever
    from memlane.retrieval.select import by_support

    cfg = cfg or config.load()
    embed = mode == "hybrid"
    records: list[dict[str, Any]] = []
    for conv in convs if convs is not None else conversations(split):
        workdir = Path(tempfile.mkdtemp(prefix=f"conv-{conv.id}-"))
        try:
            t0 = time.perf_counter()
            memory, event_of = build(conv, workdir, cfg, embed, cache)
            built = time.perf_counter() - t0
            turn_of = {e: t for t, e in event_of.items()}
            now: dict[str, Any] = {"now": datetime.fromisoformat(conv.asked_at.replace("Z", "+00:00"))}
            engine = _hook_engine(cfg, embed, now)
            engine.speakers.get(memory.project.id, memory.store, wait=True)  # the daemon has them by the 2nd prompt
            retriever = engine.retriever(memory) if embed else Retriever(memory.store, cfg)
            rcfg = fitted_config(cfg, engine.embedder) if embed else cfg
            events = list(memory.store.iter_events())
            bm25 = BM25([e.content for e in events])
            for q in conv.questions:
                query = retrieval_query(q["text"], cfg)
                ranked = retriever.search(query, limit=rcfg.retrieval.candidates, now=now["now"])
                text_hits = Retriever(memory.store, cfg).search(query, limit=SEARCH_K, now=now["now"])
                gate_in = retriever.search(query, limit=rcfg.retrieval.candidates, now=now["now"], current_first=False)
                chosen = inject(engine, memory, query)
                tiers = chosen if isinstance(chosen, dict) else {"injected": chosen}
                records.append(
                    {
                        **{k: q[k] for k in ("id", "text", "kind", "lang", "answerable", "evidence", "stale")},
                        "answer": q.get("answer"),
                        "conversation": conv.id,
                        "conv_lang": conv.lang,
                        "split": conv.split,
                        "mode": mode,
                        "evidence_events": [event_of[t] for t in q["evidence"]],
                        "stale_events": [event_of[t] for t in q["stale"]],
                        "bm25": [turn_of[events[i].id] for i in bm25.rank(query)[:SEARCH_K]],
                        "fts": [turn_of.get(h.event.id) for h in text_hits],
                        "hits": [_hit(h, turn_of) for h in ranked[:KEEP_HITS]],
                        "candidates": [_hit(h, turn_of) for h in by_support(gate_in, cfg.injection.max_results * 3)],
                        "selection": {name: [_hit(h, turn_of) for h in hs] for name, hs in tiers.items()},
                    }
                )
            memory.close()
            if not quiet:
                print(f"{conv.id} ({conv.split}, {conv.lang}): {len(conv.questions)} questions, "
                      f"store built in {built:.0f} s", file=sys.stderr)  # fmt: skip
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return records


def injection_rows(split: str, cache: Path | None, ask: Callable[..., Any], row: Callable[..., Any],
                   text_only: bool = False, lexicon: Callable[[Any], Any] | None = None, other: bool = False,
                   ) -> Iterable[dict[str, Any]]:  # fmt: skip
    """The questions of ``split`` through ``benchmarks/injection.py``'s ``ask`` (the hook's two tiers), as its rows
    (``other``: another writer's questions, as corpus conversation-other)."""
    from memlane import config
    from memlane.capture.inject import retrieval_query
    from memlane.retrieval.engine import fitted_config
    from memlane.retrieval.hybrid import Retriever

    cfg = config.load()
    for conv in conversations(split, other=other):
        workdir = Path(tempfile.mkdtemp(prefix=f"conv-{conv.id}-"))
        try:
            memory, event_of = build(conv, workdir, cfg, not text_only, cache)
            now = datetime.fromisoformat(conv.asked_at.replace("Z", "+00:00"))
            engine = _hook_engine(cfg, not text_only, {"now": now})
            engine.speakers.get(memory.project.id, memory.store, wait=True)
            if text_only:
                retriever, index, rcfg = Retriever(memory.store, cfg), None, cfg
            else:
                retriever, index = engine.retriever(memory), engine.index(memory.project.id)
                retriever.lexicon = lexicon(memory.store) if lexicon else None
                rcfg = engine.shaped(memory, fitted_config(cfg, engine.embedder))  # as Engine.relevant chooses
            for q in conv.questions:
                answer = ask(memory.store, retriever, index, rcfg, retrieval_query(q["text"], cfg), now)
                good = {event_of[t] for t in q["evidence"]} if q["answerable"] else set()
                yield row("conversation-other" if other else "conversation", q["id"], conv.split, q["kind"], q["lang"],
                          q["answerable"], answer, good, {event_of[t] for t in q["stale"]})  # fmt: skip
            memory.close()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


# ---- the real hook, end to end ----------------------------------------------------------------------------

_CITE = re.compile(r"\[(mem:[0-9a-z]+)\]")


def e2e(split: str, cache: Path | None, convs: list[Conversation] | None = None) -> dict[str, Any]:
    """Every answerable question of ``split`` through `memlane hook UserPromptSubmit` (a new process, as Claude
    Code runs it) with a real daemon (`memlane serve`, warm), as a held-out harness asks: is an evidence turn
    cited anywhere in what the hook returns (either tier)? Beside it the engine's answer (``today``, the
    daemon's code called in this process with the question's ``now``) for the same questions.

    Capture is off (the questions do not become memories of each other); the daemon runs on the wall clock,
    so a question's relative time phrase ("last month") means something else to it than to the engine.
    """
    from coding_replay import E2E_ENV, hook_context, warm_daemon

    from memlane import config
    from memlane.memory import Memory

    cfg = config.load()
    out: dict[str, Any] = {"questions": 0, "hook": 0, "engine": 0, "same": 0, "deadline_missed": 0, "ms": [],
                           "differ": []}  # fmt: skip
    for conv in convs if convs is not None else conversations(split):
        workdir = Path(tempfile.mkdtemp(prefix=f"conv-e2e-{conv.id}-"))
        try:
            memory, event_of = build(conv, workdir, cfg, True, cache)
            turn_of = {e.cite: t for t, e_id in event_of.items() for e in memory.store.by_ids([e_id])}
            now = datetime.fromisoformat(conv.asked_at.replace("Z", "+00:00"))
            engine = _hook_engine(cfg, True, {"now": now})
            engine.speakers.get(memory.project.id, memory.store, wait=True)
            root = str(memory.project.root)
            env = {**os.environ, **E2E_ENV}
            memory.close()
            with warm_daemon(root, env):
                mem = Memory.open(root)
                for q in conv.questions:
                    if not q["answerable"]:
                        continue
                    context, ms = hook_context(root, env, q["text"])
                    out["ms"].append(ms)
                    cited = {turn_of.get(c) for c in _CITE.findall(context)}
                    chosen = engine.relevant(mem, q["text"], [])
                    told = {turn_of.get(h.event.cite) for item in chosen.items for h in item.hits}
                    told |= {turn_of.get(item.asked.cite) for item in chosen.items if item.asked}
                    told |= {turn_of.get(h.event.cite) for h in chosen.index}
                    hook, eng = bool(cited & set(q["evidence"])), bool(told & set(q["evidence"]))
                    out["questions"] += 1
                    out["hook"] += hook
                    out["engine"] += eng
                    out["same"] += hook == eng
                    if hook != eng:
                        out["differ"].append(q["id"])
                mem.close()
            log = Path(os.environ["MEMLANE_HOME"]) / "logs" / "hooks.log"
            text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
            out["deadline_missed"] += text.count("daemon did not answer in time")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    ms = sorted(out.pop("ms"))
    n = max(out["questions"], 1)
    return {
        **out,
        "hook_reachable": round(out["hook"] / n, 3),
        "engine_reachable": round(out["engine"] / n, 3),
        "hook_ms_p50": round(ms[len(ms) // 2], 1) if ms else None,
    }


# ---- metrics ----------------------------------------------------------------------------------------------


def lang_row(r: dict[str, Any]) -> str:
    """Korean on Korean, Korean about English (ko→en) and English about Korean (en→ko) rows; '' otherwise."""
    if r["lang"] == r["conv_lang"]:
        return "korean" if r["lang"] == "ko" else ""
    return f"{r['lang']}→{r['conv_lang']}"


Tier = str | tuple[str, ...]


def injected(r: dict[str, Any], tier: Tier = "injected") -> list[str]:
    """The turns a record's selection put in ``tier`` (a tuple: in any of those tiers, e.g. "reachable")."""
    names = (tier,) if isinstance(tier, str) else tier
    return [h["turn"] for name in names for h in r["selection"].get(name, [])]


def sessions(turns: list[Any]) -> set[str]:
    """The conversation sessions (``cN:sNN``) of turn ids or hit records."""
    return {(t["turn"] if isinstance(t, dict) else t or "").rsplit(":", 1)[0] for t in turns} - {""}


def metrics(rows: list[dict[str, Any]], tier: Tier = "injected") -> dict[str, Any]:
    """The summary of ``rows`` (see the module doc); None where a metric has no question to measure."""
    ans = [r for r in rows if r["answerable"]]
    miss = [r for r in rows if not r["answerable"]]
    upd = [r for r in rows if r["stale"]]

    def share(rs: list[dict[str, Any]], test: Callable[[dict[str, Any]], bool]) -> float | None:
        return sum(1 for r in rs if test(r)) / len(rs) if rs else None

    def found(ranking: list[Any], r: dict[str, Any], k: int) -> bool:
        turns = [h["turn"] if isinstance(h, dict) else h for h in ranking[:k]]
        return bool(set(turns) & set(r["evidence"]))

    shown = [t for r in ans for t in injected(r, tier)]
    good = sum(1 for r in ans for t in injected(r, tier) if t in r["evidence"])
    return {
        "n": len(rows),
        "answerable": len(ans),
        "bm25@5": share(ans, lambda r: found(r["bm25"], r, 5)),
        "text@5": share(ans, lambda r: found(r["fts"], r, 5)),
        "r@5": share(ans, lambda r: found(r["hits"], r, 5)),
        "r@10": share(ans, lambda r: found(r["hits"], r, 10)),
        "s@10": share(ans, lambda r: bool(sessions(r["hits"][:10]) & sessions(r["evidence"]))),
        "injected": share(ans, lambda r: bool(set(injected(r, tier)) & set(r["evidence"]))),
        "mem/q": statistics.mean(len(injected(r, tier)) for r in rows) if rows else None,
        "precision": good / len(shown) if shown else None,
        "silent": share(miss, lambda r: not injected(r, tier)),
        "unanswerable": len(miss),
        "stale alone": sum(
            1
            for r in upd
            if set(injected(r, tier)) & set(r["stale"]) and not set(injected(r, tier)) & set(r["evidence"])
        ),
        "updates": len(upd),
    }


def summary(records: list[dict[str, Any]], tier: Tier = "injected") -> dict[str, dict[str, dict[str, Any]]]:
    """split → row (all, each kind, each language row) → ``metrics``."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for split in ("dev", "test"):
        rows = [r for r in records if r["split"] == split]
        if not rows:
            continue
        table = {"all": metrics(rows, tier)}
        for kind in KINDS:
            table[kind] = metrics([r for r in rows if r["kind"] == kind], tier)
        for lang in ("korean", "ko→en", "en→ko"):
            if part := [r for r in rows if lang_row(r) == lang]:
                table[lang] = metrics(part, tier)
        out[split] = table
    return out


COLUMNS = ("n", "bm25@5", "text@5", "r@5", "r@10", "s@10", "injected", "mem/q", "precision", "silent", "stale alone")


def _cell(key: str, m: dict[str, Any]) -> str:
    v = m[key]
    if key == "stale alone":
        return f"{v}/{m['updates']}" if m["updates"] else "-"
    if v is None:
        return "-"
    return f"{v:.2f}" if isinstance(v, float) else str(v)


def print_table(table: dict[str, dict[str, Any]], split: str) -> None:
    print(f"\n{split}")
    print(f"  {'':<13}" + "".join(f"{c:>12}" for c in COLUMNS))
    for name, m in table.items():
        print(f"  {name:<13}" + "".join(f"{_cell(c, m):>12}" for c in COLUMNS))


def show(records: list[dict[str, Any]], tier: Tier = "injected") -> None:
    """The questions the hook got wrong: evidence not injected, a stale turn alone, or a no-match injection."""
    for r in records:
        got = injected(r, tier)
        if r["answerable"] and set(got) & set(r["evidence"]) and not (set(got) & set(r["stale"])):
            continue
        if not r["answerable"] and not got:
            continue
        rank = next((i + 1 for i, h in enumerate(r["hits"]) if h["turn"] in r["evidence"]), None)
        print(f"{r['id']} [{r['kind']}, {r['lang']}] {r['text']}")
        print(f"    evidence {' '.join(r['evidence']) or '-'}  stale {' '.join(r['stale']) or '-'}  "
              f"first evidence at rank {rank}")  # fmt: skip
        names = (tier,) if isinstance(tier, str) else tier
        chosen = " ".join(f"{h['turn']}({h['confidence']})" for n in names for h in r["selection"].get(n, []))
        top = " ".join(f"{h['turn']}:{h['score']:.2f}" for h in r["hits"][:3])
        print(f"    injected {chosen or '-'}")
        print(f"    top 3    {top}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=["dev", "test", "all"], default="all")
    ap.add_argument("--mode", choices=["text", "hybrid"], default="hybrid", help="text: no model (full text only)")
    ap.add_argument("--cache", type=Path, help="keep each conversation's vectors here between runs")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--records", type=Path, help="also write every question's record (JSON lines) here")
    ap.add_argument("--show", action="store_true", help="list the questions the hook got wrong")
    ap.add_argument("--conversation", action="append", help="only this conversation id (repeatable)")
    ap.add_argument("--e2e", action="store_true", help="ask through the real hook process and a real daemon")
    args = ap.parse_args()
    convs = conversations(args.split)
    if args.conversation:
        convs = [c for c in convs if c.id in args.conversation]
        if not convs:
            raise SystemExit(f"no conversation {', '.join(args.conversation)} in split {args.split}")
    if args.e2e:
        print(json.dumps(e2e(args.split, args.cache, convs)))
        return
    started = time.time()
    records = evaluate(args.split, args.mode, args.cache, convs=convs, quiet=args.json)
    if args.records:
        args.records.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    table = summary(records)
    if args.json:
        print(json.dumps(table, ensure_ascii=False))
        return
    from memlane import config

    model = config.load().embedding.model if args.mode == "hybrid" else "none"
    print(
        f"conversation benchmark: {len(convs)} conversations, {len(records)} questions, split={args.split}, "
        f"mode={args.mode}, model={model}, {time.time() - started:.0f} s"
    )
    for split, t in table.items():
        print_table(t, split)
    if args.show:
        print()
        show(records)


if __name__ == "__main__":
    main()
