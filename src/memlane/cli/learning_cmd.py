"""``memlane citations popular|show|sessions`` and ``memlane insights [list|show|extract|usage]``: the learning
loop from the command line (docs/learning.md).

Reads bring the derived tables up to date first, like ``tasks`` (the daemon's graduation job does it in the
background anyway).
"""

from __future__ import annotations

from typing import Any

import click

from memlane.cli import render
from memlane.cli.invocation import Ctx, pass_ctx
from memlane.cli.knowledge_cmd import catch_up
from memlane.knowledge import graduation
from memlane.knowledge.insights import TYPES
from memlane.store.learning import USAGE_KINDS

json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")


def level_name(level: int) -> str:
    return graduation.LEVELS[int(level)]


# ---- citations -----------------------------------------------------------------------------------------------


@click.group("citations")
def citations_group() -> None:
    """How memories were used: injected for a prompt, fetched in full, cited in Claude's answers."""


@citations_group.command("popular")
@click.option("--limit", "-n", default=10, show_default=True, type=click.IntRange(1, 200), help="At most this many.")
@click.option(
    "--by",
    "kinds",
    multiple=True,
    type=click.Choice([*USAGE_KINDS, "all"]),
    help="Which uses count (repeatable; default: cited). all: injected, fetched and cited.",
)
@click.option("--session", "-s", help="Only uses in this session.")
@json_option
@pass_ctx
def popular(obj: Ctx, limit: int, kinds: tuple[str, ...], session: str | None, as_json: bool) -> None:
    """The memories used most (citations-system §8.2): cited in answers, by default."""
    chosen = ["injected", "fetched", "cited"] if "all" in kinds else (list(kinds) or ["cited"])
    with obj.reading(as_json) as mem:
        if mem is None:
            return
        catch_up(mem, as_json)
        rows = mem.popular(limit, chosen, session)
    if as_json:
        render.emit_json([popular_json(r) for r in rows])
        return
    if not rows:
        render.console.print(f"No memory was {' or '.join(chosen)} yet.")
        return
    table = [
        {
            "citation": r["event"].cite,
            "uses": r["uses"],
            "sessions": r["sessions"],
            "level": level_name(r["level"]),
            "last used": str(r["last_used"])[:16].replace("T", " "),
            "summary": _text(r["event"].content, 100),
        }
        for r in rows
    ]
    render.dict_table(table, ["citation", "uses", "sessions", "level", "last used", "summary"])


def _text(text: str, limit: int) -> str:
    """A row's long column: whole in a pipe (every value in full), cut to ``limit`` in a terminal's table."""
    line = " ".join(text.split())
    return line if render.layout() == "plain" else render.short(line, limit)


def popular_json(row: dict[str, Any]) -> dict[str, Any]:
    event = row["event"]
    return {
        **{k: v for k, v in row.items() if k != "event"},
        "citation": event.cite,
        "type": event.type,
        "level": level_name(row["level"]),
        "summary": render.short(" ".join(event.content.split()), 120),
    }


@citations_group.command("show")
@click.argument("ref")
@json_option
@pass_ctx
def show_usage(obj: Ctx, ref: str, as_json: bool) -> None:
    """One memory's uses: counts, level, and the sessions that cited it."""
    with obj.reading(as_json, empty=None) as mem:
        if mem is None:
            return
        catch_up(mem, True)
        event = mem.get(ref)
        usage = mem.usage(event.id)
    if as_json:
        render.emit_json({"citation": event.cite, "id": event.id, **usage})
        return
    render.kv_table(usage_rows(event.cite, usage))


def usage_rows(cite: str, usage: dict[str, Any]) -> list[tuple[str, Any]]:
    """The lines ``show`` and ``citations show`` print about a memory's uses and level."""
    counts = usage["counts"]
    level = usage["level"]
    rows: list[tuple[str, Any]] = [
        ("level", f"{graduation.label(level['level'])}" + (f" — {level['reason']}" if level.get("reason") else "")),
        ("uses", ", ".join(f"{k} {counts[k]}" for k in ("injected", "listed", "fetched", "cited"))),
    ]
    if level.get("confidence") is not None and "access" in level:
        rows.append(
            (
                "counters",
                f"{level['access']} use(s) in {level['sessions']} session(s), {level['cross_session']} other than its "
                f"own; confidence {level['confidence']:.2f}; last used "
                + str(level["last_used"])[:16].replace("T", " "),
            )
        )
    cited = usage["cited_in"]
    rows.append(
        (
            "cited in",
            ", ".join(f"{s['session_id']} ({s['uses']}×, {str(s['last'])[:10]})" for s in cited) or "no session yet",
        )
    )
    for insight in usage.get("insights") or []:
        rows.append(
            (
                "insight",
                f"{insight['id']} {insight['insight_type']} {level_name(insight['level'])}: "
                f"{render.short(insight['content'], 100)}",
            )
        )
    return rows


