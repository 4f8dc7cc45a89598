"""Finding history files for a project, and importing them into its store — once.

Every file is confirmed by the working directory it records; a file recorded elsewhere is reported
and left alone (with ``every=True`` it goes to the project it belongs to). Events keep their original
timestamps and session ids and get the same dedupe keys the hooks would give them, so re-importing
adds nothing and importing a session the hooks already captured adds only what the hooks never see.
A ledger of (file, size, mtime) lets an unchanged file be skipped without parsing it.

Why one module (~400 lines): discovery, the once-only ledger check and the ``Importer`` that appends,
closes and summarises a session are one procedure a reader follows from top to bottom; the SQL it
needs is in ``store/imports.py``.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from memlane import config, project
from memlane.errors import MemlaneError
from memlane.importers import claude, codex
from memlane.importers.common import ParsedSession
from memlane.logs import log
from memlane.memory import Memory
from memlane.store.db import NewEvent, Store

SOURCES = {"claude": claude, "codex": codex}


class ImportError_(MemlaneError, ValueError):
    """A user-facing import problem (bad --session file, unknown source); one line."""


class Options:
    def __init__(
        self,
        sources: Iterable[str] = ("claude",),
        session_files: Iterable[str] = (),
        every: bool = False,
        sidechains: bool = False,
        force: bool = False,
        dry_run: bool = False,
        limit: int | None = None,
        since: str | None = None,
    ) -> None:
        self.sources = [s for s in sources]
        unknown = [s for s in self.sources if s not in SOURCES]
        if unknown:
            raise ImportError_(f"unknown source {unknown[0]!r} (choose from {', '.join(SOURCES)})")
        self.session_files = [os.path.abspath(p) for p in session_files]
        self.every = every
        self.sidechains = sidechains
        self.force = force
        self.dry_run = dry_run
        self.limit = limit
        self.since = since


class Candidate:
    """A history file, its recorded cwd, and the project that cwd belongs to (None if unconfirmed)."""

    def __init__(
        self, source: str, path: str, cwd: str | None, target: project.Project | None, unreadable: str = ""
    ) -> None:
        self.source = source
        self.path = path
        self.cwd = cwd
        self.target = target
        self.unreadable = unreadable  # why the file could not be read (a dangling symlink, a loop), or ""
        try:
            st = os.stat(path)
            self.size, self.mtime_ns = st.st_size, st.st_mtime_ns
        except OSError:
            self.size, self.mtime_ns = -1, 0


class FileResult:
    def __init__(self, candidate: Candidate, status: str, **fields: Any) -> None:
        self.source = candidate.source
        self.path = candidate.path
        self.cwd = candidate.cwd
        self.project = candidate.target.id if candidate.target else None
        # imported | unchanged | dry-run | other-project | unconfirmed | old | over-limit | unreadable | error
        self.status = status
        self.complete = bool(fields.get("complete", False))  # recorded in the ledger: nothing left out
        self.open_turn = bool(fields.get("open_turn", False))  # ends mid-turn: last answer left for later
        self.session_id: str | None = fields.get("session_id")
        self.first_ts: str | None = fields.get("first_ts")
        self.last_ts: str | None = fields.get("last_ts")
        self.new = int(fields.get("new", 0))  # events the store gains (markers and summary included)
        self.present = int(fields.get("present", 0))
        self.forgotten = int(fields.get("forgotten", 0))  # left out: a forget removed them before
        self.bad_lines = int(fields.get("bad_lines", 0))
        self.bad_line_numbers: list[int] = list(fields.get("bad_line_numbers", []))
        self.skipped: dict[str, int] = dict(fields.get("skipped", {}))
        self.types: dict[str, int] = dict(fields.get("types", {}))
        self.unpaired_tools = int(fields.get("unpaired_tools", 0))
        self.message = str(fields.get("message", ""))

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Report:
    def __init__(self) -> None:
        self.files: list[FileResult] = []
        self.projects: set[str] = set()

    def add(self, result: FileResult) -> None:
        self.files.append(result)
        if result.project and result.status in ("imported", "dry-run", "unchanged"):
            self.projects.add(result.project)

    def total(self, field: str) -> int:
        return sum(int(getattr(f, field)) for f in self.files)

    def by_status(self) -> dict[str, int]:
        return dict(Counter(f.status for f in self.files))

    def skipped(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for f in self.files:
            total.update(f.skipped)
        return dict(total.most_common())

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.by_status(),
            "new_events": self.total("new"),
            "already_present": self.total("present"),
            "forgotten": self.total("forgotten"),
            "bad_lines": self.total("bad_lines"),
            "unpaired_tool_calls": self.total("unpaired_tools"),
            "skipped": self.skipped(),
            "projects": sorted(self.projects),
            "details": [f.as_dict() for f in self.files],
        }


# ---- discovery -----------------------------------------------------------------------------------


def project_paths(proj: project.Project) -> list[str]:
    """The project root and its git worktrees: sessions in any of them are this project's."""
    roots = [proj.root_str]
    worktrees = os.path.join(proj.root_str, ".git", "worktrees")
    try:
        names = os.listdir(worktrees)
    except OSError:
        return roots
    for name in names:
        try:
            with open(os.path.join(worktrees, name, "gitdir"), encoding="utf-8") as fh:
                roots.append(os.path.dirname(fh.read().strip()))
        except OSError:
            continue
    return roots


