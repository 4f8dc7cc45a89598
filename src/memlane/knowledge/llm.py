"""The optional LLM insight extractor: a model reads a session and hands back **quotes only**.

Off unless ``[llm]`` names a provider and a model (``memlane config set llm.provider openai`` …): nothing is sent
anywhere before that. Three kinds of endpoint, through the standard library's HTTP client (as the
OpenAI-compatible embedding provider does; ``httpx`` is not installed, and one call a few minutes apart needs
no connection pool):

- ``anthropic``: the Messages API (``POST /v1/messages``, ``x-api-key``);
- ``openai``: any OpenAI-compatible endpoint (``POST /chat/completions``: OpenAI, vLLM, LM Studio, llama.cpp);
- ``ollama``: its own API (``POST /api/chat``, ``format: json``).

**What is sent**: one slice of a session at a time (``llm.max_input_chars``), as numbered messages — the prompts
and answers as stored (after the privacy filter: no ``<private>`` text or secret ever reaches the model), and
tool calls by their first lines. **What comes back** is read as quotes and nothing else: for each insight a
kind (decision, convention, preference, error_fix) and the exact words of the numbered messages that state it.
Whatever else the model writes is dropped. Each quote goes through the evidence aligner (``aligner.align``) in
the message it names; an insight keeps its model-less words — the aligned span of its source — and one whose
quotes do not align stays unverified (evidence-aligner-v2 §7).

**Budget**: ``llm.daily_token_budget`` (tokens in + out) and ``llm.daily_cost_usd`` (priced with
``llm.input_usd_per_mtok`` / ``output_usd_per_mtok``), per UTC day over all projects, kept in
``~/.memlane/state/llm-usage.json`` (under a lock). Before each call the extractor checks that the call's
worst case (its input, estimated at 4 characters a token, plus its output cap) still fits; if not it stops and
says so: ``stopped: the daily token budget (200,000) is reached: 198,112 used today``. Each answer is kept in
the store (``llm_extractions``: the response, its tokens and cost), so ``rebuild`` re-reads it instead of paying
again, and forgetting (or redacting) any event it was given removes it.

The daemon runs it every few minutes on sessions that ended or have been quiet ``llm.idle_minutes``
(``daemon/jobs.ExtractInsights``); ``memlane insights extract`` runs it now.

Endless mode's consolidation uses the same client, budget and ledger for a topic's key facts, also quotes only
(``endless/assist.py``, docs/endless.md); its answers are kept beside these (``llm_consolidations``).
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from memlane import config, paths
from memlane.errors import MemlaneError
from memlane.filelock import FileLock
from memlane.knowledge.insights import TYPES
from memlane.store import keys
from memlane.store.db import Event, Store
from memlane.store.schema import indexed

OUTPUT_TOKENS = 1500  # the answer's cap: part of each call's worst case against the budget
CHARS_PER_TOKEN = 4
MAX_QUOTE_CHARS = 400
TOOL_CHARS = 300  # a tool call is sent by its first lines only
DAYS_KEPT = 31
DEFAULT_URLS = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
    "ollama": "http://127.0.0.1:11434",
}

SYSTEM = (
    "You read a coding session between a user and an AI coding agent and find what is worth remembering in this "
    "project later: decisions taken, project conventions, the user's standing preferences, and errors that "
    "recurred together with what fixed them. Answer with JSON only, of this shape: "
    '{"insights": [{"type": "decision|convention|preference|error_fix", "quotes": [{"message": <number>, '
    '"text": "<words copied exactly from that message>"}]}]}. Rules: copy quotes character for character from the '
    "numbered messages (a sentence or a line, at most 300 characters); never paraphrase, summarise or add words of "
    "your own; for error_fix give the error's line first, then the fix; leave out anything uncertain; "
    'answer {"insights": []} when there is nothing.'
)


class ExtractorError(MemlaneError):
    """The LLM extractor's endpoint could not be used (unreachable, an HTTP error, an answer of the wrong shape)."""


