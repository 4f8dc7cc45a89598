"""Resident memory of the daemon and its embedding worker after they embed a backlog of N events.

    python benchmarks/daemon_memory.py [--events 10000] [--timeout 3600]

Builds a store of N synthetic events (all waiting in the outbox) in a fresh data dir, starts
``memlane serve``, waits until its worker has embedded them all (or the timeout), runs one search so the
daemon's own model and index are loaded too, then prints VmRSS and VmHWM (peak) of the daemon and of the
worker from /proc. Goal (issue 20): daemon + worker ≤ 350 MB after 10k events. The worker is a thread of
the daemon now (its health reports a ``thread``, no ``pid``), so the daemon's figures are the whole cost;
a worker child, as older daemons ran one, is measured too.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hook_latency import MEMLANE, build_store


def status_mb(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (peak RSS), and Pss: RSS with shared pages (the model's memory map, libraries) split
    between the processes that share them, so daemon + worker Pss is what the pair really costs."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, _, value = line.partition(":")
        if key == "Pss":
            out[key] = int(value.split()[0]) / 1024
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--timeout", type=float, default=3600)
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="memlane-mem-")
    os.environ["MEMLANE_HOME"] = home
    cwd = Path(home) / "project"
    (cwd / ".git").mkdir(parents=True)
    build_store(cwd, args.events)
    with socket.socket() as sock:  # a free port: a real daemon may hold the default one
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "MEMLANE_DAEMON_PORT": str(port)}

    from memlane.daemon import client

    started = time.time()
    daemon = subprocess.Popen(
        [*MEMLANE, "serve", "--quiet"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        health: dict = {}  # type: ignore[type-arg]
        while time.time() - started < args.timeout:
            health = client.call("/api/health", None, 2000, method="GET") or health
            done = health.get("worker", {}).get("processed", 0)
            print(f"\r  embedded {done}/{args.events} after {time.time() - started:.0f} s", end="", file=sys.stderr)
            if done >= args.events:
                break
            time.sleep(2)
        print(file=sys.stderr)
        client.call("/api/search", {"cwd": str(cwd), "query": "connection pool timeout"}, 120_000)
        worker = int(health.get("worker", {}).get("pid", 0))
        d, w = status_mb(daemon.pid), status_mb(worker) if worker else {"VmRSS": 0.0, "VmHWM": 0.0, "Pss": 0.0}
        done = health.get("worker", {}).get("processed", 0)
        print(f"embedded {done} of {args.events} events in {time.time() - started:.0f} s")
        print(f"daemon  RSS {d['VmRSS']:6.0f} MB  peak {d['VmHWM']:6.0f} MB  PSS {d['Pss']:6.0f} MB")
        if worker:
            print(f"worker  RSS {w['VmRSS']:6.0f} MB  peak {w['VmHWM']:6.0f} MB  PSS {w['Pss']:6.0f} MB")
        else:
            print("worker  a thread of the daemon (counted above)")
        print(f"total   RSS {d['VmRSS'] + w['VmRSS']:6.0f} MB  PSS {d['Pss'] + w['Pss']:6.0f} MB  (goal ≤ 350 MB)")
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)


if __name__ == "__main__":
    main()
