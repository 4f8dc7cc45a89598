"""memlane does not remember itself: its own commands and what they print are not memories.

A ``/memlane:memory-search pool`` turn asks memlane to read its memory back; storing that prompt, the
answer Claude composes from the results, and a ``memlane search …`` run through Bash would put copies of
old memories back into the store as new events, and the next search would find the echo as well as the
original. So such a prompt is not stored, nor the Stop answer of the same turn, nor Bash runs of the
``memlane`` CLI. (memlane's MCP tools are skipped by ``capture.skip_tool_prefixes``.)

The Stop hook cannot see the prompt it answers, so UserPromptSubmit leaves a marker per session
(``state/own-turn/<session>``, holding the prompt id) that Stop consumes; any other prompt clears it.
Stdlib only: this runs inside every hook.
"""

from __future__ import annotations

import os
import re

from memlane import atomic, paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memlane.store.db import NewEvent

# Typed (`/memlane:memory-search …`) or as Claude Code expands it in transcripts (`<command-name>/memlane:…`);
# `/workflow-memory …` is answered by the hook itself (memlane.workflow.command).
_OWN_PROMPT = re.compile(r"^\s*(?:<command-name>)?/(?:memlane:[\w-]+|workflow-memory(?![\w-]))")
# `memlane search …`, `/path/to/bin/memlane history`, `uvx memlane …`, after `cd x &&` or env assignments.
_OWN_COMMAND = re.compile(r"(?:^|&&|;|\|\|)\s*(?:\w+=\S*\s+)*(?:\S*/)?(?:uvx\s+)?memlane(?:\s|$)")


def is_own_prompt(prompt: object) -> bool:
    return isinstance(prompt, str) and bool(_OWN_PROMPT.match(prompt))


def is_own_command(tool_name: object, tool_input: object) -> bool:
    if tool_name != "Bash" or not isinstance(tool_input, dict):
        return False
    command = tool_input.get("command")
    return isinstance(command, str) and bool(_OWN_COMMAND.search(command))


def _marker(session_id: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:120] or "_"
    return os.path.join(paths.home_dir(), "state", "own-turn", safe)


def drop_own(event: str, payload: dict[str, Any], batch: list[NewEvent]) -> list[NewEvent]:
    """``batch`` without the events of memlane's own commands (see the module docstring)."""
    session = str(payload.get("session_id") or "")
    if event == "UserPromptSubmit":
        marker = _marker(session)
        if is_own_prompt(payload.get("prompt")):
            paths.ensure_dir(os.path.dirname(marker))
            atomic.write_text(marker, str(payload.get("prompt_id") or ""))
            return []
        _remove(marker)
        return batch
    if event in ("Stop", "SubagentStop") and batch:
        marker = _marker(session)
        try:
            with open(marker, encoding="utf-8") as fh:
                prompt_id = fh.read().strip()
        except OSError:
            return batch
        if event == "Stop":
            _remove(marker)
        if not prompt_id or not payload.get("prompt_id") or prompt_id == payload.get("prompt_id"):
            return []
        return batch
    if event == "PostToolUse" and is_own_command(payload.get("tool_name"), payload.get("tool_input")):
        return []
    return batch


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
