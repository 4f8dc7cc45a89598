"""Tool observations: per-tool metadata and output compression (reference: specs/post-tool-use-hook).

Shared by the PostToolUse hook and the transcript importer so both store the same thing. Stdlib only.

Strategies per tool: Read keeps the head and tail lines of the file; Bash keeps its output (head and
tail when long) and exit status; Grep and Glob keep the list of matches, not file contents; WebFetch
and WebSearch keep the first ``webfetch_chars`` characters; everything else is JSON cut to the limits.
"""

from __future__ import annotations

import json
import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memlane.config import CaptureConfig

_EXT_TYPES = {
    ".py": "python",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".kt": "kotlin",
    ".rb": "ruby",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".cs": "csharp",
    ".swift": "swift",
    ".php": "php",
    ".sh": "shell",
    ".bash": "shell",
    ".zsh": "shell",
    ".md": "markdown",
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".html": "html",
    ".css": "css",
    ".sql": "sql",
    ".txt": "text",
    ".ipynb": "notebook",
    ".vue": "vue",
    ".svelte": "svelte",
    ".scala": "scala",
}
_EXIT_CODE = re.compile(r"(?:exit code|exited with code|Exit code)[:\s]+(-?\d+)", re.IGNORECASE)
# Where shells report an exit status as text: Claude Code's failed Bash ("Exit code 3\n…", in the transcript
# "Error: Exit code 3\n…"), Codex 0.63 ("Exit code: 1\nWall time: …") and 0.169 ("Process exited with code 1").
# Only a header line counts: a test log that prints "exit code 0" further down is output, not the status.
_STATUS_LINE = re.compile(r"^(?:Error: )?(?:Exit code:?|Process exited with code) (-?\d+)\s*$")
HEADER_LINES = 6
ERROR_PREFIX = "Error: "


def status_of(text: str) -> int | None:
    """The exit status a tool output states in its first lines, or None."""
    for line in text.split("\n", HEADER_LINES)[:HEADER_LINES]:
        match = _STATUS_LINE.match(line)
        if match:
            return int(match.group(1))
    return None


def failure_text(text: str) -> str:
    """A failure message as the PostToolUseFailure hook gives it: transcripts add an "Error: " prefix.

    Hook and importer must build the same text, or a failure captured live and imported later is
    stored twice (the dedupe key hashes the content).
    """
    return text[len(ERROR_PREFIX) :] if text.startswith(ERROR_PREFIX) else text


class Observation:
    __slots__ = ("metadata", "output", "summary", "tool")

    def __init__(self, tool: str, summary: str, output: str, metadata: dict[str, Any] | None = None) -> None:
        self.tool = tool
        self.summary = summary
        self.output = output
        self.metadata = metadata if metadata is not None else {}

    def content(self) -> str:
        head = f"{self.tool}: {self.summary}" if self.summary else self.tool
        return f"{head}\n{self.output}" if self.output else head


def should_store(tool_name: str, cfg: CaptureConfig) -> bool:
    if tool_name in cfg.skip_tools:
        return False
    return not any(tool_name.startswith(prefix) for prefix in cfg.skip_tool_prefixes)


