"""The learning loop's derived state: citation usage, graduation levels and insights (docs/learning.md).

Two halves:

- ``LearningProjector`` follows the event log (``projection.py``): an answer or a prompt that cites a memory
  (``[mem:abc123]`` in its text, or in the turn's earlier text blocks that the Stop hook noted as ``cites``) is a
  *cited* use of it; a statement is read for insights (``insights.py``); a failed shell command is noted by its
  error signature, and the run that passes again after it closes it (``error_fix`` insights).
- ``settle`` folds in what is not in the log — each prompt's injection record (``injections``: injected and
  listed uses), the fetches (``memory_fetches``) and the LLM extractor's answers (``llm_extractions``) — and
  judges again every memory and insight whose uses, sources, replacement or age changed
  (``graduation.judge``). The daemon's graduation job calls it; so do CLI reads and ``rebuild``.

Both are deterministic functions of the events and those logs, on the project's clock: following the log and
settling now and then gives the rows ``memlane rebuild`` gives (``tests/knowledge/test_learning_rebuild.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from memlane import config
from memlane.knowledge import graduation, insights
from memlane.knowledge.insights import Quote
from memlane.knowledge.projection import Projector
from memlane.store import keys
from memlane.store.db import Event, Store
from memlane.store.schema import indexed

FOLD_BATCH = 500  # injection records, fetches or LLM answers folded per transaction
JUDGE_BATCH = 2000  # memories or insights judged per transaction


class LearningProjector(Projector):
    name = "learning"
    version = 1

    def __init__(self, cfg: config.Config | None = None) -> None:
        self.cfg = cfg or config.load()

    def drop(self, store: Store) -> None:
        store.drop_learning()

    def project(self, store: Store, events: Sequence[Event]) -> None:
        track = self.cfg.citations.enabled and self.cfg.citations.track_usage
        extract = self.cfg.features.insight_extraction
        uses: list[tuple[str, str, str, str | None, str, float]] = []
        touched: set[str] = set()
        for event in events:
            if not indexed(event.type, event.content):
                continue
            if event.type in ("agent_response", "user_prompt") and track:
                names = cited(event)
                # One use per memory per exchange: an answer and the turn's earlier text (or an imported
                # session's interim answers) citing the same memory cite it once.
                turn = store.exchange_of(event) if names else event.id
                for cite in names:
                    found = store.event_by_citation_before(cite, event.seq)
                    if found is not None:
                        uses.append((found[0], "cited", turn, event.session_id, event.ts, 1.0))
            if not extract:
                continue
            if event.type in ("agent_response", "user_prompt"):
                for kind, sentence, confidence in insights.statements(event):
                    found_id = insights.record(
                        store,
                        kind,
                        insights.key_of(kind, sentence),
                        [Quote(event, sentence, "states", confidence)],
                        "rules",
                    )
                    if found_id:
                        touched.add(found_id)
            elif insights.is_shell(event):
                touched.update(_shell(store, event))
        if uses:
            store.add_usage(uses)
            store.mark_dirty("event", {u[0] for u in uses})
        store.mark_dirty("insight", touched)

    def settle(self, store: Store, limit: int | None = None) -> int:
        return settle(store, self.cfg, limit=limit)


def cited(event: Event) -> list[str]:
    """Citations an answer or a prompt makes: in its text, and (answers) in the turn's earlier text blocks."""
    found = keys.citations_in(event.content)
    extra = event.metadata.get("cites")
    if isinstance(extra, list):
        found.extend(c for c in extra if isinstance(c, str) and c not in found)
    return found[: keys.MAX_CITED]


# ---- errors and fixes --------------------------------------------------------------------------------------


