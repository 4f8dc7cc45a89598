"""Codex CLI history: rollout files under ``$CODEX_HOME/sessions/**/rollout-*.jsonl`` (``~/.codex``).

Each line is ``{"timestamp", "type", "payload"}`` with types ``session_meta`` (id, cwd), ``turn_context``
(cwd, model), ``response_item`` (messages, reasoning, function/custom/local-shell calls and their
outputs), ``event_msg`` (UI events, including ``user_message`` — the prompt as typed) and ``compacted``.
Older rollouts (before mid-2025) start with a bare meta object and hold bare response items.
Tool calls are mapped onto the hook's tool names where one fits (shell → Bash) so observations look
the same whichever agent produced them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

from memlane.capture import events as build
from memlane.capture import observe
from memlane.config import Config
from memlane.importers.common import ParsedSession, Turn, compaction_summary, norm_ts, read_jsonl

SOURCE = "codex"
SHELL_TOOLS = {"shell", "container.exec", "exec_command", "shell_command", "local_shell"}
CALL_TYPES = {"function_call", "custom_tool_call", "local_shell_call"}
OUTPUT_TYPES = {"function_call_output", "custom_tool_call_output"}
# Messages Codex adds to the conversation as "user" that the user did not type.
INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<INSTRUCTIONS>",
    "# AGENTS.md instructions",
    "<user_shell_command>",
    "<turn_aborted>",
)


def codex_dir() -> str:
    return os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")


def candidate_files() -> Iterator[str]:
    """Every rollout file; Codex keeps them by date, not by project, so cwd decides the project."""
    base = os.path.join(codex_dir(), "sessions")
    found: list[str] = []
    seen: set[str] = set()
    # Symlinked folders are followed (sessions moved to another disk and linked back); a folder reached
    # twice (a link loop, two links to one place) is walked once.
    for folder, dirs, files in os.walk(base, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        found.extend(os.path.join(folder, f) for f in files if f.endswith(".jsonl"))
    yield from sorted(found)


def _items(path: str, session: ParsedSession) -> Iterator[tuple[str, dict[str, Any], str | None]]:
    """(kind, payload, ts) per line, for the current and the older rollout layouts."""
    meta_ts: str | None = None
    for lineno, line in read_jsonl(path, session):
        if isinstance(line.get("type"), str) and isinstance(line.get("payload"), dict):
            yield line["type"], line["payload"], norm_ts(line.get("timestamp")) or meta_ts
        elif lineno == 1 and "id" in line and "type" not in line:  # old layout: bare meta first
            meta_ts = norm_ts(line.get("timestamp"))
            yield "session_meta", line, meta_ts
        elif line.get("record_type"):
            session.skipped["state"] += 1
        elif isinstance(line.get("type"), str):
            yield "response_item", line, norm_ts(line.get("timestamp")) or meta_ts
        else:
            session.bad(lineno)


def session_cwd(path: str, max_lines: int = 50) -> str | None:
    """The session's working directory: session_meta/turn_context, else the injected environment context."""
    probe = ParsedSession(SOURCE, path)
    for n, (kind, payload, _) in enumerate(_items(path, probe)):
        cwd = _cwd_of(kind, payload)
        if cwd:
            return cwd
        if n >= max_lines:
            break
    return None


_ENV_CWD = re.compile(r"<cwd>([^<\n]+)</cwd>|Current working directory:\s*(\S[^\n]*)")


def _cwd_of(kind: str, payload: dict[str, Any]) -> str | None:
    if kind in ("session_meta", "turn_context") and isinstance(payload.get("cwd"), str) and payload["cwd"]:
        return str(payload["cwd"])
    if kind == "response_item" and payload.get("role") == "user":  # older rollouts: only the environment text
        match = _ENV_CWD.search(_text(payload.get("content"), ("input_text", "text")))
        if match:
            return (match.group(1) or match.group(2)).strip()
    return None


def _injected(payload: dict[str, Any]) -> bool:
    """A "user" message the CLI wrote, not the user: 0.169 labels its kinds; older ones are known by prefix."""
    passthrough = payload.get("internal_chat_message_metadata_passthrough")
    kinds = passthrough.get("content_item_kinds") if isinstance(passthrough, dict) else None
    return isinstance(kinds, list) and bool(kinds) and "user.text" not in kinds


