"""Insights: what the sessions say that is worth knowing later, each tied to the words that say it.

Four kinds, read by rules (no model) from the events as the learning projector meets them:

- **decision**: a sentence that takes one — "Decision: …", "we decided …", "switch the task queue from Celery to
  RQ", "use date-fns instead of moment", "we went with Postgres" (the knowledge model's patterns,
  ``decisions.py``; a bare "removed X" is not an insight);
- **preference**: a standing rule the user gave ("always use pnpm here", "never push to main", "from now on
  write tests first"; ``context/preferences.extract``);
- **convention**: how the project does things — "the convention is …", "by convention …", "tests go in
  tests/unit", "migrations live under db/migrations", "branches are named feature/<ticket>";
- **error_fix**: a shell command that failed with the same error more than once (the error line, numbers and
  paths aside: its *signature*), with what made it pass again in the session that fixed it — the changes made
  between the failure and the run that passed (or that run itself).

An extractor hands over quotes only; ``aligner.align`` computes where each one is in its event, and that span is
the insight's evidence (``insight_sources``). An insight is one per (kind, canonical key of its words): said again
in another event or session, it gains a source, and its *support* grows. An optional LLM extractor (``llm.py``)
adds insights the same way, from the quotes a model returned.

Everything here looks only at events stored before the one being read (``seq``), so a rebuild gives the same rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memlane.context import preferences
from memlane.knowledge import aligner, decisions
from memlane.knowledge.text import sentences, stable_id, title_key
from memlane.store.db import Event, Store

TYPES = ("decision", "convention", "preference", "error_fix")
MAX_CHARS = 300  # a longer sentence is rarely one statement
SHELL_TOOLS = ("Bash", "shell", "exec_command", "local_shell", "container.exec")

# Confidence of a rule's reading (the extraction), before alignment.
CONFIDENCE = {"explicit": 0.9, "decision": 0.85, "preference": 0.9, "convention": 0.8, "error_fix": 0.85, "llm": 0.8}

_CONVENTION = re.compile(
    r"""(?ix)
    \b(?:the|our|a|project|naming|coding|commit|branch)\s+convention\b
    | \bby\s+convention\b
    | ^\s*convention\s*:
    | \b(?:tests?|migrations?|fixtures?|scripts?|docs?|config(?:s|uration)?|components?|modules?|helpers?|types?
         |assets?|templates?|handlers?|models?|schemas?|snapshots?)\s+(?:always\s+)?(?:go|goes|live|lives|belong|belongs
         |are\s+kept|is\s+kept|should\s+go|should\s+live|must\s+go|must\s+live)\s+(?:in|under|into|next\s+to)\s+\S
    | \b(?:are|is|should\s+be|must\s+be)\s+named\s+(?:after|like|with|as|in|using|`|")
    | \b(?:files|functions|classes|tables|columns|branches|commits|tests|variables|endpoints)
         \s+(?:are|should\s+be|must\s+be)
         \s+(?:named|prefixed|suffixed|written\s+in|in\s+(?:snake|camel|kebab|pascal)[\s_-]?case)\b
    | \b(?:we|this\s+(?:project|repo|codebase))\s+(?:always\s+)?(?:uses?|keeps?|follows?)
         \s+\S+(?:\s+\S+){0,3}\s+for\s+(?:all\s+)?\w
    """
)
_EXPLICIT = re.compile(r"^\s*(?:decision\s*:|we\s+decided\b|(?:the\s+)?decision\s+(?:is|was)\b|decided\s*:)", re.I)

# An error line worth a signature: an exception class, "error:", a failed test, a missing command or file.
_ERROR_LINE = re.compile(
    r"""(?x)
    \b[A-Z]\w*(?:Error|Exception)\b
    | (?i:\berror(?:\[\w+\])?\s*:)
    | (?i:\bfatal\s*:)
    | \bFAILED\b
    | \bpanic:
    | \bnpm\s+ERR!
    | \b(?:TS|E)\d{4}\b
    | (?i:command\s+not\s+found)
    | (?i:no\s+such\s+file\s+or\s+directory)
    | (?i:permission\s+denied)
    | (?i:cannot\s+find\s+module)
    """
)
_NUMBER = re.compile(r"\b\d+(?:\.\d+)*\w*\b")
_HEX = re.compile(r"\b(?:0x)?[0-9a-f]{7,}\b", re.I)
_PATH = re.compile(r"(?:[\w.-]*/)+([\w.-]+)")
_PYTEST_PREFIX = re.compile(r"^\s*(?:E\s{2,}|>\s+|\|\s+)")
READ_ONLY = re.compile(r"^\s*(?:ls|cat|head|tail|grep|rg|find|pwd|echo|git\s+(?:status|diff|log|show)|which|env)\b")


@dataclass
class Quote:
    """One source of an insight: where in which event its words are."""

    event: Event
    quote: str
    role: str  # states | error | fix | passed
    confidence: float  # the extractor's (before alignment)


def statements(event: Event) -> list[tuple[str, str, float]]:
    """(kind, sentence, confidence) of the decisions, preferences and conventions ``event`` states."""
    if event.type not in ("user_prompt", "agent_response"):
        return []
    out: list[tuple[str, str, float]] = []
    taken: set[str] = set()
    for found in decisions.decisions(event):
        quote = found.quote.strip()
        if len(quote) > MAX_CHARS or quote.endswith("?") or title_key(quote) in taken:
            continue
        explicit = bool(_EXPLICIT.search(quote))
        if not explicit and not found.introduces:  # "removed the import" takes no decision worth keeping
            continue
        out.append(("decision", quote, CONFIDENCE["explicit" if explicit else "decision"]))
        taken.add(title_key(quote))
    if event.type == "user_prompt":  # a standing rule the user gave (one that takes a decision is one already)
        for sentence in preferences.extract(event.content):
            if title_key(sentence) not in taken and not any(title_key(sentence) in t or t in title_key(sentence)
                                                            for t in taken):  # fmt: skip
                out.append(("preference", sentence, CONFIDENCE["preference"]))
                taken.add(title_key(sentence))
    text = event.content
    for start, end in sentences(text):
        sentence = text[start:end].strip().lstrip("-*> ").strip()
        if not 12 <= len(sentence) <= MAX_CHARS or sentence.endswith("?") or "```" in sentence:
            continue
        if title_key(sentence) in taken or not _CONVENTION.search(sentence):
            continue
        out.append(("convention", sentence, CONFIDENCE["convention"]))
        taken.add(title_key(sentence))
    return out


def insight_id(kind: str, key: str) -> str:
    return "in-" + stable_id(kind, key)


def key_of(kind: str, quote: str) -> str:
    if kind == "error_fix":
        return error_signature(quote) or title_key(quote)
    return title_key(quote)[:200]


# ---- errors and their fixes -------------------------------------------------------------------------------


def is_shell(event: Event) -> bool:
    return (
        event.type == "tool_observation"
        and str(event.metadata.get("tool_name") or "") in SHELL_TOOLS
        and isinstance(event.metadata.get("command"), str)
    )


def command_key(event: Event) -> str:
    return " ".join(str(event.metadata.get("command") or "").split())[:300]


def error_line(event: Event) -> tuple[int, int] | None:
    """(start, end) of the first line of a failed command's output that names the error."""
    text = event.content
    first = text.find("\n")
    offset = first + 1 if first >= 0 else len(text)
    for line in text[offset:].split("\n"):
        stripped = line.strip()
        if stripped and len(stripped) <= 400 and _ERROR_LINE.search(stripped):
            start = offset + line.index(stripped)
            return start, start + len(stripped)
        offset += len(line) + 1
    return None


def error_signature(line: str) -> str:
    """What stays the same when an error recurs: the line without numbers, hashes, directories or pytest's
    margin, canonical (``E   TimeoutError: pool exhausted after 30s`` → ``timeouterror pool exhausted after s``)."""
    text = _PYTEST_PREFIX.sub("", line)
    text = _HEX.sub("", text)
    text = _PATH.sub(r"\1", text)
    text = _NUMBER.sub("", text)
    return title_key(text)[:160]


def fix_quote(event: Event) -> str | None:
    """The words of a change that made a command pass: an edit from its first line through its first added line
    (one span of its text: a quote is contiguous), or the command that was run."""
    if is_shell(event):
        command = command_key(event)
        if not command or READ_ONLY.match(command):
            return None
        return event.content.split("\n", 1)[0]
    if event.type != "tool_observation" or not event.metadata.get("success", True):
        return None
    tool = str(event.metadata.get("tool_name") or "")
    if tool not in ("Edit", "MultiEdit", "Write", "apply_patch", "NotebookEdit"):
        return None
    text = event.content
    first = text.split("\n", 1)[0]
    at = text.find("\n+ ")
    if at < 0:
        return first
    end = text.find("\n", at + 1)
    end = len(text) if end < 0 else end
    if end <= MAX_CHARS:  # the change as it reads: the file, what went, what came
        return text[:end]
    return text[at + 1 : end][:MAX_CHARS]


# ---- keeping them ---------------------------------------------------------------------------------------


def record(
    store: Store,
    kind: str,
    key: str,
    quotes: Sequence[Quote],
    origin: str,
    detail: dict[str, Any] | None = None,
) -> str | None:
    """Add ``quotes`` as sources of the insight (kind, key), creating it if new. Each quote is aligned in its
    event; the content is the earliest statement's words (the same whichever source came first). Returns the id."""
    if not key or not quotes:
        return None
    iid = insight_id(kind, key)
    existing = store.insight(iid)
    old_sources = store.insight_sources([iid]).get(iid, []) if existing else []
    sources: dict[tuple[str, str], dict[str, Any]] = {(s["event_id"], s["role"]): s for s in old_sources}
    confidence = existing["confidence"] if existing else 0.0
    for q in quotes:
        found = aligner.align(q.quote, q.event.content)
        confidence = max(confidence, round(q.confidence * found.confidence, 4))
        key_ = (q.event.id, q.role)
        old = sources.get(key_)
        if old is not None and old["confidence"] >= found.confidence:
            continue
        sources[key_] = {"event_id": q.event.id, "role": q.role, "method": found.method, "start": found.start,
                         "end": found.end, "span_start": found.start, "span_end": found.end,
                         "confidence": found.confidence}  # fmt: skip
    rows = list(sources.values())
    events = {e.id: e for e in store.by_ids(sorted({s["event_id"] for s in rows}))}
    rows = [s for s in rows if s["event_id"] in events]
    if not rows:
        return None
    for s in rows:
        s.setdefault("start", s.get("span_start"))
        s.setdefault("end", s.get("span_end"))

    def when(s: dict[str, Any]) -> tuple[str, int, str]:
        e = events[s["event_id"]]
        return (e.ts, e.seq, s["role"])

    stating = sorted((s for s in rows if s["role"] in ("states", "error")), key=when) or sorted(rows, key=when)
    origins = sorted(set(existing["origin"].split("+") if existing else []) | {origin})
    content = _content(kind, rows, events, when)
    all_ts = sorted(events[s["event_id"]].ts for s in rows)
    store.put_insight(
        {
            "id": iid,
            "insight_type": kind,
            "canonical_key": key,
            "content": content,
            "origin": "+".join(origins),
            "confidence": confidence,
            "evidence_aligned": all(s["method"] != "none" for s in rows),
            "anchor_id": stating[-1]["event_id"],
            "support": len({s["event_id"] for s in stating}),
            "first_ts": all_ts[0],
            "last_ts": all_ts[-1],
            "detail": {**(existing["detail"] if existing else {}), **(detail or {})},
        },
        rows,
    )
    return iid


def _span_text(event: Event, source: dict[str, Any]) -> str:
    start, end = source.get("start"), source.get("end")
    if start is None or end is None:
        return ""
    return " ".join(event.content[start:end].split())


def _content(kind: str, rows: list[dict[str, Any]], events: dict[str, Event], when: Any) -> str:
    ordered = sorted(rows, key=when)
    if kind != "error_fix":
        first = next((s for s in ordered if s["role"] == "states" and s["method"] != "none"), ordered[0])
        return _span_text(events[first["event_id"]], first) or "(its quote is not in its source)"
    error = next((s for s in ordered if s["role"] == "error"), None)
    fixes = [s for s in ordered if s["role"] in ("fix", "passed")]
    text = _span_text(events[error["event_id"]], error) if error else ""
    if fixes:
        latest = fixes[-1]
        text += " → fixed by: " + (_span_text(events[latest["event_id"]], latest) or "a later run")
    return text or "(its quote is not in its source)"
