"""Import transcripts written by the real Claude Code CLI; then capture live and import again without duplicates."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from e2e.conftest import CliSession

pytestmark = pytest.mark.e2e


def test_import_real_transcripts_then_live_capture(claude_bin: Path, stub: tuple[int, Path], tmp_path: Path) -> None:
    port, _log = stub
    session = CliSession(tmp_path, port, project="shop_2026.v2")  # "_" and "." are encoded as "-" too
    home, project, env, memlane = session.home, session.project, session.env, session.memlane

    def claude(prompt: str, *extra: str) -> None:
        proc = subprocess.run(
            [str(claude_bin), "-p", prompt, "--allowedTools", "Bash", "--output-format", "json", *extra],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]

    def history() -> list[dict]:  # type: ignore[type-arg]
        out = memlane("history", "--json", "--limit", "1000")
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    # Two sessions before memlane was installed: only Claude Code's transcripts know about them.
    claude("The DB connection pool times out under load, please fix it (marker zebrafinch)")
    claude("Now add a regression test for it", "--continue")
    transcripts = list((home / ".claude" / "projects").rglob("*.jsonl"))
    assert transcripts, "Claude Code wrote no transcript"

    first = memlane("import", "--no-embed", "--json")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["files"].get("imported", 0) >= 1 and report["new_events"] > 0
    events = history()
    prompts = [e for e in events if e["type"] == "user_prompt"]
    assert {p["content"] for p in prompts} >= {
        "The DB connection pool times out under load, please fix it (marker zebrafinch)",
        "Now add a regression test for it",
    }
    lines = [json.loads(x) for p in transcripts for x in p.read_text().splitlines() if x.strip()]
    typed = {x["timestamp"] for x in lines if x.get("type") == "user" and isinstance(x["message"]["content"], str)}
    assert {p["ts"] for p in prompts} <= typed, "original timestamps are kept"
    assert any("narwhal" in e["content"] for e in events if e["type"] == "tool_observation")

    again = json.loads(memlane("import", "--no-embed", "--json").stdout)
    assert again["new_events"] == 0
    before = Counter((e["type"], e["content"]) for e in history())

    # Now memlane is installed and a new session is captured live; importing it again adds no duplicate.
    assert memlane("install").returncode == 0
    claude("What did we change for the pool timeout? (marker ocelot)")
    live = history()
    assert any("ocelot" in e["content"] for e in live if e["type"] == "user_prompt")
    third = json.loads(memlane("import", "--no-embed", "--json").stdout)
    assert third["already_present"] >= 2
    after = Counter((e["type"], e["content"]) for e in history())
    ocelot = [k for k in after if k[0] == "user_prompt" and "ocelot" in k[1]]
    assert len(ocelot) == 1 and after[ocelot[0]] == 1, "the live-captured prompt is not imported twice"
    assert all(after[k] >= before[k] for k in before)
    dupes = {k: v for k, v in after.items() if v > 1 and k[0] in ("user_prompt", "tool_observation")}
    assert not dupes, dupes
