"""Helpers shared by the knowledge tests: a writer of events shaped as memlane captures them (``capture/observe.py``'s
texts and metadata), one minute apart, and a fresh store for a test module's ``store`` fixture."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memlane import derived
from memlane.store.db import Event, NewEvent, Store

ROOT = "/home/dev/src/shop"


class Log:
    """Appends events a minute apart (or at ``at`` minutes), one session at a time, and projects them."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.minute = 0
        self.start = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

    def add(self, kind: str, content: str, session: str = "s1", at: int | None = None, **meta: Any) -> Event:
        self.minute = at if at is not None else self.minute + 1
        ts = (self.start + timedelta(minutes=self.minute)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        meta.setdefault("cwd", ROOT)
        turn = f"{session}:{self.minute}:{len(content)}:{self.store.count()}"
        inserted = self.store.append([NewEvent(kind, session, content, turn, meta, ts=ts)]).inserted
        return self.store.by_ids(inserted)[0]

    def prompt(self, text: str, session: str = "s1", at: int | None = None) -> Event:
        return self.add("user_prompt", text, session, at)

    def answer(self, text: str, session: str = "s1", at: int | None = None) -> Event:
        return self.add("agent_response", text, session, at)

    def edit(self, path: str, old: str, new: str, session: str = "s1", at: int | None = None) -> Event:
        full = f"{ROOT}/{path}"
        return self.add("tool_observation", f"Edit: {full}\n- {old}\n+ {new}", session, at,
                        tool_name="Edit", file_path=full, success=True)  # fmt: skip

    def write(self, path: str, body: str, session: str = "s1", at: int | None = None) -> Event:
        full = f"{ROOT}/{path}"
        return self.add("tool_observation", f"Write: {full}\n{body}", session, at,
                        tool_name="Write", file_path=full, success=True)  # fmt: skip

    def read(self, path: str, body: str, session: str = "s1", at: int | None = None) -> Event:
        full = f"{ROOT}/{path}"
        return self.add("tool_observation", f"Read: {full}\n{body}", session, at,
                        tool_name="Read", file_path=full, success=True)  # fmt: skip

    def patch(self, body: str, files: list[str], session: str = "s1", at: int | None = None) -> Event:
        text = f"apply_patch: {', '.join(files)}\n*** Begin Patch\n{body}\n*** End Patch"
        return self.add("tool_observation", text, session, at, tool_name="apply_patch", files=files,
                        file_path=files[0], success=True)  # fmt: skip

    def bash(self, command: str, output: str = "", session: str = "s1", at: int | None = None, code: int = 0) -> Event:
        text = f"Bash: {command}" + (f"\n{output}" if output else "")
        return self.add("tool_observation", text, session, at, tool_name="Bash", command=command, exit_code=code,
                        success=code == 0)  # fmt: skip

    def project(self) -> None:
        derived.catch_up(self.store)

    def replaced(self, event: Event, partial: bool = False) -> str | None:
        """The citation of what replaces ``event`` now, if anything."""
        new = self.store.replacements([event.id], partial=partial).get(event.id)
        return self.store.by_ids([new])[0].cite if new else None


def open_store(tmp_path: Path) -> Iterator[Store]:
    """For a module's ``store`` fixture: a fresh store in ``tmp_path``, closed afterwards."""
    s = Store(tmp_path / "memory.db", "proj-k")
    yield s
    s.close()
