"""Projectors: derived state read from the event log, idempotent and resumable.

A ``Projector`` owns some derived tables. ``drop`` empties them; ``project`` applies a batch of events, in
``seq`` order, inside the caller's write transaction. ``catch_up`` runs each projector from its row in
``projection_offsets`` (the last ``seq`` it read): one ``BEGIN IMMEDIATE`` transaction per batch holds the
batch's rows *and* the new offset, so a crash (kill -9 included) loses the batch, never half of it, and the
next run starts where the last committed batch ended. The offset is read inside that transaction, so two
processes catching up at once (the daemon and a CLI command) never project an event twice.

A projector whose ``version`` differs from the stored one (its rules changed in a new release) is dropped and
projected again from the start, in the background like any catch-up. ``rebuild`` does that for every projector
on request (``memlane rebuild``); because a projector only ever looks at events stored before the one it is
projecting, the result is the same as having followed the log event by event.

Projectors with ``follows_log = False`` are kept in step by the store itself in the event's own transaction
(full-text indexes, session counters): ``catch_up`` skips them, ``rebuild`` recreates them.

A projector may also derive from logs that are not events (the learning loop: injection records, fetches, an
LLM's answers): its ``settle`` folds them in after the events, and ``rebuild`` calls it once the log is read.

Adding one: subclass ``Projector`` (name, version, drop, project) and list it in ``memlane/derived.py``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from memlane.store.db import Event, Store
from memlane.store.keys import now_iso

BATCH = 200  # events per transaction: short enough that a hook's write waits a few ms at most


class Projector:
    """A derived-state owner (see the module note)."""

    name: ClassVar[str] = ""
    version: ClassVar[int] = 1
    follows_log: ClassVar[bool] = True

    def drop(self, store: Store) -> None:
        raise NotImplementedError

    def project(self, store: Store, events: Sequence[Event]) -> None:
        raise NotImplementedError

    def settle(self, store: Store, limit: int | None = None) -> int:
        """Fold in what this owner derives from outside the event log (logs of its own), after the events, in its
        own transactions: how much it did, at most ``limit`` batches (None: all). ``rebuild`` calls it last; the
        daemon's graduation job through ``derived.settle``."""
        return 0


@dataclass
class Progress:
    projected: int = 0  # events read, over all projectors
    behind: dict[str, int] = field(default_factory=dict)  # events each projector has still to read
    restarted: list[str] = field(default_factory=list)  # projectors started over (new, or a new version)

    @property
    def done(self) -> bool:
        return not any(self.behind.values())


def step(store: Store, projector: Projector, batch: int = BATCH) -> tuple[int, bool]:
    """Project the next ``batch`` events in one transaction: (events read, whether it started over)."""
    with store.write():
        offset = store.projection_offset(projector.name)
        restarted = offset is None or offset[1] != projector.version
        last = 0 if restarted or offset is None else offset[0]
        if restarted:
            projector.drop(store)
        events = store.events_after(last, batch)
        if events:
            projector.project(store, events)
            last = events[-1].seq
        if events or restarted:
            store.set_projection_offset(projector.name, last, projector.version, now_iso())
    return len(events), restarted


def catch_up(
    store: Store,
    projectors: Sequence[Projector],
    *,
    max_events: int | None = None,
    budget_s: float | None = None,
    batch: int = BATCH,
) -> Progress:
    """Bring every log-following projector up to the end of the log, or as far as the limits allow."""
    progress = Progress()
    deadline = time.monotonic() + budget_s if budget_s is not None else None
    for projector in projectors:
        if not projector.follows_log:
            continue
        while True:
            if max_events is not None and progress.projected >= max_events:
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
            size = batch if max_events is None else max(1, min(batch, max_events - progress.projected))
            count, restarted = step(store, projector, size)
            if restarted:
                progress.restarted.append(projector.name)
            progress.projected += count
            if count < size:
                break
    progress.behind = lag(store, projectors)
    return progress


def lag(store: Store, projectors: Sequence[Projector]) -> dict[str, int]:
    """Events each log-following projector has not read yet (all of them for one that must start over)."""
    out = {}
    for projector in projectors:
        if not projector.follows_log:
            continue
        offset = store.projection_offset(projector.name)
        start = offset[0] if offset is not None and offset[1] == projector.version else 0
        out[projector.name] = store.count_after(start)
    return out


def reset(store: Store, projectors: Sequence[Projector]) -> None:
    """Empty the log-following projectors' tables and forget their offsets (after a forget or a redaction: what
    was derived from purged text goes at once; the next catch-up projects the rest again)."""
    with store.write():
        for projector in projectors:
            if projector.follows_log:
                projector.drop(store)
                store.delete_projection_offset(projector.name)


def rebuild(store: Store, projectors: Sequence[Projector], batch: int = 500) -> dict[str, int]:
    """Recreate every projector's tables from the event log; events read per projector."""
    counts: dict[str, int] = {}
    for projector in projectors:
        if projector.follows_log:
            with store.write():
                projector.drop(store)
                store.set_projection_offset(projector.name, 0, projector.version, now_iso())
            total = 0
            while True:
                count, _ = step(store, projector, batch)
                total += count
                if count < batch:
                    break
            projector.settle(store)
            counts[projector.name] = total
        else:
            with store.write():
                projector.drop(store)
            total, last = 0, 0
            while True:
                with store.write():
                    events = store.events_after(last, batch)
                    if events:
                        projector.project(store, events)
                        last = events[-1].seq
                total += len(events)
                if len(events) < batch:
                    break
            counts[projector.name] = total
    return counts
