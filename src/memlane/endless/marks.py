"""What one event did, as endless mode reads it: its marks.

A mark is (kind, key, role, fact): the thing the event touched, how, and one line that says what about it.

- ``file``: the path in the project (``app/db.py``); roles change, write, delete, read, run (a command names
  it), mention (a prompt or an answer does);
- ``command``: the program and its subcommand (``pytest``, ``alembic upgrade``); roles ok, fail (a failed tool
  call of another kind: the tool's name);
- ``decision``: ``subject:<subject>`` or ``decision:<id>`` (``knowledge.decisions``);
- ``task``: ``task:<title>``, the knowledge model's canonical key; roles pending, in_progress, done, blocked,
  mention (``knowledge.tasks``), hand (changed with ``memlane tasks``);
- ``entity``: a code name a prompt or an answer uses (``pool_size``, ``QueuePool``);
- ``prompt``: the prompt's own event id.

The projector adds the exchange's links (``answer`` and ``asked`` marks: the answer's words and the prompt
that asked, on each file the exchange changed and each command that failed in it): the facts consolidation
keeps. Pure functions of one event, so rebuilding gives the same marks.
"""

from __future__ import annotations

import re
import shlex

from memlane.knowledge import changes, decisions, tasks
from memlane.knowledge.text import entity_key, fragments, sentences, stable_id
from memlane.store.db import Event

FACT_CHARS = 240
MAX_ENTITIES = 12  # code names kept per prompt or answer
MAX_FILES_NAMED = 8  # paths kept per command or text
# Commands that only look around: their files count as read, the command itself is not a topic.
LOOKING = frozenset(
    [
        "ls",
        "cat",
        "head",
        "tail",
        "less",
        "more",
        "grep",
        "rg",
        "egrep",
        "fgrep",
        "find",
        "fd",
        "tree",
        "wc",
        "echo",
        "printf",
        "pwd",
        "cd",
        "which",
        "file",
        "stat",
        "du",
        "df",
        "sed",
        "awk",
        "sort",
        "uniq",
        "diff",
        "cut",
        "tr",
        "true",
        "false",
        "test",
        "env",
        "export",
        "source",
        "sleep",
        "clear",
    ]
)
# Programs whose first argument says what they do (``git commit``, ``alembic upgrade``).
SUBCOMMANDS = frozenset(
    [
        "git",
        "docker",
        "docker-compose",
        "kubectl",
        "fly",
        "flyctl",
        "gh",
        "alembic",
        "npm",
        "pnpm",
        "yarn",
        "npx",
        "poetry",
        "uv",
        "pip",
        "pip3",
        "cargo",
        "go",
        "make",
        "rq",
        "celery",
        "terraform",
        "helm",
        "aws",
        "gcloud",
        "az",
        "brew",
        "apt",
        "apt-get",
        "systemctl",
        "heroku",
        "vercel",
        "supabase",
        "prisma",
        "dotnet",
        "bundle",
        "rails",
        "rake",
        "mix",
    ]
)
_PATH = re.compile(
    r"(?<![\w/.:-])((?:[\w@.-]+/)*[\w@-][\w@.-]*\.[A-Za-z][A-Za-z0-9]{0,5}|(?:[\w@.-]+/)+[\w@.-]+)(?![\w/])"
)
_EXTENSIONS = frozenset(
    [
        "py",
        "pyi",
        "ts",
        "tsx",
        "js",
        "jsx",
        "mjs",
        "cjs",
        "json",
        "yml",
        "yaml",
        "toml",
        "md",
        "rst",
        "txt",
        "cfg",
        "ini",
        "sql",
        "sh",
        "bash",
        "zsh",
        "go",
        "rs",
        "java",
        "kt",
        "rb",
        "php",
        "c",
        "h",
        "cc",
        "cpp",
        "hpp",
        "cs",
        "swift",
        "scala",
        "css",
        "scss",
        "html",
        "vue",
        "svelte",
        "lock",
        "env",
        "conf",
        "xml",
        "proto",
        "graphql",
        "tf",
        "ipynb",
    ]
)
_ERROR_LINE = re.compile(
    r"\b\w*(?:Error|Exception|Timeout)\b:|\bFAILED\b|\berror(?:\[\w+\])?:|\bfatal:|Traceback", re.I
)
_CODE_NAME = re.compile(r"^[A-Za-z_][\w.]*$")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+")


