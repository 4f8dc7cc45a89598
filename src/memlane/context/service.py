"""The app context service: one project's persistent and volatile context, and how they stay current.

- Persistent (App): project rules, workflow progress and the user's preferences, in one JSON file per
  project (``context/app-persistent.json``). Refreshed only when the project root changes or a rule
  file's fingerprint does (``refresh_persistent_if_needed``); unchanged → nothing is read or written.
- Volatile (App): working directory, git branch, editor state (current file, selection). Held in
  memory (by the daemon for its lifetime, by a hook for one delivery), seeded from the small
  ``context/app-volatile.json`` that ``memlane context set`` writes, overwritten per request.
- Session (the seed's ExecutionTree): session id and files touched, rebuilt per request from the store.

Stdlib only: hooks build one of these per injection.
"""

from __future__ import annotations

import json
import os
import re
from _thread import allocate_lock

from memlane import project
from memlane.context import rules
from memlane.context.git_head import git_branch
from memlane.context.scope import ContextError, ContextScope, PersistenceKind, RefreshStatus
from memlane.context.store import ContextStore, FileContextStore, MemoryContextStore, project_store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from memlane.config import Config

KEY_PATTERN = r"[A-Za-z][A-Za-z0-9_./-]{0,63}\Z"  # compiled on first use: requests only, never hooks
MAX_KEYS = 64
MAX_VALUE_CHARS = 65536
PATH_KEYS = ("currentFile", "workingDirectory")
PATH_SUFFIXES = ("File", "Dir", "Path")  # currentFile, buildDir, configPath: one path each
PATHS_SUFFIX = "Files"  # openFiles, filesTouched-like lists: a list of paths


def _config(cfg: Config | None) -> Config:
    if cfg is not None:
        return cfg
    from memlane import config

    return config.load()


# ---- request values ----------------------------------------------------------------------------


def is_path_key(key: str) -> bool:
    return key in PATH_KEYS or key.endswith(PATH_SUFFIXES)


def resolve_path(root: str, value: Any, key: str) -> str:
    """A path inside ``root``: relative paths are taken from ``root``; the result is relative to it,
    except ``workingDirectory`` (absolute). Anything outside the project is refused."""
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise ContextError(f"{key} must be a non-empty path (relative to the project root, or absolute)")
    raw = os.path.expanduser(value.strip())
    full = raw if os.path.isabs(raw) else os.path.join(root, raw)
    real_root = os.path.realpath(root)
    real = os.path.realpath(full)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise ContextError(f"{key} {value!r} is outside the project {root}")
    if key == "workingDirectory":
        return real
    return os.path.relpath(real, real_root)


def normalize(root: str, values: Mapping[str, Any], cfg: Config) -> dict[str, Any]:
    """Validate request values: keys, JSON-able values within size, paths inside the project.

    ``None`` means "remove this key". Strings are privacy-filtered before they are kept.
    """
    if not isinstance(values, dict):
        raise ContextError("context must be a JSON object of key: value pairs")
    if len(values) > MAX_KEYS:
        raise ContextError(f"at most {MAX_KEYS} context keys per request, got {len(values)}")
    out: dict[str, Any] = {}
    for key, value in values.items():
        if not isinstance(key, str) or not re.match(KEY_PATTERN, key):
            raise ContextError(
                f"bad context key {key!r}: start with a letter; letters, digits and _ . / - only; at most 64"
            )
        if key == "projectRoot":
            raise ContextError("projectRoot names the project; it is not a value to set")
        if value is None:
            out[key] = None
        elif key.endswith(PATHS_SUFFIX):
            if not isinstance(value, list):
                raise ContextError(f"{key} must be a list of paths")
            out[key] = [resolve_path(root, v, key) for v in value]
        elif is_path_key(key):
            out[key] = resolve_path(root, value, key)
        else:
            out[key] = _checked_value(key, value, cfg)
    return out


