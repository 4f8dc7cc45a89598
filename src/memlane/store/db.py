"""The per-project SQLite store: ``Store`` and the names callers import from ``memlane.store.db``.

``Store`` is assembled from one class per concern, each in its own module, each owning its SQL:

- ``connection.py``  opening, creating, damage and repair checks, ``write()`` transactions
- ``events.py``      append (dedupe, session counters, outbox job), replace derived events, reads, stats
- ``fulltext.py``    FTS5/BM25 search, query parsing, document frequencies, the size estimate
- ``forget.py``      forget, redact in place, tombstones
- ``outbox.py``      the embedding jobs the vectors worker claims and completes
- ``imports.py``     the import ledger and the events an import made
- ``injections.py``  what each prompt was told (the injection log)
- ``sync_state.py``  team sync's local state, outgoing events, teammates' events pulled in (``memlane.sync``)
- ``browse.py``      pages by cursor, counts, rows after a seq, per-day and health figures (the dashboard)
- ``knowledge.py``   the knowledge tables (entries, entities, edges, task history, resolutions) and
                     projection offsets; ``replacements`` is the prompt path's read of them
- ``learning.py``    the learning loop: fetches, memory usage, levels, insights, LLM answers (``learned`` is
                     the prompt path's read of them)
- ``endless.py``     endless mode's tables (marks, sessions' continuity, the working set, consolidated memories)
                     and the project's mode
- ``records.py``     ``NewEvent``, ``Event``, ``AppendResult`` (no SQL)

Writes happen in ``BEGIN IMMEDIATE`` transactions so concurrent hook processes serialise on
SQLite's own lock (WAL + busy_timeout); the dedupe key is checked inside the transaction, so two
processes delivering the same event store it once. The event, its FTS rows (triggers), its session
counters and its embedding outbox job are one transaction: either all exist or none.

The public methods of ``Store`` are the surface a second backend implements. Stdlib only (hook path).
"""

from __future__ import annotations

from memlane.store.browse import BrowseStore
from memlane.store.connection import REPAIR_SUFFIX, StoreDamaged, damage_message, is_damage
from memlane.store.endless import EndlessStore
from memlane.store.fulltext import (
    _MAX_QUERY_CHUNKS,
    POSTINGS_BUDGET,
    STOPWORDS,
    FullTextStore,
    parse_query,
    query_stopwords,
)
from memlane.store.imports import ImportsStore
from memlane.store.injections import InjectionsStore
from memlane.store.knowledge import KnowledgeStore
from memlane.store.learning import LearningStore
from memlane.store.outbox import OutboxStore
from memlane.store.records import EVENT_TYPES, AppendResult, Event, NewEvent
from memlane.store.sync_state import SyncStore

# Constants are re-exported for reading; a test that changes one patches the module that reads it (fulltext).
__all__ = [
    "EVENT_TYPES",
    "POSTINGS_BUDGET",
    "REPAIR_SUFFIX",
    "STOPWORDS",
    "_MAX_QUERY_CHUNKS",
    "AppendResult",
    "Event",
    "NewEvent",
    "Store",
    "StoreDamaged",
    "damage_message",
    "is_damage",
    "parse_query",
    "query_stopwords",
]


class Store(
    FullTextStore,
    SyncStore,
    OutboxStore,
    ImportsStore,
    InjectionsStore,
    BrowseStore,
    KnowledgeStore,
    LearningStore,
    EndlessStore,
):
    """One project's memory database."""

    @classmethod
    def empty(cls, project_id: str) -> Store:
        """An in-memory store with the schema and no events: what a read of a project with no memory sees."""
        return cls(":memory:", project_id)

    def verify(self) -> None:
        """Raise ``StoreDamaged`` when the cheap structural check (``store.health``) finds damage: every
        command that opens a store calls this, so a lost page is never read as "no events"."""
        from memlane.store.health import probe

        problem = probe(self.db)
        if problem:
            raise StoreDamaged(damage_message(self.file, problem))

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