def _text(content: Any, kinds: tuple[str, ...]) -> str:
    if isinstance(content, str):
        return content
    parts = [str(b.get("text") or "") for b in content or [] if isinstance(b, dict) and b.get("type") in kinds]
    return "\n".join(p for p in parts if p).strip()


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _tool(kind: str, payload: dict[str, Any]) -> tuple[str, Any]:
    """(hook-style tool name, tool input) for a Codex call."""
    if kind == "local_shell_call":
        action = payload.get("action")
        return "Bash", {"command": _command(action.get("command") if isinstance(action, dict) else None)}
    name = str(payload.get("name") or "?")
    args = _loads(payload.get("arguments") if kind == "function_call" else payload.get("input"))
    if name in SHELL_TOOLS:
        cmd = args.get("command") or args.get("cmd") if isinstance(args, dict) else args
        return "Bash", {"command": _command(cmd)}
    if name == "apply_patch":
        patch = args.get("input") if isinstance(args, dict) else args
        return "apply_patch", {"patch": str(patch or "")}
    return name, args if isinstance(args, dict) else {"input": args}


def _command(cmd: Any) -> str:
    if isinstance(cmd, list):
        words = [str(c) for c in cmd]
        # ["bash", "-lc", "pytest -x"] is how Codex runs most commands: the script is what matters.
        if len(words) == 3 and words[1] in ("-lc", "-c"):
            return words[2]
        return " ".join(words)
    return str(cmd or "")


# Header lines Codex puts above a command's output ("Chunk ID: …", "Wall time: …", "Process exited with
# code N" in 0.169; "Exit code: N", "Wall time: …" in 0.63), ended by a line "Output:".
_HEADER = re.compile(
    r"^(?:Chunk ID|Wall time|Original token count|Exit code|Total output lines):"
    r"|^Process exited with code |^Process running with session ID "
)
_RUNNING = "\nProcess running with session ID "  # exec_command returned before the command ended


def _split_output(text: str) -> tuple[int | None, str]:
    """(exit code, output) from Codex's plain-text tool output; (None, text) when it has no header."""
    lines = text.split("\n")
    for i, line in enumerate(lines[: observe.HEADER_LINES + 1]):
        if line == "Output:" and all(_HEADER.match(h) for h in lines[:i]):
            return observe.status_of("\n".join(lines[:i])), "\n".join(lines[i + 1 :])
        if not _HEADER.match(line):
            break
    return None, text


def _response(tool: str, output: Any, tool_input: Any) -> Any:
    """The call's output shaped like the matching hook tool_response.

    Codex writes it three ways: plain text with a header (0.169 shell and apply_patch, 0.63 shell), a JSON
    string ``{"output", "metadata": {"exit_code"}}`` (0.63 apply_patch), or, in some builds, a JSON object
    directly. Each form is read per call, never guessed once per file.
    """
    data = _loads(output)
    text: Any = data
    code: Any = None
    if isinstance(data, dict):
        meta = data.get("metadata")
        text, code = data.get("output"), meta.get("exit_code") if isinstance(meta, dict) else None
    text = str(text if text is not None else output or "")
    running = False
    if not isinstance(code, int) or isinstance(code, bool):
        running = _RUNNING in "\n" + text.split("\nOutput:\n", 1)[0]
        code, text = _split_output(text)
    response: dict[str, Any] = {"stdout": text} if tool == "Bash" else {"content": text}
    if code is not None:
        response["exit_code"] = code
    elif running:
        response["running"] = True
    return response


