"""Keeping a project's store within ``storage.max_size_mb`` (reference spec §6.2): prune the oldest
low-value events first, never what something relies on.

Run by the daemon (``daemon/jobs.PruneStores``), or by hand with ``memlane prune``. When the store's live
bytes (``Store.live_bytes``: its pages minus the free ones) exceed the cap, events are purged as ``forget``
purges them (events, full-text rows, embedding jobs and vectors; a tombstone says how many, never what)
until the store is back under 90% of the cap, in rounds, least valuable first (``Store.select_for_prune``):
successful read-only tool output, then other tool output, failed runs and compaction notes, then answers,
then prompts; within each, oldest first. Never pruned: session summaries and start/end markers, anything
from the last ``KEEP_RECENT_DAYS`` days, and ``protected_event_ids``.

``protected_event_ids`` is the one place that says what must stay. Today it protects every event cited
(``mem:xxxxxx``) in the project's rule files (CLAUDE.md and its managed regions, AGENTS.md, …), in its
workflow memory (memory.md, progress.json, session records) and in its context stores (learned
preferences, layer context), and through ``PROTECTORS`` (functions ``(Memory) -> set[event id]``, consulted
by every prune) the learning loop's verified knowledge: memories at L3 or above and the evidence of insights at
L3 or above (``learned_knowledge``).
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from memlane.logs import log
from memlane.memory import Memory

KEEP_RECENT_DAYS = 7  # the last week is never pruned, whatever its kind
TARGET_SHARE = 0.9  # a prune brings the store down to this share of the cap, so it does not run every time
MAX_ROUNDS = 20
ROUND_MIN, ROUND_MAX = 20, 5000  # events per round
MAX_FILE_BYTES = 2_000_000  # a file larger than this is not read for citations
_CITATION = re.compile(r"mem:([0-9a-z]{6,8})(?![0-9a-z])")

Protector = Callable[[Memory], set[str]]


def learned_knowledge(mem: Memory) -> set[str]:
    """The learning loop's verified knowledge: memories at L3 or above, and the evidence of insights at L3 or above
    (docs/learning.md): never pruned, whatever their age."""
    from memlane.knowledge.graduation import NEEDS_EVIDENCE

    return mem.store.event_ids_at_level(NEEDS_EVIDENCE) | mem.store.insight_event_ids(NEEDS_EVIDENCE)


PROTECTORS: list[Protector] = [learned_knowledge]  # "never prune these" sources beyond the cited files


class PruneReport:
    __slots__ = ("after_bytes", "before_bytes", "cap_bytes", "protected", "pruned", "reason", "types")

    def __init__(self, cap_bytes: int, before_bytes: int) -> None:
        self.cap_bytes = cap_bytes
        self.before_bytes = before_bytes
        self.after_bytes = before_bytes
        self.pruned = 0
        self.protected = 0
        self.types: dict[str, int] = {}
        self.reason = ""

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    def line(self) -> str:
        mb = 1024 * 1024
        if not self.pruned:
            return self.reason or f"{self.before_bytes / mb:.1f} MB, within the cap of {self.cap_bytes / mb:.0f} MB"
        kinds = ", ".join(f"{n} {t}" for t, n in sorted(self.types.items(), key=lambda kv: -kv[1]))
        return (
            f"pruned {self.pruned} event(s) ({kinds}): {self.before_bytes / mb:.1f} → {self.after_bytes / mb:.1f} MB "
            f"(cap {self.cap_bytes / mb:.0f} MB; {self.protected} protected)"
        ) + (f"; {self.reason}" if self.reason else "")


def protected_event_ids(mem: Memory) -> set[str]:
    """Ids of the project's events that pruning must keep (see the module docstring)."""
    cites: set[str] = set()
    for path in _cited_files(mem):
        cites |= _citations_in(path)
    ids = mem.store.ids_of_citations(cites) if cites else set()
    for protector in PROTECTORS:
        ids |= protector(mem)  # one that fails stops the prune: better a store over its cap than lost knowledge
    return ids


def _cited_files(mem: Memory) -> Iterator[str]:
    root = mem.project.root_str
    for name in mem.config.context.rule_files:
        path = os.path.join(root, name)
        if os.path.isdir(path):
            for base, _dirs, files in os.walk(path):
                yield from (os.path.join(base, f) for f in sorted(files))
        else:
            yield path
    yield from _workflow_files(mem)
    context = os.path.join(str(mem.project.dir), "context")
    if os.path.isdir(context):
        yield from (os.path.join(context, f) for f in sorted(os.listdir(context)) if f.endswith(".json"))


def _workflow_files(mem: Memory) -> Iterator[str]:
    from memlane.workflow import store

    memory_id = store.resolve(mem.project.root_str, mem.project.id)
    if memory_id is None:
        return
    yield store.file(memory_id, "memory.md")
    yield store.file(memory_id, "progress.json")
    sessions = store.sessions_dir(memory_id)
    if os.path.isdir(sessions):
        yield from (os.path.join(sessions, f) for f in sorted(os.listdir(sessions)))


def _citations_in(path: str) -> set[str]:
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_FILE_BYTES:
            return set()
        with open(path, encoding="utf-8", errors="replace") as fh:
            return set(_CITATION.findall(fh.read()))
    except OSError:
        return set()


def prune(mem: Memory, cap_bytes: int | None = None, *, now: float | None = None) -> PruneReport:
    """Bring the store under ``cap_bytes`` (default ``storage.max_size_mb``; 0 = no cap) as described above."""
    if cap_bytes is None:
        cap_bytes = mem.config.storage.max_size_mb * 1024 * 1024
    report = PruneReport(cap_bytes, mem.store.live_bytes())
    if not cap_bytes or report.before_bytes <= cap_bytes:
        return report
    protected = protected_event_ids(mem)
    report.protected = len(protected)
    before = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime((now or time.time()) - KEEP_RECENT_DAYS * 86400))
    target = int(cap_bytes * TARGET_SHARE)
    live = report.before_bytes
    for _ in range(MAX_ROUNDS):
        if live <= target:
            break
        per_event = live / max(mem.store.count(), 1)
        wanted = min(max(math.ceil((live - target) / per_event), ROUND_MIN), ROUND_MAX)
        targets = mem.store.select_for_prune(wanted, before, protected)
        if not targets:
            report.reason = (
                "nothing more may be pruned (the rest is recent, a summary or marker, or protected): "
                "raise storage.max_size_mb or forget sessions by hand"
            )
            break
        mem.purge(targets, "prune", f"storage.max_size_mb={cap_bytes // (1024 * 1024)}", keep_derived=True)
        for _, kind in targets:
            report.types[kind] = report.types.get(kind, 0) + 1
        report.pruned += len(targets)
        live = mem.store.live_bytes()
    report.after_bytes = live
    if report.pruned:
        log("retention", "info", f"{mem.project.id}: {report.line()}")
    return report