def _checked_value(key: str, value: Any, cfg: Config) -> Any:
    try:
        size = len(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ContextError(f"{key}: value must be JSON (string, number, true/false, list or object)") from exc
    if size > MAX_VALUE_CHARS:
        raise ContextError(f"{key}: value of {size} characters is over the {MAX_VALUE_CHARS}-character limit")
    if not cfg.privacy.enabled:
        return value
    from memlane.privacy import filter_value

    return filter_value(value, cfg.privacy)[0]


# ---- the snapshot handed to the composer -------------------------------------------------------


class RefreshTrigger:
    """When to refresh persistent context: a (new) project root, or ``force`` to reload regardless."""

    __slots__ = ("force", "project_root")

    def __init__(self, project_root: str | None = None, force: bool = False) -> None:
        self.project_root = project_root
        self.force = force


class PromptContext:
    """What ``context_for_prompt`` returns: one snapshot per (scope, kind), plus the refresh status.

    ``request`` is the LLMTask scope: values that apply to this one composition only.
    """

    __slots__ = ("layer", "layer_name", "persistent", "project_root", "request", "session", "status", "volatile")

    def __init__(
        self,
        persistent: dict[str, Any] | None = None,
        volatile: dict[str, Any] | None = None,
        session: dict[str, Any] | None = None,
        request: dict[str, Any] | None = None,
        status: RefreshStatus | None = None,
        project_root: str = "",
        layer: dict[str, Any] | None = None,
        layer_name: str = "",
    ) -> None:
        self.persistent = persistent or {}
        self.volatile = volatile or {}
        self.session = session or {}
        self.request = request or {}
        self.status = status
        self.project_root = project_root
        self.layer = layer or {}  # the Layer scope: the named layer's persistent entries (``layer_name``)
        self.layer_name = layer_name

    def context_for_prompt(self) -> PromptContext:
        return self

    def snapshots(self) -> dict[tuple[ContextScope, PersistenceKind], dict[str, Any]]:
        return {
            (ContextScope.APP, PersistenceKind.PERSISTENT): self.persistent,
            (ContextScope.APP, PersistenceKind.VOLATILE): self.volatile,
            (ContextScope.SESSION, PersistenceKind.VOLATILE): self.session,
            (ContextScope.LLM_TASK, PersistenceKind.VOLATILE): self.request,
            (ContextScope.LAYER, PersistenceKind.PERSISTENT): self.layer,
        }

    def with_layer(self, project_id: str, name: str | None) -> PromptContext:
        """This context with layer ``name``'s entries (seed 002's Layer scope); ``None`` leaves it as it is."""
        if name:
            from memlane.context.store import layer_store

            self.layer, self.layer_name = layer_store(project_id, name).snapshot(), name
        return self

    def as_dict(self) -> dict[str, Any]:
        return {
            "projectRoot": self.project_root,
            "persistent": self.persistent,
            "volatile": self.volatile,
            "session": self.session,
            "persistentStatus": self.status.value if self.status else None,
            **({"layer": {"name": self.layer_name, "entries": self.layer}} if self.layer_name else {}),
        }


# ---- the service -------------------------------------------------------------------------------


class AppContextService:
    """App-scope context of one project: a persistent store (file) and a volatile store (memory).

    Construct it with a project root (``for_path`` finds the root of any folder inside a project).
    """

    __slots__ = ("cfg", "last_status", "persistent", "project_id", "root", "volatile")

    def __init__(
        self,
        root: str,
        cfg: Config | None = None,
        *,
        project_id: str | None = None,
        volatile: ContextStore | None = None,
        persistent: FileContextStore | MemoryContextStore | None = None,
    ) -> None:
        """``persistent``: where rules are cached (default: the project's file; a ``MemoryContextStore`` for a
        read of a project memlane keeps nothing for, so the read writes nothing)."""
        self.cfg = _config(cfg)
        self.root = root
        self.project_id = project_id or project.project_id(root)
        self.persistent: FileContextStore | MemoryContextStore = (
            persistent
            if persistent is not None
            else project_store(self.project_id, ContextScope.APP, PersistenceKind.PERSISTENT)
        )
        self.volatile = volatile if volatile is not None else self._initial_volatile()
        self.last_status: RefreshStatus | None = None

    @classmethod
    def for_path(cls, path: str, cfg: Config | None = None) -> AppContextService:
        proj = project.identify(path)
        return cls(proj.root_str, cfg, project_id=proj.id)

    def _initial_volatile(self) -> MemoryContextStore:
        """The values ``memlane context set`` saved for this project, as a starting point."""
        return MemoryContextStore(ContextScope.APP, PersistenceKind.VOLATILE, self.volatile_file().snapshot())

    def volatile_file(self) -> FileContextStore:
        return project_store(self.project_id, ContextScope.APP, PersistenceKind.VOLATILE)

    # ---- the seed's interface ------------------------------------------------------------------

    def persistent_store(self) -> ContextStore:
        return self.persistent

    def volatile_store(self) -> ContextStore:
        return self.volatile

    def context_for_prompt(
        self, session: Mapping[str, Any] | None = None, request: Mapping[str, Any] | None = None
    ) -> PromptContext:
        """Persistent and volatile snapshots (plus session and request-only values) for one prompt."""
        volatile = self.volatile.snapshot()
        volatile.setdefault("projectRoot", self.root)
        return PromptContext(
            self.persistent.snapshot(),
            volatile,
            dict(session or {}),
            normalize(self.root, dict(request), self.cfg) if request else {},
            self.last_status,
            self.root,
        )

    def update_volatile_from_request(self, context: Mapping[str, Any]) -> dict[str, Any]:
        """Overwrite volatile values from a request (``None`` removes a key); returns what was applied.

        A ``projectRoot`` in the request switches this service to that project first (and reloads its
        rules); relative paths are then resolved against it.
        """
        values = dict(context)
        root = values.pop("projectRoot", None)
        if root is not None:
            self.refresh_persistent_if_needed(RefreshTrigger(_root_arg(root)))
        applied = normalize(self.root, values, self.cfg)
        self.volatile.put_all(applied)
        return applied

    def ensure_volatile_working_directory(self, cwd: str | None = None) -> None:
        """Make sure ``workingDirectory``, ``projectRoot`` and ``gitBranch`` are set.

        The working directory is ``cwd`` when the caller knows it (a hook's payload), else what a
        client set earlier, else this process's own when it is inside the project, else the root.
        """
        where = None
        if cwd:
            try:
                where = resolve_path(self.root, cwd, "workingDirectory")
            except ContextError:
                pass  # a cwd outside the project says nothing about it
        if where is None:
            where = self.volatile.snapshot().get("workingDirectory")  # what a client set earlier
        if where is None:
            try:
                where = resolve_path(self.root, os.getcwd(), "workingDirectory")
            except (ContextError, OSError):
                where = self.root
        updates: dict[str, Any] = {"projectRoot": self.root, "workingDirectory": where}
        updates["gitBranch"] = git_branch(updates["workingDirectory"]) or None
        self.volatile.put_all(updates)

    def refresh_persistent_if_needed(self, trigger: RefreshTrigger | None = None) -> RefreshStatus:
        """Reload project rules when the root changed or a rule file's fingerprint did.

        Stat-only when nothing changed; content hashes decide when a stat differs (a touched but
        unchanged file reloads nothing). Keys the user set (``preferences``…) survive reloads.
        """
        trigger = trigger or RefreshTrigger()
        root_changed = False
        if trigger.project_root:
            new_root = project.find_root_str(trigger.project_root)
            if new_root != self.root:
                self._switch(new_root)
                root_changed = True
        ctx = self.cfg.context
        meta = self.persistent.meta()
        settings = [list(ctx.rule_files), ctx.workflow_file, self.cfg.privacy.as_dict()]
        found = rules.candidates(self.root, list(ctx.rule_files), ctx.workflow_file)
        stats = rules.stat_fingerprint(found)
        same = (
            not (trigger.force or root_changed) and meta.get("root") == self.root and meta.get("settings") == settings
        )
        if same and meta.get("stats") == stats:
            status = RefreshStatus.UNCHANGED
        else:
            entries, hashes = rules.load(found, self.cfg)
            new_meta: dict[str, Any] = {"root": self.root, "settings": settings, "stats": stats, "hashes": hashes}
            if same and meta.get("hashes") == hashes:
                new_meta["loadedAt"] = meta.get("loadedAt")
                self.persistent.write({}, meta=new_meta)  # touched, not changed: remember the new stats
                status = RefreshStatus.UNCHANGED
            else:
                import time

                new_meta["loadedAt"] = time.time()
                stale = [k for k in self.persistent.snapshot() if rules.owned(k)]
                self.persistent.write(entries, remove=stale, meta=new_meta)
                status = RefreshStatus.RELOADED if meta or root_changed else RefreshStatus.LOADED
        self.last_status = status
        return status

    def _switch(self, root: str) -> None:
        """Point this service at another project: its own persistent file; paths of the old one dropped."""
        self.root = root
        self.project_id = project.project_id(root)
        self.persistent = project_store(self.project_id, ContextScope.APP, PersistenceKind.PERSISTENT)
        stale = [k for k in self.volatile.snapshot() if is_path_key(k) or k.endswith(PATHS_SUFFIX)]
        self.volatile.put_all({"projectRoot": root}, remove=stale)


def _root_arg(root: Any) -> str:
    if not isinstance(root, str) or not root.strip():
        raise ContextError("projectRoot must be a non-empty path (absolute recommended)")
    path = os.path.abspath(os.path.expanduser(root.strip()))
    if not os.path.isdir(path):
        raise ContextError(f"projectRoot {root!r} is not an existing directory")
    return path


def project_root(root: Any) -> str:
    """A request's ``projectRoot`` as the project's root: absolute recommended; relative paths are taken
    from this process's working directory (the seed's rule — remote callers should send absolute)."""
    return project.find_root_str(_root_arg(root))


# ---- many projects, many sessions (the daemon) -------------------------------------------------


class ContextRegistry:
    """Per-project app services and per-session stores, for a process that serves many (the daemon)."""

    def __init__(self, cfg: Config, max_sessions: int = 256) -> None:
        self.cfg = cfg
        self.max_sessions = max_sessions
        self._lock = allocate_lock()
        self._apps: dict[str, AppContextService] = {}
        self._sessions: dict[str, MemoryContextStore] = {}

    def app(self, root: str) -> AppContextService:
        """The service for the project whose root is ``root`` (created on first use)."""
        pid = project.project_id(root)
        with self._lock:
            svc = self._apps.get(pid)
            if svc is None:
                svc = self._apps[pid] = AppContextService(root, self.cfg, project_id=pid)
            return svc

    def session(self, session_id: str) -> MemoryContextStore:
        with self._lock:
            store = self._sessions.pop(session_id, None)
            if store is None:
                store = MemoryContextStore(ContextScope.SESSION, PersistenceKind.VOLATILE, {"sessionId": session_id})
            self._sessions[session_id] = store  # most recent last
            while len(self._sessions) > self.max_sessions:
                self._sessions.pop(next(iter(self._sessions)))
            return store
