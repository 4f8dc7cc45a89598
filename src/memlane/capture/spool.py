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
import time

from memlane import atomic, paths
from memlane.logs import log
from memlane.store.db import NewEvent, Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

STALE_CLAIM_S = 300


def spool_dir() -> str:
    return paths.join("spool")


def write(project_id: str, project_root: str, events: list[NewEvent], reason: str) -> str | None:
    """Spool events; returns the file, or None when even the spool cannot be written (logged)."""
    try:
        directory = paths.ensure_dir(spool_dir())
        name = f"{project_id}--{time.time_ns()}-{os.getpid()}-{os.urandom(4).hex()}"
        body = {
            "project_id": project_id,
            "project_root": project_root,
            "reason": reason,
            "events": [e.to_json() for e in events],
        }
        final = os.path.join(directory, f"{name}.json")
        atomic.write_text(final, json.dumps(body, ensure_ascii=False), atomic.PRIVATE)
        return final
    except Exception as exc:  # noqa: BLE001 - the last line of defence; report and carry on
        log("hooks", "error", f"spool write failed, {len(events)} event(s) lost: {exc!r}")
        return None


def pending(project_id: str | None = None) -> list[str]:
    """Spool files waiting (for one project, or all), oldest first, plus stale claims."""
    directory = spool_dir()
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    prefix = f"{project_id}--" if project_id else ""
    files = sorted(os.path.join(directory, n) for n in names if n.startswith(prefix) and n.endswith(".json"))
    now = time.time()
    for n in names:
        if n.startswith(prefix) and ".claimed-" in n:
            path = os.path.join(directory, n)
            try:
                if now - os.path.getmtime(path) > STALE_CLAIM_S:
                    files.append(path)
            except OSError:
                continue
    return files


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
        except (ValueError, KeyError, TypeError) as exc:
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
