"""Tasks as event-sourced entities (task-entity-system): state machine, matcher, blocker resolver, fold.

A task named in three sessions is one task: its identity is the canonical key of its title (``task:<title>``,
aliases for the other names the matcher tied to it). Its state is the fold of what the events say, in order:

- what the conversation says: a checklist line (``- [ ] write the CSV importer``, ``- [x] …``), a ``TODO:``
  line, "<task> is done", "started <task>", "<task> is blocked by <what>" (status phrases only for a task the
  matcher finds with high confidence: they never create one);
- what a person set by hand: ``task_update`` events (``memlane tasks add|update``, MCP ``mem-tasks``).

The state machine (§2.3) is enforced on both. pending → in_progress → done; blocked needs a blocker; done has
none; pending → done directly is not allowed. A hand-made change that breaks it is refused before anything is
stored (``TaskError``, one line). A change read from the conversation cannot be refused, so the fold records it
as ``rejected`` in the task's history and, for pending → done, takes the task to in_progress instead (§5.2).

The matcher scores titles by edit distance of their sorted words: ≥ 0.92 and 0.03 clear of the next candidate
is *high* (the same task), ≥ 0.75 *suggested* (shown, never merged), else *none*. The blocker resolver turns
"blocked by …" text into entity references: a URL, a Jira key or a GitHub issue becomes an artifact, a task the
matcher finds with high confidence the task, anything else a condition (with the suggested task, if any, as a
``blocked_by_suggested`` edge); it never creates a stub task. A condition whose text later becomes a task's
title resolves to it (``resolves_to``). When a blocker is done, a task it blocked with nothing else open goes
back to in_progress (``unblocked``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memlane.errors import InputError, NotFoundError
from memlane.knowledge.text import entity_id, entity_key, squash, title_key
from memlane.store.db import Event, Store

STATUSES = ("pending", "in_progress", "blocked", "done", "cancelled")
OPEN = ("pending", "in_progress", "blocked")
PRIORITIES = ("low", "medium", "high", "critical")
TRANSITIONS: dict[str, tuple[str, ...]] = {
    "pending": ("in_progress", "blocked", "cancelled"),
    "in_progress": ("pending", "blocked", "done", "cancelled"),
    "blocked": ("in_progress", "pending", "cancelled"),
    "done": ("in_progress",),
    "cancelled": ("pending", "in_progress"),
}
HIGH, GAP, SUGGEST = 0.92, 0.03, 0.75  # the matcher's thresholds (context.md §4.4)
MAX_TITLE = 160


class TaskError(InputError):
    """A task change the state machine does not allow; the message says what to do instead."""


def check_status(status: str) -> str:
    if status not in STATUSES:
        raise InputError(f"unknown task status '{status}' (one of: {', '.join(STATUSES)})")
    return status


def check_priority(priority: str) -> str:
    if priority not in PRIORITIES:
        raise InputError(f"unknown priority '{priority}' (one of: {', '.join(PRIORITIES)})")
    return priority


def check_transition(title: str, current: str, target: str, open_blockers: int) -> None:
    """Raise ``TaskError`` if ``current`` → ``target`` is not allowed with this many open blockers after it."""
    name = f"task '{title}'"
    if target == "blocked" and open_blockers == 0:
        raise TaskError(f"{name}: a blocked task needs a blocker (add --blocker TEXT)")
    if target == "done" and open_blockers:
        raise TaskError(f"{name} still has {open_blockers} open blocker(s): it cannot be done")
    if target == current:
        return
    if target in TRANSITIONS[current]:
        return
    if current == "pending" and target == "done":
        raise TaskError(f"{name} is pending: start it first (--status in_progress), then mark it done")
    if current == "blocked" and target == "done":
        raise TaskError(f"{name} is blocked: unblock it first (--status in_progress), then mark it done")
    raise TaskError(f"{name} cannot go from {current} to {target} (from {current}: {', '.join(TRANSITIONS[current])})")


# ---- the matcher -------------------------------------------------------------------------------------------


def _sorted_words(text: str) -> str:
    return " ".join(sorted(title_key(text).split()))


def similarity(a: str, b: str) -> float:
    """1 - edit distance / longer length, over the titles' sorted words (word order does not matter)."""
    x, y = _sorted_words(a), _sorted_words(b)
    if not x or not y:
        return 0.0
    if x == y:
        return 1.0
    longest = max(len(x), len(y))
    try:
        import edlib

        codes: dict[str, int] = {}
        for ch in x + y:
            codes.setdefault(ch, len(codes) % 255 + 1)
        distance = int(edlib.align(bytes(codes[c] for c in x), bytes(codes[c] for c in y), mode="NW")["editDistance"])
    except ImportError:
        from difflib import SequenceMatcher

        return round(SequenceMatcher(None, x, y).ratio(), 4)
    return round(1 - distance / longest, 4)


