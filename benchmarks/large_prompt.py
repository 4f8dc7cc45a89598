"""What a pasted multi-megabyte prompt costs UserPromptSubmit, against the same bytes as Bash output.

    python benchmarks/large_prompt.py [--mb 19]

Runs the hook entry in-process (``hooks.handle``, the daemon down so recall is the in-process full-text
path) on a fresh store, once with the text as the prompt and once as a PostToolUse Bash output, and
prints seconds and seconds per MB. The two should be about equal: both are bounded by the privacy
filter's single pass over the bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

WORDS = ["alpha", "beta", "connection", "pool", "timeout", "def", "return", "x=1", "[0]", "{}", "error:", "line"]


def text_of(mb: float) -> str:
    rng = random.Random(1)
    chunk = " ".join(rng.choice(WORDS) + str(rng.randint(0, 999)) for _ in range(20000)) + "\n"
    return (chunk * (int(mb * 1e6) // len(chunk) + 1))[: int(mb * 1e6)]


def run(kind: str, text: str) -> float:
    home = tempfile.mkdtemp(prefix="memlane-large-")
    os.environ.update(MEMLANE_HOME=home, MEMLANE_DAEMON_AUTOSTART="false", MEMLANE_DAEMON_HOOK_DEADLINE_MS="1")
    proj = os.path.join(home, "proj")
    os.makedirs(os.path.join(proj, ".git"))
    from memlane import hooks

    start = {"session_id": "s", "cwd": proj, "hook_event_name": "SessionStart", "source": "startup"}
    hooks.handle("SessionStart", json.dumps(start).encode())
    if kind == "prompt":
        event, payload = "UserPromptSubmit", {"prompt": text, "prompt_id": "p1"}
    else:
        event = "PostToolUse"
        payload = {"tool_name": "Bash", "tool_input": {"command": "cat big.log"}, "tool_response": {"stdout": text}}
        payload["tool_use_id"] = "t1"
    raw = json.dumps({"session_id": "s", "cwd": proj, "hook_event_name": event, **payload}).encode()
    began = time.perf_counter()
    hooks.handle(event, raw)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=19.0)
    args = parser.parse_args()
    text = text_of(args.mb)
    for kind in ("prompt", "tool output"):
        took = run(kind, text)
        print(f"{kind:<12} {args.mb:g} MB: {took:.2f} s ({took / args.mb:.3f} s/MB)")


if __name__ == "__main__":
    main()
