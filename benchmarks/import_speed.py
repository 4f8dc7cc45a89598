"""Import speed: a generated Claude Code history of N turns, imported with and without embedding.

    python benchmarks/import_speed.py [--turns 10000] [--sessions 100] [--dir DIR]

Each turn is a prompt, an interim text, a Bash tool call with its result, and a final answer (so about
4 events per turn), written as real transcript lines (one line per block, plus the attachment and
bookkeeping lines Claude Code writes around them). Reports events/s for
  1. import without embedding (parse + privacy filter + store),
  2. a re-run (unchanged files are skipped via the ledger),
  3. a forced re-parse where every event is already present (dedupe path),
  4. embedding the imported events with the bundled model (`memlane process`'s code path).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import random

from hook_latency import sentence as _sentence

_rng = random.Random(3)


def sentence(n: int) -> str:
    return _sentence(_rng, n)


def write_history(claude_dir: Path, root: Path, turns: int, sessions: int) -> int:
    folder = claude_dir / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(root))
    folder.mkdir(parents=True, exist_ok=True)
    per = max(1, turns // sessions)
    n = 0
    for s in range(sessions):
        sid = f"00000000-0000-4000-8000-{s:012d}"
        lines = []
        for t in range(per):
            n += 1
            ts = f"2026-{1 + s % 12:02d}-{1 + t % 28:02d}T{t % 24:02d}:{s % 60:02d}:{t % 60:02d}.000Z"
            base = {"sessionId": sid, "cwd": str(root), "timestamp": ts, "isSidechain": False, "version": "2.1.328"}
            pid = f"p-{s}-{t}"
            lines.append(
                {
                    **base,
                    "type": "user",
                    "promptId": pid,
                    "uuid": f"u{s}-{t}",
                    "message": {"role": "user", "content": sentence(12)},
                }
            )
            lines.append({**base, "type": "attachment", "attachment": {"type": "hook_additional_context"}})
            lines.append(
                {
                    **base,
                    "type": "assistant",
                    "uuid": f"a{s}-{t}",
                    "message": {"role": "assistant", "content": [{"type": "text", "text": sentence(10)}]},
                }
            )
            lines.append(
                {
                    **base,
                    "type": "assistant",
                    "uuid": f"b{s}-{t}",
                    "message": {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": f"toolu_{s}_{t}",
                                "name": "Bash",
                                "input": {"command": f"pytest -k t{t}"},
                            }
                        ],
                    },
                }
            )
            out = "\n".join(sentence(8) for _ in range(6))
            lines.append(
                {
                    **base,
                    "type": "user",
                    "promptId": pid,
                    "uuid": f"r{s}-{t}",
                    "toolUseResult": {"stdout": out, "stderr": "", "interrupted": False},
                    "message": {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": f"toolu_{s}_{t}", "content": out}],
                    },
                }
            )
            lines.append(
                {
                    **base,
                    "type": "assistant",
                    "uuid": f"c{s}-{t}",
                    "message": {"role": "assistant", "content": [{"type": "text", "text": sentence(20)}]},
                }
            )
            lines.append({**base, "type": "system", "subtype": "stop_hook_summary"})
        (folder / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return n


def memlane(root: Path, env: dict[str, str], *args: str) -> tuple[float, dict]:  # type: ignore[type-arg]
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "memlane", "-C", str(root), *args], env=env, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"memlane {' '.join(args)} failed: {proc.stderr[-2000:]}")
    return elapsed, json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=10000)
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--dir", help="work directory (default: a temp dir)")
    ap.add_argument("--skip-embed", action="store_true", help="do not measure embedding")
    args = ap.parse_args()
    base = Path(args.dir or tempfile.mkdtemp(prefix="memlane-import-bench-"))
    root = base / "project"
    (root / ".git").mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "MEMLANE_HOME": str(base / "home"),
        "CLAUDE_CONFIG_DIR": str(base / "claude"),
        "CODEX_HOME": str(base / "codex"),
        "MEMLANE_DAEMON_AUTOSTART": "false",
    }
    turns = write_history(base / "claude", root, args.turns, args.sessions)
    size = sum(p.stat().st_size for p in (base / "claude").rglob("*.jsonl"))
    print(f"history: {turns} turns in {args.sessions} session files, {size / 1e6:.1f} MB")

    took, report = memlane(root, env, "import", "--no-embed", "--json")
    import_s, events = took, report["new_events"]
    print(
        f"import (no embedding): {events} events in {took:.1f} s = {events / took:,.0f} events/s "
        f"({turns / took:,.0f} turns/s), {report['bad_lines']} bad lines"
    )
    took, report = memlane(root, env, "import", "--no-embed", "--json")
    print(f"re-run, files unchanged: {took:.2f} s, {report['new_events']} new events")
    took, report = memlane(root, env, "import", "validate", "--json")
    print(
        f"validate (parse everything, dedupe check, read-only): {took:.1f} s = "
        f"{report['already_present'] / took:,.0f} events/s, {report['new_events']} new"
    )
    if not args.skip_embed:
        took, report = memlane(root, env, "process", "--json")
        done = report.get("processed", 0)
        print(f"embedding (bundled MiniLM, CPU): {done} events in {took:.1f} s = {done / took:,.0f} events/s")
        print(
            f"import with embedding, end to end: {events / (import_s + took):,.0f} events/s "
            f"({import_s + took:.0f} s for {turns} turns)"
        )


if __name__ == "__main__":
    main()