def owner(cwd: str | None, proj: project.Project, roots: list[str]) -> project.Project | None:
    """The project ``cwd`` belongs to; for a folder that no longer exists, judged by its path."""
    if not cwd:
        return None
    if os.path.isdir(cwd):
        return project.identify(cwd)
    for root in roots:
        if cwd == root or cwd.startswith(root.rstrip(os.sep) + os.sep):
            return proj
    return project.identify(cwd)


def discover(proj: project.Project, options: Options) -> list[Candidate]:
    """History files for ``proj`` (or for every project with ``options.every``), newest first."""
    roots = project_paths(proj)
    found: list[Candidate] = []
    for source in options.sources:
        module = SOURCES[source]
        if options.session_files:
            paths = [p for p in options.session_files if _source_of(p) == source]
        elif source == "claude":
            paths = list(claude.candidate_files(roots, every=options.every))
        else:
            paths = list(codex.candidate_files())
        for path in paths:
            try:
                cwd = module.session_cwd(path)
            except OSError as exc:  # a dangling symlink, a symlink loop, no permission: skip, report
                found.append(Candidate(source, path, None, None, unreadable=exc.strerror or str(exc)))
                continue
            found.append(Candidate(source, path, cwd, owner(cwd, proj, roots)))
    found.sort(key=lambda c: c.mtime_ns, reverse=True)
    return found


_CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}


def _source_of(path: str) -> str:
    """Which importer reads a file given with --session, judged by its first line (a renamed rollout
    is still a rollout); by its name and place only when that line cannot be read."""
    try:
        with open(path, "rb") as fh:
            first = next((raw for raw in fh if raw.strip()), b"")
        line = json.loads(first.decode("utf-8", "replace"))
    except (OSError, ValueError):
        line = None
    if isinstance(line, dict):
        # Codex: {"timestamp", "type", "payload"} lines, or a bare meta object first (older rollouts).
        if line.get("type") in _CODEX_TYPES or isinstance(line.get("payload"), dict):
            return "codex"
        if "id" in line and "type" not in line and "sessionId" not in line:
            return "codex"
        return "claude"
    base = os.path.basename(path)
    if base.startswith("rollout-") or codex.codex_dir() in os.path.abspath(path):
        return "codex"
    return "claude"


# ---- import --------------------------------------------------------------------------------------


