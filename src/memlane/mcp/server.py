"""The memlane MCP server (official ``mcp`` SDK, ``MCPServer``): stdio by default, streamable HTTP on loopback.

Tools: mem-search → mem-timeline → mem-details (progressive disclosure), mem-source, mem-context-pack,
mem-stats, mem-insights, mem-projects (all read-only), and mem-tasks (tasks across sessions; it can add and update
them).
The logic lives in ``memlane.mcp.tools``; this module only declares the tools' schemas and descriptions and
turns input errors into MCP tool errors. One
``Engine`` (the embedding model, loaded on first search) serves every call for the server's lifetime.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from memlane import __version__, config
from memlane.errors import MemlaneError
from memlane.knowledge.insights import TYPES as INSIGHT_TYPES
from memlane.logs import log
from memlane.mcp.tools import MAX_QUERY_CHARS, MAX_REFS, TASK_ACTIONS, MemoryTools, Reply
from memlane.store.db import EVENT_TYPES

NAME = "memlane"
DEFAULT_HTTP_PORT = 37778

INSTRUCTIONS = """\
memlane is this project's long-term memory: the prompts, answers, tool results and session summaries of
earlier coding sessions, stored locally and privacy-filtered. Use it before re-deriving something that was
probably worked out before (a past error and its fix, a design decision, where something lives).

Work in three steps, spending tokens only on what matters:
1. mem-search: a compact index, one line per memory (citation like [mem:abc123], score, confidence,
   time, one-line summary). Always start here; "high" confidence results are strong matches, and
   "superseded" ones were replaced by a later change (listed after the current ones).
2. mem-timeline: the events just before and after one result in its session (the question that led to
   it, the fix that followed an error).
3. mem-details: the full text of only the few citations you actually need (several at once).
Also: mem-context-pack for a start-of-task digest (recent sessions, open threads, failed tool runs,
memories relevant to a task) within a character budget; mem-source to check what a [mem:xxxxxx]
citation you were given refers to; mem-stats for what is stored; mem-projects to list projects; mem-tasks for
the tasks named across sessions (one task each, with status, blockers and history); mem-insights for the
decisions, conventions, preferences and recurring errors (with their fix) the sessions established.
Cite memories you rely on as [mem:xxxxxx]. Every tool takes an optional `project` (a project directory);
by default it is the directory this server was started in."""

Project = Annotated[
    str | None,
    Field(description="Project directory whose memory to use (default: the server's working directory)."),
]
Ref = Annotated[str, Field(description="A citation like mem:abc123 (from mem-search) or an event id.")]


def _range(low: int, high: int, description: str) -> Any:
    """Bounds advertised in the schema but checked by the tool, so a bad value gets a one-line message."""
    return Field(description=description, json_schema_extra={"minimum": low, "maximum": high})


def _event_type_items(schema: dict[str, Any]) -> None:
    """Advertise the event types as an enum on the array's items (checked by the tool, for a short error)."""
    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") == "array":
            branch["items"] = {"type": "string", "enum": list(EVENT_TYPES)}


READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# mem-tasks can add and update tasks (each change an event; nothing is deleted).
CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
ACTION_ENUM = {"enum": list(TASK_ACTIONS)}
INSIGHT_ITEMS = {"items": {"type": "string", "enum": list(INSIGHT_TYPES)}}


def _result(reply: Reply) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=reply.text)])


MAX_ERROR_CHARS = 500  # errors may quote the client's input: never send a large input back


def _bounded(message: str) -> str:
    return message if len(message) <= MAX_ERROR_CHARS else message[: MAX_ERROR_CHARS - 1] + "…"


def _run(call: Callable[[], Reply]) -> CallToolResult:
    try:
        return _result(call())
    except sqlite3.Error as exc:  # locked or damaged store (StoreDamaged too): say so plainly, and log it
        log("mcp", "error", f"store error in a tool call: {exc!r}")
        raise ToolError(
            _bounded(f"the memory store could not be read ({exc}); try again, or run `memlane doctor --repair`")
        ) from exc
    except MemlaneError as exc:  # the one place a memlane error becomes an MCP tool error
        raise ToolError(_bounded(str(exc))) from exc


