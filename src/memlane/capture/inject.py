"""What the hooks give back to Claude: the session-start digest and per-prompt memories.

The memories are the body; ``memlane.context`` composes it with the persistent block (project rules,
workflow progress) and the volatile block (working directory, branch, editor state, files touched) —
see docs/context.md. Everything stays inside ``injection.max_chars`` (Claude Code cuts
additionalContext at 10,000 characters) by dropping whole lines, so a citation is never cut in half.
When nothing is relevant, nothing is returned and nothing is injected.
"""

from __future__ import annotations

from memlane.config import Config
from memlane.store.db import Event, Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from memlane.context.service import PromptContext

HEADER = "memlane: relevant memory from earlier sessions in this project (expand with `memlane show mem:ID`)."
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


def prompt_hits(store: Store, prompt: str, cfg: Config, exclude_ids: Sequence[str] = ()) -> list[Any]:
    """Full-text memories for a prompt, scored and gated exactly as the daemon's hybrid path gates them.

    This is the answer when the daemon is down or late: the same retriever and the same gate with the
    text-only model, so an exact identifier or error code finds the same memory either way, and a
    prompt that shares only common words with history gets nothing.
    """
    if len(prompt.strip()) < cfg.injection.min_prompt_chars:
        return []
    from memlane.retrieval.hybrid import Retriever
    from memlane.retrieval.select import by_support, select_for_injection

    prompt = query_of(prompt)  # a pasted 19 MB log costs what its head and tail cost
    hits = Retriever(store, cfg).search(
        prompt, limit=cfg.retrieval.candidates, exclude_ids=exclude_ids, current_first=False
    )
    hits = by_support(hits, cfg.injection.max_results * 3)
    # no vectors: no similarity-based supersession
    return select_for_injection(hits, None, cfg, store)


def prompt_memories(store: Store, prompt: str, cfg: Config, exclude_ids: Sequence[str] = ()) -> list[Event]:
    """The events of ``prompt_hits``."""
    return [h.event for h in prompt_hits(store, prompt, cfg, exclude_ids)]


def compose(task: str, cfg: Config, context: PromptContext | None, lines: Sequence[str], header: str) -> str:
    """The body ``lines`` composed with ``context`` for ``task`` (docs/context.md); '' when nothing to say."""
    from memlane.context.compose import PromptComposer

    if task == "prompt_injection" and not lines:
        header = CHANGED_HEADER  # only the persistent block can still have something new
    return PromptComposer(cfg).compose(task, context, "\n".join(lines), header=header)


def hits_context(hits: Sequence[Any], cfg: Config, current: str = "", context: PromptContext | None = None) -> str:
    """Injection text for scored hits; memories of another project (cross-project on) say so."""
    lines = []
    for hit in hits:
        event = hit.event
        day = event.ts[:16].replace("T", " ")
        origin = f" [project {event.project_id}]" if current and event.project_id != current else ""
        lines.append(
            f"- [{event.cite}] ({hit.confidence}, {hit.score:.2f}) {day}{origin} "
            f"{event.type.replace('_', ' ')}: {one_line(event.content, 240)}"
        )
    others = {h.event.project_id for h in hits} - {current} if current else set()
    return compose("prompt_injection", cfg, context, lines, header_for(len(others)))


def header_for(other_projects: int) -> str:
    """The injection's first line: says so when memories of other projects are in it (retrieval.cross_project)."""
    if not other_projects:
        return HEADER
    return HEADER.replace("in this project", f"in this project and {other_projects} other project(s)")


def prompt_context(
    store: Store, prompt: str, cfg: Config, exclude_ids: Sequence[str] = (), context: PromptContext | None = None
) -> str:
    return hits_context(prompt_hits(store, prompt, cfg, exclude_ids), cfg, context=context)


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
