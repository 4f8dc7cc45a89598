"""Turn overhead memlane adds in the real Claude Code CLI: whole `claude -p` turns with and without its hooks.

    python benchmarks/turn_overhead.py [--rounds 12] [--claude PATH/TO/claude] [--daemon] [--floor] [--trace] [--keep]

Offline, against the scripted model stub (../shared/claude-code/stub_anthropic.py, or $CLAUDE_CODE_STUB): a
temp HOME with two git projects, `bare/` (no hooks) and `mem/` (hooks from `memlane install --scope
project`, i.e. mem/.claude/settings.json, calling this interpreter's memlane). Every turn is one
`claude -p "<prompt>" --allowedTools Bash`: the stub answers with one Bash tool call, then with a closing
answer, so each turn fires SessionStart, UserPromptSubmit, PostToolUse, Stop and SessionEnd. One warm-up
turn per side is not counted; then each round runs one turn per side, the order alternating every round
(bare→mem, mem→bare, …) so drift in machine load falls on both sides alike. The time is the wall time of
the whole `claude` process. Printed: median and p95 per side, the ratio of medians (issue 20's goal:
≤ 1.15×) and of p95s, the difference in ms, and the events memlane stored (expected three per turn: the
prompt, the Bash observation and the answer, besides session start/end/summary; PostToolUse is an async hook
that `claude -p` kills when it exits first, and the observations Stop then recovered from the transcript are
counted apart); a run whose memlane side captured nothing is INVALID.

Without --daemon the daemon stays down (MEMLANE_DAEMON_AUTOSTART=false, so SessionStart does not start
one) and UserPromptSubmit uses the full-text fallback. With --daemon, `memlane daemon start` runs first
(on a free port, in the temp data dir), the benchmark waits for its model, and `memlane daemon stop`
runs at the end; the daemon's worker embeds the new events while turns run, as it would in real use.
--hook-command 'python3 -c pass' registers that command in place of memlane's (same events, timeouts, async
flags): what any hooks of this shape cost a turn, the floor under memlane's ratio. --floor runs that floor as a
third side in the same rounds (its own project), so memlane's ratio and the floor's come from the same minutes.
--trace puts every hook behind a timing shell and prints, per event, its whole-process time and where it
starts and ends relative to the end of its `claude` process: which hooks the turn waits for, and how long
(the shell adds a few ms per hook, so a traced run's ratio is not the result). memlane's package is
byte-compiled first, as a pip install leaves it (with PYTHONDONTWRITEBYTECODE set, every hook would
otherwise compile its modules from source).
Exit status: 0 valid run, 1 invalid (a turn failed, or nothing was captured).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memlane import __file__ as MEMLANE_INIT
from memlane.store.records import EVENT_TYPES

REPO = Path(__file__).resolve().parents[1]
STUB = Path(os.environ.get("CLAUDE_CODE_STUB", REPO.parent / "shared" / "claude-code" / "stub_anthropic.py"))
if not STUB.exists():
    STUB = Path("/work/shared/claude-code/stub_anthropic.py")
CLAUDE_CANDIDATES = [
    os.environ.get("MEMLANE_CC_PREFIX", str(REPO / ".cache" / "claude-code")) + "/node_modules/.bin/claude",
    "/work/wt/capture/.cache/claude-code/node_modules/.bin/claude",
]
# Every turn's prompt differs, as a person's do: a repeated prompt would find its query vector in the daemon's
# cache and spare the ~10 ms of embedding a new prompt costs.
PROMPTS = [
    "The DB connection pool times out under load; run the pool tests and tell me what fails.",
    "Checkout requests stall when traffic spikes; run the pool tests and report the failures.",
    "Why do database connections run out during the nightly batch? Run the pool tests.",
    "Sessions are not returned to the pool after a timeout; check with the pool tests.",
    "Run the pool tests: is pool_size too small for the worker count?",
]


def scripted_turn(n: int) -> dict:  # type: ignore[type-arg]
    """One Bash call; its output differs per turn, so memlane does not fold repeats into one observation."""
    return {
        "text": "Let me run the pool tests.",
        "tool": "Bash",
        "input": {
            "command": f"echo 'E   TimeoutError: pool exhausted after 30s (narwhal, run {n})'",
            "description": "run pool tests",
        },
    }


FINAL = "The pool is exhausted after 30 s: connections are not released on timeout (quokka)."
MEMLANE = [sys.executable, "-m", "memlane"]


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def find_claude(given: str | None) -> Path:
    for cand in [given, shutil.which("claude"), *CLAUDE_CANDIDATES] if given is None else [given]:
        if cand and Path(cand).exists():
            return Path(cand)
    raise SystemExit(
        "claude not found: pass --claude PATH (npm install --prefix DIR @anthropic-ai/claude-code@2.1.328; "
        "the binary is DIR/node_modules/.bin/claude)"
    )


def git_init(path: Path) -> None:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "README.md").write_text("# shop\n", encoding="utf-8")


def memlane(env: dict[str, str], cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MEMLANE, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def stored_events(env: dict[str, str], cwd: Path) -> dict[str, int]:
    out = memlane(env, cwd, "history", "--json", "--limit", "100000")
    if out.returncode != 0 or not out.stdout.strip():
        return {}
    counts: dict[str, int] = {}
    for event in json.loads(out.stdout):
        counts[event["type"]] = counts.get(event["type"], 0) + 1
        if event["metadata"].get("recovered"):  # stored by Stop's catch-up: its async hook never finished
            counts["tool_observation recovered by Stop"] = counts.get("tool_observation recovered by Stop", 0) + 1
    return counts


def wait_daemon(env: dict[str, str], cwd: Path, timeout: float = 180) -> dict:  # type: ignore[type-arg]
    """Until `memlane daemon status --json` reports a loaded model."""
    deadline = time.time() + timeout
    info: dict = {}  # type: ignore[type-arg]
    while time.time() < deadline:
        out = memlane(env, cwd, "daemon", "status", "--json")
        if out.returncode == 0 and out.stdout.strip():
            info = json.loads(out.stdout)
            health = info.get("health") or {}
            if info.get("running") and (health.get("model") or health.get("model_error")):
                return info
        time.sleep(0.5)
    raise SystemExit(f"the daemon's model did not load within {timeout:.0f} s: {json.dumps(info)[:300]}")


TRACE_SH = """#!/bin/bash
# LOG EVENT CMD...: run one hook, then log its event, start and end (bash's clock: no extra process)
log=$1; ev=$2; shift 2
t0=$EPOCHREALTIME
"$@"
rc=$?
echo "$ev $t0 $EPOCHREALTIME" >> "$log"
exit $rc
"""


def with_commands(settings: dict, command: Callable[[str, str], str]) -> None:  # type: ignore[type-arg]
    """Replace every registered hook's command by ``command(event, old command)`` (same events, timeouts, flags)."""
    for event, groups in settings["hooks"].items():
        for group in groups:
            for hook in group["hooks"]:
                hook["command"] = command(event, hook["command"])