def same_words(a: str, b: str) -> bool:
    """Whether two close titles differ only in word forms (``importer``/``importers``, ``search``/``searching``):
    every word of one has a word in the other sharing its first four letters, and they hold the same numbers
    (``deploy api v1`` and ``deploy api v2`` are two tasks, however similar)."""
    x, y = set(title_key(a).split()), set(title_key(b).split())
    if {w for w in x if any(c.isdigit() for c in w)} != {w for w in y if any(c.isdigit() for c in w)}:
        return False

    def covered(words: set[str], other: set[str]) -> bool:
        return all(w in other or any(len(w) >= 4 and len(o) >= 4 and w[:4] == o[:4] for o in other) for w in words)

    return covered(x - y, y) and covered(y - x, x)


@dataclass
class Match:
    task: dict[str, Any] | None
    confidence: str  # high | suggested | none
    score: float = 0.0
    candidates: list[tuple[str, float]] = field(default_factory=list)


class TaskMatcher:
    """Finds the task a title names (strict: only a clear best match is *high*)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._tasks: list[dict[str, Any]] | None = None

    def tasks(self) -> list[dict[str, Any]]:
        if self._tasks is None:
            self._tasks = self.store.entities("task", limit=100_000)
        return self._tasks

    def forget(self) -> None:
        """Tasks were added or changed: read them again on the next match."""
        self._tasks = None

    def match(self, title: str, *, open_only: bool = True) -> Match:
        exact = self.store.entity_by_key("task", entity_key("task", title))
        if exact is not None:
            return Match(exact, "high", 1.0)
        scored = []
        for task in self.tasks():
            if open_only and task["state"].get("status") not in OPEN:
                continue
            scored.append((similarity(title, task["title"]), task["id"], task))
        scored.sort(key=lambda s: (-s[0], s[1]))
        candidates = [(tid, score) for score, tid, _ in scored[:3]]
        if not scored or scored[0][0] < SUGGEST:
            return Match(None, "none", scored[0][0] if scored else 0.0, candidates)
        top = scored[0]
        clear = len(scored) == 1 or top[0] - scored[1][0] >= GAP
        if top[0] >= HIGH and clear and same_words(title, top[2]["title"]):
            return Match(top[2], "high", top[0], candidates)
        return Match(top[2], "suggested", top[0], candidates)


# ---- what the conversation says ----------------------------------------------------------------------------


@dataclass
class Mention:
    """A task named in a prompt or an answer: its title, what it says of its status, the quoted line."""

    title: str
    status: str | None  # pending | in_progress | done | blocked | None (named only)
    kind: str  # checklist | todo | status
    quote: str
    blockers: list[str] = field(default_factory=list)


_CHECK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[( |x|X)\]\s+(.+?)\s*$", re.MULTILINE)
_TODO = re.compile(r"^\s*(?:[-*+]\s+)?TODO(?:\([^)]*\))?\s*[:\-]\s*(.+?)\s*$", re.MULTILINE)
_BLOCKED_SUFFIX = re.compile(r"\s*[(\[]?\s*(?:blocked|waiting)\s+(?:by|on|for)\s+(.+?)[)\]]?\s*$", re.IGNORECASE)
_TITLE = r"[\"'“‘`]?(?P<t>[^.;:!?\n\"”’`]{3,120}?)[\"'”’`]?"
_DONE = [
    re.compile(rf"\b(?:finished|completed|done with|closed)\s+(?:the\s+)?(?:task\s+)?{_TITLE}\s*(?:[.;!\n]|$)", re.I),
    re.compile(
        rf"(?:^|[.;!\n]\s*)(?:the\s+)?(?:task\s+)?{_TITLE}\s+(?:is|are)\s+(?:now\s+)?(?:done|finished|complete|completed)\b",
        re.I,
    ),
]
_STARTED = [
    re.compile(
        rf"\b(?:started|starting|began|beginning|working on)\s+(?:on\s+)?(?:the\s+)?(?:task\s+)?{_TITLE}"
        r"\s*(?:[.;!\n]|$)",
        re.I,
    ),
]
_BLOCKED = re.compile(
    rf"(?:^|[.;!\n]\s*)(?:the\s+)?(?:task\s+)?{_TITLE}\s+(?:is|are)\s+(?:still\s+)?blocked\s+(?:by|on)\s+(?P<b>[^.;!\n]{{2,120}})",
    re.I,
)


def mentions(event: Event) -> list[Mention]:
    """The tasks a prompt or an answer names (see the module note for which forms count)."""
    if event.type not in ("user_prompt", "agent_response"):
        return []
    text = event.content
    out: list[Mention] = []
    for box, line in _CHECK.findall(text):
        title, blockers = _split_blockers(line)
        status = "done" if box.lower() == "x" else ("blocked" if blockers else "pending")
        if _ok_title(title):
            out.append(Mention(title, status, "checklist", line, blockers))
    for line in _TODO.findall(text):
        title, blockers = _split_blockers(line)
        if _ok_title(title):
            out.append(Mention(title, "blocked" if blockers else "pending", "todo", line, blockers))
    for pattern, status in [*((p, "done") for p in _DONE), *((p, "in_progress") for p in _STARTED)]:
        for m in pattern.finditer(text):
            if _ok_title(_title(m.group("t"))):
                out.append(Mention(_title(m.group("t")), status, "status", m.group(0).strip(" .;!\n")))
    for m in _BLOCKED.finditer(text):
        if _ok_title(_title(m.group("t"))):
            quote = m.group(0).strip(" .;!\n")
            out.append(Mention(_title(m.group("t")), "blocked", "status", quote, [m.group("b").strip()]))
    return out


_TASK_WORD = re.compile(r"^(?:the\s+)?(?:task|todo|item)\s+|\s+(?:task|todo|item)$", re.IGNORECASE)


def _title(text: str) -> str:
    """A status phrase's task name without "the … task" around it."""
    return _TASK_WORD.sub("", text.strip()).strip()


