"""Consolidation: one consolidated memory per long-running topic, from the marks of every event about it.

A topic is a file, a command that failed at least once, the subject of decisions, or a task. Its consolidated
memory (spec §5, §6.2) holds:

- **key facts**: the lines its events said about it, oldest first — an edit's change, an answer's words on it,
  the prompt that asked, a failure's error line, a decision, a task's status — the same line once, the newest
  ``MAX_FACTS`` within ``MAX_SUMMARY`` characters (spec ``maxConsolidatedSize``), each with its source event;
- **sources**: every event that marked it (``consolidated_sources``, kept as long as the events are);
- **confidence**: 0.4, + 0.15 for each session that came back to it (up to three), + 0.1 when an answer
  explains it, + 0.05 when it was changed, at most 0.95;
- its sessions, first and last time, and a search index (words, and trigrams for CJK text).

Extractive by default: no model reads anything. When the user turned an LLM on (``[llm]``), a memory of
``LLM_MIN_SESSIONS`` sessions or more gets the input its key facts would be asked with (``llm_input``, see
``summaries.py``), and when the store keeps a model's answer for that input (``assist.py`` asks, within the
daily budget, outside any transaction), its key facts are the answer's quotes instead (``llm_answer``). Nothing
here calls a model: a memory is a pure function of its topic's marks and the kept answers, so consolidating
again gives the same rows (idempotent), ``memlane rebuild`` reproduces them without a network call, and the
queue (``endless_dirty``) is emptied in the transaction that writes the memories: a process killed mid-way
leaves the rest queued for the next run. A topic with fewer than two source events or no fact has no memory
(its one event says it already).

Replaced facts stay in the memory (its history); readers leave out or mark those the knowledge model says
were replaced (``current_facts``).
"""

from __future__ import annotations

import time
from typing import Any

from memlane.config import Config
from memlane.endless import summaries
from memlane.knowledge.text import stable_id
from memlane.store.db import Store
from memlane.store.keys import has_cjk

MAX_FACTS = 8
MAX_SUMMARY = 1000
BATCH = 50  # topics per transaction
SCANNED = 200  # a topic's newest marks read for its facts (its figures count every mark)
LLM_MIN_SESSIONS = 2  # a model is asked only about long-running topics (those SessionStart shows)
FACT_ROLES = {
    "file": ("asked", "change", "write", "delete", "answer"),
    "command": ("asked", "fail", "ok", "answer"),
    "decision": ("decision",),
    "task": ("pending", "in_progress", "blocked", "done", "cancelled", "mention", "hand"),
}


def memory_id(kind: str, key: str) -> str:
    return "cm-" + stable_id(kind, key)[:12]


def title_of(kind: str, key: str, facts: list[dict[str, Any]]) -> str:
    if kind == "file":
        return key
    if kind == "command":
        return f"`{key}`"
    if kind == "task":
        return "task: " + key.removeprefix("task:")
    if key.startswith("subject:"):
        return "decisions on " + key.removeprefix("subject:")
    return facts[0]["text"][:120] if facts else key


def build(store: Store, kind: str, key: str) -> dict[str, Any] | None:
    """The consolidated memory of a topic from its marks; None when it does not qualify."""
    if kind not in FACT_ROLES:
        return None
    seen_of = store.topic_overview(kind, key)
    roles = seen_of["roles"]
    if seen_of["events"] < 2:
        return None
    if kind == "command" and "fail" not in roles:
        return None  # a command that always worked is not a topic
    if kind == "file" and not roles & {"change", "write", "delete"}:
        return None  # read or named only
    if kind == "task" and not roles & {"pending", "blocked", "hand"}:
        return None  # only said to be started or done: the knowledge model makes no task of that
    facts = _facts(kind, store.topic_marks(kind, key, FACT_ROLES[kind], SCANNED))
    if not facts:
        return None
    kept = _within(facts)
    sessions = seen_of["sessions"]
    confidence = (
        0.4
        + 0.15 * min(sessions, 3)
        + (0.1 if "answer" in roles else 0)
        + (0.05 if roles & {"change", "write", "delete"} else 0)
    )
    summary = _summary(kept)
    title = title_of(kind, key, kept)
    return {
        "id": memory_id(kind, key),
        "kind": kind,
        "key": key,
        "title": title,
        "summary": summary,
        "facts": kept,
        "confidence": round(min(confidence, 0.95), 2),
        "sessions": sessions,
        "sources": seen_of["events"],
        "first_ts": seen_of["first_ts"],
        "last_ts": seen_of["last_ts"],
        "cjk": has_cjk(title + summary),
    }


