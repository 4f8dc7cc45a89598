"""A hook process exits without closing its store: no checkpoint on the hot path, nothing lost."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import payload, run_hook_process
from memlane.memory import Memory


def test_hook_process_leaves_checkpoint_to_sqlite_and_loses_nothing(proj: Path) -> None:
    data = {**payload("02-UserPromptSubmit.json"), "cwd": str(proj)}
    result = run_hook_process("UserPromptSubmit", data)
    assert result.returncode == 0 and result.stderr == b""
    with Memory.open(proj) as mem:
        wal = mem.store.file + "-wal"
        # The hook's commit is still in the WAL (a close would have checkpointed and emptied it) ...
        assert os.path.getsize(wal) > 0
        # ... where every reader sees it.
        assert any(data["prompt"][:40] in e.content for e in mem.store.history(limit=10))


def test_hook_process_output_is_complete_before_the_fast_exit(proj: Path) -> None:
    run_hook_process("UserPromptSubmit", {**payload("02-UserPromptSubmit.json"), "cwd": str(proj)})
    again = {
        **payload("02-UserPromptSubmit.json"),
        "cwd": str(proj),
        "prompt_id": "another-prompt",
        "prompt": "the DB connection pool times out again under load, zebrafinch",
    }
    result = run_hook_process("UserPromptSubmit", again)
    assert result.returncode == 0
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "zebrafinch" in context


def test_the_prompt_hook_without_a_daemon_does_not_import_typing(proj: Path) -> None:
    """``typing`` (and the store's Protocol classes that need it) cost the full-text fallback ~4 ms of its
    ~36: the retrieval modules import them for annotations only. The hook still answers from history."""
    import subprocess
    import sys

    run_hook_process("UserPromptSubmit", {**payload("02-UserPromptSubmit.json"), "cwd": str(proj)})
    again = {**payload("02-UserPromptSubmit.json"), "cwd": str(proj), "prompt_id": "p2",
             "prompt": "the DB connection pool times out again under load, zebrafinch"}  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memlane", "hook", "UserPromptSubmit"],
        input=json.dumps(again).encode(),
        capture_output=True,
        env={**os.environ, "MEMLANE_DAEMON_AUTOSTART": "false"},
        timeout=60,
        check=False,
    )
    assert result.returncode == 0 and "zebrafinch" in result.stdout.decode()
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.decode().splitlines() if "|" in line}
    assert "memlane.retrieval.hybrid" in imported, "the fallback search ran in this process"
    assert "typing" not in imported and "memlane.store.backend" not in imported
