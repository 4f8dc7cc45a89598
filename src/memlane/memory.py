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

from memlane import config, moments, paths, project
from memlane.errors import InputError, MemlaneError, NotFoundError
from memlane.logs import log
from memlane.store.db import EVENT_TYPES, Event, Store

# The name this module's errors had before ``memlane.errors``; ``except MemoryError_`` catches them all.
MemoryError_ = MemlaneError

MAX_LIMIT = 200
MAX_LIMIT_LISTED = 100_000  # a listing (history, tool runs) may ask for everything
MAX_OTHER_PROJECTS = 20  # cross-project reads look at most at this many other projects (newest first)


class NoMemoryYet(NotFoundError):
    """A read found no store for the project: reads never create one (it would then show up as a project)."""


class Memory:
    def __init__(self, proj: project.Project, cfg: config.Config, store: Store) -> None:
        self.project = proj
        self.config = cfg
        self.store = store
        self._others: dict[str, Memory] = {}  # other projects' memories opened for cross-project reads

    @classmethod
    def open(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        *,
        project_id: str | None = None,
        cfg: config.Config | None = None,
        create: bool | None = True,
        verify: bool = False,
    ) -> Memory:
        """The project's memory. Reads never leave a store (or a registry entry) behind: with
        ``create=False`` a project without a store raises ``NoMemoryYet`` (the CLI says so); with
        ``create=None`` it gets an empty in-memory store (the daemon and workers answer "nothing").
        ``verify``: run the cheap damage check (``store.health``) first, as every CLI command does."""
        cfg = cfg or config.load()
        proj = project.resolve(cwd, project_id)
        if not create and not os.path.exists(proj.db_file):
            if create is None:
                return cls(proj, cfg, Store.empty(proj.id))
            raise NoMemoryYet(f"no memory for this project yet ({proj.root})")
        project.register(proj)
        mem = cls.existing(proj, cfg)
        if verify:
            try:
                mem.store.verify()
            except BaseException:
                mem.close()
                raise
        return mem

    @classmethod
    def existing(cls, proj: project.Project, cfg: config.Config | None = None) -> Memory:
        """A project already found (and registered): opens its store, registers nothing."""
        cfg = cfg or config.load()
        store = Store(proj.db_path, proj.id, cfg.store.busy_timeout_ms)
        store.citation_length = cfg.citations.id_length
        return cls(proj, cfg, store)

    @classmethod
    def on_server(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        *,
        project_id: str | None = None,
        cfg: config.Config | None = None,
    ) -> Memory:
        """The project's memory as the team server holds it (PostgreSQL + pgvector, ``database.url``): the same
        reads and searches, answered there. The project must be shared (``memlane team share``)."""
        cfg = cfg or config.load()
        with cls.open(cwd, project_id=project_id, cfg=cfg, create=False) as local:
            state = local.store.sync_state()
        from memlane.store.postgres.connection import database_url
        from memlane.store.postgres.store import PgStore

        if not state.get("remote") or not database_url(cfg):
            raise InputError("this project is not shared on a team server (memlane team share)")
        return cls(local.project, cfg, PgStore(database_url(cfg), state["remote"], create=False))  # type: ignore[arg-type]

    def close(self) -> None:
        for other in self._others.values():
            other.close()
        self._others.clear()
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
        return self.neighbours(self.find(ref), before, after)

    # ---- other projects (retrieval.cross_project) ------------------------------------------------

    def cross_project(self, wanted: bool | None = None) -> bool:
        """Whether reads may include the user's other projects: ``wanted``, else ``retrieval.cross_project``."""
        return self.config.retrieval.cross_project if wanted is None else bool(wanted)

    def others(self) -> list[Memory]:
        """The user's other projects that have a store (at most ``MAX_OTHER_PROJECTS``, newest first)."""
        out = []
        for entry in project.known_projects():
            pid = str(entry.get("id"))
            if pid == self.project.id:
                continue
            if pid not in self._others:
                root = str(entry.get("root") or "")
                proj = project.Project(pid, root, str(entry.get("name") or os.path.basename(root)))
                if not os.path.exists(proj.db_file):
                    continue
                try:
                    self._others[pid] = Memory.existing(proj, self.config)
                except Exception as exc:  # noqa: BLE001 - one unreadable store must not break this project's read
                    log("memory", "warning", f"cross-project: {pid} skipped: {exc!r}")
                    continue
            out.append(self._others[pid])
            if len(out) >= MAX_OTHER_PROJECTS:
                break
        return out

    def find(self, ref: str) -> Event:
        """``get``; with ``retrieval.cross_project`` on, an event of another project too (search results and
        injected memories may come from one, and their citations must open)."""
        event = self.store.get(ref)
        if event is None and self.cross_project():
            event = next((e for other in self.others() if (e := other.store.get(ref)) is not None), None)
        if event is None:
            raise NotFoundError(f"no event '{ref}' in project {self.project.id}")
        return event

    def neighbours(self, event: Event, before: int = 3, after: int = 3) -> list[Event]:
        """The events around ``event`` in its session, read from the store of the project it belongs to."""
        if event.project_id != self.project.id:
            other = self._others.get(event.project_id)
            if other is not None:
                return other.store.neighbours(event, before, after)
        return self.store.neighbours(event, before, after)

    def sessions(self, limit: int = 20) -> list[dict[str, Any]]:
        return self.store.sessions(limit)

    def stats(self) -> dict[str, Any]:
        out = self.store.stats()
        out["project_root"] = str(self.project.root)
        out["db_path"] = str(self.project.db_path)
        if hasattr(self.store, "continuity"):  # a team server's store keeps no endless state
            latest = [s for s in self.store.continuity(limit=5) if s.get("score") is not None]
            out["endless"] = {"mode": self.endless_mode()[0], "continuity": latest[0] if latest else None}
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
        tool: str | None = None,
        file: str | None = None,
        failed: bool = False,
        cross_project: bool | None = None,
    ) -> list[Any]:
        """Hybrid search (BM25 + vectors + recency + type) → ``retrieval.hybrid.Hit`` list, best first.

        ``since``/``until`` take a date or an age (``7d``); ``semantic=False`` (or no embedding model)
        searches full-text only, on the same score scale; ``engine`` is a warm ``Engine`` to reuse.
        ``tool``/``file``/``failed`` keep tool calls by tool name, file and failure (``tool_runs`` lists them
        without a query). ``cross_project`` (default ``retrieval.cross_project``) adds the best matches of
        the user's other projects; their events carry their own ``project_id``.
        Every entry point comes through here, so all of them accept and refuse the same input.
        """
        check_query(query)
        check_limit(limit)
        tools = check_tool_filters(tool, file, failed, types)
        filters = _filters({"session": session or None, "types": list(types or ()) or None,
                            "since": since, "until": until, **tools})  # fmt: skip
        # Inside the function for start-up time (~7 ms of retrieval modules that reads and writes never
        # need), not for a circle: the engine imports Memory for type checking only.
        from memlane.retrieval.engine import Engine

        engine = engine or Engine(self.config, vectors=semantic)
        hits = list(engine.search(self, query, limit=limit, exclude_ids=list(exclude_ids), **filters))
        if self.cross_project(cross_project) and not session:  # a session id belongs to one project
            for other in self.others():
                try:
                    hits.extend(engine.search(other, query, limit=limit, **filters))
                except Exception as exc:  # noqa: BLE001 - one broken store must not break this search
                    log("memory", "warning", f"cross-project search skipped {other.project.id}: {exc!r}")
            hits.sort(key=lambda h: -h.score)
            hits = hits[:limit]
        return hits

    def tool_runs(
        self,
        *,
        tool: str | None = None,
        file: str | None = None,
        failed: bool = False,
        session: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = 30,
    ) -> list[Event]:
        """Tool calls, newest first, by tool name, by file and/or failed only (post-tool-use-hook §8.1)."""
        check_limit(limit, MAX_LIMIT_LISTED)
        tools = check_tool_filters(tool, file, failed)
        if not tools:
            raise InputError("say which tool runs: give a tool name, a file, or ask for failed runs")
        return self.store.history(**_filters({"session": session or None, "since": since, "until": until}),
                                  limit=limit, **tools)  # fmt: skip

    # ---- browsing (the dashboard) ----------------------------------------------------------------

    def page(
        self,
        *,
        after: tuple[str, int] | None = None,
        limit: int = 50,
        oldest_first: bool = False,
        **filters: Any,
    ) -> list[Event]:
        """One page of events by time, past the cursor ``after`` = (ts, seq) of the last one shown."""
        check_limit(limit)
        return self.store.page(after=after, limit=limit, oldest_first=oldest_first, **_filters(filters))

    def count(self, **filters: Any) -> int:
        """How many events match the filters (counted up to ``store.browse.COUNT_CAP`` + 1 when filtered)."""
        return self.store.count_events(**_filters(filters))

    def after_seq(self, seq: int, types: Sequence[str] | None = None, limit: int = 200) -> list[Event]:
        """Events stored after ``seq``, oldest first: what a live view has not shown yet."""
        check_types(types)
        return self.store.after_seq(seq, types=list(types or ()) or None, limit=limit)

    def latest_seq(self) -> int:
        return self.store.latest_seq()

    def sessions_page(self, page: int = 1, page_size: int = 20) -> tuple[list[dict[str, Any]], int]:
        """Sessions newest first, one page (1-based), and the total."""
        if isinstance(page, bool) or not isinstance(page, int) or page < 1:
            raise InputError(f"page must be a whole number from 1, got {page!r}")
        check_limit(page_size)
        return self.store.sessions_page((page - 1) * page_size, page_size)

    def session(self, session_id: str) -> dict[str, Any]:
        """A session's row with its events counted by type; NotFoundError when there is none."""
        row = self.store.session(session_id)
        if row is None:
            raise NotFoundError(f"no session '{session_id}' in project {self.project.id}")
        row["by_type"] = self.store.session_type_counts(session_id)
        return row

    def daily(self, days: int = 30) -> list[dict[str, Any]]:
        """Events and active sessions per UTC day over the last ``days`` days (days without events included)."""
        from datetime import UTC, datetime, timedelta

        check_limit(days, 366)
        today = datetime.now(UTC).date()
        first = today - timedelta(days=days - 1)
        found = {d: (n, s) for d, n, s in self.store.daily_counts(first.isoformat())}
        out = []
        for i in range(days):
            day = (first + timedelta(days=i)).isoformat()
            n, s = found.get(day, (0, 0))
            out.append({"date": day, "eventCount": n, "sessionCount": s})
        return out

    def health(self) -> dict[str, Any]:
        """``stats`` plus what the dashboard charts: outbox health, injection rate, redactions by kind and
        the size on disk of the store and its vectors."""
        out = self.stats()
        out["outbox_health"] = self.store.outbox_health()
        out["injection"] = self.store.injection_counts()
        # What was removed, by kind: at capture (the events' privacy stamps, summed by ``stats``), and each secret
        # kind a later ``memlane privacy scan --redact`` found.
        out["redactions"] = {
            "private section": out["privacy"]["private_sections"],
            "secret (at capture)": out["privacy"]["secrets_redacted"],
            **{f"{k} (scan)": n for k, n in self.store.scan_redaction_kinds().items()},
        }
        out["vectors_bytes"] = _tree_bytes(paths.vectors_dir(self.project.id))
        return out

    def injections(self, limit: int = 20, session: str | None = None) -> list[tuple[Event, dict[str, Any]]]:
        """The latest prompts, newest first, each with what it was told (``store/injections.py``): ``mode``
        (hybrid or text), ``full`` and ``index`` (the two tiers: id, cite, score, confidence, lift; ``item``
        groups the full tier by exchange), ``left_out`` (with a ``reason``) and ``ts``. A prompt memlane did
        not answer (injection off, too short, a hook that failed) comes with an empty dict."""
        check_limit(limit)
        prompts = self.store.history(session=session or None, types=["user_prompt"], limit=limit)
        records = self.store.injection_records([e.id for e in prompts])
        return [(e, records.get(e.id, {})) for e in prompts]

    def injection_of(self, ref: str) -> dict[str, Any] | None:
        """What one prompt was told (None if nothing was recorded for it)."""
        return self.store.injection_records([self.get(ref).id]).get(self.get(ref).id)

    def injected_into(self, ref: str, limit: int = 20) -> list[tuple[Event, dict[str, Any]]]:
        """Prompts that were shown this memory (in either tier), newest first, with their records."""
        check_limit(limit)
        ids = self.store.prompts_shown(self.get(ref).id, limit)
        records = self.store.injection_records(ids)
        events = {e.id: e for e in self.store.by_ids(ids)}
        return [(events[i], records[i]) for i in ids if i in events and i in records]

    def count_matches(self, query: str) -> int:
        """Events holding every word of ``query`` (up to ``store.browse.COUNT_CAP`` + 1): a search's total."""
        from memlane.store.fulltext import parse_query

        words, trigrams, _short = parse_query(check_query(query))
        return self.store.count_matches(words, trigrams)

    # ---- knowledge (entries, tasks, resolutions: memlane.knowledge) ---------------------------

    def catch_up(self, budget_s: float | None = None) -> Any:
        """Project what the derived tables have not read yet (the daemon does this in the background; a CLI
        read calls it so its answer is current). A ``knowledge.projection.Progress``."""
        from memlane import derived

        progress = derived.catch_up(self.store, budget_s=budget_s)
        if progress.done:
            derived.settle(self.store)  # usage, levels, insights from what is not in the log (the graduation job's)
        return progress

    def rebuild(self, only: Sequence[str] = ()) -> dict[str, int]:
        """Recreate derived tables from the event log (all, or the owners named); events read per owner."""
        from memlane import derived

        known = derived.names()
        for name in only:
            if name not in known:
                raise InputError(f"unknown derived state '{name}' (one of: {', '.join(known)})")
        return derived.rebuild(self.store, only, self.config)

    def replacements(self, event_ids: Sequence[str], *, partial: bool = False) -> dict[str, str]:
        """The effective view: each replaced memory among ``event_ids`` → the memory that replaces it now."""
        return self.store.replacements(event_ids, partial=partial)

    def supersession(self, ref: str) -> dict[str, Any]:
        """What replaced a memory (and why), what replaces it now, what it replaced, its entries."""
        from memlane.knowledge import service

        return service.supersession(self.store, self.get(ref).id)

    def knowledge_stats(self) -> dict[str, dict[str, int]]:
        """What the knowledge model holds, for the stats page: memories and insights per level, insights by type,
        uses by kind, tasks by status, entries and entities by type, edges and replaced memories. Sections that
        are all zero are left out; an empty store gives {}."""
        if self.store.ephemeral:
            return {}
        counts = self.store.knowledge_counts()
        learned = self.learning_stats()
        stats = {
            "memory levels": learned["levels"],
            "insight levels": learned["insight_levels"],
            "insights": learned["insights"],
            "uses": learned["uses"],
            "tasks": self.store.task_counts(),
            "entries": counts["entries"],
            "entities": counts["entities"],
            "supersession": {
                "edges": counts["edges"],
                "memories replaced": counts["superseded"],
                "replaced in part": counts["partly_superseded"],
            },
        }
        return {section: values for section, values in stats.items() if any(values.values())}

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

    # ---- the learning loop (citation usage, levels, insights: memlane.knowledge.learning) -----------------

    def fetched(self, event_ids: Sequence[str], source: str) -> None:
        """Note that these memories were opened in full (``source``: mcp, cli, web), for citation usage and
        graduation. The session is Claude Code's when the reader runs inside one (``CLAUDE_CODE_SESSION_ID``: a
        ``memlane show`` run by Claude, the MCP server). Never fails the read that called it."""
        cfg = self.config.citations
        ids = [i for i in event_ids if i]
        if not ids or not (cfg.enabled and cfg.track_usage) or self.store.ephemeral:
            return
        session = os.environ.get("CLAUDE_CODE_SESSION_ID") or None
        try:
            self.store.record_fetch(ids, source, session)
        except Exception as exc:  # noqa: BLE001 - a locked or read-only store must not cost the user the read
            log("memory", "warning", f"fetch of {len(ids)} memory(ies) not counted: {exc!r}")

    def usage(self, ref: str, limit: int = 20) -> dict[str, Any]:
        """How one memory has been used: counts by kind (injected, listed, fetched, cited), its level with the
        counters it was judged on, the sessions that cited it and the sessions that used it at all, and the
        insights it is a source of."""
        check_limit(limit)
        event = self.get(ref)
        level = self.store.levels_of([event.id]).get(event.id)
        insight_ids = self.store.insights_of_events([event.id]).get(event.id, [])
        return {
            "counts": self.store.usage_counts(event.id),
            "level": level or {"level": 0, "reason": "not used yet"},
            "cited_in": self.store.citing_sessions(event.id, ("cited",), limit),
            "used_in": self.store.citing_sessions(event.id, ("injected", "fetched", "cited"), limit),
            "insights": self.store.list_insights(ids=insight_ids, limit=limit),
        }

    def popular(
        self, limit: int = 10, kinds: Sequence[str] = ("cited",), session: str | None = None
    ) -> list[dict[str, Any]]:
        """Memories by how often they were used in these ways (citations-system §8.2), each with its event."""
        from memlane.store.learning import USAGE_KINDS

        check_limit(limit)
        for kind in kinds:
            if kind not in USAGE_KINDS:
                raise InputError(f"unknown use '{kind}' (one of: {', '.join(USAGE_KINDS)})")
        rows = self.store.popular(list(kinds) or list(USAGE_KINDS), limit, session or None)
        events = {e.id: e for e in self.store.by_ids([r["event_id"] for r in rows])}
        levels = self.store.levels_of(list(events))
        out = []
        for row in rows:
            if row["event_id"] in events:
                event = events[row["event_id"]]
                level = levels.get(event.id, {}).get("level", 0)
                out.append({**row, "event": event, "level": level})
        return out

    def usage_by_session(self, limit: int = 20) -> list[dict[str, Any]]:
        """Per session, latest first: memories it was given (full and index tier), fetched and cited."""
        check_limit(limit)
        return self.store.usage_by_session(limit)

    def learned(self, event_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Level and best insight of each of these events that has one (search results, injection, MCP)."""
        return self.store.learned(event_ids)

    def insights(
        self,
        *,
        types: Sequence[str] = (),
        min_level: int = 0,
        limit: int = 50,
        query: str | None = None,
        engine: Any = None,
    ) -> list[dict[str, Any]]:
        """Insights, highest level first (or, with ``query``, those whose evidence search finds, best first), each
        with its sources (event, role, the quoted span)."""
        from memlane.knowledge import insights as rules

        for kind in types:
            if kind not in rules.TYPES:
                raise InputError(f"unknown insight type '{kind}' (one of: {', '.join(rules.TYPES)})")
        if isinstance(min_level, bool) or not isinstance(min_level, int) or not 0 <= min_level <= 4:
            raise InputError(f"level must be 0 to 4, got {min_level!r}")
        check_limit(limit, 10_000)
        if query is None:
            rows = self.store.list_insights(types, min_level, limit)
        else:
            # Search reaches an insight through its evidence: its words are quotes of its source events.
            hits = self.search(query, limit=MAX_LIMIT, engine=engine)
            by_event = self.store.insights_of_events([h.event.id for h in hits])
            order = list(dict.fromkeys(i for h in hits for i in by_event.get(h.event.id, [])))
            found = {r["id"]: r for r in self.store.list_insights(types, min_level, len(order) + 1, ids=order)}
            rows = [found[i] for i in order if i in found][:limit]
        return self._with_sources(rows)

    def _with_sources(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        sources = self.store.insight_sources([r["id"] for r in rows])
        events = {e.id: e for e in self.store.by_ids(sorted({s["event_id"] for v in sources.values() for s in v}))}
        for row in rows:
            row["sources"] = [
                {**s, "cite": events[s["event_id"]].cite, "session_id": events[s["event_id"]].session_id,
                 "ts": events[s["event_id"]].ts}
                for s in sources.get(row["id"], []) if s["event_id"] in events
            ]  # fmt: skip
            anchor = events.get(row["anchor_id"])
            row["cite"] = anchor.cite if anchor else None
        return rows

    def insight(self, ref: str) -> dict[str, Any]:
        """One insight by id (``in-…``, a unique prefix of 6 or more characters) with its sources."""
        ref = ref.strip()
        row = self.store.insight(ref)
        if row is None and len(ref) >= 6:
            found = self.store.insights_by_prefix(ref)
            if len(found) > 1:
                raise InputError(f"'{ref}' names more than one insight: give more of its id")
            row = found[0] if found else None
        if row is None:
            raise NotFoundError(f"no insight '{ref}' in project {self.project.id} (memlane insights lists them)")
        return self._with_sources([row])[0]

    def learning_stats(self) -> dict[str, Any]:
        """Levels (memories and insights at each), uses by kind, insights by type, what the LLM extractor spent."""
        from memlane.knowledge import graduation

        counts = self.store.level_counts()
        used = sum(counts["events"].values())
        events = {graduation.LEVELS[n]: counts["events"].get(n, 0) for n in range(5)}
        events["L0"] = self.store.count() - used + events["L0"]
        by_type: dict[str, int] = {}
        for kind, n in self.store.db.execute("SELECT insight_type, COUNT(*) FROM insights GROUP BY insight_type"):
            by_type[str(kind)] = int(n)
        return {
            "levels": events,
            "used": used,
            "insight_levels": {graduation.LEVELS[n]: counts["insights"].get(n, 0) for n in range(1, 5)},
            "insights": by_type,
            "uses": self.store.usage_totals(),
        }

    def _workflow_links(self, titles: dict[str, str]) -> dict[str, dict[str, Any]]:
        from memlane.knowledge import tasks

        if not titles or self.store.ephemeral:
            return {}
        return tasks.workflow_links(str(self.project.root), self.project.id, titles)

    # ---- endless mode (working set, consolidated memories, continuity: memlane.endless) ---------

    def endless_mode(self) -> tuple[str, str]:
        """(``session`` or ``endless``, where it comes from: ``project`` or ``config``)."""
        from memlane.endless import service

        return service.mode(self.store, self.config)

    def set_endless_mode(self, mode: str) -> dict[str, Any]:
        """Switch the project's mode. Going to endless catches up and consolidates once (within a budget; the
        daemon does the rest); going back to session keeps everything. What was done."""
        from memlane.endless import service

        self._writable()
        service.set_mode(self.store, mode)
        return service.catch_up(self.store, self.config) if mode == "endless" else {}

    def endless_consolidate(self) -> dict[str, Any]:
        """Project new events and consolidate everything queued now (the daemon does it when due)."""
        from memlane.endless import service

        self._writable()
        return service.catch_up(self.store, self.config)

    def endless_status(self, refresh: bool = False) -> dict[str, Any]:
        """Mode, working set, continuity and consolidation; ``refresh``: project new events and recompute the
        working set and scores first (consolidation stays the daemon's, or ``endless_consolidate``'s)."""
        from memlane.endless import service

        if refresh and not self.store.ephemeral:
            self.catch_up(budget_s=service.READ_BUDGET_S)
            service.refresh(self.store, self.config, consolidate=False)
        return service.status(self.store, self.config)

    def working_set(self) -> list[dict[str, Any]]:
        """The working set as the daemon last computed it, best first (``endless.working_set``)."""
        return self.store.working_set() if not self.store.ephemeral else []

    def consolidated(self, query: str | None = None, limit: int = 20, *, sources: bool = False) -> list[dict[str, Any]]:
        """Consolidated memories: matching ``query`` (best first) or those of the most sessions; each with its cited
        facts and, with ``sources``, its source event ids (what the learning loop maps to L4 knowledge)."""
        from memlane.endless import service

        if query is not None:
            check_query(query)
        check_limit(limit, 10_000)
        return service.memories(self.store, query, limit, sources=sources)

    def continuity(self, limit: int = 20, session: str | None = None) -> list[dict[str, Any]]:
        """Sessions with their continuity score against the session before (spec §4.1), latest first."""
        check_limit(limit, 10_000)
        if session is not None:
            session = self.session(session)["id"]
        if not hasattr(self.store, "continuity"):
            return []  # a team server's store: endless state lives in the local one
        return self.store.continuity(limit, session)

    def _writable(self) -> None:
        if self.store.ephemeral:
            raise NoMemoryYet(f"no memory for this project yet ({self.project.root})")

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

    def forget(self, *, reason: str | None = None, **selector: Any) -> int:
        """Purge the selected events for good (events, FTS, outbox), leaving a tombstone.

        ``reason`` names a purge that is not the user forgetting (``reimport``: `import --force` replacing
        what an earlier import stored); only the user's forgets keep history files from bringing events back.
        """
        selector = _forget_selector(selector)
        targets = self.forget_preview(**selector)
        scope, value = _describe(selector)
        return self.purge(targets, reason or scope, value)

    def purge(
        self, targets: Sequence[tuple[str, str]], scope: str, selector: str, *, keep_derived: bool = False
    ) -> int:
        """Purge ``(event id, type)`` pairs for good — events, full text, outbox, vectors and the preferences
        learned from purged prompts — with one tombstone (``scope``/``selector`` say why, never what).

        What the knowledge model derived from them goes too (``reset_derived``: projected again from what is
        left), unless ``keep_derived`` (pruning for size, not privacy: the rows of each purged event go with it by
        ``ON DELETE CASCADE``, and the rest stays instead of being projected again every time)."""
        count = self.store.forget(targets, scope, selector)
        if not keep_derived:
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


def check_tool_filters(
    tool: object = None, file: object = None, failed: object = False, types: Sequence[str] | None = None
) -> dict[str, Any]:
    """The tool-history filters that are set, checked (empty when none is)."""
    out: dict[str, Any] = {}
    for name, value in (("tool", tool), ("file", file)):
        if value is None or value == "":
            continue
        if not isinstance(value, str) or not value.strip() or len(value) > 1000 or "\0" in value:
            raise InputError(f"{name} must be a non-empty name of at most 1000 characters, got {str(value)[:60]!r}")
        out[name] = value.strip()
    if not isinstance(failed, bool):
        raise InputError(f"failed must be true or false, got {failed!r}")
    if failed:
        out["failed"] = True
    if out and types and "tool_observation" not in types:
        raise InputError("tool, file and failed select tool calls: add the type tool_observation or leave types out")
    return out


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
    check_window(out.get("since"), out.get("until"))
    return out


def check_window(since: str | None, until: str | None) -> None:
    """``since`` after ``until`` matches nothing: say so instead of answering "no events" (stored forms)."""
    if since and until and since > until:
        raise InputError(
            f"since ({since}) is later than until ({until}): nothing can match; swap them "
            "(an age counts back from now, so 7d is before 1d)"
        )


def _forget_selector(selector: dict[str, Any]) -> dict[str, Any]:
    """``before``/``since``/``until`` as stored timestamps: "7d" compared as a string would select every event."""
    out = dict(selector)
    for bound in ("before", "since", "until"):
        if out.get(bound):
            out[bound] = moments.parse(out[bound], bound)
    if out.get("since") and out.get("until") and out["since"] >= out["until"]:
        raise InputError("since must be earlier than until")
    return out


def _describe(selector: dict[str, Any]) -> tuple[str, str]:
    if selector.get("everything"):
        return "project", "all"
    if selector.get("ids"):
        return "event", ",".join(selector["ids"])
    if selector.get("session"):
        return "session", str(selector["session"])
    if selector.get("since") or selector.get("until"):
        return "range", f"{selector.get('since') or ''}..{selector.get('until') or ''}"
    return "before", str(selector.get("before"))


def _tree_bytes(root: os.PathLike[str] | str) -> int:
    total = 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(folder, name))
            except OSError:
                pass
    return total


def _markdown(event: Event) -> str:
    body = event.content.replace("\n", "\n> ")
    return f"### {event.ts} · {event.type} · [{event.cite}]\n\nsession `{event.session_id}`\n\n> {body}\n\n"
