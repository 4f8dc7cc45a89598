"""What the Claude Code and Codex importers share: reading JSONL history, timestamps, turns, the session.

An importer turns one history file into a ``ParsedSession``: the events to store (built by the same
functions as the hooks, so compression, metadata and the privacy filter are identical), plus counts
of what it passed over and of lines it could not read. Nothing here writes to a store.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from memlane.capture import events as build
from memlane.capture import observe
from memlane.config import Config
from memlane.store.db import NewEvent

MAX_REPORTED_BAD_LINES = 20


def norm_ts(value: Any) -> str | None:
    """An ISO timestamp or epoch number as memlane's UTC form (``2026-11-22T14:12:30.890Z``), or None."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        if isinstance(value, int | float):
            seconds = value / 1000 if value > 1e12 else value  # epoch milliseconds or seconds
            moment = datetime.fromtimestamp(seconds, UTC)
        elif isinstance(value, str):
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class ParsedSession:
    """One history file read into events, with an account of everything that was not imported."""

    def __init__(self, source: str, path: str) -> None:
        self.source = source
        self.path = path
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.events: list[NewEvent] = []
        self.first_ts: str | None = None
        self.last_ts: str | None = None
        self.lines = 0
        self.bad_lines: list[int] = []  # 1-based line numbers that were not JSON objects
        self.bad_count = 0
        self.skipped: Counter[str] = Counter()
        self.unpaired_tools = 0
        self.open_turn = False  # the file ended mid-turn; its last answer was left for a later import

    def bad(self, lineno: int) -> None:
        self.bad_count += 1
        if len(self.bad_lines) < MAX_REPORTED_BAD_LINES:
            self.bad_lines.append(lineno)

    def seen(self, ts: str | None) -> None:
        if ts:
            self.first_ts = ts if self.first_ts is None or ts < self.first_ts else self.first_ts
            self.last_ts = ts if self.last_ts is None or ts > self.last_ts else self.last_ts

    def add(self, events: list[NewEvent], ts: str | None, turn: str | None = None) -> None:
        """Store ``events`` with the history's own timestamp and ``imported`` marked in their metadata."""
        for event in events:
            event.ts = ts or self.last_ts
            if turn is not None:
                event.turn = turn
            event.metadata["imported"] = self.source
            self.events.append(event)

    def counts(self) -> dict[str, int]:
        return dict(Counter(e.type for e in self.events))


def read_jsonl(path: str, session: ParsedSession) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each readable line; the others are counted as bad, never fatal.

    Invalid UTF-8 is replaced rather than rejected: one odd byte in a tool output should not cost the
    whole line. A truncated last line (a session still being written, a crash) is just a bad line.
    """
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            session.lines += 1
            try:
                obj = json.loads(raw.decode("utf-8", "replace"))
            except ValueError:
                session.bad(lineno)
                continue
            if isinstance(obj, dict):
                yield lineno, obj
            else:
                session.bad(lineno)


class Turn:
    """The assistant side of one prompt: texts and where the last tool call fell.

    The hooks store the turn's final answer (the text after its last tool call) as one agent_response
    keyed by the prompt; the importer does the same, so importing a session the hooks already captured
    adds nothing twice. Texts written before or between tool calls are kept too, as "interim" answers.
    """

    def __init__(self, key: str, prompt_id: str | None = None) -> None:
        self.key = key
        self.prompt_id = prompt_id
        self.interim: list[tuple[str, str | None, str]] = []  # (line key, ts, text)
        self.final: list[tuple[str, str | None, str]] = []

    def text(self, line_key: str, ts: str | None, text: str) -> None:
        if text.strip():
            self.final.append((line_key, ts, text))

    def tool_call(self) -> None:
        self.interim.extend(self.final)
        self.final = []

    def flush(self, session: ParsedSession, cfg: Config, payload: dict[str, Any], complete: bool = True) -> None:
        """Add the turn's texts. An incomplete turn (the file ends mid-turn: a live session, a crash) keeps
        its last texts back: they may not be the final answer, and a later import stores them once the
        turn has ended, under the same keys, so nothing is stored twice."""
        for line_key, ts, text in self.interim:
            session.add(_interim(session, cfg, payload, text), ts, f"{line_key}:interim")
        if not complete:
            session.open_turn = True
        elif self.final:
            answer = "\n\n".join(t for _, _, t in self.final)
            events = build.agent_response({**payload, "last_assistant_message": answer}, cfg)
            for event in events:
                event.metadata["source"] = "import"
            session.add(events, self.final[-1][1], self.prompt_id or f"{self.final[-1][0]}:final")
        self.interim, self.final = [], []


def _interim(session: ParsedSession, cfg: Config, payload: dict[str, Any], text: str) -> list[NewEvent]:
    p = build.Privacy(cfg)
    content = observe.compress(p.text(text), cfg.capture.max_content_chars, 0)
    meta = p.stamp({"cwd": payload.get("cwd"), "transcript_path": payload.get("transcript_path"), "kind": "interim"})
    return [NewEvent("agent_response", str(payload["session_id"]), content, "", meta)]


def compaction_summary(session: ParsedSession, cfg: Config, payload: dict[str, Any], text: str) -> list[NewEvent]:
    """A compaction summary, as the SessionStart(compact) hook stores it."""
    p = build.Privacy(cfg)
    content = observe.compress(p.text(text), cfg.capture.max_content_chars, 0)
    meta = p.stamp({"cwd": payload.get("cwd"), "transcript_path": payload.get("transcript_path"), "kind": "summary"})
    return [NewEvent("compaction", str(payload["session_id"]), content, "", meta)]
