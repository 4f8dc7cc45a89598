"""Linking a project to a workflow memory: ``.claude/docs/memory/{.memory-ref,memory.md}``. Stdlib only.

``memory.md`` in the project is a symlink to the central copy. Where symlinks are not allowed
(Windows without developer mode) it falls back to a hard link, then to a copy. A hard link breaks
when the central file is replaced atomically, so it is re-made after every write; a copy is
re-copied after every write (with the central file's mtime), and a copy edited by hand — newer than
the central file and different — is pulled back first, so decisions written there are not lost.
"""

from __future__ import annotations

import os

from memlane.logs import log
from memlane.workflow import store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MODES = ("symlink", "hardlink", "copy")


def local_path(root: str) -> str:
    return os.path.join(store.link_dir(root), "memory.md")


def central_path(memory_id: str) -> str:
    return store.file(memory_id, "memory.md")


def _remove(path: str) -> None:
    if os.path.lexists(path):
        os.remove(path)


def _copy(src: str, dst: str) -> None:
    with open(src, encoding="utf-8") as fh:
        text = fh.read()
    store.atomic_write(dst, text)
    st = os.stat(src)
    os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))  # equal mtimes: "not edited since the copy"


def _hardlink(src: str, dst: str) -> None:
    tmp = f"{dst}.{os.getpid()}.lnk"
    _remove(tmp)
    os.link(src, tmp)
    os.replace(tmp, dst)


def _make(target: str, local: str, mode: str) -> str:
    """Create ``local`` as ``mode`` ("auto": symlink → hard link → copy); returns the mode used."""
    order = MODES if mode == "auto" else (mode,)
    last: OSError | None = None
    for attempt in order:
        try:
            _remove(local)
            if attempt == "symlink":
                os.symlink(target, local)
            elif attempt == "hardlink":
                _hardlink(target, local)
            else:
                _copy(target, local)
            return attempt
        except (OSError, NotImplementedError) as exc:
            last = exc if isinstance(exc, OSError) else OSError(str(exc))
            log("workflow", "info", f"cannot {attempt} {local} -> {target} ({exc}); trying the next way")
    raise store.WorkflowError(f"cannot link {local} to {target}: {last}")


def link(root: str, memory_id: str, meta: dict[str, Any], mode: str = "auto") -> str:
    """Point the project at the memory (``.memory-ref`` + ``memory.md``); records the link in ``meta``."""
    if mode not in ("auto", *MODES):
        raise store.WorkflowError(f"link mode must be one of auto, {', '.join(MODES)}, got {mode!r}")
    os.makedirs(store.link_dir(root), exist_ok=True)
    local = local_path(root)
    if store.read_ref(root) is None and os.path.isfile(local) and not os.path.islink(local):
        os.replace(local, local + ".orig")  # a memory.md memlane did not make: keep it, out of the way
        log("workflow", "warning", f"{local} existed; kept as {local}.orig")
    store.atomic_write(store.ref_path(root), memory_id + "\n")
    used = _make(central_path(memory_id), local_path(root), mode)
    meta["links"][root] = {"mode": used}
    meta["projectPath"] = root
    return used


def unlink(root: str, memory_id: str | None = None, meta: dict[str, Any] | None = None) -> None:
    """Remove the project's link files (never the central memory)."""
    for path in (local_path(root), store.ref_path(root)):
        _remove(path)
    if meta is not None:
        meta["links"].pop(root, None)


def state(root: str, memory_id: str) -> str:
    """How the project's memory.md reaches the central one: symlink, hardlink, copy or missing."""
    local = local_path(root)
    if os.path.islink(local):
        return "symlink" if os.path.realpath(local) == os.path.realpath(central_path(memory_id)) else "broken"
    if not os.path.isfile(local):
        return "missing"
    try:
        return "hardlink" if os.path.samefile(local, central_path(memory_id)) else "copy"
    except OSError:
        return "copy"


def _linked(root: str, memory_id: str) -> bool:
    return store.read_ref(root) == memory_id


def sync(memory_id: str, meta: dict[str, Any]) -> None:
    """After memory.md was rewritten: re-make hard links, re-copy copies. Symlinks need nothing."""
    target = central_path(memory_id)
    changed = False
    for root, info in list(meta["links"].items()):
        mode = info.get("mode") if isinstance(info, dict) else None
        if mode not in ("hardlink", "copy") or not _linked(root, memory_id):
            continue
        local = local_path(root)
        try:
            if mode == "hardlink":
                if not (os.path.exists(local) and os.path.samefile(local, target)):
                    _hardlink(target, local)
            else:
                _copy(target, local)
        except OSError as exc:
            used = _make(target, local, "copy")  # a hard link that can no longer be made: copy instead
            log("workflow", "warning", f"{local}: {mode} failed ({exc}); now a {used}")
            meta["links"][root] = {"mode": used}
            changed = True
    if changed:
        store.save_meta(memory_id, meta)


def pull(memory_id: str, meta: dict[str, Any]) -> bool:
    """Copy mode: a project copy edited by hand (newer, different) becomes the central memory.md."""
    target = central_path(memory_id)
    for root, info in meta["links"].items():
        if not isinstance(info, dict) or info.get("mode") != "copy" or not _linked(root, memory_id):
            continue
        local = local_path(root)
        try:
            if os.path.islink(local) or os.stat(local).st_mtime_ns <= os.stat(target).st_mtime_ns:
                continue
            with open(local, encoding="utf-8") as fh:
                text = fh.read()
            with open(target, encoding="utf-8") as fh:
                if fh.read() == text:
                    continue
        except OSError:
            continue
        store.atomic_write(target, text)
        log("workflow", "info", f"{local} was edited: copied back to {target}")
        return True
    return False
