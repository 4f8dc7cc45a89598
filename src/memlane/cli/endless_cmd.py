"""``memlane endless enable|disable|status|consolidate|memories``: endless mode from the command line.

``enable``/``disable`` switch the project's mode (what SessionStart gives Claude); ``status`` shows the working
set, the continuity of the latest sessions and what consolidation has done; ``consolidate`` does now what the
daemon does when due; ``memories`` lists or searches the consolidated memories.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import click

from memlane.cli import render
from memlane.cli.invocation import Ctx, pass_ctx

json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")


@click.group("endless")
def endless_group() -> None:
    """Endless mode: a working set and long-running topics at session start instead of the last session's recap."""


def _caught_up(done: dict[str, Any]) -> str:
    parts = [f"{done['consolidated']} topic(s) consolidated", f"{done['scored']} session(s) scored"]
    if done.get("behind") or done.get("queued"):
        parts.append(
            f"{done.get('behind', 0)} event(s) and {done.get('queued', 0)} topic(s) left for the daemon "
            "(or run `memlane endless consolidate` again)"
        )
    return "; ".join(parts)


def _llm_line(done: dict[str, Any]) -> str:
    """What the LLM did for the key facts (only when one is on and the project is in endless mode)."""
    from memlane.endless import assist

    return "\n" + assist.Report(**done["llm"]).line() if done.get("llm") else ""


@endless_group.command("enable")
@json_option
@pass_ctx
def enable_cmd(obj: Ctx, as_json: bool) -> None:
    """Turn endless mode on for this project: existing events go into the working set and are consolidated once."""
    with obj.memory() as mem:
        done = mem.set_endless_mode("endless")
        items = len(mem.working_set())
        consolidated = mem.store.consolidated_count()
    if as_json:
        render.emit_json({"mode": "endless", **done, "working_set": items, "consolidated_total": consolidated})
        return
    render.console.print(
        f"Endless mode on for this project: a working set of {items} item(s), {consolidated} consolidated "
        f"memor{'y' if consolidated == 1 else 'ies'} ({_caught_up(done)})." + _llm_line(done),
        markup=False,
    )


@endless_group.command("disable")
@json_option
@pass_ctx
def disable_cmd(obj: Ctx, as_json: bool) -> None:
    """Back to session mode: SessionStart gives the last session's recap again; endless state is kept."""
    with obj.memory() as mem:
        mem.set_endless_mode("session")
    if as_json:
        render.emit_json({"mode": "session"})
        return
    render.console.print(
        "Session mode for this project: SessionStart gives the last session's recap. The working set and "
        "consolidated memories are kept (`memlane endless enable` uses them again).",
        markup=False,
    )


@endless_group.command("consolidate")
@json_option
@pass_ctx
def consolidate_cmd(obj: Ctx, as_json: bool) -> None:
    """Project new events and consolidate what is queued now (the daemon does it when due)."""
    with obj.memory(create=False) as mem:
        done = mem.endless_consolidate()
        total = mem.store.consolidated_count()
    if as_json:
        render.emit_json({**done, "consolidated_total": total})
        return
    render.console.print(f"{_caught_up(done)}; {total} consolidated memories in all." + _llm_line(done), markup=False)


@endless_group.command("status")
@json_option
@pass_ctx
def status_cmd(obj: Ctx, as_json: bool) -> None:
    """The mode, the working set, the latest continuity score and why, and what consolidation has done.

    New events are projected first and the working set recomputed (consolidation is the daemon's, when due, or
    `memlane endless consolidate`'s)."""
    with obj.reading(as_json, empty=None) as mem:
        if mem is None:
            return
        try:
            data = mem.endless_status(refresh=True)
        except sqlite3.OperationalError as exc:  # locked or read-only: show what is there
            render.err_console.print(f"endless state not brought up to date ({exc})", markup=False)
            data = mem.endless_status()
    if as_json:
        render.emit_json(data)
        return
    show_status(data)


def continuity_text(row: dict[str, Any] | None) -> str:
    if not row or row.get("score") is None:
        return "-"
    return f"{row['score']:.2f} ({row['transition'].replace('_', ' ')}), session {row['session_id'][:8]}"


