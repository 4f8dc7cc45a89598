"""The dashboard at 100k events: first load, search and scrolling, median and p95.

    python benchmarks/dashboard.py [--events 100000] [--runs 30] [--dir DIR]

Builds a project of ``--events`` generated events (1,000 sessions of 100, spread over 60 days, a quarter of them
prompts, a tenth of those with an injection record) with synthetic vectors for all of them and the ANN index
(``search_latency.py``'s vectors: random unit vectors around topic directions), then times the daemon's real
ASGI app (Guard, templates, library calls) in-process with a logged-in session:

- first load: ``GET /`` (the live page: its first 50 events, the status line), and the other pages;
- search: ``GET /search?q=…`` with the warm model (hybrid: FTS5 + LanceDB + fusion, meta counts included);
- scrolling: ``GET /events/page?after=…`` at depths 1, 100 and 1,900 pages (50 events each) into history,
  and a session's timeline page.

These are server times (what a browser waits for before it can draw); the page then loads two small static
files (htmx, 52 KB, and the stylesheet, cached for an hour). ``--dir`` keeps the store for the next run.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hook_latency import WORDS, sentence

DAY_S = 86400


def build(root: Path, size: int, embedder: Any) -> str:
    import numpy as np
    from search_latency import _fill_vectors

    from memlane import config
    from memlane.memory import Memory
    from memlane.store import NewEvent
    from memlane.store.keys import iso
    from memlane.vectors import VectorIndex

    (root / ".git").mkdir(parents=True, exist_ok=True)
    with Memory.open(root) as mem:
        pid = mem.project.id
        if mem.store.count() >= size:
            return pid
        rng = random.Random(size)
        types = ["user_prompt", "agent_response", "tool_observation", "tool_observation"]
        start = time.time() - 60 * DAY_S
        step = 60 * DAY_S / size
        for first in range(mem.store.count(), size, 10_000):
            batch = []
            for i in range(first, min(first + 10_000, size)):
                kind = types[i % 4]
                meta: dict[str, Any] = {}
                if kind == "user_prompt" and i % 40 == 0:
                    meta["injection"] = {"mode": "hybrid", "full": [], "index": [], "left_out": []}
                batch.append(
                    NewEvent(
                        kind, f"s{i // 100}", sentence(rng, rng.randint(8, 40)), f"t{i}", meta, ts=iso(start + i * step)
                    )
                )
            mem.store.append(batch)
            mem.store.db.execute("UPDATE outbox SET status = 'done'")
            print(f"\r  {first + len(batch)} events", end="", file=sys.stderr, flush=True)
        cfg = config.Config()
        index = VectorIndex(pid, embedder.version, embedder.dim, cfg.vectors)
        if index.count() == 0:
            _fill_vectors(mem.store, index, np.random.default_rng(size))
        index.ensure_index()
        print(file=sys.stderr)
    return pid


def timed(client: Any, path: str, runs: int) -> list[float]:
    out = []
    for i in range(runs + 2):
        t = time.perf_counter()
        r = client.get(path)
        elapsed = (time.perf_counter() - t) * 1000
        assert r.status_code == 200, (path, r.status_code, r.text[:200])
        if i >= 2:  # the first two warm the caches
            out.append(elapsed)
    return out


def row(name: str, ms: list[float]) -> str:
    ms = sorted(ms)
    return f"{name:<44} p50 {statistics.median(ms):7.1f} ms   p95 {ms[max(0, int(0.95 * len(ms)) - 1)]:7.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--dir", help="keep the generated store here (reused on the next run)")
    args = ap.parse_args()

    base = Path(args.dir or tempfile.mkdtemp(prefix="memlane-dashboard-"))
    os.environ["MEMLANE_HOME"] = str(base / "home")
    from starlette.testclient import TestClient

    from memlane import config
    from memlane.daemon.server import Daemon

    cfg = config.load()
    daemon = Daemon(cfg)
    embedder = daemon.engine.embedder
    assert embedder is not None, daemon.engine.model_error
    pid = build(base / "project", args.events, embedder)
    embedder.embed_query("warm up")
    app = daemon.app("bench-token", 37777)
    client = TestClient(app, base_url="http://127.0.0.1:37777")
    link = client.post(
        "/api/dashboard/login", headers={"Authorization": "Bearer bench-token"}, json={"project_id": pid}
    ).json()["path"]
    assert client.get(link, follow_redirects=False).status_code == 303

    from memlane.memory import Memory

    with Memory.open(project_id=pid, create=False) as mem:
        total = mem.store.count()
        deep = {}
        for depth in (1, 100, 1900):  # the cursor a page this deep into history hands to the next request
            last = mem.store.db.execute(
                "SELECT ts, seq FROM events ORDER BY ts DESC, seq DESC LIMIT 1 OFFSET ?", (depth * 50 - 1,)
            ).fetchone()
            deep[depth] = (last[0], last[1])
    print(
        f"dashboard at {total:,} events, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, "
        f"{args.runs} runs each (after warm-up runs)"
    )
    print(row("first load: GET / (live page)", timed(client, "/", args.runs)))
    for path in ("/sessions", "/sessions/s500", "/stats", "/told", "/api/events?limit=50", "/api/stats"):
        print(row(f"GET {path}", timed(client, path, args.runs)))
    rng = random.Random(7)
    queries = [f"why does the {rng.choice(WORDS)} {rng.choice(WORDS)} fail" for _ in range(args.runs + 5)]
    lat = []
    for i, q in enumerate(queries):  # the first 5 open the vector index and warm the word counts
        t = time.perf_counter()
        r = client.get(f"/search?q={q.replace(' ', '+')}")
        assert r.status_code == 200 and "mode hybrid" in r.text, r.text[:300]
        if i >= 5:
            lat.append((time.perf_counter() - t) * 1000)
    print(row("search: GET /search?q=… (hybrid, warm model)", lat))
    for depth, (ts, seq) in deep.items():
        print(
            row(
                f"scroll: GET /events/page, {depth * 50:,} events deep",
                timed(client, f"/events/page?after={ts}|{seq}", args.runs),
            )
        )
    print(
        row(
            "scroll: a session's timeline, next page",
            timed(client, "/events/page?session=s500&order=asc&after=2000-01-01|0", args.runs),
        )
    )


if __name__ == "__main__":
    main()