@citations_group.command("sessions")
@click.option("--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 200), help="At most this many.")
@json_option
@pass_ctx
def sessions_usage(obj: Ctx, limit: int, as_json: bool) -> None:
    """Per session, latest first: how many memories it was given, fetched and cited."""
    with obj.reading(as_json) as mem:
        if mem is None:
            return
        catch_up(mem, as_json)
        rows = mem.usage_by_session(limit)
    if as_json:
        render.emit_json(rows)
    elif not rows:
        render.console.print("No memory was used in any session yet.")
    else:
        render.dict_table(rows, ["session_id", "injected", "listed", "fetched", "cited", "memories", "last_used"])


# ---- insights ------------------------------------------------------------------------------------------------


@click.group("insights", invoke_without_command=True)
@click.option("--type", "-t", "types", multiple=True, type=click.Choice(TYPES), help="Only this kind (repeatable).")
@click.option("--level", "-l", "min_level", default="L1", show_default=True,
              type=click.Choice(list(graduation.LEVELS[1:])), help="At this level or above.")  # fmt: skip
@click.option("--query", "-q", help="Those whose evidence a search for these words finds, best first.")
@click.option("--limit", "-n", default=30, show_default=True, type=click.IntRange(1, 10_000), help="At most this many.")
@click.option("--text-only", is_flag=True, help="With --query: full-text search only (no embedding model).")
@json_option
@click.pass_context
def insights_group(
    ctx: click.Context,
    types: tuple[str, ...],
    min_level: str,
    query: str | None,
    limit: int,
    text_only: bool,
    as_json: bool,
) -> None:
    """Decisions, conventions, preferences and recurring errors with their fix, each with its evidence."""
    if ctx.invoked_subcommand is not None:
        return
    obj = ctx.find_object(Ctx) or Ctx(None, None)
    with obj.reading(as_json) as mem:
        if mem is None:
            return
        catch_up(mem, as_json)
        engine = None
        if query is not None:
            from memlane.retrieval.engine import Engine

            engine = Engine(mem.config, vectors=not text_only, via_daemon=True,
                            start_daemon=mem.config.daemon.search_starts)  # fmt: skip
        rows = mem.insights(
            types=list(types), min_level=graduation.LEVELS.index(min_level), limit=limit, query=query, engine=engine
        )
        budget = _llm_line(mem)
    if as_json:
        render.emit_json([{**r, "level": level_name(r["level"])} for r in rows])
        return
    if not rows:
        render.console.print("No insights yet." if query is None else f"No insight's evidence matches '{query}'.")
    else:
        table = [
            {
                "id": r["id"],
                "kind": r["insight_type"],
                "level": level_name(r["level"]) + ("" if r["evidence_aligned"] else " (unaligned)"),
                "support": r["support"],
                "cited as": r["cite"] or "-",
                "insight": _text(r["content"], 160),
            }
            for r in rows
        ]
        render.dict_table(table, ["id", "kind", "level", "support", "cited as", "insight"])
    if budget:
        render.err_console.print(budget, markup=False)


def _llm_line(mem: Any) -> str:
    from memlane.knowledge import llm

    if not llm.configured(mem.config):
        return ""
    return llm.budget_line(mem.config)


@insights_group.command("show")
@click.argument("ref")
@json_option
@pass_ctx
def show_insight(obj: Ctx, ref: str, as_json: bool) -> None:
    """One insight: what it says, its level and why, and each source with the words it quotes."""
    with obj.reading(as_json, empty=None) as mem:
        if mem is None:
            return
        catch_up(mem, True)
        row = mem.insight(ref)
        quotes = {}
        for source in row["sources"]:
            event = mem.store.get(source["event_id"])
            if event is not None and source["span_start"] is not None:
                quotes[(source["event_id"], source["role"])] = event.content[source["span_start"] : source["span_end"]]
    if as_json:
        render.emit_json({**row, "level": level_name(row["level"])})
        return
    render.kv_table(
        [
            ("insight", row["id"]),
            ("kind", row["insight_type"]),
            ("says", row["content"]),
            ("level", f"{graduation.label(row['level'])} — {row['reason']}"),
            (
                "counters",
                f"{row['access']} use(s), support {row['support']}, {row['cross_session']} other session(s), "
                f"confidence {row['used_confidence']:.2f}",
            ),
            ("evidence", "aligned" if row["evidence_aligned"] else "not aligned: it cannot be verified"),
            ("origin", row["origin"]),
        ]
    )
    for source in row["sources"]:
        words = quotes.get((source["event_id"], source["role"]))
        where = f"{source['cite']} {source['role']} ({source['method']}, {source['confidence']:.2f})"
        render.console.print(
            f"  {where}: {render.short(' '.join((words or '(not found)').split()), 160)}", markup=False
        )


@insights_group.command("extract")
@click.option("--sessions", "max_calls", default=5, show_default=True, type=click.IntRange(1, 1000),
              help="At most this many calls (slices of sessions) now.")  # fmt: skip
@json_option
@pass_ctx
def extract(obj: Ctx, max_calls: int, as_json: bool) -> None:
    """Run the LLM extractor now on sessions it has not read ([llm] in config.toml; off unless set). It stops at
    the daily budget and says so."""
    from memlane.knowledge import llm

    with obj.memory(create=False) as mem:
        catch_up(mem, True)
        report = llm.run(mem.store, mem.config, max_calls=max_calls, idle=False)
        if report.calls:
            catch_up(mem, True)
    if as_json:
        render.emit_json(report.as_dict())
        return
    render.console.print(report.line(), markup=False)


@insights_group.command("usage")
@json_option
@pass_ctx
def llm_usage(obj: Ctx, as_json: bool) -> None:
    """What the LLM extractor used today and over the last days, against the daily budget."""
    from memlane import config
    from memlane.knowledge import llm

    del obj  # the budget is the user's, over all projects
    cfg = config.load()
    data = llm.usage_report(cfg)
    if as_json:
        render.emit_json(data)
        return
    render.console.print(llm.budget_line(cfg), markup=False)
    for day, spent in data["days"].items():
        render.console.print(
            f"  {day}: {spent['calls']} call(s), {spent['input_tokens'] + spent['output_tokens']} tokens, "
            f"${spent['cost_usd']:.4f}",
            markup=False,
        )
