"""Claude Code history: ``~/.claude/projects/<encoded cwd>/<session>.jsonl``.

Claude Code names a project's folder by replacing every character of the session's working directory
that is not a letter or digit with ``-``. That is lossy (``/a/b-c`` and ``/a/b/c`` share a folder name),
so a folder name only nominates candidates: each file is confirmed by the ``cwd`` its lines record
before anything is imported, and a session is never imported into a project it was not recorded in.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

from memlane.capture import catchup, transcript
from memlane.capture import events as build
from memlane.config import Config
from memlane.importers.common import ParsedSession, Turn, compaction_summary, norm_ts, read_jsonl

SOURCE = "claude"
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")
MAX_FOLDER_NAME = 200  # longer encoded names are cut here and suffixed with a hash by Claude Code
SKIPPED_PROMPTS = ("<local-command-stdout>", "<local-command-stderr>", "[Request interrupted by user")


def claude_dir() -> str:
    """Claude Code's config dir: ``CLAUDE_CONFIG_DIR`` when set, else ``~/.claude``."""
    return os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")


def encode(path: str) -> str:
    return _NON_ALNUM.sub("-", path)


def _folder_matches(name: str, encoded: str) -> bool:
    """``name`` is the folder for ``encoded`` or for a folder inside it (lossy, so only a candidate)."""
    if len(encoded) > MAX_FOLDER_NAME:
        return name.startswith(encoded[:MAX_FOLDER_NAME])
    return name == encoded or name.startswith(encoded + "-")


def candidate_files(roots: list[str], every: bool = False) -> Iterator[str]:
    """Top-level session files in the folders that may belong to ``roots`` (all folders with ``every``).

    Subagent transcripts (``<session>/subagents/*.jsonl``) are not top-level and are not sessions.
    """
    base = os.path.join(claude_dir(), "projects")
    try:
        folders = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return
    encoded = [encode(r) for r in roots]
    for folder in folders:
        if not folder.is_dir() or not (every or any(_folder_matches(folder.name, e) for e in encoded)):
            continue
        yield from sorted(_session_files(folder.path))


