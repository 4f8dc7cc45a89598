"""Writers for Claude Code transcripts and Codex rollouts shaped like the real files.

The Claude Code shapes follow the captured transcript in tests/fixtures/claude-code/transcripts/ (and
its README); the Codex shapes follow Codex CLI's rollout format (session_meta, turn_context,
response_item, event_msg, compacted) and its older bare-object layout.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from conftest import TRANSCRIPTS

REAL_SESSION = "6f8a962b-e546-4507-8ff4-23e5a2f295f8"
REAL_CWD = "/home/dev/src/shop"


def encode(path: str | Path) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def write_lines(path: Path, lines: list[Any]) -> Path:
    """Objects become JSON lines; bytes are written as they are (corrupt lines)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        for line in lines:
            fh.write(line if isinstance(line, bytes) else json.dumps(line).encode() + b"\n")
    return path


def real_transcript(claude_dir: Path, cwd: Path) -> Path:
    """The captured real transcript, re-homed to ``cwd`` and placed where Claude Code would keep it."""
    text = (TRANSCRIPTS / f"{REAL_SESSION}.jsonl").read_text().replace(REAL_CWD, str(cwd))
    path = claude_dir / "projects" / encode(cwd) / f"{REAL_SESSION}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


class ClaudeSession:
    """Builds transcript lines the way Claude Code writes them: one line per content block."""

    def __init__(self, session_id: str, cwd: Path | str, start: str = "2026-03-01T10:00:00") -> None:
        self.session_id = session_id
        self.cwd = str(cwd)
        self.lines: list[Any] = []
        self.n = 0
        self.minute = 0
        self.start = start
        self.prompt_id = ""

    def ts(self) -> str:
        self.n += 1
        return f"{self.start[:10]}T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z"

    def base(self, kind: str, **more: Any) -> dict[str, Any]:
        line = {
            "parentUuid": None,
            "isSidechain": False,
            "type": kind,
            "uuid": f"{self.session_id[:8]}-{len(self.lines):04d}",
            "timestamp": self.ts(),
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.1.328",
            "gitBranch": "main",
            "userType": "external",
        }
        if kind == "user" and self.prompt_id:
            line["promptId"] = self.prompt_id
        line.update(more)
        self.lines.append(line)
        return line

    def other(self, kind: str, **more: Any) -> None:
        self.lines.append({"type": kind, "sessionId": self.session_id, "timestamp": self.ts(), **more})

    def prompt(self, text: str, **more: Any) -> None:
        self.prompt_id = f"p-{self.session_id[:6]}-{len(self.lines)}"
        self.base("user", message={"role": "user", "content": text}, **more)

    def text(self, text: str, **more: Any) -> None:
        self.base("assistant", message={"role": "assistant", "content": [{"type": "text", "text": text}]}, **more)

    def thinking(self, text: str) -> None:
        block = {"type": "thinking", "thinking": text, "signature": "x"}
        self.base("assistant", message={"role": "assistant", "content": [block]})

    def tool(self, use_id: str, name: str, tool_input: dict[str, Any], **more: Any) -> None:
        block = {"type": "tool_use", "id": use_id, "name": name, "input": tool_input}
        self.base("assistant", message={"role": "assistant", "content": [block]}, **more)

    def result(self, use_id: str, content: Any, structured: Any = None, is_error: bool = False, **more: Any) -> None:
        block = {"tool_use_id": use_id, "type": "tool_result", "content": content, "is_error": is_error}
        extra = {"toolUseResult": structured} if structured is not None else {}
        self.base("user", message={"role": "user", "content": [block]}, **extra, **more)

    def results(self, pairs: list[tuple[str, str]]) -> None:
        """Parallel tool calls answered in one line (no single toolUseResult applies)."""
        blocks = [{"tool_use_id": u, "type": "tool_result", "content": c, "is_error": False} for u, c in pairs]
        self.base("user", message={"role": "user", "content": blocks}, toolUseResult="several")

    def write(self, claude_dir: Path, folder_of: Path | str | None = None) -> Path:
        folder = encode(folder_of if folder_of is not None else self.cwd)
        return write_lines(claude_dir / "projects" / folder / f"{self.session_id}.jsonl", self.lines)


