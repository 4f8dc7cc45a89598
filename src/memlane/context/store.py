"""Context stores: one (scope, persistence kind) pair each. Stdlib only (the hook path reads them).

A snapshot is a plain ``dict[str, value]`` where a value is anything JSON can hold (strings mostly;
the composer serialises the rest). ``MemoryContextStore`` lives in one process (the daemon's volatile
state); ``FileContextStore`` is one JSON file, written atomically (temp file, fsync, ``os.replace``)
so a reader — another hook, the CLI, the daemon — sees the old file or the new one, never half.
"""

from __future__ import annotations

import json
import os
from _thread import allocate_lock

from memlane import atomic, paths
from memlane.context.scope import ContextError, ContextScope, PersistenceKind
from memlane.filelock import FileLock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

FORMAT_VERSION = 1


class ContextStore:
    """Read and write one scope's context of one persistence kind."""

    __slots__ = ("kind", "scope")

    def __init__(self, scope: ContextScope, kind: PersistenceKind) -> None:
        self.scope = scope
        self.kind = kind

    def snapshot(self) -> dict[str, Any]:
        """A copy of the current entries (callers may keep or change it freely)."""
        raise NotImplementedError

    def put(self, key: str, value: Any) -> None:
        self.put_all({key: value})

    def put_all(self, entries: Mapping[str, Any], remove: Iterable[str] = ()) -> None:
        """Set ``entries`` (a ``None`` value deletes its key) and delete ``remove``, in one step."""
        raise NotImplementedError

    def clear(self) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.scope.value}, {self.kind.value})"


def _apply(current: dict[str, Any], entries: Mapping[str, Any], remove: Iterable[str]) -> dict[str, Any]:
    out = dict(current)
    for key in remove:
        out.pop(key, None)
    for key, value in entries.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


class MemoryContextStore(ContextStore):
    """Entries held in this process only (the daemon's per-project and per-session volatile state)."""

    __slots__ = ("_entries", "_lock", "_meta")

    def __init__(
        self,
        scope: ContextScope = ContextScope.APP,
        kind: PersistenceKind = PersistenceKind.VOLATILE,
        initial: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(scope, kind)
        self._lock = allocate_lock()
        self._entries: dict[str, Any] = dict(initial or {})
        self._meta: dict[str, Any] = {}

    def meta(self) -> dict[str, Any]:
        """What a ``FileContextStore`` keeps beside its entries (rule fingerprints), held here in memory: a
        persistent store standing in for a file a read must not write."""
        with self._lock:
            return dict(self._meta)

    def write(
        self, entries: Mapping[str, Any], remove: Iterable[str] = (), meta: Mapping[str, Any] | None = None
    ) -> None:
        with self._lock:
            self._entries = _apply(self._entries, entries, remove)
            if meta is not None:
                self._meta = dict(meta)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._entries)

    def put_all(self, entries: Mapping[str, Any], remove: Iterable[str] = ()) -> None:
        with self._lock:
            self._entries = _apply(self._entries, entries, remove)

    def clear(self) -> None:
        with self._lock:
            self._entries = {}


