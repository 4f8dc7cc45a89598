"""Hook payload → events. Pure functions over Claude Code's real stdin JSON (DESIGN.md §4).

Every text is privacy-filtered here, before it can reach the store, the spool or a log.
The dedupe "turn" is ``prompt_id`` (or ``tool_use_id``) when Claude Code sends it; without one, a
10-second time bucket, so a redelivered hook stores once while a prompt repeated later stores again.
"""

from __future__ import annotations

import time

from memlane import privacy
from memlane.capture import observe, transcript
from memlane.config import Config
from memlane.store.db import NewEvent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

BUCKET_S = 10


def _turn(payload: dict[str, Any], *extra: str) -> str:
    base = str(payload.get("prompt_id") or f"t{int(time.time() // BUCKET_S)}")
    return ":".join([base, *[e for e in extra if e]])


def _meta(payload: dict[str, Any], **more: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"cwd": payload.get("cwd"), "transcript_path": payload.get("transcript_path")}
    if payload.get("prompt_id"):
        meta["prompt_id"] = payload["prompt_id"]
    meta.update({k: v for k, v in more.items() if v is not None})
    return meta


class Privacy:
    """Accumulates what the filter removed across the texts of one event."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg.privacy
        self.sections = self.secrets = self.chars = self.unclosed = self.anonymized = 0
        self.warnings: list[str] = []

    def _add(self, result: privacy.FilterResult) -> None:
        self.sections += result.private_sections
        self.secrets += result.secrets_redacted
        self.chars += result.chars_filtered
        self.unclosed += result.unclosed_tags
        self.anonymized += result.anonymized
        self.warnings.extend(result.warnings)

    def text(self, value: str) -> str:
        result = privacy.filter_text(value, self.cfg)
        self._add(result)
        return result.text

    def value(self, value: Any) -> Any:
        filtered, result = privacy.filter_value(value, self.cfg)
        self._add(result)
        return filtered

    def stamp(self, meta: dict[str, Any]) -> dict[str, Any]:
        if self.sections or self.secrets or self.chars or self.unclosed:
            meta["privacy"] = {
                "private_sections": self.sections,
                "secrets_redacted": self.secrets,
                "chars_filtered": self.chars,
            }
            # Only when there were some: most events carry no privacy metadata at all, and stats sums these.
            if self.unclosed:
                meta["privacy"]["unclosed_tags"] = self.unclosed
            if self.anonymized:
                meta["privacy"]["anonymized"] = self.anonymized
        return meta


def _limit(text: str, cfg: Config) -> str:
    return observe.compress(text, cfg.capture.max_content_chars, 0)


def _filtered(p: Privacy, text: str, cfg: Config) -> str:
    """Privacy-filter ``text`` and cut it to ``max_content_chars`` with a marker.

    A huge text (a 20 MB paste) is first cut to a head and tail twice as long as what is kept, so the
    filter does not scan megabytes that are thrown away; a secret straddling that first cut lies
    outside what the final cut keeps, so nothing half-redacted survives.
    """
    limit = cfg.capture.max_content_chars
    if limit and len(text) > 4 * limit:
        text = observe.compress(text, 2 * limit, 0)
    return _limit(p.text(text), cfg)


TASK_OPEN, TASK_CLOSE = "<task-notification>", "</task-notification>"


def task_notification(prompt: Any) -> tuple[str, str] | None:
    """(agent id, result text) when a "prompt" is Claude Code's report of a finished background subagent.

    Claude Code 2.1.328 runs Agent-tool subagents in the background; when one stops it submits a
    ``<task-notification>`` block (task-id, status, summary, ``<result>``) as the next prompt, through
    UserPromptSubmit, and writes it to the transcript with ``origin.kind: "task-notification"``
    (tests/fixtures/claude-code/subagent/). Nobody typed it: it is the subagent's answer, not a user prompt.
    """
    if not isinstance(prompt, str):
        return None
    text = prompt.strip()
    if not (text.startswith(TASK_OPEN) and text.endswith(TASK_CLOSE)):
        return None
    return _tag(text, "task-id"), _tag(text, "result")


def _tag(text: str, name: str) -> str:
    start = text.find(f"<{name}>")
    end = text.rfind(f"</{name}>")
    return text[start + len(name) + 2 : end].strip() if 0 <= start < end else ""


def _subagent_answer(payload: dict[str, Any], cfg: Config, agent: str, text: str, **meta: Any) -> list[NewEvent]:
    """A subagent's final answer. Its turn is the agent's id, whichever hook reports it: SubagentStop and the
    task notification carry the same text, so the second delivery dedupes; a resumed agent's new answer
    differs and is stored."""
    p = Privacy(cfg)
    content = _filtered(p, text, cfg)
    stamped = p.stamp(_meta(payload, kind="subagent", **meta))
    return [NewEvent("agent_response", str(payload["session_id"]), content, f"subagent:{agent}", stamped)]


def user_prompt(payload: dict[str, Any], cfg: Config) -> list[NewEvent]:
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return []
    notice = task_notification(prompt)
    if notice is not None:
        agent_id, result = notice
        if not result:
            return []
        return _subagent_answer(payload, cfg, agent_id, result, agent_id=agent_id or None, source="task-notification")
    p = Privacy(cfg)
    content = _filtered(p, prompt, cfg)
    meta = p.stamp(_meta(payload, permission_mode=payload.get("permission_mode")))
    return [NewEvent("user_prompt", str(payload["session_id"]), content, _turn(payload), meta)]


def tool_observation(payload: dict[str, Any], cfg: Config) -> list[NewEvent]:
    tool = payload.get("tool_name")
    if not isinstance(tool, str) or not observe.should_store(tool, cfg.capture):
        return []
    p = Privacy(cfg)
    obs = observe.observe(tool, p.value(payload.get("tool_input")), p.value(payload.get("tool_response")), cfg.capture)
    meta = p.stamp(
        _meta(payload, tool_use_id=payload.get("tool_use_id"), duration_ms=payload.get("duration_ms"), **obs.metadata)
    )
    turn = str(payload.get("tool_use_id") or _turn(payload, tool))
    return [NewEvent("tool_observation", str(payload["session_id"]), obs.content(), turn, meta)]


def tool_failure(payload: dict[str, Any], cfg: Config) -> list[NewEvent]:
    """PostToolUseFailure: a failed tool call (a Bash command exiting non-zero, a missing file).

    Claude Code sends ``error`` ("Exit code N\n" + the output for Bash) instead of ``tool_response``, and
    no PostToolUse for that call. It is stored as the same tool_observation, with the same content the
    importer builds from the transcript's ``is_error`` result, so live capture and import dedupe.
    """
    error = payload.get("error")
    text = error if isinstance(error, str) else ("" if error is None else str(error))
    response: dict[str, Any] = {"content": observe.failure_text(text) or "error", "is_error": True}
    events = tool_observation({**payload, "tool_response": response}, cfg)
    for event in events:
        event.metadata["success"] = False
        if payload.get("is_interrupt"):
            event.metadata["interrupted"] = True
    return events


def subagent_response(payload: dict[str, Any], cfg: Config) -> list[NewEvent]:
    """SubagentStop: a subagent's final answer (``last_assistant_message``), kept apart from the turn's own.

    Claude Code 2.1.328 runs Agent-tool subagents asynchronously: the tool's PostToolUse only says
    "async_launched", and subagent transcripts are not imported, so this hook is the only place a
    subagent's conclusion is recorded (tests/fixtures/claude-code/more/).
    """
    text = payload.get("last_assistant_message")
    if not isinstance(text, str) or not text.strip():
        return []
    if not payload.get("agent_type"):
        # Claude Code's own helpers (the two agents /compact runs) have no type; their text is the
        # compaction summary, stored from SessionStart(compact).
        return []
    agent = str(payload.get("agent_id") or payload.get("agent_type"))
    return _subagent_answer(
        payload, cfg, agent, text, agent_id=payload.get("agent_id"), agent_type=payload.get("agent_type")
    )


def agent_response(payload: dict[str, Any], cfg: Config) -> list[NewEvent]:
    """The turn's final assistant text, from ``last_assistant_message`` or the transcript tail."""
    text = payload.get("last_assistant_message")
    source = "payload"
    uuid = None
    if not isinstance(text, str) or not text.strip():
        path = payload.get("transcript_path")
        text, uuid = transcript.final_text(path) if isinstance(path, str) else ("", None)
        source = "transcript"
    if not text.strip():
        return []
    p = Privacy(cfg)
    content = _filtered(p, text, cfg)
    meta = p.stamp(_meta(payload, source=source))
    turn = str(payload.get("prompt_id") or uuid or _turn(payload))
    return [NewEvent("agent_response", str(payload["session_id"]), content, turn, meta)]