@dataclass
class Report:
    calls: int = 0
    insights: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    sessions: list[str] = field(default_factory=list)
    stopped: str = ""  # why it stopped before the work was done (the budget, an error)
    off: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "insights": self.insights,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "sessions": self.sessions,
            "stopped": self.stopped,
            "off": self.off,
        }

    def line(self) -> str:
        if self.off:
            return "the LLM extractor is off: set llm.provider and llm.model (docs/learning.md)"
        head = (
            f"{self.calls} call(s) on {len(self.sessions)} session(s): {self.insights} quote(s) kept, "
            f"{self.input_tokens + self.output_tokens} tokens, ${self.cost_usd:.4f}"
            if self.calls
            else "nothing new to read"
        )
        return head + (f"; stopped: {self.stopped}" if self.stopped else "")


def configured(cfg: config.Config) -> bool:
    return bool(cfg.llm.provider and cfg.llm.model)


# ---- the budget ---------------------------------------------------------------------------------------------


def _ledger_path() -> str:
    return paths.join("state", "llm-usage.json")


def _today() -> str:
    return time.strftime("%Y-%m-%d", time.gmtime())


def _read_ledger() -> dict[str, dict[str, Any]]:
    try:
        with open(_ledger_path(), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def spent_today() -> dict[str, Any]:
    day = _read_ledger().get(_today()) or {}
    return {
        "calls": int(day.get("calls", 0)),
        "input_tokens": int(day.get("input_tokens", 0)),
        "output_tokens": int(day.get("output_tokens", 0)),
        "cost_usd": float(day.get("cost_usd", 0.0)),
    }


def _record_spend(input_tokens: int, output_tokens: int, cost: float) -> None:
    from memlane import atomic

    with FileLock(_ledger_path() + ".lock"):
        data = _read_ledger()
        day = data.setdefault(_today(), {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0})
        day["calls"] = int(day.get("calls", 0)) + 1
        day["input_tokens"] = int(day.get("input_tokens", 0)) + input_tokens
        day["output_tokens"] = int(day.get("output_tokens", 0)) + output_tokens
        day["cost_usd"] = round(float(day.get("cost_usd", 0.0)) + cost, 6)
        for old in sorted(data)[:-DAYS_KEPT]:
            del data[old]
        paths.ensure_dir(os.path.dirname(_ledger_path()))
        atomic.write_text(_ledger_path(), json.dumps(data, indent=1, sort_keys=True))


def cost_of(cfg: config.Config, input_tokens: int, output_tokens: int) -> float:
    return (input_tokens * cfg.llm.input_usd_per_mtok + output_tokens * cfg.llm.output_usd_per_mtok) / 1e6


def over_budget(cfg: config.Config, input_chars: int) -> str:
    """Why a call of ``input_chars`` would not fit today's budget ('' when it fits)."""
    spent = spent_today()
    worst_in = input_chars // CHARS_PER_TOKEN + 1
    used = spent["input_tokens"] + spent["output_tokens"]
    cap = cfg.llm.daily_token_budget
    if cap and used + worst_in + OUTPUT_TOKENS > cap:
        return f"the daily token budget ({cap:,}) is reached: {used:,} used today (llm.daily_token_budget)"
    money = cfg.llm.daily_cost_usd
    if money and spent["cost_usd"] + cost_of(cfg, worst_in, OUTPUT_TOKENS) > money:
        spent_usd = f"${spent['cost_usd']:.4f}"
        return f"the daily cost budget (${money:.2f}) is reached: {spent_usd} spent today (llm.daily_cost_usd)"
    return ""


def budget_line(cfg: config.Config) -> str:
    spent = spent_today()
    used = spent["input_tokens"] + spent["output_tokens"]
    tokens = f"{used:,} of {cfg.llm.daily_token_budget:,} tokens" if cfg.llm.daily_token_budget else f"{used:,} tokens"
    money = f"${spent['cost_usd']:.4f}" + (f" of ${cfg.llm.daily_cost_usd:.2f}" if cfg.llm.daily_cost_usd else "")
    state = f"{cfg.llm.provider} {cfg.llm.model}" if configured(cfg) else "off"
    return f"LLM extractor ({state}): today {spent['calls']} call(s), {tokens}, {money}"


def usage_report(cfg: config.Config) -> dict[str, Any]:
    return {
        "configured": configured(cfg),
        "provider": cfg.llm.provider,
        "model": cfg.llm.model,
        "today": spent_today(),
        "budget": {"tokens": cfg.llm.daily_token_budget, "cost_usd": cfg.llm.daily_cost_usd},
        "days": {day: spent for day, spent in sorted(_read_ledger().items(), reverse=True)},
    }


# ---- what is sent -------------------------------------------------------------------------------------------


def message_text(event: Event) -> str:
    if event.type == "tool_observation":
        return event.content[:TOOL_CHARS]
    return event.content


def slices(events: list[Event], max_chars: int) -> list[list[Event]]:
    """The session's events in slices of at most ``max_chars`` of text (an event longer than that alone)."""
    out: list[list[Event]] = []
    current: list[Event] = []
    size = 0
    for event in events:
        if not indexed(event.type, event.content):
            continue
        n = len(message_text(event)) + 24
        if current and size + n > max_chars:
            out.append(current)
            current, size = [], 0
        current.append(event)
        size += n
    if current:
        out.append(current)
    return out


def prompt_of(events: list[Event], max_chars: int) -> str:
    roles = {"user_prompt": "user", "agent_response": "agent", "tool_observation": "tool"}
    parts = []
    for i, event in enumerate(events):
        parts.append(f"[{i}] {roles.get(event.type, event.type)}: {message_text(event)[:max_chars]}")
    return "Messages:\n\n" + "\n\n".join(parts)


# ---- the call -----------------------------------------------------------------------------------------------


def _post(url: str, body: dict[str, Any], headers: dict[str, str], timeout: float) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST", headers={"Content-Type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise ExtractorError(f"LLM endpoint {url} answered HTTP {exc.code}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise ExtractorError(f"LLM endpoint {url} unreachable: {exc}") from exc
    except ValueError as exc:
        raise ExtractorError(f"LLM endpoint {url} returned invalid JSON") from exc
    if not isinstance(data, dict):
        raise ExtractorError(f"LLM endpoint {url} returned an unexpected shape")
    return data


def call(cfg: config.Config, prompt: str, system: str = SYSTEM) -> tuple[str, int, int]:
    """Ask the configured model (with ``system``: the extractor's instructions unless another reader, such as endless
    mode's key facts, gives its own); (its text, input tokens, output tokens)."""
    llm = cfg.llm
    base = (llm.url or DEFAULT_URLS[llm.provider]).rstrip("/")
    key = os.environ.get(llm.api_key_env, "") if llm.api_key_env else ""
    if llm.api_key_env and not key:
        raise ExtractorError(f"llm.api_key_env names ${llm.api_key_env}, which is not set")
    try:
        if llm.provider == "anthropic":
            headers = {"anthropic-version": "2023-06-01", **({"x-api-key": key} if key else {})}
            data = _post(f"{base}/v1/messages", {"model": llm.model, "max_tokens": OUTPUT_TOKENS, "system": system,
                         "messages": [{"role": "user", "content": prompt}]}, headers, llm.timeout_s)  # fmt: skip
            text = "".join(b.get("text", "") for b in data.get("content") or [] if isinstance(b, dict))
            usage = data.get("usage") or {}
            return text, int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
        if llm.provider == "openai":
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            data = _post(f"{base}/chat/completions", {"model": llm.model, "max_tokens": OUTPUT_TOKENS, "temperature": 0,
                         "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}]},
                         headers, llm.timeout_s)  # fmt: skip
            text = str(((data.get("choices") or [{}])[0].get("message") or {}).get("content") or "")
            usage = data.get("usage") or {}
            return text, int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
        data = _post(f"{base}/api/chat", {"model": llm.model, "stream": False, "format": "json",
                     "options": {"temperature": 0, "num_predict": OUTPUT_TOKENS},
                     "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}]},
                     {}, llm.timeout_s)  # fmt: skip
        text = str((data.get("message") or {}).get("content") or "")
        return text, int(data.get("prompt_eval_count", 0)), int(data.get("eval_count", 0))
    except (AttributeError, TypeError, IndexError, ValueError) as exc:
        raise ExtractorError(f"LLM endpoint {base} returned an unexpected shape") from exc


def quotes_only(text: str, count: int) -> dict[str, Any]:
    """The model's answer reduced to what is kept: per insight its kind and quotes (message number, words).
    Anything else it wrote — explanations, titles, confidence — is dropped."""
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start : end + 1]) if start >= 0 else {}
    except ValueError:
        data = {}
    out = []
    for item in data.get("insights") or [] if isinstance(data, dict) else []:
        if not isinstance(item, dict) or item.get("type") not in TYPES:
            continue
        quotes = []
        for quote in item.get("quotes") or []:
            if not isinstance(quote, dict):
                continue
            index, words = quote.get("message"), quote.get("text")
            if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < count and isinstance(words, str):
                words = words.strip()
                if 0 < len(words) <= MAX_QUOTE_CHARS:
                    quotes.append({"message": index, "text": words})
        if quotes:
            out.append({"type": item["type"], "quotes": quotes})
    return {"insights": out}


# ---- running it ---------------------------------------------------------------------------------------------


def run(store: Store, cfg: config.Config, *, max_calls: int = 2, idle: bool = True) -> Report:
    """Read the sessions the extractor has not read (latest first; with ``idle``, only ended or quiet ones),
    one slice per call, until ``max_calls``, the end of the work, or the budget. Answers go to the store; the
    graduation job (or the next CLI read) turns them into insights."""
    report = Report()
    if not configured(cfg) or not cfg.features.insight_extraction:
        report.off = True
        return report
    quiet = keys.iso(time.time() - cfg.llm.idle_minutes * 60) if idle else None
    for session in store.extraction_candidates(quiet):
        events = store.session_conversation(session["session_id"], session["after_seq"])
        for part in slices(events, cfg.llm.max_input_chars):
            if report.calls >= max_calls:
                return report
            prompt = prompt_of(part, cfg.llm.max_input_chars)
            input_hash = keys.sha256_hex(f"{cfg.llm.provider}|{cfg.llm.model}|{SYSTEM}|{prompt}")
            if store.extraction_by_hash(input_hash) is not None:
                continue  # asked before (a slice re-read after a forget elsewhere in the session)
            why = over_budget(cfg, len(SYSTEM) + len(prompt))
            if why:
                report.stopped = why
                return report
            try:
                text, tokens_in, tokens_out = call(cfg, prompt)
            except ExtractorError as exc:
                report.stopped = str(exc)
                return report
            cost = cost_of(cfg, tokens_in, tokens_out)
            _record_spend(tokens_in, tokens_out, cost)
            answer = quotes_only(text, len(part))
            store.add_extraction(
                {"session_id": session["session_id"], "input_hash": input_hash, "last_seq": part[-1].seq,
                 "provider": cfg.llm.provider, "model": cfg.llm.model, "response": answer,
                 "input_tokens": tokens_in, "output_tokens": tokens_out, "cost_usd": cost},
                [e.id for e in part],
            )  # fmt: skip
            report.calls += 1
            report.insights += sum(len(i["quotes"]) for i in answer["insights"])
            report.input_tokens += tokens_in
            report.output_tokens += tokens_out
            report.cost_usd += cost
            if session["session_id"] not in report.sessions:
                report.sessions.append(session["session_id"])
    return report