class Importer:
    """Imports candidates into their projects' stores, one Memory per project."""

    def __init__(self, proj: project.Project, options: Options, cfg: config.Config | None = None) -> None:
        self.proj = proj
        self.options = options
        self.cfg = cfg or config.load()
        self.memories: dict[str, Memory] = {}

    def close(self) -> None:
        for mem in self.memories.values():
            mem.close()
        self.memories.clear()

    def __enter__(self) -> Importer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def memory(self, target: project.Project) -> Memory:
        if target.id not in self.memories:
            self.memories[target.id] = Memory.open(target.root_str, cfg=self.cfg)
        return self.memories[target.id]

    def select(self, candidates: list[Candidate], report: Report) -> list[Candidate]:
        """Drop files of other projects (reported), unconfirmed ones, old ones; apply --limit."""
        chosen: list[Candidate] = []
        for c in candidates:
            if c.unreadable:
                report.add(FileResult(c, "unreadable", message=f"cannot be read ({c.unreadable}); skipped"))
            elif c.target is None:
                report.add(FileResult(c, "unconfirmed", message="no cwd recorded in the file; not imported"))
            elif c.target.id != self.proj.id and not self.options.every:
                status = "other-project"
                message = f"recorded in {c.cwd} (project {c.target.id})"
                if self.options.session_files:
                    raise ImportError_(
                        f"{c.path} was recorded in {c.cwd}, not in this project ({self.proj.root_str}); "
                        f"run `memlane -C {c.cwd} import --session {c.path}`"
                    )
                report.add(FileResult(c, status, message=message))
            elif self.options.since and c.mtime_ns and _iso_of_ns(c.mtime_ns) < self.options.since:
                report.add(FileResult(c, "old", message="last written before --since"))
            else:
                chosen.append(c)
        if self.options.limit is not None:
            for c in chosen[self.options.limit :]:
                report.add(FileResult(c, "over-limit", message="beyond --limit"))
            chosen = chosen[: self.options.limit]
        return chosen

    def run(self, candidates: list[Candidate], progress: Callable[[Candidate], None] | None = None) -> Report:
        report = Report()
        for c in self.select(candidates, report):
            try:
                report.add(self.one(c))
            except OSError as exc:  # gone or unreadable since discovery: skip it, import the rest
                report.add(FileResult(c, "unreadable", message=f"cannot be read ({exc.strerror or exc}); skipped"))
            except ValueError as exc:
                report.add(FileResult(c, "error", message=f"{type(exc).__name__}: {exc}"))
            if progress:
                progress(c)
        self._learn(report)
        return report

    def _learn(self, report: Report) -> None:
        """Standing preferences stated in imported prompts ("always use pnpm") become learned ones."""
        from memlane.context import preferences

        for project_id in {f.project for f in report.files if f.status == "imported" and f.new and f.project}:
            try:
                preferences.relearn(self.memories[project_id].store, project_id, self.cfg.context.learned_preferences)
            except (OSError, KeyError, sqlite3.Error) as exc:
                log("import", "warning", f"preferences not learned for {project_id}: {exc!r}")

    def one(self, c: Candidate) -> FileResult:
        assert c.target is not None
        if self.options.dry_run:
            return self._dry_run(c)
        mem = self.memory(c.target)
        if not self.options.force and mem.store.import_ledger_entry(c.source, c.path) == (c.size, c.mtime_ns):
            return FileResult(c, "unchanged")
        parsed, events, fields = self._parse(c)
        return self._store(mem, c, parsed, events, fields, "imported")

    def _store(
        self,
        mem: Memory,
        c: Candidate,
        parsed: ParsedSession,
        events: list[NewEvent],
        fields: dict[str, Any],
        status: str,
    ) -> FileResult:
        """Store one session's events (an import, or a dry run into a scratch copy of the session).

        ``new`` is what the store gains: the session's event count after minus before (plus what ``--force``
        dropped first), so the conversation events and, for a session the hooks never saw, its start and end
        markers and its summary; what `history` shows more afterwards. A dry run counts the same way.
        """
        sid = str(parsed.session_id)
        forgotten = mem.store.forgotten()
        kept = [e for e in events if not forgotten.covers(e.session_id, e.ts, e.key())] if forgotten else events
        fields["forgotten"] = len(events) - len(kept)
        before = mem.store.session_event_count(sid)
        if self.options.force:
            before -= self.unimport(mem, parsed)
        live = mem.store.captured_live(sid)
        if kept and not live:
            kept.insert(0, _start_marker(parsed))
        result = mem.store.append(kept)
        if not live and (result.inserted or self.options.force):
            self.close_session(mem, parsed)
            self.resummarize(mem, parsed)
        new = mem.store.session_event_count(sid) - before
        if status == "imported" and fields["complete"]:
            # Only a whole file goes in the ledger: after --since, without --sidechains when it has some,
            # or mid-turn, a later plain import must read it again instead of calling it unchanged.
            mem.store.record_import(c.source, c.path, parsed.session_id, c.size, c.mtime_ns, new)
        return FileResult(c, status, new=new, present=result.duplicates, **fields)

    def _parse(self, c: Candidate) -> tuple[ParsedSession, list[NewEvent], dict[str, Any]]:
        parsed = SOURCES[c.source].parse(c.path, self.cfg, sidechains=self.options.sidechains)
        events = [e for e in parsed.events if not self.options.since or (e.ts or "") >= self.options.since]
        events.sort(key=lambda e: e.ts or "")  # answers are built at the end of their turn: restore time order
        left_out = bool(self.options.since and len(events) < len(parsed.events))
        left_out = left_out or (not self.options.sidechains and parsed.skipped.get("sidechain", 0) > 0)
        fields: dict[str, Any] = {
            "session_id": parsed.session_id,
            "first_ts": parsed.first_ts,
            "last_ts": parsed.last_ts,
            "bad_lines": parsed.bad_count,
            "bad_line_numbers": parsed.bad_lines,
            "skipped": parsed.skipped,
            "types": parsed.counts(),
            "unpaired_tools": parsed.unpaired_tools,
            "complete": not left_out and not parsed.open_turn,
            "open_turn": parsed.open_turn,
        }
        if parsed.open_turn:
            fields["message"] = "ends mid-turn: its last answer is left for a later import"
        return parsed, events, fields

    def _dry_run(self, c: Candidate) -> FileResult:
        """What an import would add, counted by importing into a scratch copy of the session.

        The copy is an in-memory store holding the session's events and the tombstones from the project's
        store (read-only; none is created when there is none), so the count is the import's own, markers
        and summary included, and nothing is written anywhere.
        """
        assert c.target is not None
        parsed, events, fields = self._parse(c)
        with Memory(c.target, self.cfg, Store.empty(c.target.id)) as scratch:
            if os.path.exists(c.target.db_file):
                scratch.store.copy_session_from(c.target.db_file, str(parsed.session_id))
            return self._store(scratch, c, parsed, events, fields, "dry-run")

    def close_session(self, mem: Memory, parsed: ParsedSession) -> None:
        """An imported session gets an end marker at its last event, so it does not count as open forever;
        it moves when the file grows. Not while a turn is still open (the session may be live)."""
        if parsed.open_turn or not parsed.last_ts:
            return
        sid = str(parsed.session_id)
        old = mem.store.imported_markers(sid, "session_end")
        if [r[1] for r in old] == [parsed.last_ts]:
            return
        meta = {"cwd": parsed.cwd, "reason": "imported", "source": "import", "imported": parsed.source}
        content = f"Session ended (imported from {parsed.source}; last activity {parsed.last_ts})"
        end = NewEvent("session_end", sid, content, "import-end", meta, ts=parsed.last_ts)
        mem.store.replace_derived([r[0] for r in old], [end])

    def unimport(self, mem: Memory, parsed: ParsedSession) -> int:
        """--force: remove what earlier imports of this session stored, so it is re-imported cleanly. Not a
        forget of the user's (``reason``): the events are meant to come straight back. Returns how many."""
        ids = mem.store.imported_event_ids(parsed.session_id, parsed.source)
        return mem.forget(ids=ids, reason="reimport") if ids else 0

    def resummarize(self, mem: Memory, parsed: ParsedSession) -> None:
        """One extractive summary per imported session, from all its events, replaced when the file grew
        (unless ``features.session_summary`` is off)."""
        if not self.cfg.features.session_summary:
            return
        from memlane.capture.summary import refresh

        meta = {"cwd": parsed.cwd, "source": "extractive", "imported": parsed.source}
        refresh(mem.store, str(parsed.session_id), "import-summary", meta, ts=parsed.last_ts)


