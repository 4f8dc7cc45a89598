#!/usr/bin/env python3
"""Stand-in for the project's tools (pytest, alembic, docker, gh, ...) while a scripted session runs.

make_fixtures.py links this file under each tool's name into a directory put first on PATH. A call
whose command line (tool name + arguments) is in $REPLAY_CMDS prints the scripted output and exits with
the scripted code: the CLI under test runs it as a real process and records whatever it printed. Any
other call goes to the real tool further down PATH (or, with nothing there, copies stdin to stdout).
"""

import json
import os
import shutil
import sys

name = os.path.basename(sys.argv[0])
key = " ".join([name, *sys.argv[1:]])
with open(os.environ["REPLAY_CMDS"], encoding="utf-8") as fh:
    table = json.load(fh)
hit = None
if key in table:  # a list of outputs: the n-th call of the same command line gets the n-th
    state_path = os.environ["REPLAY_CMDS"] + ".state"
    state = {}
    if os.path.exists(state_path):
        with open(state_path, encoding="utf-8") as fh:
            state = json.load(fh)
    n = state.get(key, 0)
    hit = table[key][min(n, len(table[key]) - 1)]
    state[key] = n + 1
    with open(state_path, "w", encoding="utf-8") as fh:
        json.dump(state, fh)
if hit is not None:
    sys.stdout.write(hit.get("out", ""))
    sys.stdout.flush()
    sys.exit(hit.get("rc", 0))
with open(os.environ["REPLAY_CMDS"] + ".misses", "a", encoding="utf-8") as f:
    f.write(key + "\n")
here = os.path.dirname(os.path.abspath(sys.argv[0]))
rest = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if os.path.abspath(p) != here)
real = shutil.which(name, path=rest)
if real:
    os.execv(real, [real, *sys.argv[1:]])
if not sys.stdin.isatty():
    sys.stdout.write(sys.stdin.read())
    sys.exit(0)
sys.stderr.write(f"{name}: command not found\n")
sys.exit(127)