def _shell(store: Store, event: Event) -> set[str]:
    """A failed command is noted by its error signature; a command that passes closes the same session's earlier
    failures of the same command. Returns the insights that changed."""
    command = insights.command_key(event)
    if not command:
        return set()
    if event.metadata.get("success") is False:
        span = insights.error_line(event)
        if span is None:
            return set()
        line = event.content[span[0] : span[1]]
        signature = insights.error_signature(line)
        if not signature:
            return set()
        store.add_learning_error(
            {"event_id": event.id, "session_id": event.session_id, "signature": signature, "command_key": command,
             "line_start": span[0], "line_end": span[1], "seq": event.seq}
        )  # fmt: skip
        found = _error_insight(store, signature)
        return {found} if found else set()
    if event.metadata.get("success") is not True:
        return set()
    open_errors = store.open_learning_errors(event.session_id, command, event.seq)
    if not open_errors:
        return set()
    store.fix_learning_errors([e["event_id"] for e in open_errors], event.id)
    return {iid for sig in sorted({e["signature"] for e in open_errors}) if (iid := _error_insight(store, sig))}


def _error_insight(store: Store, signature: str) -> str | None:
    """The error_fix insight of a signature: once it failed twice and one failure was followed by a pass."""
    errors = store.learning_errors(signature)
    fixed = [e for e in errors if e["fixed_by"]]
    if len(errors) < 2 or not fixed:
        return None
    by_id = {e.id: e for e in store.by_ids(sorted({e["event_id"] for e in errors} | {e["fixed_by"] for e in fixed}))}
    quotes: list[Quote] = []
    for err in errors:
        event = by_id.get(err["event_id"])
        if event is not None:
            quotes.append(Quote(event, event.content[err["line_start"] : err["line_end"]], "error", 0.85))
    for err in fixed:
        passed = by_id.get(err["fixed_by"])
        if passed is None:
            continue
        changes = [
            (e, q)
            for e in store.session_events_between(err["session_id"], err["seq"], passed.seq)
            if (q := insights.fix_quote(e)) and insights.command_key(e) != err["command_key"]
        ]
        for e, q in changes[-3:]:
            quotes.append(Quote(e, q, "fix", 0.85))
        if not changes:
            quotes.append(Quote(passed, passed.content.split("\n", 1)[0], "passed", 0.85))
    sessions = sorted({e["session_id"] for e in errors})
    return insights.record(
        store, "error_fix", signature, quotes, "rules", {"occurrences": len(errors), "sessions": len(sessions)}
    )


# ---- settling: what is not in the log, and judging -----------------------------------------------------------


def settle(store: Store, cfg: config.Config | None = None, *, limit: int | None = None) -> int:
    """Fold in new injection records, fetches and LLM answers, then judge what changed; how much was done.
    ``limit``: at most this many batches (the daemon's slice); None: until nothing is left."""
    cfg = cfg or config.load()
    if store.ephemeral:
        return 0
    done = 0
    rounds = 0
    while limit is None or rounds < limit:
        rounds += 1
        with store.write():
            work = _fold(store, cfg)
            work += _judge(store)
        done += work
        if not work:
            break
    return done


