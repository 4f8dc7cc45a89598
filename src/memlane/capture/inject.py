"""What the hooks give back to Claude: the session-start digest and per-prompt memories.

The memories are the body; ``memlane.context`` composes it with the persistent block (project rules,
workflow progress) and the volatile block (working directory, branch, editor state, files touched) —
see docs/context.md. Everything stays inside ``injection.max_chars`` (Claude Code cuts
additionalContext at 10,000 characters) by dropping whole lines, so a citation is never cut in half.
When nothing is relevant, nothing is returned and nothing is injected.
"""

from __future__ import annotations

import re

from memlane.config import Config
from memlane.store.db import Event, Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from memlane.context.service import PromptContext
    from memlane.retrieval.select import Injection, Item

HEADER = "memlane: relevant memory from earlier sessions in this project (expand with `memlane show mem:ID`)."
FOOTNOTE_RULE = "---"
REFERENCES_TITLE = "References:"
FULL_TITLE = "## Relevant memories (in full)"
INDEX_TITLE = "## Possibly relevant (index: open one with `memlane show mem:ID` or the mem-details tool)"
START_HEADER = "memlane: where this project left off (expand with `memlane show mem:ID`)."
CHANGED_HEADER = "memlane: the project's rules or workflow progress changed since this session started."


def one_line(text: str, limit: int = 240) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def event_line(event: Event, limit: int = 240) -> str:
    day = event.ts[:16].replace("T", " ")
    return f"- [{event.cite}] {day} {event.type.replace('_', ' ')}: {one_line(event.content, limit)}"


# What of a prompt retrieval looks at. A pasted 19 MB log costs its full size to parse into query
# terms, to tokenize for the embedding model and to send to the daemon, yet only the first few dozen
# distinct words can be used; the head (the request) and the tail (the question after the paste) carry them.
QUERY_HEAD_CHARS = 2000
QUERY_TAIL_CHARS = 2000


def query_of(prompt: str) -> str:
    """The part of a prompt that retrieval uses: all of it when short, else its head and tail."""
    if len(prompt) <= QUERY_HEAD_CHARS + QUERY_TAIL_CHARS:
        return prompt
    return prompt[:QUERY_HEAD_CHARS] + "\n" + prompt[-QUERY_TAIL_CHARS:]


def retrieval_query(prompt: str, cfg: Config) -> str:
    """What retrieval searches for a prompt: the prompt as it is stored (private sections out, secrets
    redacted: they reach no embedding, not even a query's), its head and tail when long."""
    from memlane.privacy import filter_text

    return query_of(filter_text(prompt, cfg.privacy).text)


def prompt_hits(store: Store, prompt: str, cfg: Config, exclude_ids: Sequence[str] = ()) -> Injection:
    """Full-text memories for a prompt, in the two tiers exactly as the daemon's hybrid path chooses them.

    This is the answer when the daemon is down or late: the same retriever and the same tiers with the
    text-only model, so an exact identifier or error code finds the same memory either way, and a
    prompt that shares only common words with history gets nothing.
    """
    from memlane.retrieval.select import Injection, by_support, choose

    if len(prompt.strip()) < cfg.injection.min_prompt_chars:
        return Injection()
    from memlane.retrieval.hybrid import Retriever

    prompt = query_of(prompt)  # a pasted 19 MB log costs what its head and tail cost
    hits = Retriever(store, cfg).search(
        prompt, limit=cfg.retrieval.candidates, exclude_ids=exclude_ids, current_first=False
    )
    hits = by_support(hits, candidates_kept(cfg))
    # no vectors: no similarity-based supersession
    return choose(hits, None, cfg, store)


def candidates_kept(cfg: Config) -> int:
    """How many of a prompt's candidates (best P first) the tiers look at: room for both."""
    return cfg.injection.max_results * 3 + cfg.injection.index_max


def prompt_memories(store: Store, prompt: str, cfg: Config, exclude_ids: Sequence[str] = ()) -> list[Event]:
    """The events of ``prompt_hits``, both tiers (full first)."""
    return [h.event for h in prompt_hits(store, prompt, cfg, exclude_ids).hits]


def compose(task: str, cfg: Config, context: PromptContext | None, body: Any, header: str) -> str:
    """``body`` (lines, or a function of the room left) composed with ``context`` for ``task``
    (docs/context.md); '' when nothing to say."""
    from memlane.context.compose import PromptComposer

    if isinstance(body, list | tuple):
        body = "\n".join(body)
    if task == "prompt_injection" and not body:
        header = CHANGED_HEADER  # only the persistent block can still have something new
    return PromptComposer(cfg).compose(task, context, body, header=header)


