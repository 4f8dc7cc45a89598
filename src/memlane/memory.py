"""The library API: one project's memory. The CLI, hooks, MCP server and HTTP routes wrap this.

from memlane.memory import Memory
with Memory.open("/path/to/project") as mem:
    for hit in mem.search("pool timeout"):
        print(hit.event.cite, hit.event.content)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from typing import IO, Any

from memlane import config, moments, project
from memlane.errors import InputError, MemlaneError, NotFoundError
from memlane.logs import log
from memlane.store.db import EVENT_TYPES, Event, Store

# The name this module's errors had before ``memlane.errors``; ``except MemoryError_`` catches them all.
MemoryError_ = MemlaneError

MAX_LIMIT = 200


class NoMemoryYet(NotFoundError):
    """A read found no store for the project: reads never create one (it would then show up as a project)."""


class Memory:
    def __init__(self, proj: project.Project, cfg: config.Config, store: Store) -> None:
        self.project = proj
        self.config = cfg
        self.store = store

    @classmethod
    def open(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        *,
        project_id: str | None = None,
        cfg: config.Config | None = None,
        create: bool | None = True,
    ) -> Memory:
        """The project's memory. Reads never leave a store (or a registry entry) behind: with
        ``create=False`` a project without a store raises ``NoMemoryYet`` (the CLI says so); with
        ``create=None`` it gets an empty in-memory store (the daemon and workers answer "nothing")."""
        cfg = cfg or config.load()
        proj = project.resolve(cwd, project_id)
        if not create and not os.path.exists(proj.db_file):
            if create is None:
                return cls(proj, cfg, Store.empty(proj.id))
            raise NoMemoryYet(f"no memory for this project yet ({proj.root})")
        project.register(proj)
        return cls.existing(proj, cfg)

    @classmethod
    def existing(cls, proj: project.Project, cfg: config.Config | None = None) -> Memory:
        """A project already found (and registered): opens its store, registers nothing."""
        cfg = cfg or config.load()
        return cls(proj, cfg, Store(proj.db_path, proj.id, cfg.store.busy_timeout_ms))

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- reading -------------------------------------------------------------------------------

    def get(self, ref: str) -> Event:
        event = self.store.get(ref)
        if event is None:
            raise NotFoundError(f"no event '{ref}' in project {self.project.id}")
        return event

    def history(self, **filters: Any) -> list[Event]:
        return self.store.history(**_filters(filters))

    def timeline(self, ref: str, before: int = 3, after: int = 3) -> list[Event]:
        return self.store.neighbours(self.get(ref), before, after)

    def sessions(self, limit: int = 20) -> list[dict[str, Any]]:
        return self.store.sessions(limit)

    def stats(self) -> dict[str, Any]:
        out = self.store.stats()
        out["project_root"] = str(self.project.root)
        out["db_path"] = str(self.project.db_path)
        return out

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        session: str | None = None,
        types: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        semantic: bool = True,
        engine: Any = None,
        exclude_ids: Sequence[str] = (),
    ) -> list[Any]:
        """Hybrid search (BM25 + vectors + recency + type) → ``retrieval.hybrid.Hit`` list, best first.

        ``since``/``until`` take a date or an age (``7d``); ``semantic=False`` (or no embedding model)
        searches full-text only, on the same score scale; ``engine`` is a warm ``Engine`` to reuse.
        Every entry point comes through here, so all of them accept and refuse the same input.
        """
        check_query(query)
        check_limit(limit)
        filters = _filters({"session": session or None, "types": list(types or ()) or None,
                            "since": since, "until": until})  # fmt: skip
        # Inside the function for start-up time (~7 ms of retrieval modules that reads and writes never
        # need), not for a circle: the engine imports Memory for type checking only.
        from memlane.retrieval.engine import Engine

        engine = engine or Engine(self.config, vectors=semantic)
        return list(engine.search(self, query, limit=limit, exclude_ids=list(exclude_ids), **filters))

    # ---- knowledge (entries, tasks, resolutions: memlane.knowledge) ---------------------------

    def catch_up(self, budget_s: float | None = None) -> Any:
        """Project what the derived tables have not read yet (the daemon does this in the background; a CLI
        read calls it so its answer is current). A ``knowledge.projection.Progress``."""
        from memlane import derived

        return derived.catch_up(self.store, budget_s=budget_s)

    def rebuild(self, only: Sequence[str] = ()) -> dict[str, int]:
        """Recreate derived tables from the event log (all, or the owners named); events read per owner."""
        from memlane import derived

        known = derived.names()
        for name in only:
            if name not in known:
                raise InputError(f"unknown derived state '{name}' (one of: {', '.join(known)})")
        return derived.rebuild(self.store, only)

    def replacements(self, event_ids: Sequence[str], *, partial: bool = False) -> dict[str, str]:
        """The effective view: each replaced memory among ``event_ids`` → the memory that replaces it now."""
        return self.store.replacements(event_ids, partial=partial)

    def supersession(self, ref: str) -> dict[str, Any]:
        """What replaced a memory (and why), what replaces it now, what it replaced, its entries."""
        from memlane.knowledge import service

        return service.supersession(self.store, self.get(ref).id)

    def tasks(self, statuses: Sequence[str] | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Tasks, open ones first (in progress, blocked, pending), then done and cancelled."""
        from memlane.knowledge import tasks

        for status in statuses or ():
            tasks.check_status(status)
        check_limit(limit, 10_000)
        rows = tasks.list_tasks(self.store, statuses, limit)
        links = self._workflow_links({r["id"]: r["title"] for r in rows})
        for row in rows:
            if row["id"] in links:
                row["workflow"] = links[row["id"]]
        return rows

    def task(self, ref: str) -> dict[str, Any]:
        """One task in full: status, blockers (effective, suggested), aliases, history, the events naming it."""
        from memlane.knowledge import tasks

        view = tasks.task_view(self.store, tasks.find_task(self.store, ref), full=True)
        link = self._workflow_links({view["id"]: view["title"]}).get(view["id"])
        if link:
            view["workflow"] = link
        return view

    def add_task(
        self,
        title: str,
        *,
        status: str = "pending",
        priority: str | None = None,
        blockers: Sequence[str] = (),
        note: str | None = None,
    ) -> dict[str, Any]:
        from memlane.knowledge import service, tasks
        from memlane.knowledge.text import entity_key

        self.catch_up()
        service.add_task(self.store, self.config, title, status=status, priority=priority, blockers=blockers, note=note)
        self.catch_up()
        clean = " ".join(title.split())
        task = self.store.entity_by_key("task", entity_key("task", clean)) or tasks.find_task(self.store, clean)
        return self.task(task["id"])

    def update_task(
        self,
        ref: str,
        *,
        status: str | None = None,
        priority: str | None = None,
        blockers: Sequence[str] | None = None,
        note: str | None = None,
    ) -> dict[str, Any]:
        """Change a task by hand; the state machine is checked first (``TaskError`` names what to do instead)."""
        from memlane.knowledge import service

        self.catch_up()
        task, _ = service.update_task(
            self.store, self.config, ref, status=status, priority=priority, blockers=blockers, note=note
        )
        self.catch_up()
        return self.task(task["id"])

    def _workflow_links(self, titles: dict[str, str]) -> dict[str, dict[str, Any]]:
        from memlane.knowledge import tasks

        if not titles or self.store.ephemeral:
            return {}
        return tasks.workflow_links(str(self.project.root), self.project.id, titles)

    # ---- curating ------------------------------------------------------------------------------

    def forget_preview(self, **selector: Any) -> list[tuple[str, str]]:
        selector = _forget_selector(selector)
        ids = selector.get("ids") or ()
        if ids:
            resolved = []
            for ref in ids:
                resolved.append(self.get(ref).id)
            selector["ids"] = resolved
        return self.store.select_for_forget(**selector)

    def forget(self, **selector: Any) -> int:
        """Purge the selected events for good (events, FTS, outbox), leaving a tombstone."""
        selector = _forget_selector(selector)
        targets = self.forget_preview(**selector)
        scope, value = _describe(selector)
        count = self.store.forget(targets, scope, value)
        self.reset_derived()
        self._forget_vectors([t[0] for t in targets])
        if any(kind == "user_prompt" for _, kind in targets):
            self._forget_preferences()
        return count

    def reset_derived(self) -> None:
        """What the knowledge projector derived from the purged text (titles, quotes) goes at once; the daemon
        projects the remaining events again. Its freed pages are scrubbed like the events' own."""
        from memlane import derived

        derived.reset(self.store)
        self.store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _forget_preferences(self) -> None:
        """A forgotten prompt's learned preference goes too (the events are gone already: say so, don't fail)."""
        from memlane.context import preferences

        try:
            preferences.prune(self.store, self.project.id)
        except OSError as exc:
            log("memory", "warning", f"learned preferences not pruned after forget: {exc!r}")

    def _forget_vectors(self, event_ids: list[str]) -> None:
        """Vectors are derived data, but they encode the forgotten text: remove them too."""
        if not event_ids:
            return
        try:
            from memlane.vectors.index import forget_vectors  # lazy: lancedb is slow to import
        except ImportError:
            return
        forget_vectors(self.project.id, event_ids)

    def export(self, fmt: str, out: IO[str], **filters: Any) -> int:
        events: Iterator[Event] | list[Event]
        events = (
            self.store.history(oldest_first=True, limit=-1, **_filters(filters))
            if filters
            else self.store.iter_events()
        )
        count = 0
        if fmt == "json":
            out.write("[\n")
        for event in events:
            if fmt == "jsonl":
                out.write(json.dumps(event.as_dict(), ensure_ascii=False) + "\n")
            elif fmt == "json":
                out.write(("," if count else "") + json.dumps(event.as_dict(), ensure_ascii=False, indent=2) + "\n")
            else:
                out.write(_markdown(event))
            count += 1
        if fmt == "json":
            out.write("]\n")
        return count


