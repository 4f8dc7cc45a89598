"""Helpers shared by the endless tests: events shaped as memlane captures them (``capture/observe.py``'s texts and
metadata) at chosen times, and a dump of every endless table for comparisons."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from memlane import derived
from memlane.config import Config
from memlane.endless import service
from memlane.store.db import Event, NewEvent, Store

ROOT = "/home/dev/src/shop"
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class Log:
    """Appends events at ``hours`` after ``START`` (default: a minute after the last one)."""

    def __init__(self, store: Store, start: datetime = START) -> None:
        self.store = store
        self.start = start
        self.at = start

    def add(self, kind: str, content: str, session: str, hours: float | None = None, **meta: Any) -> Event:
        self.at = self.start + timedelta(hours=hours) if hours is not None else self.at + timedelta(minutes=1)
        ts = self.at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        meta.setdefault("cwd", ROOT)
        turn = f"{session}:{ts}:{len(content)}:{self.store.count()}"
        inserted = self.store.append([NewEvent(kind, session, content, turn, meta, ts=ts)]).inserted
        return self.store.by_ids(inserted)[0]

    def prompt(self, text: str, session: str, hours: float | None = None) -> Event:
        return self.add("user_prompt", text, session, hours)

    def answer(self, text: str, session: str, hours: float | None = None) -> Event:
        return self.add("agent_response", text, session, hours)

    def edit(self, path: str, old: str, new: str, session: str, hours: float | None = None) -> Event:
        full = f"{ROOT}/{path}"
        return self.add("tool_observation", f"Edit: {full}\n- {old}\n+ {new}", session, hours,
                        tool_name="Edit", file_path=full, success=True)  # fmt: skip

    def read(self, path: str, body: str, session: str, hours: float | None = None) -> Event:
        full = f"{ROOT}/{path}"
        return self.add("tool_observation", f"Read: {full}\n{body}", session, hours,
                        tool_name="Read", file_path=full, success=True)  # fmt: skip

    def bash(self, command: str, output: str, session: str, hours: float | None = None, code: int = 0) -> Event:
        return self.add("tool_observation", f"Bash: {command}\n{output}", session, hours, tool_name="Bash",
                        command=command, exit_code=code, success=code == 0)  # fmt: skip

    def exchange(self, session: str, prompt: str, path: str, old: str, new: str, answer: str, hours: float) -> None:
        """A prompt, an edit of ``path`` and the answer, a minute apart, starting at ``hours``."""
        self.prompt(prompt, session, hours)
        self.edit(path, old, new, session)
        self.answer(answer, session)

    def project(self, cfg: Config | None = None, consolidate: bool = True) -> None:
        """What the daemon does: the projection, then the endless job (consolidating when asked)."""
        derived.catch_up(self.store)
        service.refresh(self.store, cfg or Config(), consolidate=consolidate)


TABLES = {
    "endless_marks": "*",
    "endless_sessions": "session_id, started, last_ts, prev_session_id, score, transition, detail",
    "working_set": "*",
    "consolidated_memories": "*",
    "consolidated_sources": "*",
    "consolidated_fts": "memory_id, title, summary",
    "consolidated_cjk": "memory_id, text",
    "endless_dirty": "*",
}


def dump(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    return {t: sorted(store.db.execute(f"SELECT {cols} FROM {t}").fetchall(), key=repr) for t, cols in TABLES.items()}