def _start_marker(parsed: ParsedSession) -> NewEvent:
    content = f"Session started (imported from {parsed.source}) in {parsed.cwd or '?'}"
    meta = {"cwd": parsed.cwd, "transcript_path": parsed.path, "source": "import", "imported": parsed.source}
    return NewEvent("session_start", str(parsed.session_id), content, "import-start", meta, ts=parsed.first_ts)


def _iso_of_ns(ns: int) -> str:
    from memlane.importers.common import norm_ts

    return norm_ts(ns / 1e9) or ""


SOURCE_NAMES = {"claude": "Claude Code transcripts", "codex": "Codex rollouts"}


def restore(proj: project.Project, cfg: config.Config | None = None) -> dict[str, int]:
    """Import the project's whole Claude Code and Codex history again (after a repair lost events): the
    dedupe keys match what the hooks stored, so only what the store lacks comes in, and nothing a forget
    removed. Returns the events each source gave back, by name ("Claude Code transcripts": 5)."""
    options = Options(sources=tuple(SOURCES))
    with Importer(proj, options, cfg) as importer:
        report = importer.run(discover(proj, options))
    out = dict.fromkeys(SOURCE_NAMES.values(), 0)
    for f in report.files:
        if f.status == "imported":
            out[SOURCE_NAMES[f.source]] += f.new
    return out
