"""Reading Claude Code transcripts (JSONL) — the Stop hook's fallback and the importer's input.

Conversation lines have ``type`` user/assistant and ``message.content`` as a string or blocks
(``text``, ``tool_use``, ``tool_result``, ``thinking``). Every other line type is passed over, and
thinking blocks are never returned.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TAIL_BYTES = 512 * 1024


def blocks(message: Any) -> list[dict[str, Any]]:
    """The content blocks of a message; a plain string becomes one text block."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def text_of(message: Any) -> str:
    return "\n".join(str(b.get("text") or "") for b in blocks(message) if b.get("type") == "text").strip()


def is_user_prompt(line: dict[str, Any]) -> bool:
    """A line the human typed (not a tool result, meta line, or compaction summary)."""
    if line.get("type") != "user" or line.get("isMeta") or line.get("isCompactSummary"):
        return False
    parts = blocks(line.get("message"))
    return bool(parts) and all(b.get("type") == "text" for b in parts)


def read_tail(path: str, max_bytes: int = TAIL_BYTES) -> list[dict[str, Any]]:
    """Parsed JSON lines from the last ``max_bytes`` of a transcript; bad lines are skipped."""
    # Only regular files: a path with a NUL byte raised ValueError, and a FIFO would block the hook.
    if not os.path.isfile(path):
        return []
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read()
    except OSError:
        return []
    raw_lines = data.split(b"\n")
    if size > max_bytes:
        raw_lines = raw_lines[1:]  # the first line is probably cut
    out = []
    for raw in raw_lines:
        if not raw.strip():
            continue
        try:
            line = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            continue
        if isinstance(line, dict):
            out.append(line)
    return out


def last_turn(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lines after the last human prompt (the current turn), sidechains excluded."""
    start = 0
    for i, line in enumerate(lines):
        if is_user_prompt(line) and not line.get("isSidechain"):
            start = i + 1
    return [line for line in lines[start:] if not line.get("isSidechain")]


def final_text(path: str) -> tuple[str, str | None]:
    """(final assistant text of the last turn, uuid of its last line) from a transcript tail.

    "Final" means after the turn's last tool call, which is what ``last_assistant_message`` holds.
    """
    texts: list[str] = []
    last_uuid = None
    for line in last_turn(read_tail(path)):
        if line.get("type") == "user":
            texts = []  # a tool result: the text before it was not the final answer
            continue
        if line.get("type") != "assistant":
            continue
        parts = blocks(line.get("message"))
        if any(b.get("type") == "tool_use" for b in parts):
            texts = []
        text = text_of(line.get("message"))
        if text and not any(b.get("type") == "tool_use" for b in parts):
            texts.append(text)
            last_uuid = line.get("uuid")
    return "\n\n".join(texts), last_uuid


def tools_used(path: str) -> list[str]:
    """Names of the tools called in the last turn, in order, without repeats."""
    names: list[str] = []
    for line in last_turn(read_tail(path)):
        if line.get("type") == "assistant":
            for block in blocks(line.get("message")):
                if block.get("type") == "tool_use" and block.get("name") and block["name"] not in names:
                    names.append(str(block["name"]))
    return names
