"""Where a workflow memory lives, and how its files are read and written. Stdlib only (hook path).

A workflow memory is a directory ``<data dir>/workflows/<id>/`` holding ``meta.json``,
``progress.json``, ``memory.md`` and ``sessions/``. Every read-modify-write of those files happens
under one lock per memory (``fcntl.flock`` on ``.lock``), and every write is atomic (temp file,
fsync, ``os.replace``), so concurrent hooks and CLI calls never lose an update or leave half a file.
"""

from __future__ import annotations

import json
import os
import re
import time

from memlane import atomic, paths
from memlane.errors import MemlaneError
from memlane.filelock import FileLock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
LINK_DIR = (".claude", "docs", "memory")
REF_NAME = ".memory-ref"


class WorkflowError(MemlaneError, ValueError):
    """A user-facing problem with a workflow memory; the message is one line."""


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def check_id(memory_id: str) -> str:
    if not _ID.match(memory_id) or ".." in memory_id:
        raise WorkflowError(
            f"invalid workflow memory id {memory_id!r}: use letters, digits, '.', '_' and '-' (at most 100)"
        )
    return memory_id


def base_dir() -> str:
    return paths.join("workflows")


def mem_dir(memory_id: str) -> str:
    return paths.join("workflows", check_id(memory_id))


def file(memory_id: str, name: str) -> str:
    return os.path.join(mem_dir(memory_id), name)


def sessions_dir(memory_id: str) -> str:
    return os.path.join(mem_dir(memory_id), "sessions")


def exists(memory_id: str) -> bool:
    return _ID.match(memory_id) is not None and os.path.isfile(file(memory_id, "meta.json"))


def all_ids() -> list[str]:
    base = base_dir()
    if not os.path.isdir(base):
        return []
    return sorted(name for name in os.listdir(base) if exists(name))


# ---- the project side: .claude/docs/memory/.memory-ref ------------------------------------------


def link_dir(root: str) -> str:
    return os.path.join(root, *LINK_DIR)


def ref_path(root: str) -> str:
    return os.path.join(link_dir(root), REF_NAME)


def read_ref(root: str) -> str | None:
    """The memory id the project is linked to, or None (no link or an unreadable one)."""
    try:
        with open(ref_path(root), encoding="utf-8") as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return text if _ID.match(text) else None


def resolve(root: str, project_id: str) -> str | None:
    """The workflow memory of a project: the linked one, else the one named after the project."""
    ref = read_ref(root)
    if ref and exists(ref):
        return ref
    return project_id if exists(project_id) else None


# ---- files ---------------------------------------------------------------------------------------


def atomic_write(path: str, text: str) -> None:
    """Write ``text`` so readers see either the old or the new file, never a mix."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    atomic.write_text(path, text)


def read_json(path: str, label: str) -> Any:
    """A JSON file; a missing file is None, a broken one a WorkflowError naming the file."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise WorkflowError(f"{label}: cannot read ({exc.strerror})") from exc
    try:
        return json.loads(text)
    except ValueError as exc:
        raise WorkflowError(f"{label}: invalid JSON: {exc}") from exc


def write_json(path: str, data: Any) -> None:
    atomic_write(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def append(path: str, text: str) -> None:
    """One O_APPEND write: concurrent appenders never interleave inside an entry."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, text.encode("utf-8", "replace"))
    finally:
        os.close(fd)


# ---- meta.json -----------------------------------------------------------------------------------


def load_meta(memory_id: str) -> dict[str, Any]:
    data = read_json(file(memory_id, "meta.json"), "meta.json")
    if data is None:
        raise WorkflowError(f"no workflow memory '{memory_id}' (see `memlane workflow list`)")
    if not isinstance(data, dict):
        raise WorkflowError(f"meta.json: must be a JSON object, got {type(data).__name__}")
    if not isinstance(data.get("activeSessions"), dict):
        data["activeSessions"] = {}
    if not isinstance(data.get("links"), dict):
        data["links"] = {}
    return data


def save_meta(memory_id: str, meta: dict[str, Any]) -> None:
    write_json(file(memory_id, "meta.json"), meta)


# ---- locking -------------------------------------------------------------------------------------


class Lock(FileLock):
    """Exclusive lock on one workflow memory, re-entrant within a process."""

    def __init__(self, memory_id: str) -> None:
        super().__init__(file(memory_id, ".lock"))
