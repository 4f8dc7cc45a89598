"""The first search a person or an agent makes: ``memlane search`` and an MCP ``mem-search``, whole process.

    python benchmarks/first_search.py [--events 5000] [--runs 5]

A store of N synthetic events, embedded once up front. Then, alternated with a bare ``python -c pass``
(the floor, same run): ``memlane search`` with no daemon (the model loads in the command), with the
daemon up and warm (the daemon answers), and a fresh ``memlane mcp`` server's first ``mem-search`` over
stdio (initialize → tools/call), with the daemon up and without. In a real session the server starts with the
session and its first tool call comes after the model's first turn: the "mcp call after init" rows time that
call alone after a pause (``--pause``, default 2 s), with no daemon and autostart off (the server warms its own
model) and with autostart on (the server starts the daemon as it starts). Goals (issue 20): search with the
daemon ≤ 0.5 s, without ≤ 2 s; first MCP search ≤ 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hook_latency import MEMLANE, build_store, floor_ms


def timed(args: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(args, env=env, cwd=cwd, capture_output=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{args} failed: {proc.stderr.decode()[-400:]}")
    return time.perf_counter() - start


def mcp_first_search(env: dict[str, str], cwd: Path, pause_s: float = 0.0) -> float:
    """Spawn the stdio server; with ``pause_s`` 0, time until the first mem-search answer arrives from the spawn.

    With a pause: initialize, wait ``pause_s`` (in a real session the server starts with the session and the
    first tool call comes after the model's first turn), then time the tools/call round trip alone: the
    latency the agent sees.
    """
    init = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]  # fmt: skip
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "mem-search", "arguments": {"query": "connection pool timeout"}}}  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*MEMLANE, "mcp"], env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(messages: list[dict[str, object]]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        proc.stdin.flush()

    def answer(wanted: int) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if json.loads(line).get("id") == wanted:
                return
        raise SystemExit("the MCP server closed without answering")

    try:
        if pause_s <= 0:
            send([*init, call])
            answer(2)
            return time.perf_counter() - start
        send(init)
        answer(1)
        time.sleep(pause_s)
        start = time.perf_counter()
        send([call])
        answer(2)
        return time.perf_counter() - start
    finally:
        proc.kill()
        proc.wait()


def stop_daemon(env: dict[str, str]) -> None:
    subprocess.run([*MEMLANE, "daemon", "stop"], env=env, capture_output=True, check=False)
    from memlane.daemon import state

    for _ in range(200):
        if state.read_info() is None:
            return
        time.sleep(0.05)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pause", type=float, default=2.0, help="seconds between initialize and the first tools/call")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="memlane-first-"))
    os.environ["MEMLANE_HOME"] = str(home / "data")
    cwd = home / "project"
    (cwd / ".git").mkdir(parents=True)
    build_store(cwd, args.events)
    with socket.socket() as sock:  # a free port: a real daemon may hold the default one
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "MEMLANE_DAEMON_PORT": str(port), "MEMLANE_DAEMON_AUTOSTART": "false"}
    print("embedding the store once…", file=sys.stderr)
    subprocess.run([*MEMLANE, "process", "--json"], env=env, cwd=cwd, capture_output=True, check=True)
    search = [*MEMLANE, "search", "connection pool timeout", "--json"]

    rows: dict[str, list[float]] = {
        "floor": [],
        "search, no daemon": [],
        "mcp first search, no daemon": [],
        "mcp call after init, no daemon": [],
        "mcp call after init, autostart": [],
    }
    autostart = {**env, "MEMLANE_DAEMON_AUTOSTART": "true"}
    for _ in range(args.runs):
        rows["floor"].append(floor_ms() / 1000)
        rows["search, no daemon"].append(timed(search, env, cwd))
        rows["mcp first search, no daemon"].append(mcp_first_search(env, cwd))
        rows["mcp call after init, no daemon"].append(mcp_first_search(env, cwd, args.pause))
        # A real session with autostart on: nothing running, the server starts the daemon as it starts.
        rows["mcp call after init, autostart"].append(mcp_first_search(autostart, cwd, args.pause))
        stop_daemon(env)

    from memlane.daemon import client

    daemon = subprocess.Popen(
        [*MEMLANE, "serve", "--quiet", "--no-worker"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while client.call("/api/search", {"cwd": str(cwd), "query": "warm up"}, 60_000) is None:
            if daemon.poll() is not None:
                raise SystemExit("the daemon did not start")
            time.sleep(0.2)
        rows["search, daemon up"] = []
        rows["mcp first search, daemon up"] = []
        for _ in range(args.runs):
            rows["floor"].append(floor_ms() / 1000)
            rows["search, daemon up"].append(timed(search, env, cwd))
            rows["mcp first search, daemon up"].append(mcp_first_search(env, cwd))
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)

    floor = statistics.median(rows.pop("floor"))
    goals = {
        "search, no daemon": 2.0,
        "search, daemon up": 0.5,
        "mcp first search, no daemon": 1.0,
        "mcp first search, daemon up": 1.0,
        "mcp call after init, no daemon": 1.0,
        "mcp call after init, autostart": 1.0,
    }
    print(f"{args.events} events, {args.runs} runs each; floor (python -c pass) {floor * 1000:.1f} ms")
    print(
        f"'mcp call after init': initialize, {args.pause:.0f} s pause (the model's first turn), then tools/call alone"
    )
    print(f"{'what':<30}{'p50 s':>8}{'max s':>8}{'p50/floor':>11}{'goal s':>8}")
    for name, values in rows.items():
        p50 = statistics.median(values)
        flag = "  OVER" if p50 > goals[name] else ""
        print(f"{name:<30}{p50:>8.2f}{max(values):>8.2f}{p50 / floor:>10.1f}x{goals[name]:>8.1f}{flag}")


if __name__ == "__main__":
    main()