def one_line(text: str, limit: int = FACT_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def event_marks(event: Event) -> list[tuple[str, str, str, str]]:
    """The marks of one event, in a stable order (the projector numbers them)."""
    out: list[tuple[str, str, str, str]] = []
    if event.type == "tool_observation":
        out.extend(_tool_marks(event))
    elif event.type in ("user_prompt", "agent_response"):
        out.extend(_text_marks(event))
    elif event.type == "task_update":
        payload = event.metadata.get("task_update")
        if isinstance(payload, dict) and payload.get("title"):
            out.append(("task", entity_key("task", str(payload["title"])), "hand", one_line(event.content)))
    seen: set[tuple[str, str, str]] = set()
    unique = []
    for mark in out:
        if mark[:3] not in seen and mark[1]:
            seen.add(mark[:3])
            unique.append(mark)
    return unique


# ---- tool calls ----------------------------------------------------------------------------------------


def _tool_marks(event: Event) -> list[tuple[str, str, str, str]]:
    meta = event.metadata
    cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else None
    tool = str(meta.get("tool_name") or event.content.partition(":")[0])
    out: list[tuple[str, str, str, str]] = []
    for change in changes.file_changes(event):
        if not change.path:
            continue
        role = "read" if change.kind == "snapshot" else ("change" if change.kind == "edit" else change.kind)
        out.append(("file", change.path, role, "" if role == "read" else describe(change)))
    failed = meta.get("success") is False
    command = meta.get("command") if isinstance(meta.get("command"), str) else None
    if tool == "Bash" and command is None:
        first = event.content.partition("\n")[0]
        command = first.partition(": ")[2] if first.startswith("Bash: ") else None
    if command:
        argv = _argv(command)
        key = command_key(argv)
        for path in named_files(argv, cwd):
            out.append(("file", path, "run", ""))
        if key and (failed or argv[0].rsplit("/", 1)[-1] not in LOOKING):
            fact = f"`{one_line(command, 120)}` " + (f"failed: {error_line(event.content)}" if failed else "ran")
            out.append(("command", key, "fail" if failed else "ok", one_line(fact)))
    elif failed:
        path = str(meta.get("file_path") or "")
        where = f" {changes.project_path(path, cwd)}" if path else ""
        out.append(("command", tool, "fail", one_line(f"{tool}{where} failed: {error_line(event.content)}")))
    return out


def describe(change: changes.FileChange) -> str:
    """An edit in one line: the file, the first line it took out and the first it put in."""
    if change.kind == "edit":
        removed = _first_line(change.removed)
        added = _first_line(change.added)
        parts = [f"Edit {change.path}:"] + ([f"− {removed}"] if removed else []) + ([f"+ {added}"] if added else [])
        return one_line(" ".join(parts))
    if change.kind == "write":
        lines = len(change.added.splitlines())
        return f"Write {change.path} ({lines} line{'s' if lines != 1 else ''})"
    return f"Delete {change.path}"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if len(line) > 2:
            return one_line(line, 90)
    return ""


def _argv(command: str) -> list[str]:
    """The words of the command that does the work: ``cd x && pytest -q`` → pytest's; env assignments and
    ``sudo`` left out."""
    segments = re.split(r"\s*(?:&&|\|\||;|\|)\s*", command.strip())
    for segment in segments:
        try:
            words = shlex.split(segment)
        except ValueError:
            words = segment.split()
        while words and (("=" in words[0] and not words[0].startswith("-")) or words[0] in ("sudo", "time", "exec")):
            words = words[1:]
        if words and words[0] != "cd":
            return words
    return []


def command_key(argv: list[str]) -> str:
    """``pytest``, ``alembic upgrade``, ``python -m pytest``, ``npm run build``: what the command runs."""
    if not argv:
        return ""
    program = argv[0].rsplit("/", 1)[-1]
    rest = [a for a in argv[1:] if not a.startswith("-") and not _looks_like_path(a)]
    if program.startswith("python") and len(argv) > 2 and argv[1] == "-m":
        return f"python -m {argv[2]}"
    if program in SUBCOMMANDS and rest:
        if program in ("npm", "pnpm", "yarn") and rest[0] == "run" and len(rest) > 1:
            return f"{program} run {rest[1]}"
        if program in ("docker", "docker-compose") and rest[0] == "compose" and len(rest) > 1:
            return f"docker compose {rest[1]}"
        return f"{program} {rest[0]}"
    return program


def named_files(argv: list[str], cwd: str | None) -> list[str]:
    """Paths a command names (``pytest tests/test_db.py``, ``grep X app/settings.py``), in the project."""
    out: list[str] = []
    for arg in argv[1:]:
        if arg.startswith("-") or "://" in arg or len(out) >= MAX_FILES_NAMED:
            continue
        arg = arg.split("::", 1)[0]  # pytest's test ids
        if _looks_like_path(arg):
            path = changes.project_path(arg, cwd)
            if path and path not in out:
                out.append(path)
    return out


def _looks_like_path(text: str) -> bool:
    if not _PATH.fullmatch(text) or text.startswith(("/dev/", "/proc/", "/tmp/")):
        return False
    name = text.rstrip("/").rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return ext in _EXTENSIONS or ("/" in text and not ext and not text.startswith("/"))


def error_line(content: str) -> str:
    """The line of a failed call's output that says what went wrong (the last ``…Error:`` line), else its first
    line of output."""
    body = content.partition("\n")[2]
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    named = [line for line in lines if re.search(r"\b\w+(?:Error|Exception)\b", line) and ":" in line]
    if named:
        return one_line(named[-1], 160)
    flagged = [line for line in lines if _ERROR_LINE.search(line) and not line.lower().startswith("exit code")]
    if flagged:
        return one_line(flagged[0], 160)
    rest = [line for line in lines if not line.lower().startswith("exit code")]
    return one_line(rest[0] if rest else (lines[0] if lines else "no output"), 160)


# ---- prompts and answers -------------------------------------------------------------------------------


def _text_marks(event: Event) -> list[tuple[str, str, str, str]]:
    cwd = event.metadata.get("cwd") if isinstance(event.metadata.get("cwd"), str) else None
    out: list[tuple[str, str, str, str]] = []
    if event.type == "user_prompt":
        out.append(("prompt", event.id, "prompt", one_line(event.content, 200)))
    for i, decision in enumerate(decisions.decisions(event)):
        key = f"subject:{decision.subject}" if decision.subject else f"decision:{stable_id(event.id, i)}"
        out.append(("decision", key, "decision", one_line(decision.quote)))
    for mention in tasks.mentions(event):
        out.append(("task", entity_key("task", mention.title), mention.status or "mention", one_line(mention.quote)))
    for path in mentioned_files(event.content, cwd):
        out.append(("file", path, "mention", ""))
    for name in code_names(event.content):
        out.append(("entity", name, "mention", ""))
    return out


def mentioned_files(text: str, cwd: str | None) -> list[str]:
    """File paths a prompt or an answer names (``app/db.py``, ``.github/workflows/ci.yml``)."""
    out: list[str] = []
    for match in _PATH.finditer(_URL.sub(" ", text)):
        token = match.group(1).rstrip(".")
        if not _looks_like_path(token):
            continue
        path = changes.project_path(token, cwd)
        if path and path not in out:
            out.append(path)
        if len(out) >= MAX_FILES_NAMED:
            break
    return out


def code_names(text: str) -> list[str]:
    """The code names a text uses (``pool_size=25`` → ``pool_size``; ``QueuePool``, ``date.today``): what
    two sessions about the same code have in common even when they name no file. Sorted, at most
    ``MAX_ENTITIES``."""
    names: set[str] = set()
    for fragment in fragments(_URL.sub(" ", text)):
        name = fragment.split("=", 1)[0].strip()
        if _CODE_NAME.match(name) and len(name) >= 4 and not _looks_like_path(name):
            names.add(name)
    return sorted(names)[:MAX_ENTITIES]


def answer_lead(text: str, about: str = "") -> str:
    """What an answer says, in one line: the sentences naming ``about`` (a file's path or name) when there are
    any, else its first sentences."""
    spans = sentences(text)
    if about:
        name = about.rsplit("/", 1)[-1]
        naming = [text[s:e] for s, e in spans if about in text[s:e] or (len(name) > 4 and name in text[s:e])]
        if naming:
            return one_line(" ".join(naming[:2]))
    return one_line(" ".join(text[s:e] for s, e in spans[:2]) if spans else text)