def _session_files(folder: str) -> list[str]:
    """``*.jsonl`` entries of one folder, judged one by one: a dangling symlink or a symlink loop is
    listed (the import reports it as unreadable) instead of costing the whole folder."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    found = []
    for entry in entries:
        if not entry.name.endswith(".jsonl"):
            continue
        try:
            if entry.is_symlink() or entry.is_file():
                found.append(entry.path)
        except OSError:
            found.append(entry.path)
    return found


def session_cwd(path: str, max_lines: int = 200) -> str | None:
    """The working directory a transcript records (its first line carrying ``cwd``)."""
    probe = ParsedSession(SOURCE, path)
    for lineno, line in read_jsonl(path, probe):
        if isinstance(line.get("cwd"), str) and line["cwd"]:
            return str(line["cwd"])
        if lineno >= max_lines:
            break
    return None


class _Reader:
    """Walks one transcript in order, pairing tool calls with their results."""

    def __init__(self, path: str, cfg: Config, sidechains: bool) -> None:
        self.session = ParsedSession(SOURCE, path)
        self.cfg = cfg
        self.sidechains = sidechains
        self.pending: dict[str, tuple[str, Any, str | None]] = {}  # tool_use id -> (name, input, ts)
        self.turn = Turn("start")
        # The model still owes an answer: its last message asked for a tool, or a tool result came last.
        self.awaiting = False

    def payload(self, **more: Any) -> dict[str, Any]:
        data = {"session_id": self.session.session_id, "cwd": self.session.cwd, "transcript_path": self.session.path}
        if self.turn.prompt_id:
            data["prompt_id"] = self.turn.prompt_id
        data.update(more)
        return data

    def run(self) -> ParsedSession:
        s = self.session
        for _, line in read_jsonl(s.path, s):
            kind = line.get("type")
            s.session_id = s.session_id or (str(line["sessionId"]) if line.get("sessionId") else None)
            s.cwd = s.cwd or (str(line["cwd"]) if line.get("cwd") else None)
            if kind not in ("user", "assistant"):
                s.skipped[str(kind or "untyped")] += 1
            elif line.get("isSidechain") and not self.sidechains:
                s.skipped["sidechain"] += 1
            elif s.session_id is None:
                s.skipped["no session id"] += 1
            else:
                ts = norm_ts(line.get("timestamp"))
                s.seen(ts)
                if kind == "assistant":
                    self.assistant(line, ts)
                else:
                    self.user(line, ts)
        self.turn.flush(s, self.cfg, self.payload(), complete=not self.awaiting)
        s.unpaired_tools += len(self.pending)
        return s

    def assistant(self, line: dict[str, Any], ts: str | None) -> None:
        key = str(line.get("uuid") or f"a{self.session.lines}")
        message = line.get("message")
        stop = message.get("stop_reason") if isinstance(message, dict) else None
        calls = any(b.get("type") == "tool_use" for b in transcript.blocks(message))
        self.awaiting = stop == "tool_use" or calls
        for block in transcript.blocks(line.get("message")):
            kind = block.get("type")
            if kind == "text":
                self.turn.text(key, ts, str(block.get("text") or ""))
            elif kind == "tool_use" and block.get("id"):
                self.turn.tool_call()
                self.pending[str(block["id"])] = (str(block.get("name") or "?"), block.get("input"), ts)
            else:
                self.session.skipped[f"{kind} block"] += 1  # thinking, redacted_thinking, …

    def user(self, line: dict[str, Any], ts: str | None) -> None:
        s = self.session
        if line.get("isCompactSummary"):
            text = transcript.text_of(line.get("message"))
            if text:
                s.add(compaction_summary(s, self.cfg, self.payload(), text), ts, str(line.get("uuid") or ts))
            return
        if line.get("isMeta"):
            s.skipped["meta"] += 1
            return
        results = [b for b in transcript.blocks(line.get("message")) if b.get("type") == "tool_result"]
        if results:
            self.awaiting = True
            for block in results:
                self.tool_result(line, block, ts, structured=len(results) == 1)
            return
        if transcript.is_user_prompt(line):
            self.prompt(line, ts)
        else:
            s.skipped["other user content"] += 1

    def prompt(self, line: dict[str, Any], ts: str | None) -> None:
        text = transcript.text_of(line.get("message"))
        if not text or text.lstrip().startswith(SKIPPED_PROMPTS):
            if text.lstrip().startswith("[Request interrupted by user"):
                self.awaiting = False  # the user stopped the turn: no answer is coming
            self.session.skipped["command output"] += 1
            return
        self.turn.flush(self.session, self.cfg, self.payload())
        prompt_id = str(line["promptId"]) if line.get("promptId") else None
        key = prompt_id or str(line.get("uuid") or ts)
        self.turn = Turn(key, prompt_id)
        self.awaiting = False
        events = build.user_prompt(self.payload(prompt=text, permission_mode=line.get("permissionMode")), self.cfg)
        if line.get("isSidechain"):
            for event in events:
                event.metadata["sidechain"] = True
        self.session.add(events, ts, key)

    def tool_result(self, line: dict[str, Any], block: dict[str, Any], ts: str | None, structured: bool) -> None:
        use_id = str(block.get("tool_use_id") or "")
        call = self.pending.pop(use_id, None)
        if call is None:
            self.session.skipped["tool result without call"] += 1
            return
        name, tool_input, _ = call
        # Built as the live PostToolUse / PostToolUseFailure hook (and Stop's catch-up) builds it, so a call
        # captured live and imported later is stored once.
        event, fields = catchup.result_payload(line, block, structured)
        events = build.BUILDERS[event](
            self.payload(tool_name=name, tool_input=tool_input, tool_use_id=use_id, **fields), self.cfg
        )
        self.session.add(events, ts, use_id)


def parse(path: str, cfg: Config, sidechains: bool = False) -> ParsedSession:
    """Read one Claude Code transcript into events (nothing is stored)."""
    session = _Reader(path, cfg, sidechains).run()
    if session.session_id is None:
        session.session_id = os.path.splitext(os.path.basename(path))[0]
    return session