def rich_claude_session(session_id: str, cwd: Path | str) -> ClaudeSession:
    """Every block and line type an importer meets, with known counts (see test expectations)."""
    s = ClaudeSession(session_id, cwd)
    s.other("queue-operation", operation="enqueue")
    s.base("user", message={"role": "user", "content": "<command-name>/clear</command-name>"}, isMeta=True)
    s.prompt("Why does checkout fail with ERR_PAYMENT_402? <private>my card 4111</private>")
    s.other("attachment", attachment={"type": "hook_additional_context", "content": ["memlane: relevant memory"]})
    s.thinking("secret chain of thought about payments")
    s.text("Let me look at the payment client.")
    s.tool("toolu_read1", "Read", {"file_path": f"{cwd}/src/payments.py"})
    s.result(
        "toolu_read1",
        "def charge(): ...",
        {"type": "text", "file": {"filePath": f"{cwd}/src/payments.py", "content": "def charge(): ...", "numLines": 1}},
    )
    s.tool("toolu_bash1", "Bash", {"command": "pytest tests/test_payments.py", "description": "run tests"})
    s.result(
        "toolu_bash1",
        "FAILED test_charge - ERR_PAYMENT_402 api_key=sk-live-abcdefghijklmnopqrstuvwx",
        {
            "stdout": "FAILED test_charge - ERR_PAYMENT_402",
            "stderr": "AWS_SECRET=AKIAIOSFODNN7EXAMPLE",
            "interrupted": False,
        },
    )
    s.tool("toolu_grep1", "Grep", {"pattern": "402"})
    s.tool("toolu_glob1", "Glob", {"pattern": "**/*.py"})
    s.results([("toolu_grep1", "src/payments.py"), ("toolu_glob1", "src/payments.py\nsrc/cart.py")])
    s.tool("toolu_err1", "Bash", {"command": "false"})
    s.result("toolu_err1", "Error: exit code 1", "Error: exit code 1", is_error=True)
    s.text("The gateway returns 402 when the card is declined; fixed the retry in charge().")
    s.other("system", subtype="stop_hook_summary")
    # A subagent's lines are sidechains.
    s.base("user", message={"role": "user", "content": "Search the docs for 402 handling"}, isSidechain=True)
    s.base(
        "assistant",
        message={"role": "assistant", "content": [{"type": "text", "text": "Docs say retry once."}]},
        isSidechain=True,
    )
    s.base(
        "user",
        message={"role": "user", "content": "This session is being continued. Summary: fixed ERR_PAYMENT_402."},
        isCompactSummary=True,
    )
    s.prompt("Now add a regression test")
    s.tool("toolu_never", "Bash", {"command": "sleep 100"})  # interrupted: no result ever came
    s.lines.append(b'{"type": "assistant", "message": {"role": "assistant", "content": [{"type": "te\n')  # truncated
    s.lines.append(b"\xff\xfe not json at all\n")
    s.lines.append(b"[1, 2, 3]\n")
    s.text("Added tests/test_payments_402.py.")
    return s


# Expected from rich_claude_session with default options.
RICH_COUNTS = {
    "user_prompt": 2,
    "tool_observation": 5,  # Read, Bash, Grep, Glob, failing Bash (the interrupted call is unpaired)
    "agent_response": 3,  # interim "Let me look…", final of turn 1, final of turn 2
    "compaction": 1,
}


# ---- Codex -------------------------------------------------------------------------------------


class CodexRollout:
    def __init__(self, session_id: str, cwd: Path | str, day: str = "2026-02-10") -> None:
        self.session_id = session_id
        self.cwd = str(cwd)
        self.day = day
        self.n = 0
        self.lines: list[Any] = []

    def ts(self) -> str:
        self.n += 1
        return f"{self.day}T09:{self.n // 60:02d}:{self.n % 60:02d}.500Z"

    def add(self, kind: str, payload: dict[str, Any]) -> None:
        self.lines.append({"timestamp": self.ts(), "type": kind, "payload": payload})

    def item(self, payload: dict[str, Any]) -> None:
        self.add("response_item", payload)

    def path(self, codex_dir: Path) -> Path:
        y, m, d = self.day.split("-")
        return codex_dir / "sessions" / y / m / d / f"rollout-{self.day}T09-00-00-{self.session_id}.jsonl"

    def write(self, codex_dir: Path) -> Path:
        return write_lines(self.path(codex_dir), self.lines)


PATCH = "*** Begin Patch\n*** Update File: sync/job.py\n-LOCK_TIMEOUT = 5\n+LOCK_TIMEOUT = 30\n*** End Patch"