def session_start(payload: dict[str, Any], cfg: Config) -> list[NewEvent]:
    source = str(payload.get("source") or "startup")
    sid = str(payload["session_id"])
    events = [
        NewEvent(
            "session_start",
            sid,
            f"Session started ({source}) in {payload.get('cwd') or '?'}",
            _turn(payload, source),
            _meta(payload, source=source),
        )
    ]
    if source == "compact" and isinstance(payload.get("transcript_path"), str):
        events.extend(_compact_summary(payload, cfg))
    return events


def _compact_summary(payload: dict[str, Any], cfg: Config) -> list[NewEvent]:
    """After /compact, Claude Code writes the summary as a user line flagged ``isCompactSummary``."""
    for line in reversed(transcript.read_tail(str(payload["transcript_path"]))):
        if line.get("type") == "user" and line.get("isCompactSummary"):
            text = transcript.text_of(line.get("message"))
            if not text:
                return []
            p = Privacy(cfg)
            content = _limit(p.text(text), cfg)
            meta = p.stamp(_meta(payload, kind="summary"))
            return [
                NewEvent(
                    "compaction", str(payload["session_id"]), content, str(line.get("uuid") or _turn(payload)), meta
                )
            ]
    return []


def session_end(payload: dict[str, Any], cfg: Config) -> list[NewEvent]:
    reason = str(payload.get("reason") or "other")
    return [
        NewEvent(
            "session_end",
            str(payload["session_id"]),
            f"Session ended ({reason})",
            _turn(payload, reason),
            _meta(payload, reason=reason),
        )
    ]


def compaction(payload: dict[str, Any], cfg: Config) -> list[NewEvent]:
    trigger = str(payload.get("trigger") or "auto")
    p = Privacy(cfg)
    instructions = payload.get("custom_instructions")
    content = f"Context compaction ({trigger})"
    if isinstance(instructions, str) and instructions.strip():
        content += f": {p.text(instructions.strip())}"
    meta = p.stamp(_meta(payload, trigger=trigger, kind="marker"))
    return [NewEvent("compaction", str(payload["session_id"]), content, _turn(payload, trigger), meta)]


BUILDERS = {
    "UserPromptSubmit": user_prompt,
    "PostToolUse": tool_observation,
    "PostToolUseFailure": tool_failure,
    "SubagentStop": subagent_response,
    "Stop": agent_response,
    "SessionStart": session_start,
    "SessionEnd": session_end,
    "PreCompact": compaction,
}
