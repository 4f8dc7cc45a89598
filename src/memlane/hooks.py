"""``memlane hook <Event>``: the Claude Code hook entry point. Stdlib only, fails open.

Budget (DESIGN.md §3): capture hooks ≤ 50 ms, UserPromptSubmit ≤ 80 ms FTS-only. So this module
imports no CLI framework, no numpy and no model; the heavy parts of memlane are reached through the
daemon. Whatever happens — malformed JSON, a locked or full database, a bug — the hook logs it,
exits 0 and prints nothing Claude Code could choke on. Events it cannot write go to the spool.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time

from memlane import config, logs, paths, project
from memlane.capture import events as build
from memlane.capture import inject, own, spool
from memlane.errors import MemlaneError
from memlane.logs import log
from memlane.store import keys
from memlane.store.db import NewEvent, Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from memlane.context.service import PromptContext

# Every event that carries memory. Notification ("Claude needs your permission…") and PreToolUse (the
# same call PostToolUse/PostToolUseFailure record with its result) carry none and are not registered.
EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SubagentStop",
    "SessionEnd",
    "PreCompact",
)
INJECTING = ("SessionStart", "UserPromptSubmit")
SPOOL_BATCH = 20


class HookInputError(MemlaneError, ValueError):
    """A payload we cannot use; logged, never raised to Claude Code."""


def parse_payload(raw: bytes, max_bytes: int) -> dict[str, Any]:
    if len(raw) > max_bytes:
        # Still read it: a 20 MB paste is a real prompt. The builders cut every text to
        # capture.max_content_chars with a marker, so the store never holds the whole of it.
        log("hooks", "warning", f"payload of {len(raw)} bytes exceeds capture.max_payload_bytes={max_bytes}; trimmed")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        log("hooks", "warning", f"payload is not valid UTF-8 (byte {exc.start}); undecodable bytes replaced")
        text = raw.decode("utf-8", "replace")
    if not text.strip():
        raise HookInputError("empty payload on stdin")
    try:
        payload = json.loads(text)
    except ValueError as exc:
        raise HookInputError(f"malformed JSON payload: {exc}") from exc
    if not isinstance(payload, dict):
        raise HookInputError(f"payload must be a JSON object, got {type(payload).__name__}")
    if not isinstance(payload.get("session_id"), str) or not payload["session_id"]:
        raise HookInputError("payload has no session_id")
    return payload


def _load_config() -> config.Config:
    try:
        return config.load_cached()
    except config.ConfigError as exc:
        log("hooks", "error", f"config ignored, using defaults: {exc}")
        return config.Config()


def store_events(
    proj: project.Project, cfg: config.Config, batch: list[NewEvent], recovered: list[NewEvent] | None = None
) -> tuple[Store | None, list[str]]:
    """Append ``recovered`` (Stop's catch-up) then ``batch``; on any storage failure, spool them.
    Returns the open store and the batch's ids."""
    store = None
    recovered = recovered or []
    try:
        store = Store(proj.db_file, proj.id, cfg.store.hook_busy_timeout_ms)
        store.citation_length = cfg.citations.id_length
        if recovered:
            recovered = _not_yet_stored(store, recovered)
        if recovered:
            log("hooks", "info", f"Stop catch-up: {len(recovered)} tool call(s) of the turn not captured live")
        if batch or recovered:
            store.append(recovered + batch)
        ids = store.ids_by_dedupe_keys([e.key() for e in batch])
        return store, ids
    except (sqlite3.Error, OSError) as exc:
        if store is not None:
            store.close()
        batch = recovered + batch
        if batch:
            where = spool.write(proj.id, proj.root_str, batch, repr(exc))
            if where:  # when None, spool.write has logged both failures
                log("hooks", "warning", f"store unavailable ({exc}); spooled {len(batch)} event(s) to {where}")
        return None, []


def _not_yet_stored(store: Store, recovered: list[NewEvent]) -> list[NewEvent]:
    """Catch-up events whose tool call the session has no observation of yet. The dedupe key would turn
    away an exact copy anyway; this also keeps out a second version of a call the live hook stored from a
    payload that differs from the transcript's record of it."""
    by_id = {str(e.metadata.get("tool_use_id")): e for e in recovered if e.metadata.get("tool_use_id")}
    sessions = {e.session_id for e in recovered}
    if len(sessions) != 1 or not by_id:
        return recovered
    stored = store.stored_tool_use_ids(sessions.pop(), list(by_id), scan=200 + 2 * len(recovered))
    return [e for e in recovered if str(e.metadata.get("tool_use_id")) not in stored]


def drain_spool(store: Store) -> None:
    files = spool.pending(store.project_id)[:SPOOL_BATCH]
    if files:
        try:
            report = spool.ingest(store, files)
        except (sqlite3.Error, OSError) as exc:  # still full or locked: the files stay for the next hook
            log("hooks", "warning", f"spool: not ingested yet ({exc})")
            return
        log("hooks", "info", f"spool: ingested {report.files} file(s), {report.inserted} new event(s)")


def _catch_up(payload: dict[str, Any], cfg: config.Config, batch: list[NewEvent]) -> list[NewEvent]:
    """The turn's tool calls, rebuilt from its transcript, for those whose async hook Claude Code killed; and the
    citations the turn's text made before its final answer, noted on that answer (``cites``: the learning
    loop counts them as cited, docs/learning.md)."""
    try:
        from memlane.capture import catchup

        track = cfg.citations.enabled and cfg.citations.track_usage
        cites: list[str] | None = [] if track else None
        recovered = catchup.missing_calls(payload, cfg, cites)
        if cites and batch and batch[0].type == "agent_response":
            earlier = [c for c in cites if f"mem:{c}" not in batch[0].content.lower()]
            if earlier:
                batch[0].metadata["cites"] = earlier
        return recovered
    except Exception as exc:  # noqa: BLE001 - the catch-up must never cost the Stop event
        log("hooks", "error", f"Stop catch-up failed: {exc!r}")
        return []


def _workflow_active(event: str, payload: dict[str, Any], proj: project.Project) -> bool:
    """Cheap check before importing workflow code: a linked workflow memory, or a /workflow- prompt."""
    if os.path.exists(os.path.join(proj.root_str, ".claude", "docs", "memory", ".memory-ref")):
        return True
    if os.path.isdir(paths.join("workflows", proj.id)):
        return True
    prompt = payload.get("prompt")
    return event == "UserPromptSubmit" and isinstance(prompt, str) and prompt.lstrip().startswith("/workflow-")


def _workflow(
    event: str, payload: dict[str, Any], proj: project.Project, cfg: config.Config, response: str = ""
) -> str | None:
    """Workflow memory rides on the same hooks; its failures never affect capture."""
    if not cfg.workflow.enabled or not _workflow_active(event, payload, proj):
        return None
    try:
        from memlane.workflow import hooks as wf
    except ImportError:
        return None
    try:
        if event == "UserPromptSubmit":
            wf.on_user_prompt(payload, proj, cfg.workflow)
        elif event == "Stop":
            wf.on_stop(payload, proj, cfg.workflow, response)
        elif event == "SessionEnd":
            wf.on_session_end(payload, proj, cfg.workflow)
        elif event == "PreCompact":
            wf.on_pre_compact(payload, proj, cfg.workflow)
        elif event == "SessionStart":
            return wf.session_start_note(payload, proj, cfg.workflow)
    except Exception as exc:  # noqa: BLE001
        log("hooks", "error", f"workflow hook {event} failed: {exc!r}")
    return None


def _session_end_summary(store: Store, session_id: str, payload: dict[str, Any]) -> None:
    from memlane.capture.summary import refresh

    turn = str(payload.get("prompt_id") or "end")
    refresh(store, session_id, turn, {"cwd": payload.get("cwd"), "source": "extractive"})


UNENDED_PER_START = 1  # the latest session left without an end (what the start context shows first); ~3 ms each


def _summarize_unended(store: Store, session_id: str, payload: dict[str, Any]) -> None:
    """Summarize earlier sessions whose SessionEnd never ran.

    SessionEnd is an async hook: `claude -p` exits before it finishes and kills it, and a closed terminal
    never sends it. The next SessionStart in the project gives such sessions the summary their end would
    have made (a later SessionEnd or import of the same session replaces it: one summary per session).
    """
    try:
        unended = store.unsummarized_sessions(session_id, UNENDED_PER_START)
        if not unended:
            return
        from memlane.capture.summary import refresh  # only when there is one: SessionStart stays light

        for sid in unended:
            refresh(store, sid, "unended", {"cwd": payload.get("cwd"), "source": "extractive", "recovered": True})
    except (sqlite3.Error, OSError) as exc:
        log("hooks", "warning", f"late session summaries skipped: {exc!r}")


def _replace_imported(store: Store, session_id: str, kind: str) -> None:
    """A session imported before its hooks ran got start/end markers from the import; the live marker
    now stands for it, so the session keeps one start and one end."""
    ids = [event_id for event_id, _ in store.imported_markers(session_id, kind)]
    if ids:
        store.replace_derived(ids, [])


def _learn_preferences(store: Store, proj: project.Project, cfg: config.Config, event_id: str, text: str) -> None:
    """A prompt that states a standing rule ("always use pnpm") adds it to the learned preferences."""
    if not (cfg.context.enabled and cfg.context.learned_preferences > 0):
        return
    from memlane.context import preferences

    if not preferences.extract(text):  # most prompts: a regex, no read, no write
        return
    try:
        event = store.get(event_id)
        if event is not None:
            preferences.learn(proj.id, event, cfg.context.learned_preferences)
    except (OSError, sqlite3.Error) as exc:
        log("hooks", "warning", f"preference not learned: {exc!r}")


class _DaemonAsk:
    """A UserPromptSubmit's question to the daemon, sent as soon as the prompt is stored.

    The daemon answers (its query vector and neighbours are ready from ``/api/prepare``) while this process
    finishes its own work (spool, preferences), so the two overlap. It is not sent earlier: the stored prompt
    counts in the word statistics the daemon's search reads, and asking before the write would make the
    answer depend on which came first. The answer is read when it is needed, without a thread.
    """

    def __init__(self, body: dict[str, Any], deadline_ms: int) -> None:
        from memlane.daemon import client

        self.started = time.monotonic()
        self.deadline_s = deadline_ms / 1000
        self.pending = client.send("/api/inject", body, deadline_ms)

    def wait(self, share: float) -> dict[str, Any] | bool | None:
        """The answer (None: the daemon failed), or False while it is still out after ``share`` of the deadline."""
        if self.pending is None:
            return None
        return self.pending.wait(max(0.0, self.deadline_s * share - (time.monotonic() - self.started)))


def prompt_query(payload: dict[str, Any], batch: list[NewEvent], cfg: config.Config) -> str:
    """The prompt as retrieval sees it: as it was stored (private sections out, secrets redacted), only its
    head and tail when it is long (a pasted log)."""
    if batch and batch[0].type == "user_prompt":
        return inject.query_of(batch[0].content)
    return inject.retrieval_query(str(payload.get("prompt") or ""), cfg)


def ask_daemon(
    proj: project.Project, query: str, payload: dict[str, Any], cfg: config.Config, exclude_ids: list[str]
) -> _DaemonAsk | None:
    """Start the daemon's answer for a prompt now, if a daemon is up; None sends the hook to full-text search."""
    from memlane.daemon import state

    if not state.read_info():
        return None
    return _DaemonAsk(_inject_body(proj, query, payload, exclude_ids), cfg.daemon.hook_deadline_ms)


def _inject_body(proj: project.Project, query: str, payload: dict[str, Any], exclude_ids: list[str]) -> dict[str, Any]:
    """The daemon's ``/api/inject`` request for a prompt."""
    return {
        "cwd": proj.root_str,
        "prompt": query,
        "exclude_ids": exclude_ids,
        "session_id": payload.get("session_id"),
        "working_directory": payload.get("cwd"),
    }


class Warm:
    """What the daemon gives a hook it runs for a hook process (``daemon.warm``): that process's working
    directory, and ``/api/inject`` answered in the daemon itself (``answer``: the route's body, and the
    hook's project and open store, which the search reads instead of opening its own → the route's answer)."""

    def __init__(self, cwd: str | None, answer: Callable[..., dict[str, Any]]) -> None:
        self.cwd = cwd
        self.answer = answer

    def ask(self, body: dict[str, Any], proj: project.Project, store: Store) -> _Answered:
        try:
            return _Answered(self.answer(body, proj, store))
        except Exception as exc:  # noqa: BLE001 - the hook then falls back to full text, as for a failed daemon
            log("hooks", "warning", f"daemon search failed: {exc!r}; full-text fallback")
            return _Answered(None)


class _Answered:
    """An answer already there, with ``_DaemonAsk``'s ``wait``."""

    def __init__(self, answer: dict[str, Any] | None) -> None:
        self.answer = answer

    def wait(self, share: float) -> dict[str, Any] | None:
        return self.answer


def prompt_context(
    store: Store,
    proj: project.Project,
    payload: dict[str, Any],
    cfg: config.Config,
    exclude_ids: list[str],
    prompt: str,
    asked: _DaemonAsk | _Answered | None = None,
) -> str:
    """Hybrid retrieval from the daemon within its deadline; full-text in-process when it cannot answer."""

    def fallback() -> str:
        return inject.prompt_context(store, prompt, cfg, exclude_ids, _context(proj, payload, cfg, store))

    if asked is None:
        return fallback()
    # A warm daemon usually answers in a fraction of its deadline, so it gets that fraction alone (a full-text
    # search beside it would take CPU from it on a 2-core machine). If it has not answered by then, the
    # full-text answer is built while it still may: a missed deadline costs the deadline, not the deadline
    # plus a fallback started from scratch.
    answer = asked.wait(ALONE_SHARE)
    text = None
    if answer is False:
        text = fallback()
        answer = asked.wait(1.0)
    if isinstance(answer, dict) and isinstance(answer.get("context"), str):
        return str(answer["context"])
    log("hooks", "debug", "daemon did not answer in time; full-text fallback")
    return text if text is not None else fallback()


def _context(proj: project.Project, payload: dict[str, Any], cfg: config.Config, store: Store) -> PromptContext | None:
    """Persistent + volatile context for an in-process injection; None (body only) if it cannot be built."""
    if not cfg.context.enabled:
        return None
    try:
        from memlane.context.gather import for_hook

        return for_hook(proj, payload, cfg, store)
    except Exception as exc:  # noqa: BLE001 - context is an extra: the memories still go out
        log("hooks", "warning", f"context unavailable: {exc!r}")
        return None


def _autostart(cfg: config.Config) -> None:
    if not cfg.daemon.autostart:
        return
    try:
        from memlane.daemon.spawn import start_detached

        pid = start_detached()
        if pid:
            log("hooks", "info", f"started the daemon (pid {pid})")
    except Exception as exc:  # noqa: BLE001
        log("hooks", "warning", f"could not start the daemon: {exc!r}")


def _cwd(payload: dict[str, Any], hook_cwd: str | None = None) -> str:
    """The payload's cwd when it names an existing folder; else the hook process's own (Claude Code starts
    hooks in the project; ``hook_cwd`` when the daemon handles the hook for that process). A cwd that is not
    a string, holds a NUL or is gone must not crash capture (the event would be lost) nor create a store for
    a folder that does not exist."""
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd and "\0" not in cwd and os.path.isdir(cwd):
        return cwd
    own_cwd = hook_cwd or os.getcwd()
    if cwd:
        log("hooks", "warning", f"payload cwd {str(cwd)[:200]!r} is not a folder; using {own_cwd}")
    return own_cwd


def _output(event: str, context: str, message: str = "") -> str:
    """The hook's stdout: context for the model and, when there is one, a message Claude Code shows the user
    (``systemMessage``: never sent to the model; recorded in the transcript as a ``hook_system_message``)."""
    body: dict[str, Any] = {}
    if message:
        body["systemMessage"] = message
    if context:
        body["hookSpecificOutput"] = {"hookEventName": event, "additionalContext": context}
    return json.dumps(body, ensure_ascii=False) if body else ""


def _privacy_notice(event: str, batch: list[NewEvent], store: Store, ids: list[str]) -> str:
    """An opening private tag that is never closed leaves the rest of the text unfiltered (guessing where the
    section ends could destroy or leak text): logged for every event, and said to the user once per prompt."""
    unclosed = 0
    for item in batch:
        found = (item.metadata.get("privacy") or {}).get("unclosed_tags")
        unclosed += found if isinstance(found, int) else 0
    if not unclosed:
        return ""
    log("privacy", "warning", f"{event}: {unclosed} unclosed private tag(s); the text after each was stored unfiltered")
    if event != "UserPromptSubmit":
        return ""
    stored = store.get(ids[0]) if ids else None
    undo = f"; `memlane forget {stored.cite}` removes the stored prompt" if stored is not None else ""
    return (
        "memlane: your prompt opens a <private> tag that is never closed, so the text after it was stored "
        f"unfiltered. Close it with </private> next time{undo}."
    )


WORKFLOW_RESULT_CHARS = 8000  # within Claude Code's 10,000-character cut of additionalContext


def _workflow_command(payload: dict[str, Any], proj: project.Project, cfg: config.Config) -> tuple[str, str] | None:
    """A ``/workflow-memory <command>`` prompt, run here (seed 001's in-session command):
    (context for Claude, message for the user); None for any other prompt."""
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or "workflow-memory" not in prompt[:40]:
        return None  # most prompts: one substring test, nothing imported
    from memlane.workflow import command

    args = command.parse(prompt)
    if args is None:
        return None
    try:
        result = command.run(args, proj, cfg.workflow)
    except Exception as exc:  # noqa: BLE001 - say it failed; capture and the session go on
        log("hooks", "error", f"/workflow-memory {' '.join(args)} failed: {exc!r}")
        result = f"error: {type(exc).__name__}: {exc}"
    if len(result) > WORKFLOW_RESULT_CHARS:
        result = result[:WORKFLOW_RESULT_CHARS] + "\n… (cut; `memlane workflow …` in a shell shows all of it)"
    shown = " ".join(["/workflow-memory", *args])
    context = (
        f"memlane already ran the user's `{shown}` (a workflow-memory command answered by memlane's own hook; "
        f"nothing else needs doing). Its result, to show the user:\n{result}"
    )
    return context, f"memlane {shown}:\n{result}"


def handle(
    event: str,
    raw: bytes,
    delivered: float | None = None,
    warm: Warm | None = None,
    leave_open: list[Store] | None = None,
) -> str:
    """Process one hook delivery; returns what to print on stdout (possibly empty).

    ``delivered`` (seconds since the epoch): when Claude Code ran the hook, the time its events get when
    a detached child stores them later (capture.detach), so they keep the order they happened in.
    ``warm``: the daemon runs this for a hook process (``daemon.warm``). ``leave_open``: the store is put
    there instead of closed (see ``_LEAVE_OPEN``)."""
    cfg = _load_config()
    logs.configure(cfg.logging.level, cfg.logging.max_bytes, cfg.logging.backups)
    if event not in EVENTS:
        log("hooks", "warning", f"unknown hook event {event!r}; ignored")
        return ""
    payload = parse_payload(raw, cfg.capture.max_payload_bytes)
    payload["cwd"] = cwd = _cwd(payload, warm.cwd if warm else None)  # later steps (context, transcript) read it too
    proj = project.identify(cwd)
    try:
        project.register(proj)
    except OSError as exc:
        log("hooks", "warning", f"cannot register project {proj.id}: {exc}")
    batch = build.BUILDERS[event](payload, cfg) if cfg.capture.enabled else []
    batch = own.drop_own(event, payload, batch)  # memlane's own commands are not memories
    if delivered is not None:
        for item in batch:
            item.ts = item.ts or keys.iso(delivered)
    recovered = _catch_up(payload, cfg, batch) if event == "Stop" and cfg.capture.enabled else []
    store, ids = store_events(proj, cfg, batch, recovered)
    if store is None:
        return ""
    try:
        asked, query = None, ""
        # A background subagent's report arrives as a prompt nobody typed: stored as its answer, never a query.
        typed = event == "UserPromptSubmit" and not build.task_notification(payload.get("prompt"))
        notice = _privacy_notice(event, batch, store, ids)
        answered = _workflow_command(payload, proj, cfg) if typed else None
        if answered is not None:  # a command to memlane, not a question: its answer instead of memories
            return _output(event, answered[0], "\n".join(filter(None, [notice, answered[1]])))
        inject_now = cfg.injection.enabled and (typed or event != "UserPromptSubmit")
        if typed and inject_now:
            query = prompt_query(payload, batch, cfg)
            asked = (
                warm.ask(_inject_body(proj, query, payload, ids), proj, store)
                if warm
                else ask_daemon(proj, query, payload, cfg, ids)
            )
        drain_spool(store)
        response = batch[0].content if event == "Stop" and batch else ""
        summaries = cfg.features.session_summary
        if event == "SessionEnd":
            _replace_imported(store, payload["session_id"], "session_end")
            if summaries:
                _session_end_summary(store, payload["session_id"], payload)
        elif event == "SessionStart" and batch and batch[0].metadata.get("source") == "startup":
            _replace_imported(store, payload["session_id"], "session_start")
        if event == "SessionStart" and summaries:
            _summarize_unended(store, payload["session_id"], payload)
        note = _workflow(event, payload, proj, cfg, response)
        if typed and batch and ids:
            _learn_preferences(store, proj, cfg, ids[0], batch[0].content)
        if event not in INJECTING or not inject_now:
            return _output(event, "", notice)
        if event == "UserPromptSubmit":
            context = prompt_context(store, proj, payload, cfg, ids, query, asked)
        else:
            if warm is None:  # in the daemon, it is up
                _autostart(cfg)
            context = session_start(store, proj, payload, cfg, [note] if note else [], warm is not None)
        return _output(event, context, notice)
    finally:
        if leave_open is not None:
            leave_open.append(store)  # closed later, or by the process's exit without a checkpoint (see main)
        else:
            store.close()


def endless_mode(store: Store, cfg: config.Config) -> bool:
    """Whether the project is in endless mode (its own setting, else ``endless.mode``): one indexed read."""
    try:
        own = store.endless_mode()
    except sqlite3.Error:
        own = None
    return (own or cfg.endless.mode) == "endless"


def session_start(
    store: Store, proj: project.Project, payload: dict[str, Any], cfg: config.Config, extra: list[str], in_daemon: bool
) -> str:
    """SessionStart's context: in endless mode, the working set the daemon keeps (read there, where endless mode's
    modules are loaded); otherwise, or without the daemon, the session recap."""
    context = _context(proj, payload, cfg, store)
    if endless_mode(store, cfg):
        if in_daemon:
            try:
                from memlane.endless.inject import session_start_context as endless_context

                text = endless_context(store, cfg, extra, context)
                if text:
                    return text
                log("hooks", "info", "endless mode: no working set yet; this session start gets the session recap")
            except Exception as exc:  # noqa: BLE001 - the recap still goes out
                log("hooks", "error", f"endless mode: working set unavailable ({exc!r}); session recap instead")
        else:
            log("hooks", "info", "endless mode: the daemon is not up; this session start gets the session recap")
    return inject.session_start_context(store, payload["session_id"], cfg, extra, context)


# Share of the daemon's deadline it gets before the full-text fallback starts beside it.
ALONE_SHARE = 0.5

# Set by ``main(..., exiting=True)`` and handed to ``handle``: stores are left open (and alive) for
# ``os._exit``. Closing the last connection to a WAL database checkpoints it (~12 ms of a ~60 ms hook); an
# exit that never closes leaves the committed events in the WAL, where every reader sees them, and SQLite's
# autocheckpoint (every 1,000 pages, on commit) keeps the WAL small. Tests call ``handle`` in-process and
# close normally.
_LEAVE_OPEN: list[Store] | None = None


def main(argv: list[str], exiting: bool = False, raw: bytes | None = None, delivered: float | None = None) -> int:
    """Entry for ``memlane hook <Event>`` (``raw``: the payload, when the caller has read stdin; ``delivered``:
    see ``handle``); always exits 0."""
    global _LEAVE_OPEN
    if exiting:
        _LEAVE_OPEN = []
    if raw is None:
        try:
            raw = sys.stdin.buffer.read()
        except (AttributeError, OSError, ValueError) as exc:  # no usable stdin: nothing to handle
            log("hooks", "warning", f"{argv[0] if argv else ''}: cannot read the payload: {exc!r}")
            return 0
    out = respond(argv, raw, delivered, leave_open=_LEAVE_OPEN)
    if out:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    return 0


def respond(
    argv: list[str],
    raw: bytes,
    delivered: float | None = None,
    warm: Warm | None = None,
    leave_open: list[Store] | None = None,
) -> str:
    """One hook delivery (``argv``: ``<Event> [--plugin]``) to what goes on its stdout; never raises."""
    start = time.perf_counter()
    event = argv[0] if argv else ""
    out = ""
    try:
        if "--plugin" in argv[1:]:
            # The plugin's hooks step aside for `memlane install`'s, so an event is never handled twice.
            from memlane.plugin import guard

            where = guard.shadowed(event, raw)
            if where:
                log("hooks", "debug", f"{event}: plugin hook skipped, `memlane install` hooks in {where} handle it")
                return ""
        out = handle(event, raw, delivered, warm, leave_open)
    except MemlaneError as exc:  # a bad payload or config.toml: say what, in the log; Claude Code goes on
        log("hooks", "warning", f"{event}: {exc}")
    except BaseException as exc:  # noqa: BLE001 - fail open: Claude Code must never see a traceback
        log("hooks", "error", f"{event}: unexpected {exc!r}")
    where = " (in the daemon)" if warm else ""
    log("hooks", "debug", f"{event} done{where} in {(time.perf_counter() - start) * 1000:.1f} ms")
    return out
