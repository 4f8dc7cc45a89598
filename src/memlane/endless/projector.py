"""``EndlessProjector``: events → marks, session spans, and what the daemon's endless job has to redo.

For each event, in ``seq`` order (``knowledge/projection.py`` batches, offsets and rebuild):

1. its marks (``marks.event_marks``), numbered in order;
2. for an answer, the exchange's links: each file the exchange changed and each command that failed in it gets
   an ``answer`` mark (what the answer says about it) and an ``asked`` mark on the prompt (what was asked);
3. its session's span grows to the event's time; the session, and the one after it, get a new continuity score;
4. the topics it marked are queued for consolidation.

Like the knowledge projector, it only reads events stored before the one it projects (the exchange's earlier
marks), so following the log in batches and ``memlane rebuild`` give the same rows. ``finish`` (after a rebuild)
does what the daemon's job does when due: consolidates every queued topic, scores every session, computes the
working set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlane.endless import marks
from memlane.knowledge.projection import Projector
from memlane.knowledge.text import stable_id
from memlane.store.db import Event, Store
from memlane.store.records import SESSIONLESS_TYPES
from memlane.store.schema import indexed

TOPIC_KINDS = ("file", "command", "decision", "task")  # what consolidation groups by
LINK_ROLES = {"file": ("change", "write", "delete"), "command": ("fail",)}
LINK_IDX = 10_000  # ``asked`` marks go on the prompt's event, numbered past any mark of its own


class EndlessProjector(Projector):
    name = "endless"
    version = 1

    def drop(self, store: Store) -> None:
        store.drop_endless()

    def project(self, store: Store, events: Sequence[Event]) -> None:
        for event in events:
            if not indexed(event.type, event.content):
                continue  # session markers and PreCompact's line say when, not what
            rows = [
                (event.id, i, event.seq, event.session_id, event.ts, kind, key, role, fact)
                for i, (kind, key, role, fact) in enumerate(marks.event_marks(event))
            ]
            if event.type == "agent_response":
                rows.extend(self._links(store, event, len(rows)))
            if rows:
                store.put_marks(rows)
                store.mark_topics_dirty({(r[5], r[6]) for r in rows if r[5] in TOPIC_KINDS})
            if event.type not in SESSIONLESS_TYPES:
                self._span(store, event)

    def finish(self, store: Store, cfg: Any = None) -> None:
        """After a rebuild: consolidation, continuity and the working set, as the daemon's job keeps them."""
        from memlane.endless import service

        service.refresh(store, cfg, consolidate=True)

    @staticmethod
    def _links(store: Store, event: Event, start: int) -> list[tuple[Any, ...]]:
        """The answer's words and the prompt's on each file its exchange changed and each command that failed."""
        prompt_id = store.exchange_of(event)
        if prompt_id == event.id:
            return []
        found = store.by_ids([prompt_id])
        if not found:
            return []
        prompt = found[0]
        topics: dict[tuple[str, str], None] = {}
        for mark in store.marks_of_session(
            event.session_id, kinds=("file", "command"), after_seq=prompt.seq, before_seq=event.seq
        ):
            if mark["role"] in LINK_ROLES[mark["kind"]]:
                topics[(mark["kind"], mark["key"])] = None
        rows: list[tuple[Any, ...]] = []
        asked = marks.one_line(prompt.content, 200)
        for n, (kind, key) in enumerate(topics):
            lead = marks.answer_lead(event.content, key if kind == "file" else "")
            rows.append((event.id, start + n, event.seq, event.session_id, event.ts, kind, key, "answer", lead))
            idx = LINK_IDX + int(stable_id(kind, key)[:8], 16) % 1_000_000_000
            rows.append((prompt.id, idx, prompt.seq, prompt.session_id, prompt.ts, kind, key, "asked", asked))
        return rows

    @staticmethod
    def _span(store: Store, event: Event) -> None:
        before, after = store.touch_endless_session(event.session_id, event.ts)
        if before == after:
            return
        # A new session, or one that starts earlier now: the sessions after its old and new places get another
        # predecessor.
        for started in {after, before} - {None}:
            following = store.session_after(str(started), event.session_id)
            if following:
                store.mark_session_dirty(following)