def _split_blockers(line: str) -> tuple[str, list[str]]:
    found = _BLOCKED_SUFFIX.search(line)
    if not found:
        return line.strip().rstrip("."), []
    return line[: found.start()].strip().rstrip("."), [found.group(1).strip()]


def _ok_title(title: str) -> bool:
    words = title_key(title).split()
    return 1 <= len(words) <= 20 and len(title) <= MAX_TITLE and any(len(w) > 2 for w in words)


# ---- the blocker resolver ----------------------------------------------------------------------------------

_URL = re.compile(r"https?://[^\s)>\]]+")
_JIRA = re.compile(r"\b([A-Z][A-Z0-9]{1,9}-\d+)\b")
_GH = re.compile(r"(?:\b([\w.-]+/[\w.-]+))?#(\d+)\b")
_TASK_REF = re.compile(r"^(?:task:)?(task-[0-9a-f]{4,10})$")


def artifact_key(text: str) -> tuple[str, str] | None:
    """(canonical key, title) of a strong external reference in ``text`` (§2.2), or None."""
    from memlane.store.keys import sha256_hex

    url = _URL.search(text)
    if url:
        return f"art:url:{sha256_hex(url.group(0))[:12]}", url.group(0)
    jira = _JIRA.search(text)
    if jira:
        return f"art:jira:{jira.group(1)}", jira.group(1)
    gh = _GH.search(text)
    if gh:
        repo = (gh.group(1) or "").lower()
        return f"art:gh_issue:{repo}:{gh.group(2)}", f"{gh.group(1) + '#' if gh.group(1) else '#'}{gh.group(2)}"
    return None


