"""``KnowledgeProjector``: events → entries, entities, edges, task history and memory resolutions.

For each event, in ``seq`` order (see ``projection.py`` for batching, offsets and rebuild):

1. it joins its exchange's resolutions if the exchange is already replaced (``Resolver.inherit``);
2. a tool observation gives a **change** entry per file it edited, wrote or deleted (a **snapshot** for a Read),
   linked to the file (``changes``) and to the modules its new code imports (``introduces``), and checked
   against the same file's other changes (``file_region``) and the fragments it took out (``quote``); a Bash
   command gives **commit** entries (``git commit``, ``git revert`` → ``revert``) and **command** entries
   (package installs and removals, ``rm``);
3. a prompt or an answer gives **decision** entries (``decisions.py``), each with its quote aligned in the event
   (the evidence), and the tasks it names (``tasks.py``);
4. a ``task_update`` event (a change made by hand) is folded into its task;
5. any memory that quotes a fragment a later, already projected edit took out is replaced by that edit.

Entries start at stage ``raw``; the learning loop (issue 33) promotes them (``aligner.check_stage`` keeps an
entry without aligned evidence from becoming verified). Bump ``version`` when what this derives changes: stores
then project again from the start, in the background.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlane.knowledge import aligner, changes, decisions, tasks
from memlane.knowledge.projection import Projector
from memlane.knowledge.resolutions import Resolver, quotes_fragment
from memlane.knowledge.text import entity_key, fragments, stable_id
from memlane.store.db import Event, Store
from memlane.store.schema import indexed

ENTRY_TYPES = ("change", "snapshot", "decision", "commit", "command", "task_note")


class _Batch:
    """Per-batch state: the resolver and fold (with their caches) and each session's current exchange."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.resolver = Resolver(store)
        self.fold = tasks.TaskFold(store)
        self.exchanges: dict[str, str] = {}
        self._code: set[str] | None = None  # fragments later edits took out (non-common), read once a batch

    def code_fragments(self) -> set[str]:
        if self._code is None:
            self._code = self.store.removed_code_fragments()
        return self._code

    def code_changed(self) -> None:
        self._code = None

    def exchange(self, event: Event) -> str:
        if event.type == "user_prompt":
            self.exchanges[event.session_id] = event.id
            return event.id
        if event.session_id not in self.exchanges:
            found = self.store.exchange_of(event)
            self.exchanges[event.session_id] = found if found != event.id else ""
        return self.exchanges[event.session_id] or event.id