class FileContextStore(ContextStore):
    """One JSON file: ``{"version", "scope", "kind", "entries", "meta"}``.

    ``meta`` is bookkeeping that is not context (the rule-file fingerprint, when it was loaded); it is
    written in the same atomic replace as the entries. Reads are cached and re-read only when the
    file's (mtime, size) changes, so a long-lived daemon sees what a hook process wrote.
    """

    __slots__ = ("_cache", "_lock", "_stat", "path")

    def __init__(self, path: str, scope: ContextScope, kind: PersistenceKind) -> None:
        super().__init__(scope, kind)
        self.path = path
        self._lock = allocate_lock()
        self._stat: tuple[int, int] | None = None
        self._cache: dict[str, Any] = {"entries": {}, "meta": {}}

    # ---- reading -------------------------------------------------------------------------------

    def _load(self) -> dict[str, Any]:
        try:
            st = os.stat(self.path)
        except OSError:
            self._stat, self._cache = None, {"entries": {}, "meta": {}}
            return self._cache
        sig = (st.st_mtime_ns, st.st_size)
        if sig == self._stat:
            return self._cache
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            data = None  # unreadable or corrupt: treat as empty; the next write replaces it
        if not isinstance(data, dict):
            data = {}
        entries = data.get("entries")
        meta = data.get("meta")
        self._cache = {
            "entries": entries if isinstance(entries, dict) else {},
            "meta": meta if isinstance(meta, dict) else {},
        }
        self._stat = sig
        return self._cache

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._load()["entries"])

    def meta(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._load()["meta"])

    def exists(self) -> bool:
        return os.path.exists(self.path)

    # ---- writing -------------------------------------------------------------------------------

    def put_all(self, entries: Mapping[str, Any], remove: Iterable[str] = ()) -> None:
        self.write(entries, remove)

    def clear(self) -> None:
        with self.lock(), self._lock:
            self._write({}, self._load()["meta"])

    def lock(self) -> FileLock:
        """The lock between processes for this file: hold it across a read-modify-write of your own."""
        return FileLock(self.path + ".lock")

    def write(
        self, entries: Mapping[str, Any], remove: Iterable[str] = (), meta: Mapping[str, Any] | None = None
    ) -> None:
        """Apply ``entries``/``remove`` and replace ``meta`` (when given) in one atomic write.

        Under the file's lock, re-reading it first, so another process's write in between is kept.
        """
        with self.lock(), self._lock:
            current = self._load()
            merged = _apply(current["entries"], entries, remove)
            self._write(merged, dict(meta) if meta is not None else current["meta"])

    def _write(self, entries: dict[str, Any], meta: dict[str, Any]) -> None:
        directory = os.path.dirname(self.path)
        paths.ensure_dir(directory)
        body = {
            "version": FORMAT_VERSION,
            "scope": self.scope.value,
            "kind": self.kind.value,
            "entries": entries,
            "meta": meta,
        }
        atomic.write_text(self.path, json.dumps(body, ensure_ascii=False, indent=1, sort_keys=True), atomic.PRIVATE)
        self._stat = None  # re-read (and re-stat) on the next access
        self._cache = {"entries": entries, "meta": meta}


def store_path(project_id: str, scope: ContextScope, kind: PersistenceKind) -> str:
    """``<data dir>/projects/<id>/context/<scope>-<kind>.json`` — one file per persistent store."""
    return paths.project_join(project_id, "context", f"{scope.value}-{kind.value}.json")


def project_store(project_id: str, scope: ContextScope, kind: PersistenceKind) -> FileContextStore:
    return FileContextStore(store_path(project_id, scope, kind), scope, kind)


# ---- the Layer scope: one persistent store per named layer -----------------------------------------

LAYER_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"  # a file name part: no separators, no leading dot


def check_layer(name: object) -> str:
    """A layer name, or a ``ContextError`` saying what one may be."""
    import re

    if not isinstance(name, str) or not re.fullmatch(LAYER_NAME, name):
        raise ContextError(
            f"layer name {str(name)[:80]!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


def layer_store(project_id: str, name: str) -> FileContextStore:
    """``<project>/context/layer-<name>.json``: what one layer of a pipeline (seed 002's Layer scope: a node's
    description and arguments, a subagent's standing instructions) carries into every composition naming it."""
    path = paths.project_join(project_id, "context", f"{ContextScope.LAYER.value}-{check_layer(name)}.json")
    return FileContextStore(path, ContextScope.LAYER, PersistenceKind.PERSISTENT)


def layer_names(project_id: str) -> list[str]:
    """The project's layers that have a store, sorted."""
    folder = paths.project_join(project_id, "context")
    prefix = f"{ContextScope.LAYER.value}-"
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(n[len(prefix) : -len(".json")] for n in names if n.startswith(prefix) and n.endswith(".json"))
