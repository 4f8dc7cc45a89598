"""The spool: events a hook could not write now (locked DB, full disk), ingested later exactly once.

Each spooled batch is one file written atomically (temp + rename) in ``~/.memlane/spool``. An
ingester claims a file by renaming it (only one process can win a rename), stores its events — the
dedupe keys make a replay after a crash harmless — and deletes it. Claims older than
``STALE_CLAIM_S`` belong to a process that died and are taken over. Content is privacy-filtered
before it is spooled, like everything else that touches disk.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlane import paths
from memlane.logs import log
from memlane.store.db import NewEvent, Store

STALE_CLAIM_S = 300


def write(project_id: str, project_root: str, events: list[NewEvent], reason: str) -> Path | None:
    """Spool events; returns the file, or None when even the spool cannot be written (logged)."""
    try:
        directory = paths.ensure_dir(paths.spool_dir())
        # The project id leads the name so a hook can find its own project's files without reading them.
        name = f"{project_id}--{time.time_ns()}-{os.getpid()}-{os.urandom(4).hex()}"
        body = {
            "project_id": project_id,
            "project_root": project_root,
            "reason": reason,
            "events": [e.to_json() for e in events],
        }
        tmp = directory / f".{name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(body, fh, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())
        final = directory / f"{name}.json"
        os.replace(tmp, final)
        return final
    except Exception as exc:  # noqa: BLE001 - the last line of defence; report and carry on
        log("hooks", "error", f"spool write failed, {len(events)} event(s) lost: {exc!r}")
        return None


def pending(project_id: str | None = None) -> list[Path]:
    directory = paths.spool_dir()
    if not directory.is_dir():
        return []
    prefix = f"{project_id}--" if project_id else ""
    files = sorted(directory.glob(f"{prefix}*.json"))
    now = time.time()
    for claimed in directory.glob(f"{prefix}*.claimed-*"):
        try:
            if now - claimed.stat().st_mtime > STALE_CLAIM_S:
                files.append(claimed)
        except OSError:
            continue
    return files


def project_of(path: Path) -> str:
    return path.name.split("--", 1)[0]


@dataclass
class IngestReport:
    files: int = 0
    inserted: int = 0
    duplicates: int = 0
    bad_files: list[str] = field(default_factory=list)


def _claim(path: Path) -> Path | None:
    base = path.name.split(".claimed-")[0]
    target = path.with_name(f"{base}.claimed-{os.getpid()}-{os.urandom(2).hex()}")
    try:
        os.replace(path, target)
        os.utime(target)
        return target
    except OSError:
        return None  # another process claimed it first


def _load(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, dict) or not isinstance(data.get("events"), list):
        raise ValueError("not a spool record")
    return data


def ingest(store: Store, files: list[Path], report: IngestReport | None = None) -> IngestReport:
    """Store the events of spool files that belong to ``store``'s project; delete each when done."""
    report = report or IngestReport()
    for path in files:
        claimed = _claim(path)
        if claimed is None:
            continue
        try:
            data = _load(claimed)
            if data.get("project_id") != store.project_id:
                os.replace(claimed, path.with_name(path.name.split(".claimed-")[0]))  # release it
                continue
            result = store.append(NewEvent.from_json(e) for e in data["events"])
        except (ValueError, KeyError, TypeError) as exc:
            bad = claimed.with_name(claimed.name.split(".claimed-")[0] + ".bad")
            os.replace(claimed, bad)
            report.bad_files.append(str(bad))
            log("hooks", "error", f"unreadable spool file kept as {bad.name}: {exc!r}")
            continue
        except Exception:
            # The store is still unavailable: put the file back for the next attempt.
            os.replace(claimed, path.with_name(path.name.split(".claimed-")[0]))
            raise
        report.files += 1
        report.inserted += len(result.inserted)
        report.duplicates += result.duplicates
        claimed.unlink(missing_ok=True)
    return report