def show_status(data: dict[str, Any]) -> None:
    window = data["window"]
    span = f"{window['since'][:16]} → {window['until'][:16]} UTC" if window["since"] else "no activity yet"
    rows: list[tuple[str, Any]] = [
        ("mode", data["mode"] + (" (config endless.mode)" if data["mode_from"] == "config" else " (this project)")),
        ("working set", f"{len(data['working_set'])} item(s), last {data['window_hours']:g} h of activity: {span}"),
        ("continuity", continuity_text(data["continuity"])),
    ]
    if data["continuity"]:
        rows.extend(("", reason) for reason in data["continuity"]["detail"].get("reasons", []))
    rows += [
        ("consolidated", f"{data['consolidated']} memories, last run {data['last_consolidation'] or 'never'}"),
        ("waiting", f"{data['events_not_projected']} event(s) to project, {data['topics_queued']} topic(s) queued"),
    ]
    if data.get("llm"):
        rows.extend(llm_rows(data["llm"]))
    render.kv_table(rows)
    if data["working_set"]:
        render.dict_table(
            [
                {
                    "kind": i["kind"],
                    "status": i["status"] or "-",
                    "item": render.short(i["title"], 70),
                    "last": i["last"][:16].replace("T", " "),
                    "memory": i["citation"],
                }
                for i in data["working_set"]
            ],
            ["kind", "status", "item", "last", "memory"],
            title="working set",
        )
    if data["topics"]:
        render.dict_table(
            [
                {"topic": render.short(t["title"], 60), "sessions": t["sessions"], "confidence": t["confidence"]}
                for t in data["topics"]
            ],
            ["topic", "sessions", "confidence"],
            title="long-running topics",
        )


def llm_rows(info: dict[str, Any]) -> list[tuple[str, Any]]:
    """``status``'s lines on the LLM-assisted key facts."""
    who = info["model"] or "no LLM configured now"
    n = info["assisted"]
    head = f"{n} memor{'y' if n == 1 else 'ies'} quoted by a model, {info['waiting']} waiting ({who}"
    head += f"; not asked: {info['off']})" if info["off"] else ")"
    today = info["today"]
    cap = f" of {today['budget_tokens']:,}" if today["budget_tokens"] else ""
    rows: list[tuple[str, Any]] = [
        ("LLM key facts", head),
        ("", f"today (every use of the LLM): {today['input_tokens'] + today['output_tokens']:,}{cap} tokens, "
             f"${today['cost_usd']:.4f}" + (f" of ${today['budget_usd']:.2f}" if today["budget_usd"] else "")),
    ]  # fmt: skip
    if info["last"]:
        rows.append(("", f"last run {info['last_run']}: {info['last']}"))
    return rows


@endless_group.command("memories")
@click.argument("query", nargs=-1)
@click.option("--limit", "-n", default=10, show_default=True, type=click.IntRange(1, 1000), help="At most this many.")
@click.option("--sources", is_flag=True, help="List every source event's id too.")
@json_option
@pass_ctx
def memories_cmd(obj: Ctx, query: tuple[str, ...], limit: int, sources: bool, as_json: bool) -> None:
    """Consolidated memories: those matching QUERY, or those of the most sessions."""
    text = " ".join(query).strip() or None
    with obj.reading(as_json) as mem:
        if mem is None:
            return
        rows = mem.consolidated(text, limit, sources=sources)
    if as_json:
        render.emit_json(rows)
        return
    if not rows:
        render.console.print(
            f"No consolidated memory matches '{text}'." if text else "No consolidated memories yet.", markup=False
        )
        return
    for row in rows:
        render.console.print(
            f"{row['id']}  {row['title']}  ({row['sessions']} session(s), {row['sources']} source event(s), "
            f"confidence {row['confidence']:.2f}, {row['first_ts'][:10]} → {row['last_ts'][:10]})",
            markup=False,
        )
        if "llm" in row:
            who = f"{row['llm'].get('provider', '?')} {row['llm'].get('model', '?')}"
            render.console.print(f"  key facts quoted from its sources by {who}", markup=False)
        for fact in row["facts"]:
            replaced = f"  (superseded by {fact['replaced_by']})" if fact.get("replaced_by") else ""
            render.console.print(f"  {fact['ts'][:10]} [{fact['citation']}] {fact['text']}{replaced}", markup=False)
        if sources:
            render.console.print("  sources: " + " ".join(row["source_events"]), markup=False)
