"""What the store holds and hands back: ``NewEvent`` (to append), ``Event`` (stored), ``AppendResult``.

Plain classes with ``__slots__``, no SQL, no dataclasses (the hook path imports them; dataclasses and
typing cost start-up time). ``EVENT_COLUMNS`` and ``event_from_row`` are the one place a row of
``events`` becomes an ``Event``.
"""

from __future__ import annotations

import json

from memlane.store import keys

TYPE_CHECKING = False  # typing costs hook start-up time
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

EVENT_TYPES = (
    "user_prompt",
    "agent_response",
    "tool_observation",
    "session_start",
    "session_end",
    "session_summary",
    "compaction",
    "task_update",
)

# Events that belong to no agent session: a task changed by hand (`memlane tasks update`, MCP `mem-tasks`). They
# carry ``TASKS_SESSION`` as their session id and leave the sessions table alone (no row, no counters), so they
# never show up as a session in `memlane sessions`, the session-start recap or the context pack.
SESSIONLESS_TYPES = ("task_update",)
TASKS_SESSION = "memlane:tasks"

EVENT_COLUMNS = "seq, id, citation, type, session_id, project_id, ts, content, canonical_key, metadata"

# Tool-history filters (post-tool-use-hook §8.1): on top of session/types/since/until, a search or listing
# may ask for tool calls by ``tool`` name, by ``file`` (a path or part of one: the file a call read or
# wrote, the files of a patch, a Grep/Glob path, or a Bash command that names it) and ``failed`` runs.
# ``store.events`` turns them into SQL; ``tool_matches`` is the same test for an event already read.
TOOL_FILTERS = ("tool", "file", "failed")
FILE_FIELDS = ("file_path", "path", "command", "files")


def tool_matches(event: Event, tool: str | None = None, file: str | None = None, failed: bool = False) -> bool:
    if not (tool or file or failed):
        return True
    meta = event.metadata
    if event.type != "tool_observation":
        return False
    if tool and str(meta.get("tool_name") or "").lower() != tool.lower():
        return False
    if failed and meta.get("success") is not False:
        return False
    if file:
        needle = file.lower()
        return any(needle in json.dumps(meta.get(f), ensure_ascii=False).lower() for f in FILE_FIELDS if meta.get(f))
    return True


class NewEvent:
    """An event about to be stored (already privacy-filtered)."""

    __slots__ = ("content", "dedupe_key", "metadata", "session_id", "ts", "turn", "type")

    def __init__(
        self,
        type: str,
        session_id: str,
        content: str,
        turn: str = "",
        metadata: dict[str, Any] | None = None,
        ts: str | None = None,
        dedupe_key: str | None = None,
    ) -> None:
        self.type = type
        self.session_id = session_id
        self.content = content
        self.turn = turn
        self.metadata = metadata if metadata is not None else {}
        self.ts = ts
        self.dedupe_key = dedupe_key

    def key(self) -> str:
        return self.dedupe_key or keys.dedupe_key(self.session_id, self.type, self.turn, self.content)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "session_id": self.session_id,
            "content": self.content,
            "turn": self.turn,
            "metadata": self.metadata,
            "ts": self.ts,
            "dedupe_key": self.key(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NewEvent:
        return cls(
            type=str(data["type"]),
            session_id=str(data["session_id"]),
            content=str(data["content"]),
            turn=str(data.get("turn") or ""),
            metadata=dict(data.get("metadata") or {}),
            ts=data.get("ts"),
            dedupe_key=data.get("dedupe_key"),
        )

    def __repr__(self) -> str:
        return f"NewEvent({self.type!r}, {self.session_id!r}, {self.content[:40]!r})"


class Event:
    """A stored event."""

    __slots__ = (
        "canonical_key",
        "citation",
        "content",
        "id",
        "metadata",
        "project_id",
        "seq",
        "session_id",
        "ts",
        "type",
    )

    def __init__(
        self,
        seq: int,
        id: str,
        citation: str,
        type: str,
        session_id: str,
        project_id: str,
        ts: str,
        content: str,
        canonical_key: str,
        metadata: dict[str, Any],
    ) -> None:
        self.seq = seq
        self.id = id
        self.citation = citation
        self.type = type
        self.session_id = session_id
        self.project_id = project_id
        self.ts = ts
        self.content = content
        self.canonical_key = canonical_key
        self.metadata = metadata

    @property
    def cite(self) -> str:
        return f"mem:{self.citation}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "citation": self.cite,
            "type": self.type,
            "session_id": self.session_id,
            "project_id": self.project_id,
            "ts": self.ts,
            "content": self.content,
            "canonical_key": self.canonical_key,
            "metadata": self.metadata,
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Event) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"Event({self.cite}, {self.type}, {self.content[:40]!r})"


def event_from_row(row: Sequence[Any]) -> Event:
    try:
        meta = json.loads(row[9]) if row[9] else {}
    except ValueError:
        meta = {}
    return Event(row[0], row[1], row[2] or "", row[3], row[4], row[5], row[6], row[7], row[8], meta)


class AppendResult:
    __slots__ = ("duplicates", "inserted")

    def __init__(self) -> None:
        self.inserted: list[str] = []
        self.duplicates = 0

    def __repr__(self) -> str:
        return f"AppendResult(inserted={self.inserted!r}, duplicates={self.duplicates})"