def compress(text: str, max_chars: int, max_lines: int) -> str:
    """Head + tail with a marker saying how much was left out; short text is returned as is."""
    lines = text.split("\n")
    if max_lines and len(lines) > max_lines:
        keep = max(max_lines // 2, 1)
        omitted = len(lines) - 2 * keep
        text = "\n".join([*lines[:keep], f"... [{omitted} lines omitted] ...", *lines[-keep:]])
    if max_chars and len(text) > max_chars:
        keep = max(max_chars // 2, 1)
        omitted = len(text) - 2 * keep
        text = f"{text[:keep]}\n... [{omitted} characters omitted] ...\n{text[-keep:]}"
    return text


def file_type(path: str) -> str:
    base = os.path.basename(path)
    if base in ("Makefile", "Dockerfile"):
        return base.lower()
    return _EXT_TYPES.get(os.path.splitext(base)[1].lower(), "other")


def text_of(value: Any) -> str:
    """Readable text for a tool response that may be a string, a dict, or content blocks."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [text_of(v.get("text") if isinstance(v, dict) and "text" in v else v) for v in value]
        return "\n".join(p for p in parts if p)
    if isinstance(value, dict):
        for key in ("content", "result", "output", "text"):
            if isinstance(value.get(key), str | list):
                return text_of(value[key])
    return json.dumps(value, ensure_ascii=False, default=str)


def _error_of(response: Any) -> str | None:
    if isinstance(response, dict):
        if response.get("is_error") or response.get("isError"):
            text = failure_text(text_of(response.get("content") or response.get("error") or "error"))
            return text.split("\n")[0][:300]
        if isinstance(response.get("error"), str) and response["error"]:
            return str(response["error"]).split("\n")[0][:300]
        if response.get("interrupted"):
            return "interrupted"
    if isinstance(response, str) and response.lstrip().lower().startswith(("error", "<tool_use_error>")):
        return failure_text(response.strip()).split("\n")[0][:300]
    return None


def observe(tool: str, tool_input: Any, response: Any, cfg: CaptureConfig) -> Observation:
    """Build the stored observation for one tool call."""
    inp = tool_input if isinstance(tool_input, dict) else {}
    handler = _HANDLERS.get(tool, _generic)
    obs = handler(tool, inp, response, cfg)
    if "exit_code" not in obs.metadata and isinstance(response, dict) and type(response.get("exit_code")) is int:
        obs.metadata["exit_code"] = response["exit_code"]  # e.g. Codex write_stdin polling a command
    error = _error_of(response)
    obs.metadata["tool_name"] = tool
    obs.metadata["success"] = error is None and obs.metadata.get("exit_code", 0) in (0, None)
    if error:
        obs.metadata["error"] = error
    return obs


def _cut(text: str, cfg: CaptureConfig) -> str:
    return compress(text, cfg.max_output_chars, cfg.max_output_lines)


def _read(tool: str, inp: dict[str, Any], response: Any, cfg: CaptureConfig) -> Observation:
    path = str(inp.get("file_path") or inp.get("notebook_path") or "")
    meta: dict[str, Any] = {"file_path": path, "file_type": file_type(path)}
    text = text_of(response)
    if isinstance(response, dict) and isinstance(response.get("file"), dict):
        info = response["file"]
        text = str(info.get("content") or "")
        meta["line_count"] = info.get("totalLines") or info.get("numLines")
    else:
        meta["line_count"] = text.count("\n") + 1 if text else 0
    return Observation(tool, path, compress(text, cfg.max_output_chars, cfg.max_output_lines), meta)


def _write(tool: str, inp: dict[str, Any], response: Any, cfg: CaptureConfig) -> Observation:
    path = str(inp.get("file_path") or inp.get("notebook_path") or "")
    meta: dict[str, Any] = {"file_path": path, "file_type": file_type(path)}
    if tool == "Write":
        body = str(inp.get("content") or "")
        meta["line_count"] = body.count("\n") + 1 if body else 0
        text = body
    elif tool == "MultiEdit" and isinstance(inp.get("edits"), list):
        text = "\n".join(
            f"- {e.get('old_string', '')}\n+ {e.get('new_string', '')}" for e in inp["edits"] if isinstance(e, dict)
        )
    elif tool == "NotebookEdit":
        text = str(inp.get("new_source") or "")
    else:
        text = f"- {inp.get('old_string', '')}\n+ {inp.get('new_string', '')}"
    return Observation(tool, path, _cut(text, cfg), meta)


def _bash(tool: str, inp: dict[str, Any], response: Any, cfg: CaptureConfig) -> Observation:
    command = str(inp.get("command") or "")
    meta: dict[str, Any] = {"command": command}
    if isinstance(response, dict) and ("stdout" in response or "stderr" in response):
        out = str(response.get("stdout") or "")
        err = str(response.get("stderr") or "")
        text = out + (("\n[stderr]\n" + err) if err.strip() else "")
        code = response.get("exit_code", response.get("exitCode", response.get("returnCode")))
        if isinstance(code, int) and not isinstance(code, bool):
            meta["exit_code"] = code
        elif response.get("interrupted") or response.get("running"):
            meta["exit_code"] = None  # no status (yet): not a success of 0
        else:
            match = _EXIT_CODE.search(err)
            meta["exit_code"] = int(match.group(1)) if match else 0
    else:
        # A failure (PostToolUseFailure's ``error``, a transcript's "Error: Exit code N\n…" or its is_error
        # block): the status is the header line, the rest is the command's output.
        text = failure_text(text_of(response))
        code = status_of(text)
        if code is None and isinstance(response, dict) and isinstance(response.get("exit_code"), int):
            code = response["exit_code"]
        meta["exit_code"] = code if code is not None else (1 if _error_of(response) else 0)
    return Observation(tool, command, _cut(text, cfg), meta)


def _patch(tool: str, inp: dict[str, Any], response: Any, cfg: CaptureConfig) -> Observation:
    """Codex ``apply_patch``: the files it touched, the patch once, and the tool's status."""
    patch = str(inp.get("patch") or inp.get("input") or "")
    files = patch_files(patch)
    meta: dict[str, Any] = {"files": files}
    if files:
        meta["file_path"] = files[0]
        meta["file_type"] = file_type(files[0])
    result = text_of(response)
    code = status_of(result)
    if code is None and isinstance(response, dict) and isinstance(response.get("exit_code"), int):
        code = response["exit_code"]
    if code is not None:
        meta["exit_code"] = code
    # The result only says "Success. Updated the following files: …" (already in ``files``); a failure's
    # message is kept above the patch.
    text = patch if not code else f"{result.strip()}\n{patch}"
    return Observation(tool, ", ".join(files), _cut(text, cfg), meta)


_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.MULTILINE)


def patch_files(patch: str) -> list[str]:
    """Paths named by an ``*** Begin Patch`` text, in order, each once."""
    seen: dict[str, None] = {}
    for match in _PATCH_FILE.finditer(patch):
        seen[match.group(1) or match.group(2)] = None
    return list(seen)


def _search(tool: str, inp: dict[str, Any], response: Any, cfg: CaptureConfig) -> Observation:
    pattern = str(inp.get("pattern") or "")
    meta: dict[str, Any] = {"pattern": pattern}
    if inp.get("path"):
        meta["path"] = str(inp["path"])
    files: list[str] = []
    if isinstance(response, dict):
        files = [str(f) for f in response.get("filenames") or []]
        count = response.get("numLines") if tool == "Grep" and response.get("mode") == "content" else None
        meta["match_count"] = count if isinstance(count, int) else response.get("numFiles", len(files))
        text = "\n".join(files) if files else text_of(response.get("content") or "")
    else:
        text = text_of(response)
        meta["match_count"] = len([line for line in text.split("\n") if line.strip()])
    return Observation(tool, pattern, _cut(text, cfg), meta)


def _web(tool: str, inp: dict[str, Any], response: Any, cfg: CaptureConfig) -> Observation:
    url = str(inp.get("url") or "")
    meta: dict[str, Any] = {}
    if url:
        meta["url"] = url
        from urllib.parse import urlsplit  # only for web tools: it costs start-up time

        try:
            meta["url_host"] = urlsplit(url).hostname or ""
        except ValueError:  # "user:[REDACTED]@host" after redaction reads as a bad IPv6 literal
            netloc = url.partition("://")[2].partition("/")[0].rpartition("@")[2]
            meta["url_host"] = netloc.rpartition(":")[0] if netloc.count(":") == 1 else netloc
    if inp.get("query"):
        meta["query"] = str(inp["query"])
    if isinstance(response, dict) and isinstance(response.get("code"), int):
        meta["status_code"] = response["code"]
    text = text_of(response)
    limit = cfg.webfetch_chars
    if limit and len(text) > limit:
        text = text[:limit] + f"\n... [{len(text) - limit} characters omitted] ..."
    return Observation(tool, url or str(inp.get("query") or ""), text, meta)


def _task(tool: str, inp: dict[str, Any], response: Any, cfg: CaptureConfig) -> Observation:
    meta = {k: str(inp[k]) for k in ("subagent_type", "description") if inp.get(k)}
    return Observation(tool, str(inp.get("description") or ""), _cut(text_of(response), cfg), meta)


def _generic(tool: str, inp: dict[str, Any], response: Any, cfg: CaptureConfig) -> Observation:
    summary = json.dumps(inp, ensure_ascii=False, default=str)
    if len(summary) > 300:
        summary = summary[:300] + "…"
    return Observation(tool, summary, _cut(text_of(response), cfg), {})


_HANDLERS = {
    "Read": _read,
    "Write": _write,
    "Edit": _write,
    "MultiEdit": _write,
    "NotebookEdit": _write,
    "Bash": _bash,
    "BashOutput": _bash,
    "Grep": _search,
    "Glob": _search,
    "WebFetch": _web,
    "WebSearch": _web,
    "Task": _task,
    "Agent": _task,
    "apply_patch": _patch,
}