def _fold(store: Store, cfg: config.Config) -> int:
    state = store.learning_state()
    work = 0
    dirty: set[str] = set()
    track = cfg.citations.enabled and cfg.citations.track_usage
    if track:
        last = int(state.get("injection", "0"))
        for row in store.injections_after(last, FOLD_BATCH):
            dirty.update(store.delete_usage_from(row["prompt_id"], ("injected", "listed")))
            uses = injection_uses(row["prompt_id"], row["session_id"], row["ts"], row["record"])
            store.add_usage(uses)
            dirty.update(u[0] for u in uses)
            last = max(last, int(row["rowid"]))
            work += 1
        store.set_learning_state({"injection": last})
    if track:
        last = int(state.get("fetch", "0"))
        for row in store.fetches_after(last, FOLD_BATCH):
            store.add_usage([(row["event_id"], "fetched", f"fetch:{row['id']}", row["session_id"], row["ts"], 0.9)])
            dirty.add(row["event_id"])
            last = row["id"]
            work += 1
        store.set_learning_state({"fetch": last})
    if cfg.features.insight_extraction:
        last = int(state.get("llm", "0"))
        touched: set[str] = set()
        for answer in store.extractions_after(last, FOLD_BATCH // 5):
            touched.update(apply_extraction(store, answer))
            last = answer["id"]
            work += 1
        store.set_learning_state({"llm": last})
        store.mark_dirty("insight", touched)
    store.mark_dirty("event", dirty)
    return work


def injection_uses(
    prompt_id: str, session_id: str | None, ts: str, record: dict[str, Any]
) -> list[tuple[str, str, str, str | None, str, float]]:
    """The uses one prompt's injection record makes: each memory of the full tier injected, of the index listed."""
    out = []
    for tier, kind in (("full", "injected"), ("index", "listed")):
        for entry in record.get(tier) or []:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                score = entry.get("score")
                score = float(score) if isinstance(score, int | float) else 0.0
                out.append((entry["id"], kind, prompt_id, session_id, ts, graduation.use_confidence(kind, score)))
    return out


def apply_extraction(store: Store, answer: dict[str, Any]) -> set[str]:
    """The insights one LLM answer states: each item's quotes aligned in the events it names (by index)."""
    touched: set[str] = set()
    events = {e.id: e for e in store.by_ids(sorted(set(answer["events"].values())))}
    for item in answer["response"].get("insights") or []:
        kind = item.get("type")
        if kind not in insights.TYPES:
            continue
        quotes: list[Quote] = []
        for quote in item.get("quotes") or []:
            event = events.get(answer["events"].get(quote.get("message")))
            text = quote.get("text")
            if event is None or not isinstance(text, str) or not text.strip():
                continue
            role = "states" if kind != "error_fix" else ("error" if not quotes else "fix")
            quotes.append(Quote(event, text, role, insights.CONFIDENCE["llm"]))
        if not quotes:
            continue
        iid = insights.record(store, kind, insights.key_of(kind, quotes[0].quote), quotes, "llm",
                              {"model": answer["model"]})  # fmt: skip
        if iid:
            touched.add(iid)
    return touched


def _judge(store: Store) -> int:
    state = store.learning_state()
    as_of = store.clock()
    knowledge = store.projection_offset("knowledge")
    knowledge_seq = str(knowledge[0] if knowledge else 0)
    events = set(store.take_dirty("event", JUDGE_BATCH))
    found_insights = set(store.take_dirty("insight", JUDGE_BATCH))
    if state.get("clock") != as_of or state.get("knowledge") != knowledge_seq:
        if state.get("knowledge") != knowledge_seq:  # replacements may have changed: look at everything judged
            events.update(store.leveled_ids())
            found_insights.update(store.all_insight_ids())
        else:
            events.update(store.levels_due(as_of))
            found_insights.update(store.insights_due(as_of))
        store.set_learning_state({"clock": as_of, "knowledge": knowledge_seq})
    if events:
        for ids in store.insights_of_events(sorted(events)).values():
            found_insights.update(ids)
        judge_events(store, sorted(events), as_of)
    if found_insights:
        judge_insights(store, sorted(found_insights), as_of)
    return len(events) + len(found_insights)


def judge_events(store: Store, event_ids: Sequence[str], as_of: str) -> None:
    usage = store.usage_rows(event_ids)
    origin = {e.id: e.session_id for e in store.by_ids(list(event_ids))}
    wholly = store.replacements(event_ids)
    partly = store.replacements(event_ids, partial=True)
    rows = []
    gone = []
    for eid in event_ids:
        uses = usage.get(eid)
        if not uses or eid not in origin:
            gone.append(eid)
            continue
        counts = dict.fromkeys(("injected", "listed", "fetched", "cited"), 0)
        for kind, _, _, _ in uses:
            counts[kind] = counts.get(kind, 0) + 1
        used = [u for u in uses if u[0] != "listed"]
        sessions = {u[1] for u in used if u[1]}
        replaced = 2 if eid in wholly else (1 if eid in partly else 0)
        best = max((u[3] for u in used), default=0.0)
        c = graduation.Counters(
            access=len(used),
            cross_session=len(sessions - {origin[eid]}),
            confidence=graduation.confidence_of(best, replaced),
            last_used=max((u[2] for u in used), default=""),
            replaced=replaced,
        )
        level = graduation.judge(c, as_of)
        rows.append(
            {
                "event_id": eid,
                "level": level.level,
                **counts,
                "access": c.access,
                "sessions": len(sessions),
                "cross_session": c.cross_session,
                "confidence": c.confidence,
                "replaced": replaced,
                "last_used": max(u[2] for u in uses),
                "demote_at": level.demote_at,
                "reason": level.reason,
            }
        )
    if gone:
        store.db.executemany("DELETE FROM memory_levels WHERE event_id = ?", [(g,) for g in gone])
    store.put_levels(rows)


def judge_insights(store: Store, insight_ids: Sequence[str], as_of: str) -> None:
    found = {i["id"]: i for i in store.list_insights(ids=list(insight_ids), limit=len(insight_ids) + 1)}
    sources = store.insight_sources(list(found))
    all_events = sorted({s["event_id"] for rows in sources.values() for s in rows})
    usage = store.usage_rows(all_events)
    sessions_of = {e.id: (e.session_id, e.ts) for e in store.by_ids(all_events)}
    anchors = sorted({i["anchor_id"] for i in found.values()})
    wholly = store.replacements(anchors)
    partly = store.replacements(anchors, partial=True)
    rows = []
    for iid, insight in found.items():
        src = [s for s in sources.get(iid, []) if s["event_id"] in sessions_of]
        stating = sorted({s["event_id"] for s in src if s["role"] in ("states", "error")}) or sorted(
            {s["event_id"] for s in src}
        )
        uses = [u for e in sorted({s["event_id"] for s in src}) for u in usage.get(e, []) if u[0] != "listed"]
        said_in = [sessions_of[e] for e in stating]
        sessions = {s for s, _ in said_in} | {u[1] for u in uses if u[1]}
        first_session = min(said_in, key=lambda p: p[1])[0] if said_in else None
        replaced = 2 if insight["anchor_id"] in wholly else (1 if insight["anchor_id"] in partly else 0)
        support = max(len(stating), 1)
        corroborated = 1 - (1 - insight["confidence"]) ** support
        best = max([corroborated, *(u[3] for u in uses)])
        last = max([insight["last_ts"], *(u[2] for u in uses)])
        c = graduation.Counters(
            access=len(uses) + support - 1,
            cross_session=len(sessions - {first_session}),
            confidence=round(graduation.confidence_of(best, replaced), 4),
            last_used=last,
            replaced=replaced,
            base=1,
            evidence_aligned=insight["evidence_aligned"],
        )
        level = graduation.judge(c, as_of)
        rows.append(
            {
                "id": iid,
                "level": level.level,
                "access": c.access,
                "sessions": len(sessions),
                "cross_session": c.cross_session,
                "used_confidence": c.confidence,
                "replaced": replaced,
                "last_used": last,
                "demote_at": level.demote_at,
                "reason": level.reason,
            }
        )
    store.set_insight_levels(rows)


def mark_all(store: Store, ids: Iterable[str]) -> None:
    """Judge these memories again at the next settle (a test's or a repair's)."""
    with store.write():
        store.mark_dirty("event", ids)


# ---- what readers show ---------------------------------------------------------------------------------------


def mark_learned(store: Store, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each search row gets its level (``level``: "L0"…"L4") and, when it is a source of one, its best insight
    (``insight``: id, type, level, content, verified)."""
    found = store.learned([r["id"] for r in rows]) if rows and hasattr(store, "learned") else {}
    for row in rows:
        info = found.get(row["id"], {})
        row["level"] = graduation.LEVELS[int(info.get("level", 0))]
        if "insight" in info:
            insight = info["insight"]
            row["insight"] = {**insight, "level": graduation.LEVELS[int(insight["level"])]}
    return rows