# ---- the fold ----------------------------------------------------------------------------------------------


class TaskFold:
    """Applies task changes to the entities, edges and history tables (inside the projector's transaction)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.matcher = TaskMatcher(store)

    # -- entities --

    def get_or_create(
        self, entity_type: str, key: str, title: str, event: Event, state: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], bool]:
        found = self.store.entity_by_key(entity_type, key)
        if found is not None:
            return found, False
        entity = {
            "id": entity_id(entity_type, key),
            "entity_type": entity_type,
            "canonical_key": key,
            "title": title[:MAX_TITLE],
            "title_norm": title_key(title),
            "state": state or {},
            "first_event_id": event.id,
            "last_event_id": event.id,
            "created_ts": event.ts,
            "updated_ts": event.ts,
        }
        self.store.put_entity(entity)
        return entity, True

    def save(self, task: dict[str, Any], event: Event) -> None:
        task["last_event_id"] = event.id
        task["updated_ts"] = max(task["updated_ts"], event.ts)
        self.store.put_entity(task)
        self.matcher.forget()

    def history(self, task: dict[str, Any], event: Event, kind: str, **row: Any) -> None:
        idx = self.store.next_history_idx(task["id"], event.seq)
        self.store.add_task_history(
            task["id"], event.seq, idx, {"event_id": event.id, "ts": event.ts, "kind": kind, **row}
        )

    def task_for(
        self, title: str, event: Event, *, create: bool, initial: str = "pending"
    ) -> tuple[dict[str, Any] | None, Match]:
        """The task ``title`` names: high confidence → that task (the title becomes an alias); otherwise a new
        one if ``create`` (a suggested match is linked as ``similar_to``, never merged)."""
        match = self.matcher.match(title)
        if match.confidence == "high" and match.task is not None:
            key = entity_key("task", title)
            if key != match.task["canonical_key"]:
                self.store.add_alias("task", key, match.task["id"])
            return match.task, match
        if not create:
            return None, match
        key = entity_key("task", title)
        status = "in_progress" if initial == "in_progress" else "pending"
        task, _ = self.get_or_create(
            "task", key, title, event, {"status": status, "priority": "medium", "blockers": []}
        )
        self.history(task, event, "created", to_status=status, detail={"title": title, "confidence": match.confidence})
        self.matcher.forget()
        if match.confidence == "suggested" and match.task is not None:
            self.store.add_edge(
                ("entity", task["id"]),
                "similar_to",
                ("entity", match.task["id"]),
                meta={"confidence": "suggested", "score": match.score},
                event_id=event.id,
                ts=event.ts,
            )
        self._resolve_conditions(task, event)
        return task, match

    def _resolve_conditions(self, task: dict[str, Any], event: Event) -> None:
        """A condition named like this task is resolved to it (``resolves_to``)."""
        cond = self.store.entity_by_key("condition", entity_key("condition", task["title"]))
        if cond is not None and self.store.add_edge(
            ("entity", cond["id"]),
            "resolves_to",
            ("entity", task["id"]),
            meta={"resolution_type": "exact_match", "confidence": 1.0, "resolved_at": event.ts},
            event_id=event.id,
            ts=event.ts,
        ):
            self._reopen_check_all(cond["id"], event)

    # -- blockers --

    def resolve_blocker(self, text: str, event: Event, task_id: str) -> dict[str, Any]:
        """A ``BlockerRef`` for ``text`` (see the module note), creating the artifact or condition it names."""
        text = squash(text).rstrip(".")
        ref = _TASK_REF.match(text.lower())
        if ref:
            found = self.store.entities_by_prefix(ref.group(1), "task")
            if len(found) == 1:
                return {"kind": "task", "entity_id": found[0]["id"], "raw_text": text, "confidence": "high"}
        art = artifact_key(text)
        if art is not None:
            entity, _ = self.get_or_create("artifact", art[0], art[1], event, {"open": True})
            return {"kind": "artifact", "entity_id": entity["id"], "raw_text": text, "confidence": "high"}
        match = self.matcher.match(text)
        if match.confidence == "high" and match.task is not None and match.task["id"] != task_id:
            return {"kind": "task", "entity_id": match.task["id"], "raw_text": text, "confidence": "high"}
        cond, _ = self.get_or_create("condition", entity_key("condition", text), text, event, {"met": False})
        out: dict[str, Any] = {
            "kind": "condition",
            "entity_id": cond["id"],
            "raw_text": text,
            "confidence": match.confidence,
        }
        if match.confidence == "suggested" and match.task is not None and match.task["id"] != task_id:
            out["suggested"] = match.task["id"]
        out["candidates"] = [c for c in match.candidates if c[0] != task_id]
        return out

    def set_blockers(
        self, task: dict[str, Any], refs: list[dict[str, Any]], event: Event, mode: str = "replace"
    ) -> None:
        """``mode=replace``: the task's blockers become ``refs``; ``suggest``: only suggestions are added."""
        src = ("entity", task["id"])
        if mode == "replace":
            self.store.replace_edges_from(
                src,
                "blocked_by",
                [
                    (
                        ("entity", r["entity_id"]),
                        {"mode": "replace", "raw_text": r["raw_text"], "confidence": r["confidence"]},
                    )
                    for r in refs
                ],
                event_id=event.id,
                ts=event.ts,
            )
            task["state"]["blockers"] = refs
        for r in refs:
            if r.get("suggested"):
                self.store.add_edge(
                    src,
                    "blocked_by_suggested",
                    ("entity", r["suggested"]),
                    meta={"mode": "suggest", "raw_text": r["raw_text"]},
                    event_id=event.id,
                    ts=event.ts,
                )
                suggestions = task["state"].setdefault("blocker_suggestions", [])
                if r["suggested"] not in suggestions:
                    suggestions.append(r["suggested"])
        self.history(task, event, "blockers", detail={"mode": mode, "blockers": [r["raw_text"] for r in refs]})

    def open_blockers(self, task_id: str) -> list[dict[str, Any]]:
        return [b for b in self.store.effective_blockers(task_id) if is_open(b["entity"])]

    # -- status --

    def transition(self, task: dict[str, Any], target: str, event: Event, *, auto: bool, reason: str = "") -> bool:
        """Apply ``target`` if the state machine allows it; otherwise record ``rejected`` (and, read from the
        conversation, pending → done becomes in_progress). True if the status changed."""
        current = task["state"].get("status", "pending")
        if target == current:
            return False
        try:
            check_transition(task["title"], current, target, len(self.open_blockers(task["id"])))
        except TaskError as exc:
            self.history(task, event, "rejected", from_status=current, to_status=target, detail={"reason": str(exc)})
            if auto and current == "pending" and target == "done":
                return self.transition(task, "in_progress", event, auto=True, reason="corrected from done")
            return False
        if target != "blocked" and current == "blocked":
            self.store.delete_edges_from(task["id"], "blocked_by")
            task["state"]["blockers"] = []
        task["state"]["status"] = target
        self.history(
            task, event, "status", from_status=current, to_status=target, detail={"reason": reason} if reason else {}
        )
        if target in ("done", "cancelled"):
            self.save(task, event)
            self._unblock_dependents(task["id"], event)
        return True

    def _unblock_dependents(self, blocker_id: str, event: Event) -> None:
        for task_id in self.store.tasks_blocked_by(blocker_id):
            self._reopen_check(task_id, event)

    def _reopen_check_all(self, condition_id: str, event: Event) -> None:
        for task_id in self.store.tasks_blocked_by(condition_id):
            self._reopen_check(task_id, event)

    def _reopen_check(self, task_id: str, event: Event) -> None:
        task = self.store.entity(task_id)
        if task is None or task["state"].get("status") != "blocked" or self.open_blockers(task_id):
            return
        self.store.delete_edges_from(task_id, "blocked_by")
        task["state"]["blockers"] = []
        task["state"]["status"] = "in_progress"
        self.history(task, event, "unblocked", from_status="blocked", to_status="in_progress")
        self.save(task, event)

    # -- the two sources --

    def observe(self, mention: Mention, event: Event, evidence: dict[str, Any]) -> dict[str, Any] | None:
        """A task named in the conversation (never refused: what breaks the state machine is recorded)."""
        create = mention.kind in ("checklist", "todo")
        task, _match = self.task_for(mention.title, event, create=create)
        if task is None:
            return None
        self.store.add_edge(
            ("event", event.id),
            "mentions",
            ("entity", task["id"]),
            meta={"kind": mention.kind, "evidence": evidence},
            event_id=event.id,
            ts=event.ts,
        )
        if mention.status == "blocked":
            refs = [self.resolve_blocker(b, event, task["id"]) for b in mention.blockers] or [
                self._placeholder(task, event)
            ]
            self.set_blockers(task, refs, event, "replace" if evidence.get("method") != "none" else "suggest")
            self.transition(task, "blocked", event, auto=True)
        elif mention.status in ("in_progress", "done") or (mention.status == "pending" and mention.kind == "status"):
            self.transition(task, mention.status, event, auto=True)
        self.save(task, event)
        return task

    def _placeholder(self, task: dict[str, Any], event: Event) -> dict[str, Any]:
        """ "X is blocked" with no blocker named: a placeholder condition keeps the invariant (context §5.1)."""
        text = f"Unknown blocker for {task['title']}"
        cond, _ = self.get_or_create(
            "condition", entity_key("condition", text), text, event, {"met": False, "auto_placeholder": True}
        )
        return {"kind": "condition", "entity_id": cond["id"], "raw_text": text, "confidence": "none"}

    def apply_update(self, payload: dict[str, Any], event: Event) -> dict[str, Any] | None:
        """A ``task_update`` event (checked when it was made; a change that no longer fits is recorded as
        rejected, never raised)."""
        op = payload.get("op")
        task: dict[str, Any] | None
        if op == "add":
            initial = "in_progress" if payload.get("status") == "in_progress" else "pending"
            task, _ = self.task_for(str(payload.get("title") or ""), event, create=True, initial=initial)
        else:
            task = self.store.entity(str(payload.get("task") or ""))
        if task is None:
            return None
        self.store.add_edge(
            ("event", event.id),
            "mentions",
            ("entity", task["id"]),
            meta={"kind": "manual"},
            event_id=event.id,
            ts=event.ts,
        )
        if payload.get("priority") and payload["priority"] != task["state"].get("priority"):
            self.history(
                task, event, "priority", detail={"from": task["state"].get("priority"), "to": payload["priority"]}
            )
            task["state"]["priority"] = payload["priority"]
        if payload.get("note") is not None:
            task["state"]["note"] = payload["note"]
        if payload.get("blockers") is not None:
            refs = [self.resolve_blocker(b, event, task["id"]) for b in payload["blockers"]]
            self.set_blockers(task, refs, event, "replace")
        if payload.get("status"):
            self.transition(task, payload["status"], event, auto=False, reason=str(payload.get("note") or ""))
        self.save(task, event)
        return task


