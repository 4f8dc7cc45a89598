"""What ``Memory``, the CLI and the daemon's job call: the mode, bringing endless state up to date, status, listing
and searching consolidated memories.

The mode is a project's setting (``Store.endless_mode``; ``endless.mode`` in config.toml for projects without
one). Switching is safe both ways (spec §9): everything endless mode keeps is derived from the events in the
background whatever the mode, and is kept when the mode goes back to session. Going to endless catches the
projection up and consolidates once, so the next SessionStart has a working set even on a store the daemon has
not seen yet.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from memlane.config import Config
from memlane.endless import assist, consolidation, continuity, working_set
from memlane.errors import InputError
from memlane.store.db import Store

MODES = ("session", "endless")
ENABLE_BUDGET_S = 20.0  # `memlane endless enable|consolidate`: how long they catch up before leaving it to the daemon
READ_BUDGET_S = 5.0  # `memlane endless status`: as the knowledge commands' reads
LLM_CALLS = 10  # `memlane endless enable|consolidate`: calls for key facts at most, within ENABLE_BUDGET_S


def mode(store: Store, cfg: Config) -> tuple[str, str]:
    """(mode, where it comes from: ``project`` or ``config``)."""
    read = getattr(store, "endless_mode", None)  # a team server's store has no local settings
    own = read() if callable(read) and not store.ephemeral else None
    if own in MODES:
        return str(own), "project"
    return cfg.endless.mode, "config"


def set_mode(store: Store, value: str) -> None:
    if value not in MODES:
        raise InputError(f"mode must be session or endless, not {value!r}")
    with store.write():
        store.set_endless_mode(value)


def refresh(store: Store, cfg: Config | None, *, consolidate: bool, budget_s: float | None = None) -> dict[str, Any]:
    """Bring what endless mode derives up to date with the projected marks: consolidation (when asked), the
    continuity scores, the working set. What was done."""
    cfg = cfg or Config()
    done: dict[str, Any] = {"consolidated": 0, "scored": 0, "working_set": False}
    if consolidate:
        done["consolidated"] = consolidation.consolidate(store, budget_s=budget_s, cfg=cfg)
        if not store.dirty_topic_count():
            offset = store.projection_offset("endless")
            with store.write():
                store.set_endless_state(
                    {"consolidated_at": round(time.time(), 3), "consolidated_seq": offset[0] if offset else 0}
                )
    done["scored"] = continuity.refresh(store)
    if working_set.stale(store, cfg):
        working_set.refresh(store, cfg)
        done["working_set"] = True
    return done


def consolidation_due(store: Store, cfg: Config, now: float | None = None) -> str | None:
    """Why consolidation should run now (spec §3.3's triggers), or None: something is queued and either
    ``consolidate_after_events`` events arrived since the last run, ``consolidate_interval_min`` passed, or the
    project has been idle ``consolidate_idle_min``."""
    if not store.dirty_topic_count():
        return None
    now = time.time() if now is None else now
    state = store.endless_state()
    last_at = float(state.get("consolidated_at") or 0)
    last_seq = int(state.get("consolidated_seq") or 0)
    e = cfg.endless
    if store.count_after(last_seq) >= e.consolidate_after_events:
        return f"{e.consolidate_after_events}+ new events"
    if now - last_at >= e.consolidate_interval_min * 60:
        return "interval"
    latest = store.latest_mark_ts()
    if latest and now - continuity.stamp(latest) >= e.consolidate_idle_min * 60:
        return "idle"
    return None


def catch_up(store: Store, cfg: Config, budget_s: float = ENABLE_BUDGET_S) -> dict[str, Any]:
    """Project the log and consolidate everything queued, within ``budget_s``: ``enable`` and ``consolidate``.
    What was done and what is left for the daemon."""
    from memlane import derived

    start = time.monotonic()
    progress = derived.catch_up(store, budget_s=budget_s)
    left = max(1.0, budget_s - (time.monotonic() - start))
    done = refresh(store, cfg, consolidate=True, budget_s=left)
    done["projected"] = progress.projected
    done["behind"] = sum(progress.behind.values())
    done["queued"] = store.dirty_topic_count()
    current = mode(store, cfg)[0]
    if not assist.why_off(store, cfg, current):  # an LLM is on, the project is in endless mode: the same budget
        done["llm"] = assist.run(store, cfg, current, max_calls=LLM_CALLS, deadline=start + budget_s).as_dict()
    return done


def status(store: Store, cfg: Config) -> dict[str, Any]:
    """Mode, working set, continuity, consolidation and what is waiting (spec §8.1)."""
    current, source = mode(store, cfg)
    state = store.endless_state()
    items = store.working_set()
    sessions = store.continuity(limit=5)
    offset = store.projection_offset("endless")
    scored = [s for s in sessions if s.get("score") is not None]
    return {
        "mode": current,
        "mode_from": source,
        "window_hours": cfg.endless.window_hours,
        "window": {"since": state.get("ws_since") or None, "until": state.get("ws_anchor") or None},
        "working_set": [
            {
                "kind": i["kind"],
                "title": i["title"],
                "status": i["status"],
                "citation": i["citation"],
                "last": i["last_ts"],
                "touches": i["touches"],
                "score": i["score"],
            }
            for i in items
        ],
        "working_set_at": _when(state.get("ws_at")),
        "continuity": scored[0] if scored else None,
        "recent_sessions": sessions,
        "consolidated": store.consolidated_count(),
        "last_consolidation": _when(state.get("consolidated_at")),
        "topics_queued": store.dirty_topic_count(),
        "events_not_projected": store.count_after(offset[0]) if offset else store.count_after(0),
        "topics": [
            {"title": m["title"], "sessions": m["sessions"], "confidence": m["confidence"], "id": m["id"]}
            for m in store.consolidated(limit=5, order="sessions")
        ],
        **_llm_status(store, cfg, state),
    }


def _llm_status(store: Store, cfg: Config, state: dict[str, str]) -> dict[str, Any]:
    """``llm``: the LLM-assisted key facts — only when an LLM is on or some memory has them (else nothing, as
    before there were any): how many memories have them, how many wait, today's spend, the last run's outcome."""
    from memlane.knowledge import llm

    counts = store.llm_counts(consolidation.LLM_MIN_SESSIONS) if hasattr(store, "llm_counts") else {}
    if not llm.configured(cfg) and not counts.get("assisted"):
        return {}
    off = assist.why_off(store, cfg, mode(store, cfg)[0])
    spent = llm.spent_today()
    return {
        "llm": {
            "model": f"{cfg.llm.provider} {cfg.llm.model}" if llm.configured(cfg) else None,
            "asked": not off,
            "off": off or None,
            **counts,
            "last_run": _when(state.get("llm_at")),
            "last": state.get("llm_line") or None,
            "today": {**spent, "budget_tokens": cfg.llm.daily_token_budget, "budget_usd": cfg.llm.daily_cost_usd},
        }
    }


def _when(value: str | None) -> str | None:
    if not value:
        return None
    return datetime.fromtimestamp(float(value), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def memories(store: Store, query: str | None = None, limit: int = 20, *, sources: bool = False) -> list[dict[str, Any]]:
    """Consolidated memories (matching ``query`` when given, best match first; else most sessions first), each
    with its facts cited (and what replaced a replaced one) and, with ``sources``, every source event's id.

    The learning loop (issue 33) maps these to L4 knowledge: ``id``, ``kind``/``key`` (the topic), ``facts``,
    ``confidence`` and ``source_events``. A memory whose key facts a model quoted (an LLM was on) has ``llm``
    (provider, model, when) and its facts ``by: llm``."""
    if query:
        from memlane.store.fulltext import parse_query

        words, trigrams, short = parse_query(query)
        ids = store.search_consolidated(words + [f'"{s}"' for s in short], trigrams, limit)
        found = {m["id"]: m for m in store.consolidated(ids, limit=limit)}
        rows = [found[i] for i in ids if i in found]
    else:
        rows = store.consolidated(limit=limit, order="sessions")
    answers = store.llm_consolidations_by_id([m["llm_answer"] for m in rows if "llm_answer" in m])
    out = []
    for memory in rows:
        row = {k: v for k, v in memory.items() if k not in ("facts", "llm_answer")}
        row["facts"] = consolidation.current_facts(store, memory)
        if "llm_answer" in memory:  # its key facts are a model's quotes from its sources (an LLM was on)
            row["llm"] = answers.get(memory["llm_answer"]) or {}
        if sources:
            row["source_events"] = store.consolidated_sources(memory["id"])
        out.append(row)
    return out
