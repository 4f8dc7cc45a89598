"""The continuity score of a session with the one before it (spec §4.1), and what raised or lowered it.

    score = 0.3 · topics + 0.2 · files + 0.2 · entities + 0.3 · exp(−gap / 24 h), at most 1

- **topics**: the commands run (``pytest``, ``alembic upgrade``), the subjects decided on and the tasks named;
- **files**: the files changed, read, run or named; **entities**: the code names used (``pool_size``, ``QueuePool``);
- each share is the Dice overlap of the two sessions' sets, 2·|A∩B| / (|A| + |B|), from 0 (nothing in common) to
  1 (the same). The spec adds raw counts of shared items, which reaches 1 with two shared files whatever else
  the sessions did; a share keeps "the same work" apart from "one file in common";
- **gap**: from the end of the previous session to the start of this one.

``transition``: ``seamless`` at 0.7 or more (spec §7.1 ``minScoreForSeamless``), ``topic_shift`` from 0.3, else
``break``. Sessions are ordered by their first event; a session's score changes while it (or the one before it)
goes on, and is recomputed when an earlier session is imported before it.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from memlane.store.db import Store

WEIGHTS = {"topics": 0.3, "files": 0.2, "entities": 0.2, "time": 0.3}
TIME_SCALE_H = 24.0
SEAMLESS = 0.7
TOPIC_SHIFT = 0.3
SHOWN = 4  # shared items named in a reason
BATCH = 100  # sessions scored per transaction


def stamp(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def context(store: Store, session_id: str) -> dict[str, set[str]]:
    """A session's topics, files and entities, from its marks."""
    out: dict[str, set[str]] = {"topics": set(), "files": set(), "entities": set()}
    for kind, key in store.session_keys(session_id):
        if kind == "file":
            out["files"].add(key)
        elif kind == "entity":
            out["entities"].add(key)
        elif kind in ("command", "task") or key.startswith("subject:"):
            out["topics"].add(key)
    return out


def transition(score: float) -> str:
    if score >= SEAMLESS:
        return "seamless"
    return "topic_shift" if score >= TOPIC_SHIFT else "break"


def score(current: dict[str, set[str]], previous: dict[str, set[str]], gap_s: float) -> tuple[float, dict[str, Any]]:
    """(score, detail): each part's value, weight, share and what was shared, and the reasons in words."""
    parts: dict[str, Any] = {}
    reasons: list[str] = []
    for name in ("topics", "files", "entities"):
        a, b = current[name], previous[name]
        shared = a & b
        share = 2 * len(shared) / (len(a) + len(b)) if a and b else 0.0
        value = WEIGHTS[name] * share
        parts[name] = {
            "value": round(value, 3),
            "weight": WEIGHTS[name],
            "share": round(share, 3),
            "shared": sorted(shared)[:SHOWN],
            "shared_count": len(shared),
            "this": len(a),
            "previous": len(b),
        }
        if shared:
            names = ", ".join(_short(k) for k in sorted(shared)[:SHOWN]) + (" …" if len(shared) > SHOWN else "")
            reasons.append(
                f"+{value:.2f} {name}: {len(shared)} in common ({names}) of {len(a)} here and {len(b)} before"
            )
        elif a or b:
            reasons.append(f"+0 of {WEIGHTS[name]:.1f} {name}: none in common ({len(a)} here, {len(b)} before)")
        else:
            reasons.append(f"+0 of {WEIGHTS[name]:.1f} {name}: neither session has any")
    gap_h = max(0.0, gap_s) / 3600
    time_value = WEIGHTS["time"] * math.exp(-gap_h / TIME_SCALE_H)
    parts["time"] = {"value": round(time_value, 3), "weight": WEIGHTS["time"], "gap_hours": round(gap_h, 2)}
    reasons.insert(0, f"+{time_value:.2f} time: started {_gap(gap_h)} after the previous session's last activity")
    total = min(1.0, sum(p["value"] for p in parts.values()))
    return round(total, 3), {"parts": parts, "reasons": reasons}


def _short(key: str) -> str:
    return key.removeprefix("subject:").removeprefix("task:")


def _gap(hours: float) -> str:
    if hours < 1:
        return f"{round(hours * 60)} min"
    if hours < 48:
        return f"{hours:.1f} h"
    return f"{hours / 24:.1f} days"


def refresh(store: Store, limit: int | None = None) -> int:
    """Score every session queued for it (new activity, or a new predecessor); how many were scored."""
    done = 0
    while limit is None or done < limit:
        with store.write():
            queued = store.dirty_sessions(BATCH if limit is None else min(BATCH, limit - done))
            scored: set[str] = set()
            for session_id in queued:
                # The session after it compares itself with this one: it is scored again too.
                this = store.endless_session(session_id)
                following = store.session_after(this["started"], session_id) if this else None
                for sid in (session_id, following):
                    if sid and sid not in scored:
                        _score_one(store, sid)
                        scored.add(sid)
        done += len(queued)
        if len(queued) < BATCH:
            break
    return done


def _score_one(store: Store, session_id: str) -> None:
    this = store.endless_session(session_id)
    if this is None:
        return
    prev = store.session_before(this["started"], session_id)
    if prev is None:
        store.set_continuity(session_id, None, None, None, {"reasons": ["the first session of the project"]})
        return
    value, detail = score(
        context(store, session_id), context(store, prev["session_id"]), stamp(this["started"]) - stamp(prev["last_ts"])
    )
    store.set_continuity(session_id, prev["session_id"], value, transition(value), detail)
