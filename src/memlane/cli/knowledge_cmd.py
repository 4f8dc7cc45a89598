"""``memlane tasks list|show|add|update`` and ``memlane rebuild``: the knowledge model from the command line.

Reads bring the derived tables up to date first (``Memory.catch_up``, within a few seconds; the daemon does it
in the background anyway), so what they show follows the latest events.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import click

from memlane.cli import render
from memlane.cli.invocation import Ctx, pass_ctx
from memlane.knowledge.tasks import PRIORITIES, STATUSES
from memlane.memory import Memory

json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
CATCH_UP_S = 5.0


def catch_up(mem: Memory, quiet: bool = False) -> None:
    """Project new events before a read; a store that cannot be written now (locked, read-only) is read as is."""
    try:
        progress = mem.catch_up(budget_s=CATCH_UP_S)
    except sqlite3.OperationalError as exc:
        if not quiet:
            render.err_console.print(
                f"knowledge not brought up to date ({exc}); showing what is projected", markup=False
            )
        return
    behind = sum(progress.behind.values())
    if behind and not quiet:
        render.err_console.print(
            f"{behind} event(s) not projected yet: the daemon catches up in the background (`memlane rebuild` now)."
        )


@click.group("tasks")
def tasks_group() -> None:
    """Tasks named across sessions: one task per title, its status, blockers and history."""


@tasks_group.command("list")
@click.option(
    "--status", "-s", "statuses", multiple=True, type=click.Choice(STATUSES), help="Only this status (repeatable)."
)
@click.option("--all", "show_all", is_flag=True, help="Done and cancelled tasks too (default: open tasks only).")
@click.option("--limit", "-n", default=50, show_default=True, type=click.IntRange(1, 10_000), help="At most this many.")
@json_option
@pass_ctx
def list_cmd(obj: Ctx, statuses: tuple[str, ...], show_all: bool, limit: int, as_json: bool) -> None:
    """Tasks, in progress first, then blocked, then pending (then done and cancelled with --all)."""
    with obj.reading(as_json) as mem:
        if mem is None:
            return
        catch_up(mem, as_json)
        chosen = list(statuses) or (None if show_all else ["in_progress", "blocked", "pending"])
        rows = mem.tasks(chosen, limit)
    if as_json:
        render.emit_json(rows)
        return
    if not rows:
        render.console.print("No tasks." if show_all or statuses else "No open tasks (--all shows done ones).")
        return
    table = [
        {
            "id": r["id"],
            "status": r["status"],
            "priority": r["priority"],
            "updated": r["updated"][:16].replace("T", " "),
            "blockers": "; ".join(b["title"] for b in r["blockers"] if b["open"]) or "-",
            "title": r["title"]
            + (f"  [workflow {r['workflow']['task']}: {r['workflow']['status']}]" if r.get("workflow") else ""),
        }
        for r in rows
    ]
    render.dict_table(table, ["id", "status", "priority", "updated", "blockers", "title"])


@tasks_group.command("show")
@click.argument("ref")
@json_option
@pass_ctx
def show_cmd(obj: Ctx, ref: str, as_json: bool) -> None:
    """One task: status, blockers (and suggested ones), aliases, history and the events that name it."""
    with obj.memory(create=False) as mem:
        catch_up(mem, as_json)
        task = mem.task(ref)
    if as_json:
        render.emit_json(task)
        return
    show_task(task)


def show_task(task: dict[str, Any]) -> None:
    rows: list[tuple[str, Any]] = [
        ("task", f"{task['title']}  ({task['id']})"),
        ("status", task["status"]),
        ("priority", task["priority"]),
        ("created / updated", f"{task['created'][:19]} / {task['updated'][:19]}"),
    ]
    if task.get("note"):
        rows.append(("note", task["note"]))
    if task.get("aliases"):
        rows.append(("also named", "; ".join(a.removeprefix("task:") for a in task["aliases"])))
    for b in task["blockers"]:
        via = f" (was {b['resolved_from']})" if b.get("resolved_from") else ""
        rows.append(("blocked by", f"{b['title']} [{b['kind']} {b['id']}, {'open' if b['open'] else 'resolved'}]{via}"))
    for s in task.get("suggested_blockers") or []:
        rows.append(("maybe blocked by", f"{s['title']} [{s['id']}] (suggested, not confirmed)"))
    for s in task.get("similar") or []:
        rows.append(("similar to", f"{s['title']} [{s['id']}] (score {s['score']})"))
    for s in task.get("blocks") or []:
        rows.append(("blocks", f"{s['title']} [{s['id']}]"))
    if task.get("workflow"):
        w = task["workflow"]
        rows.append(("workflow", f"task {w['task']} of workflow memory {w['memory']}: {w['status']}"))
    if task.get("sessions"):
        rows.append(("sessions", len(task["sessions"])))
    render.kv_table(rows)
    if task.get("history"):
        render.console.print("\nHistory:")
        for h in task["history"]:
            change = f"{h['from_status'] or ''} → {h['to_status']}" if h["to_status"] else ""
            detail = (
                h["detail"].get("reason") or "; ".join(h["detail"].get("blockers") or []) or h["detail"].get("to") or ""
            )
            render.console.print(f"  {h['ts'][:19]}  {h['kind']:<9} {change} {detail}".rstrip(), markup=False)
    if task.get("events"):
        render.console.print("\nNamed in:")
        for e in task["events"]:
            render.console.print(f"  [{e['citation']}] {e['ts'][:19]} {e['type']} ({e['kind']})", markup=False)


@tasks_group.command("add")
@click.argument("title", nargs=-1, required=True)
@click.option(
    "--status",
    "-s",
    type=click.Choice(["pending", "in_progress", "blocked"]),
    default="pending",
    show_default=True,
    help="Its status to begin with (blocked needs --blocker).",
)
@click.option("--priority", "-p", type=click.Choice(PRIORITIES), help="Priority (default medium).")
@click.option(
    "--blocker",
    "-b",
    "blockers",
    multiple=True,
    help="What blocks it: a task id or title, a URL, an issue key, or text.",
)
@click.option("--note", help="A note kept with the task.")
@json_option
@pass_ctx
def add_cmd(
    obj: Ctx,
    title: tuple[str, ...],
    status: str,
    priority: str | None,
    blockers: tuple[str, ...],
    note: str | None,
    as_json: bool,
) -> None:
    """Add a task by hand (tasks named in sessions are found by themselves)."""
    with obj.memory() as mem:
        task = mem.add_task(" ".join(title), status=status, priority=priority, blockers=list(blockers), note=note)
    if as_json:
        render.emit_json(task)
        return
    render.console.print(f"Added {task['id']}: {task['title']} ({task['status']})", markup=False)


@tasks_group.command("update")
@click.argument("ref")
@click.option("--status", "-s", type=click.Choice(STATUSES), help="New status (pending → in_progress → done).")
@click.option("--priority", "-p", type=click.Choice(PRIORITIES), help="New priority.")
@click.option("--blocker", "-b", "blockers", multiple=True, help="What blocks it (repeatable; replaces the blockers).")
@click.option("--note", help="A note kept with the task (replaces the last one).")
@json_option
@pass_ctx
def update_cmd(
    obj: Ctx,
    ref: str,
    status: str | None,
    priority: str | None,
    blockers: tuple[str, ...],
    note: str | None,
    as_json: bool,
) -> None:
    """Change a task's status, priority, blockers or note. The state machine holds: a pending task is started
    before it is done, a blocked one names its blocker, a done one has none open."""
    if status is None and priority is None and not blockers and note is None:
        raise click.UsageError("say what to change: --status, --priority, --blocker or --note")
    with obj.memory(create=False) as mem:
        task = mem.update_task(ref, status=status, priority=priority, blockers=list(blockers) or None, note=note)
    if as_json:
        render.emit_json(task)
        return
    blocked = "; ".join(b["title"] for b in task["blockers"] if b["open"])
    render.console.print(
        f"{task['id']}: {task['title']} is {task['status']}" + (f" (blocked by {blocked})" if blocked else ""),
        markup=False,
    )


@click.command()
@click.option(
    "--only",
    "only",
    multiple=True,
    help="Only this derived state (repeatable): fulltext, sessions, knowledge, endless, learning.",
)
@json_option
@pass_ctx
def rebuild(obj: Ctx, only: tuple[str, ...], as_json: bool) -> None:
    """Recreate every derived table (full-text indexes, sessions, the knowledge model, endless mode's working set,
    consolidated memories and continuity scores, the learning loop's usage, levels and insights) from the event
    log (and the logs of what was injected, fetched and extracted).

    Vectors are derived too, but recreating them embeds every event again: `memlane vectors rebuild`.
    """
    with obj.memory(create=False) as mem:
        counts = mem.rebuild(list(only))
        stats = mem.store.knowledge_counts() if not only or "knowledge" in only else None
        endless = mem.store.endless_counts() if not only or "endless" in only else None
        learned = mem.learning_stats() if not only or "learning" in only else None
    if as_json:
        render.emit_json({"rebuilt": counts, "knowledge": stats, "endless": endless, "learning": learned})
        return
    for name, count in counts.items():
        render.console.print(f"rebuilt {name} from {count} event(s)")
    if stats is not None:
        render.console.print(
            f"knowledge: {sum(stats['entries'].values())} entries, {sum(stats['entities'].values())} entities, "
            f"{stats['edges']} edges, {stats['superseded']} {'memory' if stats['superseded'] == 1 else 'memories'}"
            " superseded" + (f" ({stats['partly_superseded']} more in part)" if stats["partly_superseded"] else "")
        )
    if endless is not None:
        render.console.print(
            f"endless: a working set of {endless['working_set']} item(s), {endless['consolidated']} consolidated"
            f" memor{'y' if endless['consolidated'] == 1 else 'ies'},"
            f" the continuity of {endless['sessions']} session(s)"
        )
    if learned is not None:
        used = sum(learned["levels"].values()) - learned["levels"]["L0"]
        render.console.print(
            f"learning: {learned['used']} memories used ({used} at L1 or above), "
            f"{sum(learned['insights'].values())} insights"
        )
