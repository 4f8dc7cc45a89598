"""Citation usage end to end with the real Claude Code CLI (npm) against the scripted model stub.

Two memories are stored first; in the turn, Claude writes "Going by [mem:A] …" before a Bash call that runs
``memlane show mem:B`` (a fetch, from inside Claude Code's session), and its final answer cites [mem:B]. Then
``memlane citations`` counts A and B as cited in that session, and B as fetched in it too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from e2e.conftest import CliSession, serve_stub, wait_for

pytestmark = pytest.mark.e2e


def test_claude_cites_and_fetches_memories(claude_bin: Path, tmp_path: Path) -> None:
    session = CliSession(tmp_path, 0)  # the stub's port is set once it runs
    seed = (
        "from memlane.memory import Memory\n"
        "from memlane.store.db import NewEvent\n"
        "with Memory.open('.') as mem:\n"
        "    mem.store.append([NewEvent('agent_response', 'earlier', 'The pool limit was raised to 20.', 't1', {}),\n"
        "                      NewEvent('agent_response', 'earlier', 'Connections leak on timeout.', 't2', {})])\n"
        "    a, b = mem.store.history(limit=2, oldest_first=True)\n"
        "    print(a.citation, b.citation)\n"
    )
    done = subprocess.run([sys.executable, "-c", seed], env=session.env, cwd=session.project, capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    a, b = done.stdout.split()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({
        "turns": [{"text": f"Going by [mem:{a}], the limit was raised before; let me read the other one.",
                   "tool": "Bash", "input": {"command": f"{sys.executable} -m memlane show mem:{b}",
                                             "description": "read a memory"}}],
        "final": [f"Fixed: as [mem:{b}] says, connections leaked on timeout; they are released now."],
    }))  # fmt: skip
    with serve_stub(tmp_path, script) as (port, _log):
        session.env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{port}"
        assert session.memlane("install").returncode == 0
        proc = subprocess.run(
            [str(claude_bin), "-p", "why does the pool time out?", "--allowedTools", "Bash", "--output-format", "json"],
            env=session.env, cwd=session.project, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        cc_session = json.loads(proc.stdout)["session_id"]

    def usage(cite: str) -> dict:  # type: ignore[type-arg]
        out = session.memlane("citations", "show", f"mem:{cite}", "--json")
        return json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else {}

    assert wait_for(
        lambda: usage(a).get("counts", {}).get("cited") == 1 and usage(b).get("counts", {}).get("cited") == 1
    )
    assert [s["session_id"] for s in usage(a)["cited_in"]] == [cc_session]
    b_usage = usage(b)
    assert b_usage["counts"]["fetched"] >= 1
    assert cc_session in {s["session_id"] for s in b_usage["used_in"]}, "the fetch ran inside Claude Code's session"
    popular = json.loads(session.memlane("citations", "popular", "--json").stdout)
    assert {r["citation"] for r in popular} == {f"mem:{a}", f"mem:{b}"}