def build_server(
    cfg: config.Config | None = None,
    *,
    default_project: str | None = None,
    semantic: bool = True,
    engine: Any = None,
) -> MCPServer:
    """An ``MCPServer`` with memlane's tools. ``semantic=False``: full-text search only (no model)."""
    cfg = cfg or config.load()
    if engine is None and semantic:
        from memlane.retrieval.engine import Engine

        engine = Engine(cfg, via_daemon=True)  # the daemon's warm model, not a load per Claude Code session
    tools = MemoryTools(cfg, engine, default_project)
    server = MCPServer(NAME, title="memlane memory", instructions=INSTRUCTIONS, version=__version__,
                       log_level="WARNING")  # fmt: skip

    @server.tool(
        name="mem-search",
        title="Search memory (step 1: index)",
        annotations=READ_ONLY,
        description="Search this project's memory of earlier sessions by words and meaning. Returns a compact "
        "index: one line per memory with its citation, score, confidence, time and a one-line summary. Start "
        "here, then use mem-timeline for context around a result and mem-details for full text. Tool history: "
        "tool, file and failed keep tool calls (failed runs, runs of one tool, calls that touched a file); "
        "with one of them the query may be empty, which lists those calls newest first.",
    )
    def mem_search(
        query: Annotated[
            str,
            Field(
                description="What to look for: words, an error message, a file or function (may be empty "
                "with tool, file or failed).",
                json_schema_extra={"maxLength": MAX_QUERY_CHARS},
            ),
        ] = "",
        limit: Annotated[int, _range(1, 50, "Maximum results (1-50).")] = 10,
        types: Annotated[
            list[str] | None,
            Field(description="Only these event types.", json_schema_extra=_event_type_items),
        ] = None,
        session: Annotated[str | None, Field(description="Only this session id.")] = None,
        since: Annotated[
            str | None, Field(description="From this time: 2026-05-01, 2026-05-01T09:30 or 7d, 12h.")
        ] = None,
        until: Annotated[str | None, Field(description="Before this time (same forms as since).")] = None,
        tool: Annotated[str | None, Field(description="Only calls of this tool (Bash, Edit, Read, …).")] = None,
        file: Annotated[
            str | None, Field(description="Only tool calls that read, wrote or named this file (or part of a path).")
        ] = None,
        failed: Annotated[bool, Field(description="Only tool calls that failed.")] = False,
        project: Project = None,
    ) -> CallToolResult:
        return _run(lambda: tools.search(query, limit=limit, types=types, session=session, since=since,
                                         until=until, project=project, tool=tool, file=file,
                                         failed=failed))  # fmt: skip

    @server.tool(
        name="mem-timeline",
        title="Memory timeline (step 2: context)",
        annotations=READ_ONLY,
        description="The events just before and after one memory in its session, oldest first, one line each "
        "(→ marks the memory asked about). Use it to see what led to a result and what followed it.",
    )
    def mem_timeline(
        ref: Ref,
        before: Annotated[int, _range(0, 20, "Events before it (0-20).")] = 3,
        after: Annotated[int, _range(0, 20, "Events after it (0-20).")] = 3,
        project: Project = None,
    ) -> CallToolResult:
        return _run(lambda: tools.timeline(ref, before=before, after=after, project=project))

    @server.tool(
        name="mem-details",
        title="Memory details (step 3: full text)",
        annotations=READ_ONLY,
        description="The full text and metadata of one or more memories, by citation (mem:abc123) or event id. "
        "Fetch only the few you need after mem-search.",
    )
    def mem_details(
        refs: Annotated[
            list[str],
            Field(
                description="Citations (mem:abc123) or event ids, 1-20.",
                json_schema_extra={"minItems": 1, "maxItems": MAX_REFS},
            ),
        ],
        max_chars: Annotated[int, _range(200, 100_000, "Longest text shown per memory; longer text is cut.")] = 8000,
        project: Project = None,
    ) -> CallToolResult:
        return _run(lambda: tools.details(refs, max_chars=max_chars, project=project))

    @server.tool(
        name="mem-source",
        title="Source of a citation",
        annotations=READ_ONLY,
        description="What a [mem:xxxxxx] citation refers to: the source event in full, its session (with "
        "summary) and its neighbouring events. Use it to check a citation found in context or notes.",
    )
    def mem_source(
        citation: Ref,
        window: Annotated[int, _range(0, 20, "Neighbouring events on each side (0-20).")] = 3,
        max_chars: Annotated[int, _range(200, 100_000, "Longest source text shown.")] = 8000,
        project: Project = None,
    ) -> CallToolResult:
        return _run(lambda: tools.source(citation, window=window, max_chars=max_chars, project=project))

    @server.tool(
        name="mem-context-pack",
        title="Start-of-task context pack",
        annotations=READ_ONLY,
        description="A compact digest for starting a task: recent sessions with their summaries, open threads "
        "(last prompts of sessions that never ended), recent failed tool runs, and the memories most relevant "
        "to the task description — all within max_chars.",
    )
    def mem_context_pack(
        task: Annotated[
            str | None, Field(description="What you are about to work on (finds relevant memories).")
        ] = None,
        max_chars: Annotated[int, _range(200, 100_000, "Budget for the whole pack (characters).")] = 6000,
        sessions: Annotated[int, _range(0, 10, "Recent sessions to list (0-10).")] = 3,
        memories: Annotated[int, _range(0, 20, "Relevant memories to list (0-20).")] = 8,
        project: Project = None,
    ) -> CallToolResult:
        return _run(lambda: tools.context_pack(task, max_chars=max_chars, sessions=sessions, memories=memories,
                                               project=project))  # fmt: skip

    @server.tool(
        name="mem-stats",
        title="Memory statistics",
        annotations=READ_ONLY,
        description="What memlane stores for the project: event counts by type, sessions, time span, privacy "
        "filtering, search mode and store size.",
    )
    def mem_stats(project: Project = None) -> CallToolResult:
        return _run(lambda: tools.stats(project))

    @server.tool(
        name="mem-tasks",
        title="Tasks across sessions",
        annotations=CHANGES,
        description="Tasks named across sessions (checklists, TODO lines, status updates) as one task each, with "
        "status, blockers and history. action=list (open tasks; all_tasks for done ones), show (task=<id or title>), "
        "add (title; optional status, priority, blockers, note) or update (task plus status, priority, blockers or "
        "note). Statuses go pending → in_progress → done; blocked needs a blocker; a refused change says why.",
    )
    def mem_tasks(
        action: Annotated[str, Field(description="list, show, add or update.", json_schema_extra=ACTION_ENUM)] = "list",
        task: Annotated[str | None, Field(description="A task id (task-…) or its title (show, update).")] = None,
        title: Annotated[str | None, Field(description="The new task's title (add).")] = None,
        status: Annotated[str | None, Field(description="pending, in_progress, blocked, done or cancelled.")] = None,
        priority: Annotated[str | None, Field(description="low, medium, high or critical.")] = None,
        blockers: Annotated[
            list[str] | None, Field(description="What blocks it: task ids or titles, URLs, issue keys, text.")
        ] = None,
        note: Annotated[str | None, Field(description="A note kept with the task.")] = None,
        all_tasks: Annotated[bool, Field(description="list: done and cancelled tasks too.")] = False,
        project: Project = None,
    ) -> CallToolResult:
        return _run(
            lambda: tools.tasks(
                action,
                task=task,
                title=title,
                status=status,
                priority=priority,
                blockers=blockers,
                note=note,
                all_tasks=all_tasks,
                project=project,
            )
        )

    @server.tool(
        name="mem-insights",
        title="Insights with evidence",
        annotations=READ_ONLY,
        description="What the project's sessions established: decisions, conventions, the user's preferences, and "
        "errors that recurred with the fix that followed — each with its level (L1 structured … L3 verified, L4 "
        "active) and the citations of the memories that state it. With query: those whose evidence a search for "
        "it finds.",
    )
    def mem_insights(
        query: Annotated[
            str | None,
            Field(description="Words to look for (optional).", json_schema_extra={"maxLength": MAX_QUERY_CHARS}),
        ] = None,
        types: Annotated[
            list[str] | None,
            Field(description="Only these kinds.", json_schema_extra=INSIGHT_ITEMS),
        ] = None,
        level: Annotated[str, Field(description="At this level or above (L1-L4).")] = "L1",
        limit: Annotated[int, _range(1, 50, "Maximum insights (1-50).")] = 10,
        project: Project = None,
    ) -> CallToolResult:
        return _run(lambda: tools.insights(query, types=types, level=level, limit=limit, project=project))

    @server.tool(
        name="mem-projects",
        title="Projects with memory",
        annotations=READ_ONLY,
        description="The projects memlane has memory for (root directory, event count); pass a root as `project` "
        "to the other tools. Useful in clients that do not start the server inside a project (Claude Desktop).",
    )
    def mem_projects() -> CallToolResult:
        return _run(tools.projects)

    return server


