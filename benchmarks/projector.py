"""Projection cost: the knowledge projector over a store of N events (default 100k), and the prompt path's read.

    python benchmarks/projector.py [--events 100000] [--batch 100] [--lookups 2000] [--owner knowledge|learning]

The store is the coding replay (61 recorded Claude Code and Codex sessions, imported with memlane's importers)
copied over and over with fresh session ids, every copy 130 days after the previous one, until it holds N
events: edits of the same files, reverts, decisions and removals again and again — the work the resolution
rules do in a long-lived project, not random words. It prints:

- **rebuild**: ``memlane rebuild --only knowledge`` over the whole store (events/s);
- **follow**: the daemon's way, batches of ``--batch`` events in their own transactions (events/s, and the
  p50/p95 time one batch holds the write lock: what a hook's write may wait);
- **replacements**: ``Store.replacements`` for the 20 hits of a prompt (p50/p95 over ``--lookups`` calls).

With ``--owner learning`` the same for the learning loop's projector (citations, insights, errors and fixes;
the knowledge model is projected first, untimed, since levels read its replacements), then:

- **settle**: the graduation job's work on an injection log of ``--prompts`` prompts (3 memories in full, 4
  listed, each from the 2,000 events before the prompt) and as many fetches: records folded per second and
  memories judged, until nothing is left (what ``memlane rebuild`` does after the events; the daemon does it
  4 transactions a round);
- **learned**: ``Store.learned`` for 20 search results (their level and insight: what search and MCP add).

The hook path does not change (no hook projects anything): ``benchmarks/hook_latency.py`` measures it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def replay_events(workdir: Path) -> list[Any]:
    """The coding replay's events, imported into a scratch store with memlane's importers (no model)."""
    spec = importlib.util.spec_from_file_location("coding_replay", HERE / "coding_replay.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    from memlane import config, project
    from memlane.importers import Importer, Options, discover
    from memlane.memory import Memory

    root = workdir / "parcelwise"
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    files = bench.materialize(HERE / "coding_replay" / "transcripts", workdir / "transcripts", root)
    proj = project.identify(root)
    options = Options(["claude", "codex"], files)
    Importer(proj, options, config.load()).run(discover(proj, options))
    with Memory.open(root) as mem:
        return list(mem.store.iter_events())


def shifted(ts: str, days: int) -> str:
    moment = datetime.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S") + timedelta(days=days)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + ts[19:]


def build(path: Path, events: list[Any], total: int) -> int:
    from memlane.store.db import NewEvent, Store

    store = Store(path, "bench")
    copy, stored = 0, 0
    while stored < total:
        batch = []
        for e in events:
            if stored + len(batch) >= total:
                break
            batch.append(
                NewEvent(
                    e.type,
                    f"{e.session_id}-{copy}",
                    e.content,
                    f"{copy}:{e.seq}",
                    dict(e.metadata),
                    ts=shifted(e.ts, 130 * copy),
                )
            )
        stored += len(store.append(batch).inserted)
        copy += 1
        print(f"\r  building store: {stored}/{total}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    store.close()
    return copy


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def bench_store(tmp: Path, events: int) -> tuple[Any, int, int]:
    """(a store of ``events`` events made of copies of the coding replay, its event count, the copies), with
    MEMLANE_HOME inside ``tmp``: both benchmarks start from it."""
    os.environ["MEMLANE_HOME"] = str(tmp / "home")
    from memlane.store.db import Store

    copies = build(tmp / "bench.db", replay_events(tmp / "replay"), events)
    store = Store(tmp / "bench.db", "bench")
    return store, store.count(), copies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=100, help="events per transaction when following (the daemon's)")
    ap.add_argument("--lookups", type=int, default=2000)
    ap.add_argument("--owner", choices=("knowledge", "learning"), default="knowledge")
    ap.add_argument("--prompts", type=int, default=10_000, help="--owner learning: injection records to settle")
    args = ap.parse_args()
    if args.owner == "learning":
        learning_main(args)
        return
    with tempfile.TemporaryDirectory(prefix="projector-bench-") as tmp:
        from memlane import derived
        from memlane.knowledge import projection

        store, n, copies = bench_store(Path(tmp), args.events)

        t0, c0 = time.perf_counter(), time.process_time()
        derived.rebuild(store, ["knowledge"])
        rebuild_s, rebuild_cpu = time.perf_counter() - t0, time.process_time() - c0
        counts = store.knowledge_counts()

        derived.reset(store)
        held: list[float] = []
        held_cpu: list[float] = []
        projectors = [p for p in derived.projectors() if p.follows_log]
        t0, c0 = time.perf_counter(), time.process_time()
        while True:
            t1, c1 = time.perf_counter(), time.process_time()
            read, _ = projection.step(store, projectors[0], args.batch)
            held.append((time.perf_counter() - t1) * 1000)
            held_cpu.append((time.process_time() - c1) * 1000)
            if read < args.batch:
                break
        follow_s, follow_cpu = time.perf_counter() - t0, time.process_time() - c0

        ids = [r[0] for r in store.db.execute("SELECT id FROM events")]
        replaced = [r[0] for r in store.db.execute("SELECT DISTINCT old_id FROM resolutions WHERE partial = 0")]
        rng = random.Random(32)
        lookups, lookups_cpu = [], []
        for _ in range(args.lookups):
            sample = rng.sample(ids, 15) + rng.sample(replaced, min(5, len(replaced)))
            t1, c1 = time.perf_counter(), time.process_time()
            store.replacements(sample)
            lookups.append((time.perf_counter() - t1) * 1000)
            lookups_cpu.append((time.process_time() - c1) * 1000)
        store.close()

    print(f"\nknowledge projector, {n} events in store ({copies} copies of the coding replay's 439)")
    print(
        f"  entries {sum(counts['entries'].values())}, entities {sum(counts['entities'].values())}, "
        f"edges {counts['edges']}, memories superseded {counts['superseded']} (+{counts['partly_superseded']} in part)"
    )
    print(f"  load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall time counts the wait)")
    print(f"{'':32}{'wall':>18}{'CPU of this process':>26}")
    print(
        f"  rebuild (one pass):           {rebuild_s:6.1f} s {n / rebuild_s:7.0f} ev/s"
        f"      {rebuild_cpu:6.1f} s {n / rebuild_cpu:7.0f} ev/s"
    )
    print(
        f"  follow ({args.batch}-event batches):    {follow_s:6.1f} s {n / follow_s:7.0f} ev/s"
        f"      {follow_cpu:6.1f} s {n / follow_cpu:7.0f} ev/s"
    )
    print(
        f"  one batch (write lock held):  p50 {statistics.median(held):6.1f} ms p95 {pct(held, 0.95):6.1f} ms"
        f"   p50 {statistics.median(held_cpu):6.1f} ms p95 {pct(held_cpu, 0.95):6.1f} ms"
    )
    print(
        f"  replacements(20 ids):         p50 {statistics.median(lookups) * 1000:6.0f} µs"
        f" p95 {pct(lookups, 0.95) * 1000:6.0f} µs"
        f"   p50 {statistics.median(lookups_cpu) * 1000:6.0f} µs p95 {pct(lookups_cpu, 0.95) * 1000:6.0f} µs"
        f"  ({args.lookups} calls)"
    )


def learning_main(args: argparse.Namespace) -> None:
    import json

    with tempfile.TemporaryDirectory(prefix="projector-bench-") as tmp:
        from memlane import derived
        from memlane.knowledge import projection

        store, n, copies = bench_store(Path(tmp), args.events)
        derived.rebuild(store, ["knowledge"])  # levels read the replacements: untimed

        t0, c0 = time.perf_counter(), time.process_time()
        derived.rebuild(store, ["learning"])
        rebuild_s, rebuild_cpu = time.perf_counter() - t0, time.process_time() - c0
        owner = next(p for p in derived.projectors() if p.name == "learning")
        with store.write():
            owner.drop(store)
            store.set_projection_offset("learning", 0, owner.version, "2026-01-01T00:00:00.000Z")
        held: list[float] = []
        t0, c0 = time.perf_counter(), time.process_time()
        while True:
            t1 = time.perf_counter()
            read, _ = projection.step(store, owner, args.batch)
            held.append((time.perf_counter() - t1) * 1000)
            if read < args.batch:
                break
        follow_s, follow_cpu = time.perf_counter() - t0, time.process_time() - c0
        owner.settle(store)  # the owner's own (derived.settle waits for every owner: endless is not projected here)
        projected = {
            "cited uses": store.db.execute("SELECT COUNT(*) FROM memory_usage").fetchone()[0],
            "insights": store.db.execute("SELECT COUNT(*) FROM insights").fetchone()[0],
            "failed commands": store.db.execute("SELECT COUNT(*) FROM learning_errors").fetchone()[0],
        }

        rows = store.db.execute("SELECT id, seq FROM events ORDER BY seq").fetchall()
        prompts = store.db.execute(
            "SELECT id, session_id, ts, seq FROM events WHERE type = 'user_prompt' ORDER BY seq"
        ).fetchall()
        rng = random.Random(33)
        prompts = sorted(rng.sample(prompts, min(args.prompts, len(prompts))), key=lambda r: r[3])
        with store.write() as db:
            for pid, session, ts, seq in prompts:
                before = [r[0] for r in rows[max(0, seq - 2001) : max(1, seq - 1)]] or [rows[0][0]]
                picked = rng.sample(before, min(7, len(before)))
                record = {"mode": "hybrid", "full": [{"id": i, "score": 0.6 + rng.random() / 3} for i in picked[:3]],
                          "index": [{"id": i, "score": 0.2} for i in picked[3:]], "left_out": []}  # fmt: skip
                db.execute(
                    "INSERT INTO injections (prompt_id, session_id, ts, record) VALUES (?, ?, ?, ?)",
                    (pid, session, ts, json.dumps(record)),
                )
                db.execute(
                    "INSERT INTO memory_fetches (event_id, session_id, source, ts) VALUES (?, ?, 'mcp', ?)",
                    (picked[0], session, ts),
                )
        t0, c0 = time.perf_counter(), time.process_time()
        while owner.settle(store):
            pass
        settle_s, settle_cpu = time.perf_counter() - t0, time.process_time() - c0
        levels = store.level_counts()["events"]

        ids = [r[0] for r in rows]
        used = [r[0] for r in store.db.execute("SELECT event_id FROM memory_levels")]
        lookups: list[float] = []
        for _ in range(args.lookups):
            sample = rng.sample(ids, 15) + rng.sample(used, min(5, len(used)))
            t1 = time.perf_counter()
            store.learned(sample)
            lookups.append((time.perf_counter() - t1) * 1000)
        store.close()

    print(f"\nlearning projector, {n} events in store ({copies} copies of the coding replay's 439)")
    print("  " + ", ".join(f"{k} {v}" for k, v in projected.items()))
    print(f"  load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall time counts the wait)")
    print(f"{'':32}{'wall':>18}{'CPU of this process':>26}")
    print(
        f"  rebuild (one pass):           {rebuild_s:6.1f} s {n / rebuild_s:7.0f} ev/s"
        f"      {rebuild_cpu:6.1f} s {n / rebuild_cpu:7.0f} ev/s"
    )
    print(
        f"  follow ({args.batch}-event batches):    {follow_s:6.1f} s {n / follow_s:7.0f} ev/s"
        f"      {follow_cpu:6.1f} s {n / follow_cpu:7.0f} ev/s"
    )
    print(f"  one batch (write lock held):  p50 {statistics.median(held):6.1f} ms p95 {pct(held, 0.95):6.1f} ms")
    records = 2 * len(prompts)
    print(
        f"  settle ({len(prompts)} injection records + {len(prompts)} fetches): {settle_s:6.1f} s"
        f" {records / settle_s:7.0f} records/s   CPU {settle_cpu:6.1f} s;"
        f" levels " + ", ".join(f"L{k} {v}" for k, v in sorted(levels.items()))
    )
    print(
        f"  learned(20 ids):              p50 {statistics.median(lookups) * 1000:6.0f} µs"
        f" p95 {pct(lookups, 0.95) * 1000:6.0f} µs  ({args.lookups} calls)"
    )


if __name__ == "__main__":
    main()
