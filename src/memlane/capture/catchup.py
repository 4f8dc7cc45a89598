"""Stop's catch-up: the turn's tool calls whose async capture hook never ran.

memlane registers PostToolUse and PostToolUseFailure as async hooks, so Claude never waits on capture.
Claude Code does not wait for them either: ``claude -p`` exits as soon as the turn is over and kills
async hooks still running, so under load a tool call can go unrecorded. Stop is synchronous, so it
reads the turn that just ended from the transcript and rebuilds each tool call with the very builders
the live hooks use (``events.tool_observation`` / ``events.tool_failure``, privacy filter included):
same content, same turn (the ``tool_use_id``), hence the same dedupe key. A call the live hook already
stored, or stores later, is therefore stored once; the store checks the key inside its write
transaction, so a late hook racing the catch-up cannot add a second copy.

Cheap by construction: the transcript is read backwards from its end, in chunks, only as far as the
prompt that opened the turn (rarely more than a few hundred kB, however long the session), and only
lines that can hold a tool call, a tool result or that prompt are parsed. A turn longer than
``SCAN_LIMIT`` bytes is caught up on its last ``SCAN_LIMIT`` bytes, with a log line. Stdlib only.
"""

from __future__ import annotations

import json
import os
import time

from memlane.capture import events as build
from memlane.capture import observe, own, transcript
from memlane.logs import log
from memlane.store import keys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memlane.config import Config
    from memlane.store.db import NewEvent

CHUNK = 64 * 1024
SCAN_LIMIT = 8 * 1024 * 1024
# How long Stop waits, at most, for a transcript that does not show the turn's answer yet.
WAIT_S = 1.0
WAIT_STEP_S = 0.05
# Substrings of the raw lines worth parsing: user lines (the prompt that bounds the turn, tool results) and
# assistant lines (tool calls, the answer). Every other line (attachments, api-request*, …) is skipped
# unparsed, which is most of a transcript's bytes (a few api-request-blob lines name a role and are parsed).
_USER = b'"user"'
_ASSISTANT = b'"assistant"'


def result_payload(line: dict[str, Any], block: dict[str, Any], structured: bool) -> tuple[str, dict[str, Any]]:
    """The hook a transcript ``tool_result`` stands for and the fields that hook's payload carries.

    ``toolUseResult`` is exactly PostToolUse's ``tool_response`` (the block's content is the fallback when
    one line holds several results). A failed call (``is_error``) is what PostToolUseFailure reports as
    ``error``: the transcript writes it with an "Error: " prefix, which ``events.tool_failure`` strips.
    Shared by this catch-up and the importer, so live capture, catch-up and import build one content.
    """
    response = line.get("toolUseResult") if structured and line.get("toolUseResult") is not None else None
    if block.get("is_error"):
        text = response if isinstance(response, str) else observe.text_of(block.get("content"))
        return "PostToolUseFailure", {"error": text}
    if response is None:
        response = {"content": block.get("content"), "is_error": False}
    return "PostToolUse", {"tool_response": response}