class KnowledgeProjector(Projector):
    name = "knowledge"
    version = 1

    def drop(self, store: Store) -> None:
        store.drop_knowledge()

    def project(self, store: Store, events: Sequence[Event]) -> None:
        batch = _Batch(store)
        for event in events:
            if not indexed(event.type, event.content):
                continue  # bookkeeping (session markers, PreCompact's line) says when, not what
            batch.resolver.seq = event.seq
            self._event(batch, event)
            batch.resolver.touched.add(event.id)
            batch.resolver.refresh()

    def _event(self, batch: _Batch, event: Event) -> None:
        exchange = batch.exchange(event)
        batch.resolver.inherit(event, exchange)
        if event.type == "tool_observation":
            self._changes(batch, event, exchange)
            self._commands(batch, event, exchange)
        elif event.type in ("user_prompt", "agent_response"):
            self._decisions(batch, event, exchange)
            self._tasks(batch, event, exchange)
        elif event.type == "task_update":
            payload = event.metadata.get("task_update")
            if isinstance(payload, dict):
                batch.fold.apply_update(payload, event)
        known = batch.code_fragments()
        if known:
            quoted = (
                {f for f in known if quotes_fragment(event.content, f)}
                if len(known) <= 300
                else fragments(event.content) & known
            )
            batch.resolver.quotes(event, exchange, quoted)

    # ---- tool observations -------------------------------------------------------------------------------

    def _changes(self, batch: _Batch, event: Event, exchange: str) -> None:
        store, resolver = batch.store, batch.resolver
        found = changes.file_changes(event)
        for i, change in enumerate(found):
            if not change.path:
                continue
            gone: list[str] = []
            if change.kind == "edit":
                gone = sorted(fragments(change.removed) - fragments(change.added))
            entry = self._entry(
                event,
                i,
                "snapshot" if change.kind == "snapshot" else "change",
                changes.describe(change),
                f"file:{change.path}",
                {**changes.as_dict(change), "exchange": exchange, "gone": gone},
            )
            store.put_entry(entry)
            store.add_edge(
                ("entry", entry["id"]),
                "changes" if change.kind != "snapshot" else "shows",
                ("entity", resolver._entity("file", change.path, event)),
                event_id=event.id,
                ts=event.ts,
            )
            resolver.file_region(entry, event)
            if change.kind == "snapshot":
                continue
            if gone:
                resolver.removed_fragments(entry, event)
                batch.code_changed()
            new_imports = changes.imported_modules(change.added, change.path) - changes.imported_modules(
                change.removed, change.path
            )
            if new_imports:
                resolver.names(entry, event, sorted(new_imports), [])
            resolver.reverts_after(entry)

    def _commands(self, batch: _Batch, event: Event, exchange: str) -> None:
        store, resolver = batch.store, batch.resolver
        for i, command in enumerate(changes.commands(event), start=100):
            if command.kind == "remove_files":
                cwd = event.metadata.get("cwd") if isinstance(event.metadata.get("cwd"), str) else None
                for j, name in enumerate(command.names):
                    path = changes.project_path(name, cwd)
                    change = changes.FileChange(path, "delete")
                    entry = self._entry(
                        event,
                        i * 100 + j,
                        "change",
                        f"Delete {path}",
                        f"file:{path}",
                        {**changes.as_dict(change), "exchange": exchange, "gone": []},
                    )
                    store.put_entry(entry)
                    resolver.file_region(entry, event)
            elif command.kind in ("revert", "commit"):
                key = "revert" if command.kind == "revert" else f"commit:{command.shas[0]}"
                title = (
                    f"git revert {' '.join(command.shas)}".strip()
                    if command.kind == "revert"
                    else f"commit {command.shas[0]}"
                )
                body = {"kind": command.kind, "shas": command.shas, "subject": command.subject, "exchange": exchange}
                entry = self._entry(
                    event, i, "commit", f"{title}: {command.subject}" if command.subject else title, key, body
                )
                store.put_entry(entry)
                if command.kind == "revert":
                    resolver.revert(entry, event)
                else:
                    resolver.reverts_after(entry)
            else:  # install / uninstall
                body = {"kind": command.kind, "names": command.names, "exchange": exchange}
                title = f"{command.kind} {' '.join(command.names)}"
                entry = self._entry(event, i, "command", title, None, body)
                store.put_entry(entry)
                introduces = command.names if command.kind == "install" else []
                removes = command.names if command.kind == "uninstall" else []
                resolver.names(entry, event, introduces, removes)

    # ---- prompts and answers -----------------------------------------------------------------------------

    def _decisions(self, batch: _Batch, event: Event, exchange: str) -> None:
        for i, decision in enumerate(decisions.decisions(event)):
            found = aligner.align(decision.quote, event.content)
            evidence = [{"event_id": event.id, **found.as_dict()}]
            body = {
                "exchange": exchange,
                "introduces": decision.introduces,
                "removes": decision.removes,
                "subject": decision.subject,
            }
            key = f"subject:{decision.subject}" if decision.subject else None
            entry = self._entry(event, i, "decision", decision.quote[:240], key, body, evidence, found.aligned)
            batch.store.put_entry(entry)
            if decision.introduces or decision.removes:
                batch.resolver.names(entry, event, decision.introduces, decision.removes)
            if decision.subject:
                batch.resolver.subject(entry, event, decision.subject)

    def _tasks(self, batch: _Batch, event: Event, exchange: str) -> None:
        for i, mention in enumerate(tasks.mentions(event)):
            found = aligner.align(mention.quote, event.content)
            task = batch.fold.observe(mention, event, {"method": found.method, "start": found.start, "end": found.end})
            if task is None:
                continue
            entry = self._entry(
                event,
                200 + i,
                "task_note",
                mention.quote[:240],
                entity_key("task", task["title"]),
                {"exchange": exchange, "task": task["id"], "status": mention.status, "kind": mention.kind},
                [{"event_id": event.id, **found.as_dict()}],
                found.aligned,
            )
            batch.store.put_entry(entry)
            batch.store.add_edge(
                ("entry", entry["id"]),
                "evidence_of",
                ("entity", task["id"]),
                meta={
                    "confidence": found.confidence,
                    "alignment_method": found.method,
                    "span": {"start": found.start, "end": found.end},
                    "source_event_id": event.id,
                },
                event_id=event.id,
                ts=event.ts,
            )

    # ---- entries -----------------------------------------------------------------------------------------

    @staticmethod
    def _entry(
        event: Event,
        index: int,
        entry_type: str,
        title: str,
        key: str | None,
        body: dict[str, Any],
        evidence: list[dict[str, Any]] | None = None,
        aligned: bool | None = None,
    ) -> dict[str, Any]:
        if evidence is None:  # the entry is the event itself: its evidence is the whole text, exactly
            evidence = [
                {"event_id": event.id, "method": "exact", "start": 0, "end": len(event.content), "confidence": 1.0}
            ]
            aligned = True
        return {
            "id": "en-" + stable_id(event.id, entry_type, index),
            "entry_type": entry_type,
            "title": title,
            "body": body,
            "canonical_key": key,
            "evidence": evidence,
            "evidence_aligned": bool(aligned),
            "event_id": event.id,
            "session_id": event.session_id,
            "ts": event.ts,
        }
