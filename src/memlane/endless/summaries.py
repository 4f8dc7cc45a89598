"""LLM-assisted key facts of a consolidated memory: what a model is given, and what of its answer is kept.

Used only when the user turned an LLM on (``[llm]``, ``knowledge/llm.py``); ``assist.py`` asks, within the daily
budget, and ``consolidation.py`` applies the answers kept in the store. Everything here is a pure function of a
memory's extractive facts, their events and a kept answer, so following the log and ``memlane rebuild`` give the
same memory, and no model is asked again for an input it answered.

**What the model is given** (``inputs``): the topic's title and the events of its extractive key facts, oldest
first, numbered — a prompt or an answer as stored (after the privacy filter: no ``<private>`` text or secret),
cut at ``MESSAGE_CHARS``; any other event (an edit, a command, a read, a task update) only by the one-line facts
consolidation already keeps (the edit's line, the error line): never a tool's output, a file's contents or
anything read from disk.

**What is kept** (``check``): quotes only — for each key fact the message it comes from and words copied from
it. A quote that is not in its message (whitespace aside), too short or too long is refused; so is anything
else the model writes. An answer with no quote left leaves the memory extractive.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from memlane.store import keys
from memlane.store.db import Store

SYSTEM = (
    "You read what an AI coding agent's sessions said about one topic of a software project (a file, a command, "
    "a decision, a task), as numbered messages, oldest first, and pick the key facts worth remembering about it "
    "later: what it is for, what was decided or changed and why, what failed and what fixed it, where it stands "
    'now. Answer with JSON only, of this shape: {"facts": [{"message": <number>, "text": "<words copied exactly '
    'from that message>"}]}. Rules: at most 5 facts; copy each one character for character from the numbered '
    "message (a sentence or a line, at most 300 characters); never paraphrase, summarise or add words of your "
    'own; leave out anything uncertain; answer {"facts": []} when nothing is worth keeping.'
)
MESSAGE_CHARS = 1500  # a prompt or an answer is sent up to this long
MAX_QUOTES = 5
MIN_QUOTE_CHARS = 12  # shorter "quotes" ("the pool") say nothing on their own
MAX_QUOTE_CHARS = 400
FULL_TEXT = ("user_prompt", "agent_response")
ROLES = {"user_prompt": "user", "agent_response": "agent"}


@dataclass
class Inputs:
    """What a model would be given for one memory: its messages (event id, time, the fact's role, the text sent),
    the prompt, and the prompt's hash (what a kept answer is found by)."""

    messages: list[dict[str, Any]]
    prompt: str
    input_hash: str


def _norm(text: str) -> str:
    return " ".join(text.split())


def inputs(store: Store, memory: dict[str, Any]) -> Inputs | None:
    """The model's input for a memory built from its extractive ``facts``; None when it has none."""
    order: list[str] = []
    facts_of: dict[str, list[dict[str, Any]]] = {}
    for fact in memory["facts"]:
        if fact["event_id"] not in facts_of:
            order.append(fact["event_id"])
        facts_of.setdefault(fact["event_id"], []).append(fact)
    events = {e.id: e for e in store.by_ids(order)}
    messages = []
    for event_id in order:
        event = events.get(event_id)
        if event is None:
            continue
        facts = facts_of[event_id]
        if event.type in FULL_TEXT:
            text = event.content[:MESSAGE_CHARS]
        else:  # a tool call, a task update: only the lines consolidation keeps, never its output
            text = "\n".join(dict.fromkeys(f["text"] for f in facts))
        messages.append(
            {"event_id": event_id, "ts": facts[0]["ts"], "role": facts[0]["role"], "who": ROLES.get(event.type, "tool"),
             "text": text}
        )  # fmt: skip
    if not messages:
        return None
    lines = [f"Topic: {memory['title']} (a {memory['kind']})", "", "Messages, oldest first:"]
    for i, message in enumerate(messages):
        lines += ["", f"[{i}] {message['who']} ({message['ts'][:10]}): {message['text']}"]
    prompt = "\n".join(lines)
    return Inputs(messages, prompt, keys.sha256_hex(f"endless-key-facts|{SYSTEM}|{prompt}"))


def check(text: str, given: Inputs) -> dict[str, Any]:
    """The model's answer reduced to what is kept: ``facts`` (message number and words, each found in the message
    it names) and how many quotes were ``refused``."""
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start : end + 1]) if start >= 0 else None
    except ValueError:
        data = None
    items = data.get("facts") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return {"facts": [], "refused": 1}  # not an answer of the asked shape: nothing of it is kept
    kept: list[dict[str, Any]] = []
    refused = 0
    for item in items:
        quote = _quote(item, given)
        if quote is None:
            refused += 1
        elif quote not in kept and len(kept) < MAX_QUOTES:
            kept.append(quote)
    return {"facts": kept, "refused": refused}


def _quote(item: Any, given: Inputs) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        return None
    index, words = item.get("message"), item.get("text")
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(given.messages):
        return None
    if not isinstance(words, str):
        return None
    words = _norm(words)
    if not MIN_QUOTE_CHARS <= len(words) <= MAX_QUOTE_CHARS or words not in _norm(given.messages[index]["text"]):
        return None
    return {"message": index, "text": words}


def quoted_facts(given: Inputs, response: dict[str, Any]) -> list[dict[str, Any]]:
    """A kept answer's quotes as a memory's key facts, oldest first (each checked again against its message): the
    event, its time, the role of the fact it came from, the words, ``by: llm``."""
    out: list[tuple[int, int, dict[str, Any]]] = []
    seen: set[str] = set()
    for quote in response.get("facts") or []:
        if not isinstance(quote, dict):
            continue
        checked = _quote(quote, given)
        if checked is None or checked["text"] in seen:
            continue
        seen.add(checked["text"])
        message = given.messages[checked["message"]]
        place = _norm(message["text"]).find(checked["text"])
        fact = {"event_id": message["event_id"], "ts": message["ts"], "role": message["role"],
                "text": checked["text"], "by": "llm"}  # fmt: skip
        out.append((checked["message"], place, fact))
    out.sort(key=lambda t: (t[2]["ts"], t[0], t[1]))
    return [fact for _, _, fact in out]
