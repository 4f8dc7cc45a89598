"""The per-project SQLite store (events, sessions, FTS, outbox, tombstones)."""

from memlane.store.db import EVENT_TYPES, AppendResult, Event, NewEvent, Store

__all__ = ["EVENT_TYPES", "AppendResult", "Event", "NewEvent", "Store"]