def is_open(entity: dict[str, Any] | None) -> bool:
    """Whether a blocker still blocks: a task not done or cancelled, a condition not met, any artifact."""
    if entity is None:
        return False
    state = entity.get("state") or {}
    if entity["entity_type"] == "task":
        return state.get("status") not in ("done", "cancelled")
    if entity["entity_type"] == "condition":
        return not state.get("met")
    return bool(state.get("open", True))


# ---- reading tasks -----------------------------------------------------------------------------------------


def find_task(store: Store, ref: str) -> dict[str, Any]:
    """A task by id (``task-3f9a1c2b7d``, a unique prefix of 4+ characters) or by its title."""
    ref = ref.strip()
    if not ref:
        raise InputError("name a task: its id (task-…) or its title")
    lowered = ref.lower().removeprefix("task:")
    if lowered.startswith("task-") and len(lowered) >= 9:
        found = store.entities_by_prefix(lowered, "task")
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise InputError(f"'{ref}' names more than one task: give more of its id")
    task = store.entity_by_key("task", entity_key("task", ref))
    if task is None:
        raise NotFoundError(f"no task '{ref}' (see `memlane tasks list`)")
    return task


def task_view(store: Store, task: dict[str, Any], *, full: bool = False) -> dict[str, Any]:
    """A task as the CLI, MCP and HTTP show it."""
    state = task["state"]
    view: dict[str, Any] = {
        "id": task["id"],
        "title": task["title"],
        "status": state.get("status", "pending"),
        "priority": state.get("priority", "medium"),
        "updated": task["updated_ts"],
        "created": task["created_ts"],
        "blockers": [
            {
                "id": b["effective_id"],
                "kind": b["entity"]["entity_type"] if b["entity"] else "?",
                "title": b["entity"]["title"] if b["entity"] else b["meta"].get("raw_text", ""),
                "open": is_open(b["entity"]),
                **({"resolved_from": b["blocker_id"]} if b["resolved"] else {}),
            }
            for b in store.effective_blockers(task["id"])
        ],
    }
    if state.get("note"):
        view["note"] = state["note"]
    if not full:
        return view
    view["aliases"] = [a for a in store.aliases(task["id"]) if a != task["canonical_key"]]
    view["suggested_blockers"] = [
        {"id": e["dst_id"], "title": (store.entity(e["dst_id"]) or {}).get("title", "")}
        for e in store.edges_from(task["id"], "blocked_by_suggested")
    ]
    view["similar"] = [
        {
            "id": e["dst_id"],
            "title": (store.entity(e["dst_id"]) or {}).get("title", ""),
            "score": e["meta"].get("score"),
        }
        for e in store.edges_from(task["id"], "similar_to")
    ] + [
        {
            "id": e["src_id"],
            "title": (store.entity(e["src_id"]) or {}).get("title", ""),
            "score": e["meta"].get("score"),
        }
        for e in store.edges_to(task["id"], "similar_to")
    ]
    view["blocks"] = [
        {"id": t, "title": (store.entity(t) or {}).get("title", "")} for t in store.tasks_blocked_by(task["id"])
    ]
    view["history"] = store.task_history(task["id"])
    mentions = store.edges_to(task["id"], "mentions")
    events = {e.id: e for e in store.by_ids([m["src_id"] for m in mentions])}
    view["events"] = [
        {
            "citation": events[m["src_id"]].cite,
            "type": events[m["src_id"]].type,
            "ts": events[m["src_id"]].ts,
            "session_id": events[m["src_id"]].session_id,
            "kind": m["meta"].get("kind"),
        }
        for m in mentions
        if m["src_id"] in events
    ]
    view["sessions"] = sorted({e["session_id"] for e in view["events"]} - {"memlane:tasks"})
    return view


