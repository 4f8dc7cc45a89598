"""Every owner of state derived from the event log, in one list: what ``memlane rebuild`` recreates and what the
daemon's projection job keeps up to date (DESIGN.md §2: "every derived table can be rebuilt from events").

To add derived state (the learning loop's levels and insights, endless mode's working set and consolidations):
write a ``knowledge.projection.Projector`` (a name, a version, ``drop`` and ``project``), add it to
``projectors()`` below, and give its tables a migration in your range. The daemon then projects it in the
background, ``memlane rebuild`` recreates it, and a forget or a redaction empties it for a fresh projection.
A projector may also have ``finish(store, cfg)``: what ``rebuild`` runs once the log is read to its end, for
state computed from the projected tables as a whole (endless mode's consolidation, continuity scores and
working set, which the daemon's ``EndlessJob`` keeps up to date when due); and ``settle(store, limit)``: what
it derives from logs that are not events (the learning loop's injection log, fetches and LLM answers), which
``projection.rebuild`` runs after its events and the daemon's ``GraduationJob`` through ``settle`` below.

Vectors are derived too, but recreating them means embedding every event again: ``memlane vectors rebuild``
queues that for the daemon's worker.
"""

from __future__ import annotations

from collections.abc import Sequence

from memlane.config import Config
from memlane.knowledge import projection
from memlane.knowledge.projection import Progress, Projector
from memlane.store.db import Event, Store


class FullText(Projector):
    """The word and trigram indexes and the saved word counts (kept in step by the insert triggers)."""

    name = "fulltext"
    follows_log = False

    def drop(self, store: Store) -> None:
        store.clear_fulltext()

    def project(self, store: Store, events: Sequence[Event]) -> None:
        store.index_events(events)


class Sessions(Projector):
    """The sessions table: times, counters, end reason and latest summary (kept in step by ``append``)."""

    name = "sessions"
    follows_log = False

    def drop(self, store: Store) -> None:
        store.clear_sessions()

    def project(self, store: Store, events: Sequence[Event]) -> None:
        store.replay_sessions(events)


def projectors() -> list[Projector]:
    """Every derived-state owner, in the order ``rebuild`` runs them."""
    from memlane.endless.projector import EndlessProjector
    from memlane.knowledge.learning import LearningProjector
    from memlane.knowledge.projector import KnowledgeProjector

    return [FullText(), Sessions(), KnowledgeProjector(), EndlessProjector(), LearningProjector()]


def names() -> list[str]:
    return [p.name for p in projectors()]


def catch_up(store: Store, *, max_events: int | None = None, budget_s: float | None = None) -> Progress:
    """Project what the log-following owners have not read yet (the daemon's job, and CLI reads)."""
    if store.ephemeral or not hasattr(store, "projection_offset"):
        return Progress()  # an empty stand-in, or a team server's store: derived tables live in the local one
    return projection.catch_up(store, projectors(), max_events=max_events, budget_s=budget_s)


def settle(store: Store, *, limit: int | None = None) -> int:
    """Fold in what owners derive from logs other than the events (the learning loop's injection records, fetches
    and LLM answers) and judge what changed; once the log is projected (levels read replacements). How much
    was done; ``limit`` bounds the batches (the daemon's slice)."""
    if store.ephemeral or not hasattr(store, "projection_offset") or any(lag(store).values()):
        return 0
    done = 0
    for projector in projectors():
        done += projector.settle(store, limit)
    return done


def rebuild(store: Store, only: Sequence[str] = (), cfg: Config | None = None) -> dict[str, int]:
    """Recreate derived tables from the events (all, or the owners named in ``only``); events read per owner.
    Owners with a ``finish`` then complete what is computed from their tables as a whole."""
    chosen = [p for p in projectors() if not only or p.name in only]
    counts = projection.rebuild(store, chosen)
    for owner in chosen:
        finish = getattr(owner, "finish", None)
        if callable(finish):
            finish(store, cfg)
    return counts


def reset(store: Store) -> None:
    """After a purge (forget, redact): empty what was derived from the purged text; it is projected again."""
    projection.reset(store, projectors())


def lag(store: Store) -> dict[str, int]:
    return projection.lag(store, projectors())
