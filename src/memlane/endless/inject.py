"""What SessionStart gives Claude in endless mode: the working set and the long-running topics, cited.

Read, never computed: the working set is the table the daemon's ``EndlessJob`` keeps (``Store.working_set``),
the topics are the consolidated memories with the most sessions. Items go in by rank while they fit the body's
room (``injection.max_chars`` through the composer, with the project's persistent and volatile context), each on
one line with the citation of the event that last touched it; the sections keep a fixed order. A fact the
knowledge model says was replaced is left out of a topic. Nothing to say → ''; the hook then gives the session
recap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlane.config import Config
from memlane.endless import consolidation
from memlane.endless.marks import one_line
from memlane.store.db import Store

HEADER = (
    "memlane (endless mode): where the work stands — the last {hours} of this project's activity "
    "({since} → {until} UTC) and its long-running topics (expand with `memlane show mem:ID`)."
)
BODY_TITLE = "## Where the work stands"
SECTIONS = (
    ("command", "Errors:"),
    ("task", "Open tasks:"),
    ("file", "Active files:"),
    ("decision", "Decisions:"),
    ("prompt", "Last asked:"),
    ("topic", "Long-running topics (consolidated):"),
)
TOPIC_FACTS = 2  # newest current facts shown per topic


def _day(ts: str) -> str:
    return ts[:16].replace("T", " ")


def item_line(item: dict[str, Any], cites: dict[str, str]) -> str:
    cite, kind, detail = item["citation"], item["kind"], item["detail"]
    if kind == "file":
        what = item["status"] or "read"
        count = detail.get("changes", 0) if item["status"] == "changed" else item["touches"]
        times = f" {count}×" if count > 1 else ""
        also = f" in {item['sessions']} sessions" if item["sessions"] > 1 else ""
        said = detail.get("answer") or detail.get("fact") or ""
        return f"- [{cite}] {item['key']} ({what}{times}{also}, last {_day(item['last_ts'])})" + (
            f": {one_line(said, 200)}" if said else ""
        )
    if kind == "command":
        fixed = detail.get("fixed_by")
        state = f"fixed since [{cites[fixed]}]" if fixed and fixed in cites else "still failing"
        return f"- [{cite}] {_day(item['last_ts'])} {one_line(detail.get('fact', item['key']), 220)} ({state})"
    if kind == "task":
        return f"- [{cite}] {item['title']} ({item['status'].replace('_', ' ')}, {_day(item['last_ts'])})"
    if kind == "decision":
        return f"- [{cite}] {_day(item['last_ts'])} {one_line(item['title'], 220)}"
    return f"- [{cite}] {_day(item['last_ts'])} {one_line(item['title'], 200)}"


def topic_line(memory: dict[str, Any], facts: list[dict[str, Any]]) -> str:
    span = f"{memory['first_ts'][:10]} → {memory['last_ts'][:10]}"
    said = "; ".join(f"{f['ts'][:10]} {one_line(f['text'], 160)} [{f['citation']}]" for f in facts)
    return f"- {memory['title']} ({memory['sessions']} sessions, {span}, confidence {memory['confidence']:.2f}): {said}"


def topics(store: Store, cfg: Config, skip: set[tuple[str, str]]) -> list[str]:
    """Lines for the long-running topics: the consolidated memories of the most sessions (at least two)."""
    out: list[str] = []
    for memory in store.consolidated(limit=cfg.endless.topics_injected * 3, order="sessions"):
        if len(out) >= cfg.endless.topics_injected or memory["sessions"] < 2:
            break
        if (memory["kind"], memory["key"]) in skip:
            continue
        facts = [f for f in consolidation.current_facts(store, memory) if not f.get("replaced_by")]
        if facts:
            out.append(topic_line(memory, facts[-TOPIC_FACTS:]))
    return out


def body(
    items: list[dict[str, Any]], topic_lines: list[str], extra: Sequence[str], room: int, cites: dict[str, str]
) -> str:
    """Items by rank (then topics, then ``extra``) while they fit ``room``, printed in ``SECTIONS`` order."""
    lines: dict[str, list[str]] = {}
    used = 0
    candidates = [(i["kind"], item_line(i, cites)) for i in items] + [("topic", t) for t in topic_lines]
    titles = dict(SECTIONS)
    for kind, line in candidates:
        cost = len(line) + 1 + (len(titles[kind]) + 1 if kind not in lines else 0)
        if used + cost > room:
            continue
        lines.setdefault(kind, []).append(line)
        used += cost
    out = []
    for kind, title in SECTIONS:
        if kind in lines:
            out.append(title)
            out.extend(lines[kind])
    for line in extra:
        if used + len(line) + 1 <= room:
            out.append(line)
            used += len(line) + 1
    return "\n".join(out)


def session_start_context(
    store: Store, cfg: Config, extra: Sequence[str] = (), context: Any = None, max_chars: int | None = None
) -> str:
    """The SessionStart text in endless mode; '' when there is no working set yet."""
    from memlane.context.compose import PromptComposer

    items = store.working_set()
    if not items:
        return ""
    skip = {(i["kind"], i["key"]) for i in items}
    topic_lines = topics(store, cfg, skip)
    state = store.endless_state()
    fixed = [i["detail"]["fixed_by"] for i in items if i["kind"] == "command" and i["detail"].get("fixed_by")]
    cites = store.citations(fixed)
    hours = float(state.get("ws_hours") or cfg.endless.window_hours)
    header = HEADER.format(
        hours=f"{hours:g} h",
        since=_day(state.get("ws_since", "")),
        until=_day(state.get("ws_anchor", "")),
    )
    return (
        PromptComposer(cfg)
        .compose_parts(
            "session_start",
            context,
            lambda room: body(items, topic_lines, extra, room, cites),
            header=header,
            max_chars=max_chars,
            body_title=BODY_TITLE,
        )
        .text
    )