def check_query(query: object) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InputError("empty search query: say what to look for (words, an error message, a file name)")
    return query


def check_types(types: Sequence[str] | None) -> None:
    for t in types or ():
        if t not in EVENT_TYPES:
            raise InputError(f"unknown event type '{t}' (one of: {', '.join(EVENT_TYPES)})")


def check_limit(limit: object, high: int = MAX_LIMIT) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= high:
        raise InputError(f"limit must be a whole number from 1 to {high}, got {limit!r}")
    return limit


def _filters(filters: dict[str, Any]) -> dict[str, Any]:
    """Event filters checked and normalised: known types, ``since``/``until`` as stored timestamps."""
    check_types(filters.get("types"))
    out = dict(filters)
    for bound in ("since", "until"):
        if bound in out:
            out[bound] = moments.parse_optional(out[bound], bound)
    return out


def _forget_selector(selector: dict[str, Any]) -> dict[str, Any]:
    """``before`` as a stored timestamp: "7d" compared as a string would select every event."""
    if selector.get("before"):
        return {**selector, "before": moments.parse(selector["before"], "before")}
    return selector


def _describe(selector: dict[str, Any]) -> tuple[str, str]:
    if selector.get("everything"):
        return "project", "all"
    if selector.get("ids"):
        return "event", ",".join(selector["ids"])
    if selector.get("session"):
        return "session", str(selector["session"])
    return "before", str(selector.get("before"))


def _markdown(event: Event) -> str:
    body = event.content.replace("\n", "\n> ")
    return f"### {event.ts} · {event.type} · [{event.cite}]\n\nsession `{event.session_id}`\n\n> {body}\n\n"