def hits_context(
    chosen: Injection,
    cfg: Config,
    current: str = "",
    context: PromptContext | None = None,
    learned: dict[str, dict[str, Any]] | None = None,
    prompt: str = "",
) -> str:
    """Injection text for a prompt's two tiers; memories of another project (cross-project on) say so.

    The full tier comes first, each memory whole or cut to its share of the room; the index tier follows
    under its own heading, one line each. Either section may be absent; each line keeps its citation, as
    ``citations.format`` says (``citation_style``: inline, footnote, reference, or none at all). ``learned``
    (``learned_of``) adds what the learning loop knows of the full tier's memories: a level from L2 up beside
    the tier, and the insight a memory is evidence of on a line of its own (the first to go when room is short).
    An index line's gist is centred on the ``prompt``'s words when they come late in a long memory.
    """
    if not chosen:
        return compose("prompt_injection", cfg, context, "", HEADER)

    def origin(event: Event) -> str:
        return f" [project {event.project_id}]" if current and event.project_id != current else ""

    from memlane.retrieval.select import focus_words, index_line

    style = citation_style(cfg)
    focus = focus_words(prompt) if chosen.index else ()
    # An index line is its citation to open: none without citations (``choose`` leaves the tier empty then).
    gist_chars = cfg.injection.gist_chars
    index = [index_line(h.event, gist_chars, origin(h.event), focus) for h in chosen.index if style != "none"]

    by_cite = {e.cite: e for item in chosen.items for e in item_events(item)}
    # The footnotes or references of every full-tier memory, reserved before the items share the room.
    reserve = sum(len(line) + 1 for line in cite_footer(list(by_cite.values()), style))

    def body(room: int) -> str:
        parts: list[str] = []
        if index:
            parts = [INDEX_TITLE, *index]
        left = room - sum(len(p) + 1 for p in parts) - reserve
        if chosen.items and left > len(FULL_TITLE) + 80:
            left -= len(FULL_TITLE) + 1
            full: list[str] = []
            for n, item in enumerate(chosen.items):
                lines = item_lines(item, left // (len(chosen.items) - n), cfg, origin, learned or {})
                full.extend(lines)
                left -= sum(len(line) + 1 for line in lines)
            if full:
                parts = [FULL_TITLE, *restyle(full, style, by_cite), *parts]
        return "\n".join(parts)

    others = {h.event.project_id for h in chosen.hits} - {current} if current else set()
    header = header_for(len(others))
    if style == "none":
        header = header.replace(" (expand with `memlane show mem:ID`)", "")
    return compose("prompt_injection", cfg, context, body, header)


# ---- how injected memories carry their citations (citations-system §10: format, include_in_context) ----------

_LEAD: list[re.Pattern[str]] = []  # the pattern of a line's leading citation, compiled on first use


def citation_style(cfg: Config) -> str:
    """``inline`` (``- [mem:abc123] …``, the default), ``footnote`` (``- [1] …``, the citations listed after),
    ``reference`` (the lines bare, a list of citations with date and session after) or ``none``
    (``citations.enabled`` or ``citations.include_in_context`` off: no citations, and no index tier)."""
    from memlane.retrieval.select import cites_in_context

    return cfg.citations.format if cites_in_context(cfg) else "none"


def item_events(item: Item) -> list[Event]:
    """The events a full-tier item may show, each with its own line or tail."""
    return [h.event for h in item.hits] + ([item.asked] if item.asked is not None else [])


def cite_footer(events: Sequence[Event], style: str) -> list[str]:
    """What follows the full tier's lines for these events (in the order their lines cite them)."""
    if style == "footnote" and events:
        return [FOOTNOTE_RULE, *(f"[{n}] {e.cite} {e.ts[:10]}" for n, e in enumerate(events, 1))]
    if style == "reference" and events:
        return [REFERENCES_TITLE, *(f"- [{e.cite}] {e.ts[:10]}, session {e.session_id[:8]}" for e in events)]
    return []


def restyle(lines: list[str], style: str, by_cite: dict[str, Event]) -> list[str]:
    """The full tier's lines (``- [mem:…] …`` and ``  · [mem:…] …``) with their leading citation as ``style``
    says, and its footer; inline: as they are. A citation in a memory's own text is left alone."""
    if style == "inline":
        return lines
    if not _LEAD:
        _LEAD.append(re.compile(r"^(- |  · )\[(mem:[0-9a-z]{6,8})\] "))
    cited: list[Event] = []
    out = []
    for line in lines:
        match = _LEAD[0].match(line)
        event = by_cite.get(match.group(2)) if match else None
        if match is None or event is None:
            out.append(line)
            continue
        if event not in cited:
            cited.append(event)
        mark = f"[{cited.index(event) + 1}] " if style == "footnote" else ""
        out.append(match.group(1) + mark + line[match.end() :])
    return out + cite_footer(cited, style)


def item_lines(
    item: Item,
    room: int,
    cfg: Config,
    origin: Callable[[Event], str],
    learned: dict[str, dict[str, Any]] | None = None,
) -> list[str]:
    """One full-tier item within ``room`` characters: its lead memory whole (up to ``injection.full_chars``),
    then one line each for the prompt that asked and the exchange's other matching memories, and the insight
    one of them is evidence of (``learned``)."""
    learned = learned or {}
    lead, rest = item.lead, item.hits[1:]
    context = [item.asked] if item.asked is not None else []
    context += [h.event for h in rest]
    tails = [f"  · [{e.cite}] {e.type.replace('_', ' ')}: {one_line(e.content, 160)}" for e in context]
    event = lead.event
    insight = next((learned[e.id]["insight"] for e in (event, *context) if "insight" in learned.get(e.id, {})), None)
    if insight is not None:
        what = ("verified " if insight.get("verified") else "") + str(insight["type"]).replace("_", " ")
        tails.append(f"  · insight ({what}, L{insight['level']}): {one_line(str(insight['content']), 160)}")
    best = max(item.hits, key=lambda h: h.score)  # the item's tier and score: its answer may have come along
    level = int(learned.get(event.id, {}).get("level", 0))
    day = event.ts[:16].replace("T", " ")
    kind = event.type.replace("_", " ")
    mark = f", L{level}" if level >= 2 else ""  # L1 is one use: not worth the characters
    head = f"- [{event.cite}] ({best.confidence}, {best.score:.2f}{mark}) {day}{origin(event)} {kind}: "
    share = min(cfg.injection.full_chars, room - sum(len(t) + 1 for t in tails) - 1) - len(head)
    while share < 80 and tails:  # the lead first: context lines go before it is cut to a stub
        share += len(tails.pop()) + 1
    if share < 40:
        return []
    return [head + one_line(event.content, share), *tails]


def header_for(other_projects: int) -> str:
    """The injection's first line: says so when memories of other projects are in it (retrieval.cross_project)."""
    if not other_projects:
        return HEADER
    return HEADER.replace("in this project", f"in this project and {other_projects} other project(s)")


def prompt_context(
    store: Store, prompt: str, cfg: Config, exclude_ids: Sequence[str] = (), context: PromptContext | None = None
) -> str:
    chosen = prompt_hits(store, prompt, cfg, exclude_ids)
    record(store, exclude_ids, chosen, "text")
    return hits_context(chosen, cfg, context=context, learned=learned_of(store, chosen), prompt=prompt)


def learned_of(store: Any, chosen: Injection) -> dict[str, dict[str, Any]]:
    """Level and insight of the full tier's memories (the learning loop's ``Store.learned``: two indexed reads,
    ~70 µs for 20 ids); empty when the store keeps none or cannot say: never fails the prompt."""
    ids = [e.id for item in chosen.items for e in item_events(item)]
    if not ids or not hasattr(store, "learned"):
        return {}
    try:
        return dict(store.learned(ids))
    except Exception as exc:  # noqa: BLE001 - a level is a nicety; the prompt's memories are not
        from memlane.logs import log

        log("inject", "warning", f"levels not read: {exc!r}")
        return {}


def record(store: Store, exclude_ids: Sequence[str], chosen: Injection, mode: str) -> None:
    """Log what the prompt (the first of ``exclude_ids``: the hook's stored prompt) was told; never fails the hook."""
    if not exclude_ids:
        return
    try:
        prompt = store.get(exclude_ids[0])
        if prompt is not None and prompt.type == "user_prompt":
            store.record_injection(prompt.id, prompt.session_id, chosen.record(mode))
    except Exception as exc:  # noqa: BLE001 - the log is for people; the prompt's answer must not depend on it
        from memlane.logs import log

        log("inject", "warning", f"injection not logged: {exc!r}")


def session_start_context(
    store: Store, session_id: str, cfg: Config, extra: Sequence[str] = (), context: PromptContext | None = None
) -> str:
    """The previous session's summary and recent prompts from other sessions, with project context."""
    lines: list[str] = []
    previous = [s for s in store.sessions(limit=10) if s["id"] != session_id]
    summarised = next((s for s in previous if s.get("summary")), None)
    if summarised:
        lines.append(
            f"Previous session ({str(summarised['last_activity'])[:10]}, {summarised['prompt_count']} prompt(s)):"
        )
        lines.extend(f"  {line}" for line in str(summarised["summary"]).split("\n"))
    recent = [
        e
        for e in store.history(types=["user_prompt"], limit=cfg.injection.session_start_recent * 3)
        if e.session_id != session_id
    ][: cfg.injection.session_start_recent]
    if recent:
        lines.append("Recent prompts:")
        lines.extend(event_line(e, 200) for e in recent)
    lines.extend(extra)
    return compose("session_start", cfg, context, lines, START_HEADER)