def rich_codex_rollout(session_id: str, cwd: Path | str) -> CodexRollout:
    r = CodexRollout(session_id, cwd)
    r.add(
        "session_meta",
        {
            "id": session_id,
            "timestamp": "2026-02-10T09:00:00Z",
            "cwd": str(cwd),
            "originator": "codex_cli_rs",
            "cli_version": "0.60.0",
            "instructions": None,
            "git": {"branch": "main"},
        },
    )
    r.item(
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"}
            ],
        }
    )
    r.add("turn_context", {"cwd": str(cwd), "approval_policy": "on-request", "model": "gpt-5-codex"})
    r.item(
        {
            "type": "message",
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": "Fix the flaky inventory sync job (token ghp_abcdefghijklmnopqrstuvwxyz0123456789)",
                }
            ],
        }
    )
    r.add(
        "event_msg",
        {
            "type": "user_message",
            "message": "Fix the flaky inventory sync job (token ghp_abcdefghijklmnopqrstuvwxyz0123456789)",
            "kind": "plain",
        },
    )
    r.item(
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "thinking about sync"}],
            "encrypted_content": "xyz",
        }
    )
    r.add("event_msg", {"type": "agent_reasoning", "text": "thinking about sync"})
    r.item(
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "I'll run the sync tests first."}],
        }
    )
    r.item(
        {
            "type": "function_call",
            "name": "shell",
            "call_id": "call_sh1",
            "arguments": json.dumps({"command": ["bash", "-lc", "pytest tests/test_sync.py -x"], "workdir": str(cwd)}),
        }
    )
    r.item(
        {
            "type": "function_call_output",
            "call_id": "call_sh1",
            "output": json.dumps(
                {
                    "output": "E   SyncTimeout: inventory lock held (otter)",
                    "metadata": {"exit_code": 1, "duration_seconds": 2.1},
                }
            ),
        }
    )
    r.item(
        {
            "type": "custom_tool_call",
            "name": "apply_patch",
            "call_id": "call_ap1",
            "status": "completed",
            "input": PATCH,
        }
    )
    r.item(
        {
            "type": "custom_tool_call_output",
            "call_id": "call_ap1",
            "output": json.dumps(
                {"output": "Success. Updated the following files:\nM sync/job.py", "metadata": {"exit_code": 0}}
            ),
        }
    )
    r.item(
        {
            "type": "local_shell_call",
            "call_id": "call_ls1",
            "status": "completed",
            "action": {"type": "exec", "command": ["git", "diff", "--stat"]},
        }
    )
    r.item({"type": "function_call_output", "call_id": "call_ls1", "output": "sync/job.py | 2 +-"})
    r.item({"type": "function_call", "name": "update_plan", "call_id": "call_orphan", "arguments": "{}"})
    r.item(
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Raised LOCK_TIMEOUT to 30s; sync tests pass (beaver)."}],
        }
    )
    r.add("event_msg", {"type": "agent_message", "message": "Raised LOCK_TIMEOUT to 30s; sync tests pass (beaver)."})
    r.add("event_msg", {"type": "token_count", "info": None})
    r.lines.append(b'{"timestamp": "2026-02-10T09:59:00Z", "type": "response_item", "payload": {"type": "mess\n')
    r.add("compacted", {"message": "Summary: inventory sync lock timeout raised to 30s."})
    r.add("event_msg", {"type": "user_message", "message": "Also document the new timeout", "kind": "plain"})
    r.item(
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Also document the new timeout"}],
        }
    )
    r.item(
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Documented in docs/sync.md."}],
        }
    )
    return r


RICH_CODEX_COUNTS = {"user_prompt": 2, "tool_observation": 3, "agent_response": 3, "compaction": 1}


def legacy_codex_rollout(codex_dir: Path, session_id: str, cwd: Path | str) -> Path:
    """The pre-2025-08 layout: a bare meta object, then bare items and state records; cwd in the context."""
    lines: list[Any] = [
        {"id": session_id, "timestamp": "2025-05-01T08:00:00.000Z", "instructions": None},
        {"record_type": "state"},
        {
            "type": "message",
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": f"<environment_context>\nCurrent working directory: {cwd}\n</environment_context>",
                }
            ],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Rename the cart module (old style)"}],
        },
        {
            "type": "function_call",
            "name": "shell",
            "call_id": "c1",
            "arguments": json.dumps({"command": ["mv", "cart.py", "basket.py"]}),
        },
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": json.dumps({"output": "", "metadata": {"exit_code": 0}}),
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Renamed cart.py to basket.py."}],
        },
    ]
    path = codex_dir / "sessions" / "2025" / "05" / "01" / f"rollout-2025-05-01T08-00-00-{session_id}.jsonl"
    return write_lines(path, lines)
