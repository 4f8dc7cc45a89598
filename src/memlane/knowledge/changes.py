"""What a tool observation did to the project: file changes and snapshots, and the commands that matter.

Read from the stored text of an event (``capture/observe.py`` writes it), so imported history and live capture
give the same result:

- ``Edit: <path>`` / ``MultiEdit``: ``- old`` then ``+ new`` (an old or new string's further lines unprefixed);
- ``Write: <path>``: the whole new content; ``Read: <path>``: what the file held then (a snapshot);
- ``apply_patch: <paths>`` (Codex): ``*** Begin Patch`` with ``*** Add/Update/Delete File:`` sections;
- ``Bash: <command>``: ``git revert``/``git commit`` (with their ``[branch sha] subject`` line), ``rm``/``git rm``,
  and package installs and removals (pip, uv, poetry, npm, yarn, pnpm).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from memlane.store.records import Event

CHANGE_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch")


@dataclass
class FileChange:
    """One file touched by one event. ``kind``: edit (removed → added), write (the whole new content),
    delete, or snapshot (a Read: what the file held, nothing changed)."""

    path: str
    kind: str
    removed: str = ""
    added: str = ""


@dataclass
class Command:
    """A shell command with consequences for what memories say."""

    kind: str  # revert | commit | remove_files | uninstall | install
    shas: list[str] = field(default_factory=list)
    subject: str = ""
    names: list[str] = field(default_factory=list)  # files removed, or packages


def project_path(path: str, cwd: str | None) -> str:
    """A file's path relative to the project, so ``/home/dev/src/shop/app/db.py`` (Claude Code's absolute
    paths) and ``app/db.py`` (Codex's relative ones) are one file. Under ``cwd``: relative to it. An absolute
    path recorded elsewhere (history imported from another checkout of the same project): the part after the
    last folder named like ``cwd``'s own."""
    path = path.strip()
    if not path:
        return path
    norm = os.path.normpath(path)
    if cwd:
        base = os.path.normpath(cwd)
        if norm.startswith(base + os.sep):
            return norm[len(base) + 1 :]
        name = os.path.basename(base)
        marker = f"{os.sep}{name}{os.sep}"
        if os.path.isabs(norm) and name and marker in norm:
            return norm[norm.rindex(marker) + len(marker) :]
    return norm.lstrip("./") if not os.path.isabs(norm) else norm


def _header(content: str) -> tuple[str, str, str]:
    """(tool, summary, body) of a tool observation's text."""
    first, _, body = content.partition("\n")
    tool, sep, summary = first.partition(": ")
    return (tool, summary, body) if sep else (first, "", body)


def file_changes(event: Event) -> list[FileChange]:
    """The files an event changed (or showed, for a Read), in order."""
    if event.type != "tool_observation":
        return []
    meta = event.metadata
    tool = str(meta.get("tool_name") or _header(event.content)[0])
    if meta.get("success") is False:
        return []  # a failed edit changed nothing
    _, summary, body = _header(event.content)
    cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else None
    path = str(meta.get("file_path") or summary or "")
    if tool == "Read" and path:
        return [FileChange(project_path(path, cwd), "snapshot", added=body)]
    if tool == "Write" and path:
        return [FileChange(project_path(path, cwd), "write", added=body)]
    if tool in ("Edit", "MultiEdit") and path:
        old, new = edit_sides(body, multi=tool == "MultiEdit")
        return [FileChange(project_path(path, cwd), "edit", removed=old, added=new)]
    if tool == "NotebookEdit" and path:
        return [FileChange(project_path(path, cwd), "edit", added=body)]
    if tool == "apply_patch" or "*** Begin Patch" in body:
        return [FileChange(project_path(c.path, cwd), c.kind, c.removed, c.added) for c in patch_changes(body)]
    return []


def edit_sides(body: str, multi: bool = False) -> tuple[str, str]:
    """(removed, added) of an Edit's ``- old`` / ``+ new`` text. A single Edit's old string runs to the first
    line that starts ``+ `` (so a YAML list's ``- `` lines stay inside it); a MultiEdit starts a new pair at a
    ``- `` line after a ``+ `` one."""
    old: list[str] = []
    new: list[str] = []
    side: list[str] | None = None
    for line in body.splitlines():
        if side is None and line.startswith("- "):
            side, line = old, line[2:]
        elif side is old and line.startswith("+ "):
            side, line = new, line[2:]
        elif multi and side is new and line.startswith("- "):
            side, line = old, line[2:]
        elif side is None and line.startswith("+ "):  # an edit with an empty old string
            side, line = new, line[2:]
        if side is not None:
            side.append(line)
    return "\n".join(old), "\n".join(new)


_PATCH_SECTION = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$")


def patch_changes(patch: str) -> list[FileChange]:
    """The files of an ``*** Begin Patch`` text with their removed (``-``) and added (``+``) lines."""
    out: list[FileChange] = []
    current: FileChange | None = None
    old: list[str] = []
    new: list[str] = []

    def close() -> None:
        if current is not None:
            current.removed, current.added = "\n".join(old), "\n".join(new)
            out.append(current)

    for line in patch.splitlines():
        section = _PATCH_SECTION.match(line)
        if section:
            close()
            verb, path = section.groups()
            current = FileChange(path, {"Add": "write", "Update": "edit", "Delete": "delete"}[verb])
            old, new = [], []
        elif line.startswith("*** Move to: ") and current is not None:
            current.path = line[len("*** Move to: ") :].strip()
        elif line.startswith("***"):
            continue
        elif current is not None and line.startswith("-"):
            old.append(line[1:])
        elif current is not None and line.startswith("+"):
            new.append(line[1:])
    close()
    return out


# ---- commands ----------------------------------------------------------------------------------------------

_SHA = re.compile(r"^[0-9a-f]{7,40}$")
_COMMIT_LINE = re.compile(r"^\[[^\]\s]+(?: \([^)]*\))? ([0-9a-f]{7,40})\] (.+)$", re.MULTILINE)
_REVERT_SUBJECT = re.compile(r'^Revert "(.+)"$')
_PKG_REMOVE = {
    ("pip", "uninstall"),
    ("pip3", "uninstall"),
    ("uv", "remove"),
    ("poetry", "remove"),
    ("npm", "uninstall"),
    ("npm", "remove"),
    ("npm", "rm"),
    ("npm", "un"),
    ("yarn", "remove"),
    ("pnpm", "remove"),
    ("pnpm", "rm"),
}
_PKG_ADD = {
    ("pip", "install"),
    ("pip3", "install"),
    ("uv", "add"),
    ("poetry", "add"),
    ("npm", "install"),
    ("npm", "i"),
    ("npm", "add"),
    ("yarn", "add"),
    ("pnpm", "add"),
    ("pnpm", "install"),
}
_PKG_NAME = re.compile(r"^(@?[A-Za-z0-9][\w.+-]*(?:/[\w.+-]+)?)")


def commands(event: Event) -> list[Command]:
    """The commands of a Bash observation that change what memories say (several when joined by ``&&``)."""
    if event.type != "tool_observation" or not event.content.startswith("Bash: "):
        return []
    if event.metadata.get("success") is False:
        return []
    command = str(event.metadata.get("command") or _header(event.content)[1])
    output = _header(event.content)[2]
    out: list[Command] = []
    for part in re.split(r"&&|\|\||;|\n", command):
        try:
            argv = shlex.split(part)
        except ValueError:
            continue
        while argv and ("=" in argv[0] and not argv[0].startswith("-")):  # FOO=1 cmd
            argv = argv[1:]
        if argv[:1] == ["sudo"]:
            argv = argv[1:]
        found = _command(argv, output)
        if found is not None:
            out.append(found)
    return out


def _command(argv: list[str], output: str) -> Command | None:
    if len(argv) < 2:
        return None
    tool, verb = os.path.basename(argv[0]), argv[1]
    if tool == "git" and verb == "revert":
        shas = [a for a in argv[2:] if _SHA.match(a)]
        subjects = [m.group(2) for m in _COMMIT_LINE.finditer(output)]
        subject = next((s.group(1) for s in map(_REVERT_SUBJECT.match, subjects) if s), "")
        if shas or subject:
            return Command("revert", shas=[s[:7] for s in shas], subject=subject)
    if tool == "git" and verb == "commit":
        line = _COMMIT_LINE.search(output)
        if line:
            return Command("commit", shas=[line.group(1)[:7]], subject=line.group(2))
    if (tool == "rm" or (tool == "git" and verb == "rm")) and argv:
        names = [a for a in argv[1 if tool == "rm" else 2 :] if not a.startswith("-")]
        if names:
            return Command("remove_files", names=names)
    rest = argv[2:]
    if tool in ("uv", "python", "python3") and verb == "pip" and len(argv) > 2:
        tool, verb, rest = "pip", argv[2], argv[3:]
    if (tool, verb) in _PKG_REMOVE or (tool, verb) in _PKG_ADD:
        names = [_package(a) for a in _positional(rest) if not a.startswith((".", "/")) and "://" not in a]
        names = [n for n in names if n]
        if names:
            return Command("uninstall" if (tool, verb) in _PKG_REMOVE else "install", names=names)
    return None


# Options of pip, uv, poetry, npm, yarn and pnpm that take a value (``--prefix web``: ``web`` is no package).
_VALUE_OPTIONS = {
    "--prefix",
    "-C",
    "--cwd",
    "--dir",
    "-w",
    "--workspace",
    "--filter",
    "-F",
    "--registry",
    "--cache",
    "--tag",
    "-r",
    "--requirement",
    "-c",
    "--constraint",
    "-e",
    "--editable",
    "-t",
    "--target",
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--python",
    "-p",
    "--group",
    "-G",
    "--source",
    "--root",
    "--cache-dir",
    "--src",
    "--upgrade-strategy",
    "--only-binary",
    "--no-binary",
    "--platform",
    "--config",
}


def _positional(args: list[str]) -> list[str]:
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = arg in _VALUE_OPTIONS
        else:
            out.append(arg)
    return out


def _package(arg: str) -> str:
    """``celery==5.4`` → ``celery``; ``date-fns@3`` → ``date-fns``; ``@scope/pkg@1`` → ``@scope/pkg``."""
    match = _PKG_NAME.match(arg)
    return match.group(1).lower() if match else ""


# ---- imports -----------------------------------------------------------------------------------------------

_PY_IMPORT = re.compile(
    r"^\s*(?:from\s+([A-Za-z_][\w.]*)\s+import\b|import\s+([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*))", re.MULTILINE
)
_JS_IMPORT = re.compile(r"""(?:\bfrom\s+|\bimport\s+|\brequire\(\s*)["']([^"'./][^"']*)["']""")


def imported_modules(code: str, path: str = "") -> set[str]:
    """Third-party modules a piece of code imports: the top-level name (``app.settings`` → ``app``,
    ``date-fns/locale`` → ``date-fns``), without Python's standard library and without the package the file
    itself is in (``app/worker.py`` importing ``app.settings`` is the project's own code)."""
    import sys

    own = path.replace("\\", "/").split("/")[0] if "/" in path else ""
    found: set[str] = set()
    for a, b in _PY_IMPORT.findall(code):
        for name in (a or b).split(","):
            found.add(name.strip().split(".")[0].lower())
    for name in _JS_IMPORT.findall(code):
        parts = name.split("/")
        found.add(("/".join(parts[:2]) if name.startswith("@") else parts[0]).lower())
    std: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    return {
        n for n in found if n and n not in std and n != own.lower() and n not in ("__future__", "typing_extensions")
    }


def describe(change: FileChange) -> str:
    return {"edit": "Edit", "write": "Write", "delete": "Delete", "snapshot": "Read"}[change.kind] + f" {change.path}"


def as_dict(change: FileChange) -> dict[str, Any]:
    return {"path": change.path, "kind": change.kind, "removed": change.removed, "added": change.added}