class _Scan:
    """Reads the last turn's conversation lines from the end of a transcript."""

    def __init__(self, path: str, limit: int, prompt_id: str | None = None) -> None:
        self.path = path
        self.limit = limit
        self.prompt_id = prompt_id
        self.seen_prompt_id = False  # a line of this turn carried the Stop's prompt_id: the ids agree
        self.truncated = False

    def turn(self) -> list[dict[str, Any]]:
        """The non-sidechain user/assistant lines after the last human prompt, in file order."""
        found: list[dict[str, Any]] = []
        with open(self.path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            pos = fh.tell()
            carry = b""
            read = 0
            while True:
                if pos == 0:  # ``carry`` is the file's first line, complete
                    self._take(carry, found)
                    return found[::-1]
                if read >= self.limit:
                    self.truncated = True
                    return found[::-1]
                size = min(CHUNK, pos, self.limit - read)
                pos -= size
                fh.seek(pos)
                data = fh.read(size) + carry
                read += size
                parts = data.split(b"\n")
                carry = parts[0]  # may be cut: completed by the next (earlier) chunk
                for raw in reversed(parts[1:]):
                    if self._take(raw, found):
                        return found[::-1]

    def _take(self, raw: bytes, found: list[dict[str, Any]]) -> bool:
        """Add ``raw`` to ``found`` when it matters; True when it is the prompt that opened the turn, or a
        line of an earlier turn (its ``promptId`` is another: the prompt was not plain text, e.g. an image)."""
        if _USER not in raw and _ASSISTANT not in raw:
            return False
        try:
            line = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            return False
        if not isinstance(line, dict) or line.get("isSidechain") or line.get("type") not in ("user", "assistant"):
            return False
        if transcript.is_user_prompt(line):
            return True
        other = line.get("promptId")
        if line.get("type") == "user" and self.prompt_id and isinstance(other, str):
            if other == self.prompt_id:
                self.seen_prompt_id = True
            elif self.seen_prompt_id:
                return True
        found.append(line)
        return False


def turn_calls(
    path: str, limit: int | None = None, prompt_id: str | None = None
) -> tuple[list[tuple[str, dict[str, Any]]], bool]:
    """(hook event, payload fields) for each tool call of the transcript's last turn that has its result,
    in order, and whether the turn was longer than ``limit`` bytes (``SCAN_LIMIT``; then only its last
    ``limit`` bytes were read)."""
    calls, truncated, _ = _turn_calls(path, limit, prompt_id)
    return calls, truncated


def _turn_calls(
    path: str, limit: int | None, prompt_id: str | None, cites: list[str] | None = None
) -> tuple[list[tuple[str, dict[str, Any]]], bool, bool]:
    """``turn_calls`` plus whether the turn looks written out: no call without its result, and an assistant
    line after the last result (a turn that shows neither yet is one Claude Code has not finished writing).
    ``cites``, when given, receives the citations (``mem:abc123``) the turn's assistant text names."""
    scan = _Scan(path, SCAN_LIMIT if limit is None else limit, prompt_id)
    lines = scan.turn()
    said = [line for line in lines if not line.get("isMeta")]
    calls: dict[str, tuple[str, Any]] = {}
    out: list[tuple[str, dict[str, Any]]] = []
    for line in lines:
        parts = transcript.blocks(line.get("message"))
        if line.get("type") == "assistant":
            for block in parts:
                if block.get("type") == "tool_use" and block.get("id"):
                    calls[str(block["id"])] = (str(block.get("name") or "?"), block.get("input"))
                elif cites is not None and block.get("type") == "text" and isinstance(block.get("text"), str):
                    cites.extend(c for c in keys.citations_in(block["text"]) if c not in cites)
            continue
        results = [b for b in parts if b.get("type") == "tool_result"]
        for block in results:
            use_id = str(block.get("tool_use_id") or "")
            call = calls.pop(use_id, None)
            if call is None:
                continue  # its tool_use lies before what was read (a turn past the limit)
            event, fields = result_payload(line, block, structured=len(results) == 1)
            fields.update(tool_name=call[0], tool_input=call[1], tool_use_id=use_id)
            ts = line.get("timestamp")
            if isinstance(ts, str) and len(ts) == 24 and ts.endswith("Z"):  # memlane's own form already
                fields["_ts"] = ts
            out.append((event, fields))
    answered = not calls and bool(said) and said[-1].get("type") == "assistant"
    return out, scan.truncated, answered


def missing_calls(payload: dict[str, Any], cfg: Config, cites: list[str] | None = None) -> list[NewEvent]:
    """The events the PostToolUse/PostToolUseFailure hooks of the turn Stop ends would have stored.

    Built from the transcript exactly as those hooks build them; the caller stores them with the Stop
    event and the dedupe keys keep whatever the live hooks stored from being stored twice. Fails open:
    a missing, unreadable or damaged transcript costs the catch-up, never the Stop event.

    ``cites``, when given, receives the citations the turn's assistant text names, the text written before
    its tool calls included (``last_assistant_message`` holds only the final text): what Claude cited this turn.
    """
    path = payload.get("transcript_path")
    if not isinstance(path, str) or not path or "\0" in path:
        return []
    if not os.path.isfile(path):
        log("hooks", "info", f"Stop catch-up skipped: transcript {path[:300]!r} is not a readable file")
        return []
    prompt_id = payload.get("prompt_id")
    answer = payload.get("last_assistant_message")
    started = time.monotonic()
    slept = False
    try:
        while True:
            if cites is not None:
                cites.clear()
            calls, truncated, answered = _turn_calls(
                path, None, prompt_id if isinstance(prompt_id, str) else None, cites
            )
            # Stop says the turn ended with an answer, but the transcript does not show it yet: Claude Code
            # has not written its last lines. Give it a moment rather than miss the turn's last calls.
            waited = time.monotonic() - started
            if answered or not (isinstance(answer, str) and answer.strip()) or waited >= WAIT_S:
                break
            time.sleep(WAIT_STEP_S)
            slept = True
    except (OSError, MemoryError) as exc:
        log("hooks", "warning", f"Stop catch-up skipped: cannot read transcript {path[:300]!r}: {exc}")
        return []
    if slept:
        state = "caught up" if answered else "still without the turn's answer; checked what is there"
        log(
            "hooks",
            "info",
            f"Stop catch-up: waited {time.monotonic() - started:.2f} s for the transcript to be written: {state}",
        )
    if truncated:
        log(
            "hooks",
            "warning",
            f"Stop catch-up: the turn in {path[:300]!r} is longer than {SCAN_LIMIT} bytes; "
            "only the tool calls in its last part were checked",
        )
    base = {k: payload.get(k) for k in ("session_id", "cwd", "transcript_path", "prompt_id") if payload.get(k)}
    out: list[NewEvent] = []
    for event, fields in calls:
        ts = fields.pop("_ts", None)
        hook_payload = {**base, **fields}
        built = build.BUILDERS[event](hook_payload, cfg)
        for item in own.drop_own(event, hook_payload, built):
            item.metadata["recovered"] = "transcript"
            item.ts = ts
            out.append(item)
    return out