def list_tasks(store: Store, statuses: Sequence[str] | None = None, limit: int = 100) -> list[dict[str, Any]]:
    rows = [task_view(store, t) for t in store.entities("task", limit=100_000)]
    if statuses:
        rows = [r for r in rows if r["status"] in statuses]
    order = {s: i for i, s in enumerate(("in_progress", "blocked", "pending", "done", "cancelled"))}
    rows.sort(key=lambda r: (order.get(r["status"], 9), -_stamp(r["updated"]), r["id"]))
    return rows[:limit]


def _stamp(ts: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def workflow_links(root: str, project_id: str, titles: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The workflow feature's tasks that are the same tasks: ``titles`` maps task id → title; the result maps
    task id → {"memory", "task", "name", "status"} for those whose workflow task has the same canonical title
    (or whose workflow id is the title). Read-only: progress.json stays the workflow feature's own file."""
    from memlane.workflow import progress
    from memlane.workflow import store as wstore
    from memlane.workflow.store import WorkflowError

    memory_id = wstore.resolve(root, project_id)
    if memory_id is None:
        return {}
    try:
        data = progress.load(memory_id)
    except (WorkflowError, OSError):
        return {}
    by_key: dict[str, tuple[str, dict[str, Any]]] = {}
    for tid, item in (data.get("tasks") or {}).items():
        by_key.setdefault(title_key(str(item.get("name") or "")), (tid, item))
        by_key.setdefault(title_key(tid), (tid, item))
    out = {}
    for task_id, title in titles.items():
        found = by_key.get(title_key(title))
        if found is not None:
            tid, item = found
            out[task_id] = {"memory": memory_id, "task": tid, "name": item.get("name"), "status": item.get("status")}
    return out
