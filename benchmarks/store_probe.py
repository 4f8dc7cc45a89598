"""What the damage check every CLI command runs first costs (store/health.py), and a backup of the same store.

    python benchmarks/store_probe.py [--sizes 10,10000,100000] [--runs 300]

For each size it builds a store of that many prompts (mixed sessions, a few bookkeeping events), then
times ``probe`` on an open connection (what ``Memory.open(verify=True)`` adds to a command) and one
``backup.take`` (what the daemon's backup job does for a store that changed). Prints median and p95.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from memlane.store import backup
from memlane.store.db import NewEvent, Store
from memlane.store.health import probe


def build(path: str, n: int) -> None:
    with Store(path, "bench") as store:
        batch: list[NewEvent] = []
        for i in range(n):
            session = f"s{i // 40}"
            if i % 40 == 0:
                batch.append(NewEvent("session_start", session, f"Session started in /tmp/{session}", f"m{i}"))
            batch.append(NewEvent("user_prompt", session, f"prompt {i} about the pool timeout, take {i % 97}", f"t{i}"))
            if len(batch) >= 5000:
                store.append(batch)
                batch = []
        store.append(batch)
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,10000,100000")
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    print(f"{'events':>8}  {'probe p50 ms':>12}  {'probe p95 ms':>12}  {'backup ms':>9}  {'store MB':>8}")
    for n in (int(x) for x in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "memory.db")
            build(path, n)
            with Store(path, "bench") as store:
                assert probe(store.db) is None
                times = []
                for _ in range(args.runs):
                    start = time.perf_counter()
                    probe(store.db)
                    times.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            backup.take(path, keep=1)
            took = (time.perf_counter() - start) * 1000
            size = os.path.getsize(path) / 1e6
            print(f"{n:>8}  {statistics.median(times):>12.3f}  {p95(times):>12.3f}  {took:>9.0f}  {size:>8.1f}")


if __name__ == "__main__":
    main()