class _Reader:
    def __init__(self, path: str, cfg: Config) -> None:
        self.session = ParsedSession(SOURCE, path)
        self.cfg = cfg
        self.pending: dict[str, tuple[str, Any]] = {}
        self.turn = Turn("start")
        self.prompts = 0
        self.last_prompt: tuple[str, str] | None = None  # (text, form) of a prompt not yet answered
        self.awaiting = False  # a tool call or output came after the turn's last assistant text
        self.task_open: bool | None = None  # between task_started and task_complete (0.169); None: unmarked

    def payload(self, **more: Any) -> dict[str, Any]:
        return {
            "session_id": self.session.session_id,
            "cwd": self.session.cwd,
            "transcript_path": self.session.path,
            **more,
        }

    def run(self) -> ParsedSession:
        s = self.session
        for kind, payload, ts in _items(s.path, s):
            if kind == "session_meta":
                s.session_id = s.session_id or (str(payload["id"]) if payload.get("id") else None)
                s.cwd = s.cwd or payload.get("cwd") or None
                # The session began when it was created, not when its first line was written (the
                # interactive UI writes nothing until the first prompt is sent).
                s.seen(norm_ts(payload.get("timestamp")) or ts)
                continue
            if kind == "turn_context":
                s.cwd = s.cwd or payload.get("cwd") or None
                continue
            s.cwd = s.cwd or _cwd_of(kind, payload)
            if s.session_id is None:
                s.session_id = _id_from_name(s.path)
            s.seen(ts)
            if kind == "event_msg" and payload.get("type") in ("task_started", "task_complete", "turn_aborted"):
                self.task_open = payload.get("type") == "task_started"
            elif kind == "event_msg":
                if payload.get("type") == "user_message":
                    self.prompt(str(payload.get("message") or ""), ts, "event")
                else:
                    s.skipped[f"event {payload.get('type')}"] += 1
            elif kind == "response_item":
                self.item(payload, ts)
            elif kind == "compacted":
                text = str(payload.get("message") or "")
                if text.strip():
                    s.add(compaction_summary(s, self.cfg, self.payload(), text), ts, f"compacted:{ts}")
            else:
                s.skipped[kind] += 1
        # 0.169 marks turns (task_started/task_complete); 0.63 does not, so there a turn is open while
        # a tool call or its output is the last thing in it.
        complete = not self.task_open if self.task_open is not None else not self.awaiting
        self.turn.flush(s, self.cfg, self.payload(), complete=complete)
        s.unpaired_tools += len(self.pending)
        return s

    def item(self, payload: dict[str, Any], ts: str | None) -> None:
        kind = str(payload.get("type") or "")
        role = payload.get("role")
        if kind == "message" and role == "user":
            if _injected(payload):
                self.session.skipped["injected context"] += 1
            else:
                self.prompt(_text(payload.get("content"), ("input_text", "text")), ts, "item")
        elif kind == "message" and role == "assistant":
            self.last_prompt = None
            self.awaiting = False
            self.turn.text(
                f"{self.turn.key}:{len(self.turn.interim) + len(self.turn.final)}",
                ts,
                _text(payload.get("content"), ("output_text", "text")),
            )
        elif kind in CALL_TYPES:
            self.last_prompt = None
            self.awaiting = True
            self.turn.tool_call()
            call_id = str(payload.get("call_id") or payload.get("id") or "")
            self.pending[call_id] = _tool(kind, payload)
        elif kind in OUTPUT_TYPES:
            self.awaiting = True
            self.output(payload, ts)
        else:
            self.session.skipped[kind or "untyped item"] += 1  # reasoning, developer/system messages, …

    def prompt(self, text: str, ts: str | None, form: str) -> None:
        """A typed prompt. Codex 0.63 writes it twice (response item and event_msg user_message) and
        0.169 once; each line decides for itself, so a file resumed by another version reads right."""
        if not text.strip() or text.lstrip().startswith(INJECTED_PREFIXES):
            self.session.skipped["injected context"] += 1
            return
        if self.last_prompt is not None and self.last_prompt != (text, form) and self.last_prompt[0] == text:
            self.session.skipped[f"user message ({form} copy)"] += 1
            self.last_prompt = None
            return
        self.last_prompt = (text, form)
        self.turn.flush(self.session, self.cfg, self.payload())
        self.awaiting = False
        self.prompts += 1
        key = f"codex:{self.prompts}:{ts}"
        self.turn = Turn(key)
        self.session.add(build.user_prompt(self.payload(prompt=text), self.cfg), ts, key)

    def output(self, payload: dict[str, Any], ts: str | None) -> None:
        call_id = str(payload.get("call_id") or "")
        call = self.pending.pop(call_id, None)
        if call is None:
            self.session.skipped["tool output without call"] += 1
            return
        tool, tool_input = call
        response = _response(tool, payload.get("output"), tool_input)
        events = build.tool_observation(
            self.payload(tool_name=tool, tool_input=tool_input, tool_response=response, tool_use_id=call_id), self.cfg
        )
        self.session.add(events, ts, call_id)


def _id_from_name(path: str) -> str:
    """``rollout-2025-10-29T00-59-38-<uuid>.jsonl`` → the uuid (the last five dash-separated groups)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    parts = stem.split("-")
    return "-".join(parts[-5:]) if len(parts) >= 5 else stem


def parse(path: str, cfg: Config, sidechains: bool = False) -> ParsedSession:
    """Read one Codex rollout into events (nothing is stored). Codex has no sidechains."""
    del sidechains
    return _Reader(path, cfg).run()