def wrap_hooks(settings: dict, script: Path, log: Path) -> None:  # type: ignore[type-arg]
    """Put every hook command of ``settings`` behind the timing shell (a hook Claude Code kills logs nothing)."""
    script.write_text(TRACE_SH, encoding="utf-8")
    script.chmod(0o755)
    with_commands(settings, lambda event, command: f"{script} {log} {event} {command}")


def print_trace(log: Path, windows: list[tuple[float, float]]) -> None:
    """Per event: whole-process ms, and where it starts and ends relative to the end of its `claude` turn."""
    rows: dict[str, list[tuple[float, float, float]]] = {}
    lines = log.read_text(encoding="utf-8").split() if log.exists() else []
    for i in range(0, len(lines) - 2, 3):
        event, start, end = lines[i], float(lines[i + 1]), float(lines[i + 2])
        turn = next(((a, b) for a, b in windows if a <= start <= b), None)
        if turn:
            rows.setdefault(event, []).append((end - start, start - turn[1], end - turn[1]))
    head = ("hook (traced)", "runs", "p50 ms", "p95 ms", "start→exit ms", "end→exit ms", "ended after exit")
    print("\n{:<20}{:>5}{:>8}{:>8}{:>15}{:>13}{:>18}".format(*head))
    for event, vals in rows.items():
        ms = [v[0] * 1000 for v in vals]
        start = statistics.median(v[1] * 1000 for v in vals)
        end = statistics.median(v[2] * 1000 for v in vals)
        late = f"{sum(1 for v in vals if v[2] > 0)} of {len(vals)}"
        p50, p95 = statistics.median(ms), pct(ms, 0.95)
        print(f"{event:<20}{len(vals):>5}{p50:>8.1f}{p95:>8.1f}{start:>15.0f}{end:>13.0f}{late:>18}")
    print(f"(turns traced: {len(windows)}; a hook missing from a turn was killed before it logged)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=12, help="paired turns (one per side each round)")
    ap.add_argument("--claude", help="path to the claude binary (default: PATH, then .cache/claude-code)")
    ap.add_argument("--daemon", action="store_true", help="run with the memlane daemon up (started and stopped here)")
    ap.add_argument(
        "--hook-command",
        help="a floor: register this command (e.g. 'python3 -c pass') wherever memlane installed a hook, same "
        "events, timeouts and async flags; nothing is captured then, so the capture check is skipped",
    )
    ap.add_argument(
        "--trace",
        action="store_true",
        help="wrap each hook in a timing shell and print, per event, its whole-process time and how it sits "
        "in the turn (the wrapper's bash adds a few ms per hook, so the ratio of a traced run is not the result)",
    )
    ap.add_argument(
        "--floor",
        action="store_true",
        help="a third side in the same rounds: a project whose hooks (same events, timeouts, async flags) are "
        "bare `python -c pass` processes; prints the floor's ratio and memlane's time above it, turn for turn",
    )
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (HOME, projects, store, request log)")
    args = ap.parse_args()
    claude = find_claude(args.claude)
    # As a pip install leaves it: hooks read bytecode, not source (PYTHONDONTWRITEBYTECODE would recompile it all).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(MEMLANE_INIT).parent)], check=True)
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    if not STUB.exists():
        raise SystemExit(f"stub model server not found at {STUB} (set CLAUDE_CODE_STUB)")

    root = Path(tempfile.mkdtemp(prefix="memlane-turnbench-"))
    home, data = root / "home", root / "memlane"
    home.mkdir()
    bare, mem, floor = root / "bare", root / "mem", root / "floor"
    git_init(bare)
    git_init(mem)
    sides = ("bare", "floor", "mem") if args.floor else ("bare", "mem")
    total_turns = len(sides) * (args.rounds + 1)
    script = root / "script.json"
    script.write_text(
        json.dumps({"turns": [scripted_turn(n) for n in range(total_turns)], "final": [FINAL]}), encoding="utf-8"
    )
    port = free_port()
    env = {
        **os.environ,
        "HOME": str(home),
        "MEMLANE_HOME": str(data),
        "MEMLANE_DAEMON_AUTOSTART": "true" if args.daemon else "false",
        "MEMLANE_DAEMON_PORT": "0",  # a free port: never another user's daemon on 37777
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    env.pop("CLAUDECODE", None)  # when run from inside a Claude Code session
    out = memlane(env, mem, "install", "--scope", "project")
    if out.returncode != 0:
        raise SystemExit(f"memlane install failed: {out.stderr.strip()}")
    settings_path = mem / ".claude" / "settings.json"
    settings = json.loads(settings_path.read_text(encoding="utf-8"))
    if args.hook_command:
        with_commands(settings, lambda event, command: args.hook_command)
        settings_path.write_text(json.dumps(settings, indent=2), encoding="utf-8")
    hook_cmd = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    if args.floor:
        git_init(floor)
        floored = json.loads(json.dumps(settings))
        with_commands(floored, lambda event, command: f"{shlex.quote(sys.executable)} -c pass")
        (floor / ".claude").mkdir()
        (floor / ".claude" / "settings.json").write_text(json.dumps(floored, indent=2), encoding="utf-8")
    trace_log = root / "trace.log"
    if args.trace:
        wrap_hooks(settings, root / "trace.sh", trace_log)
        settings_path.write_text(json.dumps(settings, indent=2), encoding="utf-8")

    stub = subprocess.Popen(
        [
            sys.executable,
            str(STUB),
            "--port",
            str(port),
            "--script",
            str(script),
            "--log",
            str(root / "requests.jsonl"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    daemon_info: dict = {}  # type: ignore[type-arg]
    failures: list[str] = []
    times: dict[str, list[float]] = {side: [] for side in sides}
    windows: list[tuple[float, float]] = []  # wall-clock start/end of every memlane-side turn (--trace)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        if args.daemon:
            out = memlane(env, mem, "daemon", "start")
            if out.returncode != 0:
                raise SystemExit(f"memlane daemon start failed: {out.stderr.strip()}")
            t0 = time.perf_counter()
            daemon_info = wait_daemon(env, mem)
            print(f"daemon up, model loaded in {time.perf_counter() - t0:.1f} s after start", flush=True)

        asked = [0]

        def next_prompt() -> str:
            asked[0] += 1
            return f"{PROMPTS[asked[0] % len(PROMPTS)]} (turn {asked[0]})"

        def turn(side: str) -> float:
            cwd = {"bare": bare, "mem": mem, "floor": floor}[side]
            wall0, t0 = time.time(), time.perf_counter()
            proc = subprocess.run(
                [str(claude), "-p", next_prompt(), "--allowedTools", "Bash", "--output-format", "json"],
                env=env,
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=300,
            )
            elapsed = time.perf_counter() - t0
            if side == "mem":
                windows.append((wall0, wall0 + elapsed))
            problem = ""
            if proc.returncode != 0:
                problem = f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
            else:
                try:
                    result = json.loads(proc.stdout)
                except ValueError:
                    result = {}
                if result.get("is_error") or "quokka" not in str(result.get("result", "")):
                    problem = f"unexpected result: {proc.stdout.strip()[:300]}"
                elif result.get("num_turns") not in (None, 2):
                    problem = f"num_turns {result.get('num_turns')} (expected one Bash call and an answer)"
            if problem:
                failures.append(f"{side}: {problem}")
            return elapsed

        for side in sides:  # warm-up: caches, first-run files in HOME
            turn(side)
        for r in range(args.rounds):
            # Each side takes each place in the order in turn, so drift in load falls on all of them alike.
            k = r % len(sides)
            order = sides[k:] + sides[:k] if r % 2 == 0 else tuple(reversed(sides[k:] + sides[:k]))
            line = []
            for side in order:
                times[side].append(turn(side))
                line.append(f"{side} {times[side][-1]:.2f}s")
            print(f"round {r + 1:>2}/{args.rounds}: " + ", ".join(line), flush=True)
        time.sleep(2)  # let a detached or spooled write land before counting
        counts = stored_events(env, mem)
        if args.trace:
            print_trace(trace_log, windows[1:])  # the warm-up turn is left out
        if args.daemon:
            status = memlane(env, mem, "daemon", "status", "--json")
            if status.returncode == 0 and status.stdout.strip():
                daemon_info = json.loads(status.stdout)
    finally:
        if args.daemon:
            memlane(env, mem, "daemon", "stop", timeout=60)
        stub.terminate()
        stub.wait(timeout=10)
        if args.keep:
            print(f"kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    turns = args.rounds + 1  # memlane side, warm-up included
    expected = {"user_prompt": turns, "tool_observation": turns, "agent_response": turns}
    stored = sum(v for k, v in counts.items() if k in EVENT_TYPES)
    print(f"\nclaude {claude}; hooks: {hook_cmd}; daemon: {'up' if args.daemon else 'down (no autostart)'}")
    print(f"{args.rounds} paired turns (+1 warm-up each), load average at start {load_start}, at end {load}")
    print(f"{'side':<16}{'median s':>10}{'p95 s':>9}{'min s':>9}{'max s':>9}")
    for side, label in (("bare", "without memlane"), ("floor", "python -c pass"), ("mem", "with memlane")):
        v = times.get(side)
        if v:
            print(f"{label:<16}{statistics.median(v):>10.3f}{pct(v, 0.95):>9.3f}{min(v):>9.3f}{max(v):>9.3f}")
    valid = bool(times["bare"]) and bool(times["mem"])
    if valid:
        m_bare, m_mem = statistics.median(times["bare"]), statistics.median(times["mem"])
        ratio = m_mem / m_bare
        flag = "" if ratio <= 1.15 else "  OVER"
        print(
            f"ratio with/without: median {ratio:.3f}x (goal ≤ 1.15x){flag}, p95 "
            f"{pct(times['mem'], 0.95) / pct(times['bare'], 0.95):.3f}x; {(m_mem - m_bare) * 1000:+.0f} ms per turn"
        )
        diffs = [m - b for m, b in zip(times["mem"], times["bare"], strict=True)]
        print(
            f"paired (same round) difference: median {statistics.median(diffs) * 1000:+.0f} ms, "
            f"p95 {pct(diffs, 0.95) * 1000:+.0f} ms"
        )
        if times.get("floor"):
            m_floor = statistics.median(times["floor"])
            above = [m - f for m, f in zip(times["mem"], times["floor"], strict=True)]
            print(
                f"floor (bare `python -c pass` hooks) with/without: median {m_floor / m_bare:.3f}x, "
                f"{(m_floor - m_bare) * 1000:+.0f} ms; memlane above the floor, paired median "
                f"{statistics.median(above) * 1000:+.0f} ms"
            )
    print(f"memlane stored {stored} event(s) from {turns} turn(s): {json.dumps(counts, sort_keys=True)}")
    if args.daemon:
        health = daemon_info.get("health") or {}
        print(f"daemon at the end: model {health.get('model')}, worker {json.dumps(health.get('worker'))[:200]}")
        print(f"time inside the daemon, median ms: {json.dumps(health.get('hook_ms_p50'))}")
    missing = {k: v for k, v in expected.items() if counts.get(k, 0) < v}
    if failures:
        valid = False
        print(f"INVALID: {len(failures)} turn(s) failed; first: {failures[0]}")
    if args.hook_command:
        print("(--hook-command: memlane's hooks replaced, capture not checked)")
    elif stored == 0:
        valid = False
        print("INVALID: memlane captured nothing (hooks did not fire or did not store)")
    elif missing:
        got = {k: f"{counts.get(k, 0)} of {v}" for k, v in missing.items()}
        print(f"warning: fewer events than expected (want per type {turns}): {got}")
    return 0 if valid else 1


if __name__ == "__main__":
    sys.exit(main())
