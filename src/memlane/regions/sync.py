"""``memlane regions sync``: a 'memlane' region in the project's CLAUDE.md, and nothing else.

The region imports the workflow memory file when there is one and says, in two lines, what memlane
holds for the project. Sync only ever rewrites its own region; it creates CLAUDE.md at the project
root when the file is missing and never writes CLAUDE.md files anywhere else.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlane.regions import edit
from memlane.regions.fileio import RegionFile
from memlane.regions.fix import unified_diff
from memlane.regions.model import DirectRef, Heading, Item, Text

REGION = "memlane"
MEMORY_FILE = ".claude/docs/memory/memory.md"


@dataclass
class SyncResult:
    path: Path
    created_file: bool
    created_region: bool
    changed: bool
    diff: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": str(self.path),
            "created_file": self.created_file,
            "created_region": self.created_region,
            "changed": self.changed,
            "diff": self.diff,
        }


def knowledge(stats: dict[str, Any], last_session: str | None) -> str:
    events, sessions = int(stats.get("events") or 0), int(stats.get("sessions") or 0)
    if not events and not sessions:
        return "- Nothing captured for this project yet."
    last = (last_session or stats.get("last_activity") or "")[:10]
    when = f"; last session {last}" if last else ""
    return f"- {events} event(s) in {sessions} session(s){when}."


def items(root: Path, stats: dict[str, Any], last_session: str | None) -> list[Item]:
    """The region's content: the workflow memory import (if the file exists) and what memlane knows."""
    out: list[Item] = [Heading(level=2, text="memlane")]
    if (root / MEMORY_FILE).is_file():
        out.append(DirectRef(path=f"@{MEMORY_FILE}"))
    out.append(Heading(level=3, text="What memlane knows"))
    hint = '- Search it with `memlane search "<words>"`; cite results as mem:<id>.'
    out.append(Text(content=f"{knowledge(stats, last_session)}\n{hint}"))
    return out


def sync(
    root: str | os.PathLike[str], stats: dict[str, Any], last_session: str | None = None, dry_run: bool = False
) -> SyncResult:
    """Write (or with ``dry_run`` only describe) the 'memlane' region of ``root``/CLAUDE.md."""
    root_p = Path(root)
    rf = RegionFile.open(root_p / "CLAUDE.md", create=True)
    existed = rf.exists
    content = items(root_p, stats, last_session)
    created_region = rf.doc.find(REGION) is None
    if created_region:
        edit.create_region(rf.doc, REGION, content)
    else:
        edit.set_body(rf.doc, REGION, content)
    diff = unified_diff(rf.original, rf.doc.render())
    changed = rf.changed
    if changed and not dry_run:
        rf.save()
    return SyncResult(rf.path, not existed and changed, created_region, changed, diff)


def collect(
    cwd: str | os.PathLike[str] | None = None, project_id: str | None = None
) -> tuple[Path, dict[str, Any], str | None]:
    """The project root, its store statistics and its last session's date, from ``memlane.memory``."""
    from memlane.memory import Memory

    with Memory.open(cwd, project_id=project_id, create=None) as mem:
        stats = mem.stats()
        recent = mem.sessions(1)
        last = (recent[0].get("last_activity") or recent[0].get("started_at")) if recent else None
        return mem.project.root, stats, str(last) if last else None


def sync_if_enabled(cwd: str | os.PathLike[str]) -> SyncResult | None:
    """For automatic callers (hooks): sync only when the user opted in with ``regions.sync = true``."""
    from memlane import config

    if not config.load().regions.sync:
        return None
    root, stats, last = collect(cwd)
    return sync(root, stats, last)
