"""Asking a configured LLM for the key facts of consolidated memories, within the daily budget (docs/endless.md).

Only when the user turned an LLM on (``llm.provider`` and ``llm.model``, ``knowledge/llm.py``) and only for a
project in endless mode: the daemon's ``EndlessKeyFacts`` job a few calls per project every few minutes, and
``memlane endless consolidate`` / ``enable`` within their time budget. The client, the daily token and cost
budget and its ledger are the learning loop's (``llm.call``, ``llm.over_budget``, ``llm._record_spend``): one
budget for every use of the model. Before each call the call's worst case must fit; when it does not, ``run``
stops and says why (the daemon's log, ``memlane endless status``).

Each answer is checked (``summaries.check``: quotes from the messages the model was given, nothing else) and
kept in the store (``llm_consolidations``) whatever it holds, so the same input is never asked twice and
``memlane rebuild`` reproduces the memory from it without a network call; the memory is then consolidated
again, which applies it (``consolidation.with_llm``). The calls are made outside any transaction.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from memlane.config import Config
from memlane.endless import consolidation, summaries
from memlane.store import keys
from memlane.store.db import Store

WAITING_READ = 50  # memories looked at per run (most sessions first)
PREPARE_BATCH = 10  # memories from before the LLM was on given their input per transaction (the write lock is short)
PREPARE_MAX = 500  # ... and per run


@dataclass
class Report:
    calls: int = 0
    memories: list[str] = field(default_factory=list)  # the memories whose key facts now come from the model
    quotes: int = 0
    refused: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    waiting: int = 0  # memories still waiting for a call after this run
    stopped: str = ""  # why it stopped before the work was done (the budget, the endpoint, the time)
    off: str = ""  # why it did not run at all

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "memories": self.memories,
            "quotes": self.quotes,
            "refused": self.refused,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "waiting": self.waiting,
            "stopped": self.stopped,
            "off": self.off,
        }

    def line(self) -> str:
        if self.off:
            return f"LLM key facts off: {self.off}"
        if self.calls:
            head = (
                f"LLM key facts: {self.calls} call(s), {len(self.memories)} memor"
                f"{'y' if len(self.memories) == 1 else 'ies'} from {self.quotes} quote(s)"
                + (f", {self.refused} quote(s) refused (not in the source)" if self.refused else "")
                + f", {self.input_tokens + self.output_tokens:,} tokens, ${self.cost_usd:.4f}"
            )
        else:
            head = "LLM key facts: nothing asked"
        head += f"; {self.waiting} memor{'y' if self.waiting == 1 else 'ies'} waiting" if self.waiting else ""
        return head + (f"; stopped: {self.stopped}" if self.stopped else "")


def why_off(store: Store, cfg: Config, mode: str) -> str:
    """Why no model is asked for this project in ``mode`` (``service.mode``); '' when one is."""
    from memlane.knowledge import llm

    if not llm.configured(cfg):
        return "no LLM is configured (llm.provider, llm.model)"
    if store.ephemeral or not hasattr(store, "llm_waiting"):
        return "no store"
    if mode != "endless":
        return "the project is in session mode (the model is asked only in endless mode)"
    return ""


def run(store: Store, cfg: Config, mode: str, *, max_calls: int, deadline: float | None = None) -> Report:
    """Ask the model for the key facts of up to ``max_calls`` memories waiting for it (most sessions first), until
    the work, ``deadline`` (``time.monotonic()``) or the daily budget runs out; the outcome is kept for
    ``memlane endless status``. ``mode``: the project's (``service.mode``)."""
    from memlane.knowledge import llm

    report = Report(off=why_off(store, cfg, mode))
    if report.off:
        return report
    _prepare(store)
    for kind, key, input_hash in store.llm_waiting(consolidation.LLM_MIN_SESSIONS, WAITING_READ):
        if report.calls >= max_calls:
            break
        if deadline is not None and time.monotonic() >= deadline:
            report.stopped = "out of time for this run (the rest is the daemon's)"
            break
        memory = consolidation.build(store, kind, key)
        given = summaries.inputs(store, memory) if memory else None
        if memory is None or given is None or given.input_hash != input_hash:
            continue  # changed since it was consolidated: it is consolidated again first
        why = llm.over_budget(cfg, len(summaries.SYSTEM) + len(given.prompt))
        if why:
            report.stopped = why
            break
        try:
            text, tokens_in, tokens_out = llm.call(cfg, given.prompt, system=summaries.SYSTEM)
        except llm.ExtractorError as exc:
            report.stopped = str(exc)
            break
        cost = llm.cost_of(cfg, tokens_in, tokens_out)
        llm._record_spend(tokens_in, tokens_out, cost)
        answer = summaries.check(text, given)
        store.add_llm_consolidation(
            {"input_hash": given.input_hash, "memory_id": memory["id"], "provider": cfg.llm.provider,
             "model": cfg.llm.model, "response": answer, "input_tokens": tokens_in, "output_tokens": tokens_out,
             "cost_usd": cost, "ts": keys.now_iso()},
            [m["event_id"] for m in given.messages],
        )  # fmt: skip
        with store.write():
            consolidation.consolidate_topic(store, kind, key, llm=True)
        report.calls += 1
        report.quotes += len(answer["facts"])
        report.refused += answer["refused"]
        report.input_tokens += tokens_in
        report.output_tokens += tokens_out
        report.cost_usd += cost
        if answer["facts"]:
            report.memories.append(memory["id"])
    report.waiting = store.llm_counts(consolidation.LLM_MIN_SESSIONS)["waiting"]
    with store.write():
        store.set_endless_state(
            {"llm_at": round(time.time(), 3), "llm_line": report.line(), "llm_stopped": report.stopped}
        )
    return report


def _prepare(store: Store) -> None:
    """Give the long-running memories consolidated before an LLM was on their input (consolidating them again with
    it, as consolidation would now), ``PREPARE_BATCH`` per transaction, at most ``PREPARE_MAX`` a run."""
    for _ in range(PREPARE_MAX // PREPARE_BATCH):
        topics = store.llm_unprepared(consolidation.LLM_MIN_SESSIONS, PREPARE_BATCH)
        if not topics:
            return
        with store.write():
            for kind, key in topics:
                consolidation.consolidate_topic(store, kind, key, llm=True)