def run(
    transport: str = "stdio",
    *,
    port: int = DEFAULT_HTTP_PORT,
    default_project: str | None = None,
    semantic: bool = True,
    auth: bool = True,
    engine: Any = None,
) -> None:
    """Serve until the client goes away (stdio) or the process is stopped (HTTP, 127.0.0.1 only)."""
    cfg = engine.cfg if engine is not None else config.load()
    if engine is None and semantic:
        from memlane.retrieval.engine import Engine

        engine = Engine(cfg, via_daemon=True)  # the daemon's warm model, not a load per Claude Code session
        engine.warm_in_background(default_project or os.getcwd())
    server = build_server(cfg, default_project=default_project, semantic=semantic, engine=engine)
    if transport == "stdio":
        from memlane.mcp.guard import run_stdio

        run_stdio(server)  # answers malformed JSON-RPC lines, which the SDK's stdio transport drops
        return
    serve_http(server, port, auth)


def serve_http(server: MCPServer, port: int, auth: bool) -> None:
    """Streamable HTTP at http://127.0.0.1:<port>/mcp. Host/Origin are checked (DNS rebinding); with ``auth``
    every request also needs ``Authorization: Bearer <the daemon token in MEMLANE_HOME/daemon.token>``."""
    import sys

    import uvicorn

    from memlane.daemon import state
    from memlane.daemon.server import Guard

    app: Any = server.streamable_http_app(host="127.0.0.1")
    if auth:
        app = Guard(app, state.ensure_token(), port)
    where = f"http://127.0.0.1:{port}/mcp"
    note = f"; send 'Authorization: Bearer <contents of {state.token_file()}>'" if auth else " (no token required)"
    print(f"memlane MCP server on {where}{note}", file=sys.stderr, flush=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
