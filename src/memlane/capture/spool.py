"""The spool: events a hook could not write now (locked DB, full disk), ingested later exactly once.

Each spooled batch is one file written atomically (temp + fsync + rename) in ``~/.memlane/spool``,
named ``<project-id>--<time>-<pid>-<random>.json`` so a hook finds its own project's files without
opening any. An ingester claims a file by renaming it (only one process can win a rename), stores its
events — the dedupe keys make a replay after a crash harmless — and deletes it. Claims older than
``STALE_CLAIM_S`` belong to a process that died and are taken over. Content is privacy-filtered
before it is spooled, like everything else that touches disk.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import time

from memlane import atomic, paths
from memlane.logs import log
from memlane.store.db import NewEvent, Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

STALE_CLAIM_S = 300
# A temp file older than this belongs to a writer that died mid-write (kill -9, full disk): its
# events were never acknowledged as spooled, so it is incomplete by definition and can go.
STALE_TMP_S = 120


def spool_dir() -> str:
    return paths.join("spool")


def fallback_dir() -> str:
    """A spool on another filesystem, in memory, for when the data dir's disk is full.

    ``$XDG_RUNTIME_DIR`` (per-user tmpfs) when set, else ``/dev/shm``; the name carries a hash of the
    data dir so two data dirs (tests, ``MEMLANE_HOME``) never replay each other's events. Memory does
    not survive a reboot, so these files are ingested by the next hook that can write the store.
    """
    override = os.environ.get("MEMLANE_FALLBACK_SPOOL")
    if override:
        return override
    from memlane.store.keys import sha256_hex

    tag = f"memlane-{os.getuid()}-{sha256_hex(paths.home_dir())[:10]}"
    base = os.environ.get("XDG_RUNTIME_DIR") or "/dev/shm"
    return os.path.join(base, tag, "spool")


def _private_dir(directory: str, shared: bool) -> str:
    """Create ``directory`` 0700. In a shared place (/dev/shm) also refuse a symlink or a directory
    another user made first, so nobody can read or plant events there."""
    if not shared:
        return paths.ensure_dir(directory)
    parent = os.path.dirname(directory)
    paths.ensure_dir(parent)  # makedirs applies the mode to the leaf only: make each level ourselves
    paths.ensure_dir(directory)
    for path in (parent, directory):
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
            raise PermissionError(f"refusing spool directory {path}: not a private directory of ours")
    return directory


def _write_file(directory: str, name: str, body: dict[str, Any]) -> str:
    """One spool file, private and atomic (``memlane.atomic``): the temp file never outlives a failure."""
    final = os.path.join(directory, f"{name}.json")
    atomic.write_text(final, json.dumps(body, ensure_ascii=False), atomic.PRIVATE)
    return final


def write(project_id: str, project_root: str, events: list[NewEvent], reason: str) -> str | None:
    """Spool events; returns the file, or None when neither spool can be written (logged).

    The data dir's spool comes first; when its disk is full (or it is read-only) the in-memory
    fallback spool takes the events, so a full disk loses nothing.
    """
    name = f"{project_id}--{time.time_ns()}-{os.getpid()}-{os.urandom(4).hex()}"
    body = {
        "project_id": project_id,
        "project_root": project_root,
        "reason": reason,
        "events": [e.to_json() for e in events],
    }
    failures = []
    for directory, shared in ((spool_dir(), False), (fallback_dir(), True)):
        try:
            return _write_file(_private_dir(directory, shared), name, body)
        except Exception as exc:  # noqa: BLE001 - try the next spool, report below
            failures.append(f"{directory}: {exc!r}")
    log("hooks", "error", f"spool write failed, {len(events)} event(s) lost: {'; '.join(failures)}")
    return None


def directories() -> list[str]:
    return [spool_dir(), fallback_dir()]


def _listing(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def pending(project_id: str | None = None) -> list[str]:
    """Spool files waiting (for one project, or all) in both spools, oldest first, plus stale claims."""
    prefix = f"{project_id}--" if project_id else ""
    files: list[str] = []
    claims: list[str] = []
    now = time.time()
    for directory in directories():
        for n in _listing(directory):
            if not n.startswith(prefix):
                continue
            if n.endswith(".json"):
                files.append(os.path.join(directory, n))
            elif ".claimed-" in n:
                path = os.path.join(directory, n)
                try:
                    if now - os.path.getmtime(path) > STALE_CLAIM_S:
                        claims.append(path)
                except OSError:
                    continue
    # Oldest first across both spools: names start with the project id, then the write time in ns.
    files.sort(key=os.path.basename)
    return files + claims


def leftovers(max_age_s: float = STALE_TMP_S) -> dict[str, list[str]]:
    """What a clean spool should not hold: stale temp files and unreadable (``.bad``) files."""
    out: dict[str, list[str]] = {"tmp": [], "bad": []}
    now = time.time()
    for directory in directories():
        for n in _listing(directory):
            path = os.path.join(directory, n)
            if n.endswith(".tmp"):
                try:
                    if now - os.path.getmtime(path) > max_age_s:
                        out["tmp"].append(path)
                except OSError:
                    continue
            elif n.endswith(".bad"):
                out["bad"].append(path)
    return out


def clean_tmp(max_age_s: float = STALE_TMP_S) -> int:
    """Delete temp files left by writers that died mid-write; returns how many."""
    removed = 0
    for path in leftovers(max_age_s)["tmp"]:
        try:
            os.unlink(path)
            removed += 1
        except OSError:
            continue
    return removed


def project_of(path: str) -> str:
    return os.path.basename(path).split("--", 1)[0]


class IngestReport:
    __slots__ = ("bad_files", "duplicates", "files", "inserted")

    def __init__(self) -> None:
        self.files = 0
        self.inserted = 0
        self.duplicates = 0
        self.bad_files: list[str] = []


def _base(path: str) -> str:
    return path.split(".claimed-")[0]


def _claim(path: str) -> str | None:
    target = f"{_base(path)}.claimed-{os.getpid()}-{os.urandom(2).hex()}"
    try:
        os.replace(path, target)
        os.utime(target)
        return target
    except OSError:
        return None  # another process claimed it first


def _load(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, dict) or not isinstance(data.get("events"), list):
        raise ValueError("not a spool record")
    return data


def ingest(store: Store, files: list[str], report: IngestReport | None = None) -> IngestReport:
    """Store the events of spool files that belong to ``store``'s project; delete each when done."""
    report = report or IngestReport()
    for path in files:
        claimed = _claim(path)
        if claimed is None:
            continue
        try:
            data = _load(claimed)
            if data.get("project_id") != store.project_id:
                os.replace(claimed, _base(path))  # not ours: release it
                continue
            result = store.append(NewEvent.from_json(e) for e in data["events"])
        except (ValueError, KeyError, TypeError, sqlite3.InterfaceError, sqlite3.ProgrammingError) as exc:
            # The file itself cannot be stored (unreadable, or values SQLite refuses): retrying would fail
            # forever on every hook, so it is set aside for `memlane doctor`.
            bad = _base(claimed) + ".bad"
            os.replace(claimed, bad)
            report.bad_files.append(bad)
            log("hooks", "error", f"unreadable spool file kept as {os.path.basename(bad)}: {exc!r}")
            continue
        except Exception:
            os.replace(claimed, _base(path))  # the store is still unavailable: put it back
            raise
        report.files += 1
        report.inserted += len(result.inserted)
        report.duplicates += result.duplicates
        os.unlink(claimed)
    return report