def _facts(kind: str, marks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Key facts from a topic's marks (oldest first): one per line of text, at its latest place; for a command, the
    failures and the first success after them."""
    facts: list[dict[str, Any]] = []
    failing = False
    for mark in marks:
        text = mark["fact"]
        if not text:
            continue
        if mark["role"] == "ok":
            if not failing:
                continue
            failing = False  # the first success after failures says it was fixed
        elif mark["role"] == "fail":
            failing = True
        facts = [f for f in facts if f["text"] != text]
        facts.append({"event_id": mark["event_id"], "ts": mark["ts"], "role": mark["role"], "text": text})
    return facts


def _summary(facts: list[dict[str, Any]]) -> str:
    return "\n".join(f"{f['ts'][:10]} {f['text']}" for f in facts)


def _within(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    kept = facts[-MAX_FACTS:]
    while len(kept) > 1 and len(_summary(kept)) > MAX_SUMMARY:
        kept = kept[1:]
    return kept


def with_llm(store: Store, memory: dict[str, Any]) -> dict[str, Any]:
    """The memory with its LLM input (``llm_input``) and, when the store keeps a model's answer for it, the answer's
    quotes as its key facts (``llm_answer``: the answer's id). Reads only; a long-running topic only."""
    if memory["sessions"] < LLM_MIN_SESSIONS:
        return memory
    given = summaries.inputs(store, memory)
    if given is None:
        return {**memory, "llm_input": "-"}  # nothing to ask about (its facts' events are gone)
    memory = {**memory, "llm_input": given.input_hash}
    answer = store.llm_consolidation(given.input_hash)
    if answer is None:
        return memory  # not asked yet: extractive
    facts = _within(summaries.quoted_facts(given, answer["response"]))
    if not facts:
        return memory  # nothing of the answer was kept: extractive
    summary = _summary(facts)
    return {**memory, "facts": facts, "summary": summary, "llm_answer": answer["id"],
            "cjk": has_cjk(memory["title"] + summary)}  # fmt: skip


def llm_on(store: Store, cfg: Config | None) -> bool:
    """Whether consolidation looks for LLM answers: the user turned an LLM on, or the store keeps answers from when
    one was (a rebuild reproduces them either way)."""
    from memlane.knowledge import llm

    if not hasattr(store, "has_llm_consolidations"):
        return False
    return (cfg is not None and llm.configured(cfg)) or store.has_llm_consolidations()


def consolidate_topic(store: Store, kind: str, key: str, *, llm: bool = False) -> bool:
    """(Re)write one topic's memory inside the caller's transaction (``llm``: with the kept LLM answer for it, see
    ``with_llm``); whether it has one."""
    memory = build(store, kind, key)
    if memory is None:
        store.delete_consolidated(memory_id(kind, key))
        return False
    store.put_consolidated(with_llm(store, memory) if llm else memory)
    return True


def consolidate(
    store: Store, *, limit: int | None = None, budget_s: float | None = None, cfg: Config | None = None
) -> int:
    """Consolidate queued topics, ``BATCH`` per transaction, until the queue is empty or a limit is reached;
    how many topics were done. ``cfg``: the settings (whether an LLM is on); never calls a model."""
    done = 0
    llm = llm_on(store, cfg)
    deadline = time.monotonic() + budget_s if budget_s is not None else None
    while limit is None or done < limit:
        if deadline is not None and time.monotonic() >= deadline:
            break
        size = BATCH if limit is None else min(BATCH, limit - done)
        with store.write():
            topics = store.dirty_topics(size)
            for kind, key in topics:
                consolidate_topic(store, kind, key, llm=llm)
                store.clear_dirty_topic(kind, key)
        done += len(topics)
        if len(topics) < size:
            break
    return done


def current_facts(store: Store, memory: dict[str, Any]) -> list[dict[str, Any]]:
    """The memory's facts with their citations and, for one the knowledge model says was replaced, what
    replaces it now (``replaced_by``, a citation)."""
    facts = memory["facts"]
    ids = [f["event_id"] for f in facts]
    replaced = store.replacements(ids)
    cites = store.citations(ids + list(replaced.values()))
    out = []
    for fact in facts:
        if fact["event_id"] not in cites:
            continue  # its event was forgotten since
        row = {**fact, "citation": cites[fact["event_id"]]}
        if fact["event_id"] in replaced:
            row["replaced_by"] = cites.get(replaced[fact["event_id"]], "")
        out.append(row)
    return out
