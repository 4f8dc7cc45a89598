"""Terminal output: rich tables on a wide TTY, full-text records elsewhere, JSON with ``--json``.

Tables whose last column holds prose shrink that column to a few characters when the terminal is
narrow, and a pipe has no width at all. So:

- not a terminal (a pipe, a file, a test): one tab-separated line per row, header first, every value in
  full on one line — what ``cut``, ``grep`` and ``awk`` expect;
- a terminal narrower than ``WIDE`` columns: one block per row, the short fields on a line and the text
  indented below it, wrapped rather than cut;
- a wider terminal: a rich table.

Colour follows rich, which honours ``FORCE_COLOR``; ``NO_COLOR`` turns every style off, bold and dim
included (rich alone keeps those: https://no-color.org asks for no ANSI styling at all).

Key/value outputs (``show``, ``stats``, ``status``, ``vectors status``) are ``key<TAB>value`` lines in a
pipe. In ``--json`` every time is ISO 8601 (``emit_json`` turns the few epoch seconds that records keep,
such as a project's ``created_at`` or the daemon's ``started``, into the stored form).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memlane.store.db import Event


def _styles() -> dict[str, Any]:
    """``color_system=None`` when NO_COLOR is set (to anything): no colour and no bold, dim or underline."""
    return {"color_system": None} if os.environ.get("NO_COLOR") else {}


# In a pipe a line is a record: never wrap it at an imagined 80 columns.
console = Console(highlight=False, soft_wrap=not sys.stdout.isatty(), **_styles())
err_console = Console(stderr=True, highlight=False, soft_wrap=not sys.stderr.isatty(), **_styles())


WIDE = 100


def layout() -> str:
    """``plain`` (pipe), ``stacked`` (narrow terminal) or ``table``."""
    if not console.is_terminal:
        return "plain"
    return "table" if console.width >= WIDE else "stacked"


def one_line(value: Any) -> str:
    return " ".join(str(value if value is not None else "").split())


def records(
    header: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None, plain_title: bool = False
) -> bool:
    """Print rows without a table when a table would cut them; False means the caller draws its table.

    The last column is the long text one. ``plain_title``: a command printing several tables keeps their
    titles in a pipe too (a line of its own before each header), or they could not be told apart.
    """
    mode = layout()
    if mode == "table":
        return False
    if mode == "plain":
        write = sys.stdout.write
        if plain_title and title:
            write(f"{title}\n")
        write("\t".join(header) + "\n")
        for row in rows:
            write("\t".join(one_line(v) for v in row) + "\n")
        return True
    if title:
        console.print(f"[bold]{title}[/]")
    for row in rows:
        # The first field names the row; the others carry their column's name, which a block has no header for.
        fields = [one_line(row[0]), *(f"{h}: {one_line(v)}" for h, v in zip(header[1:-1], row[1:-1], strict=True))]
        console.print("  ".join(fields), style="cyan", markup=False)
        console.print(" ".join(str(row[-1]).split()), markup=False, soft_wrap=False, overflow="fold")
        console.print()
    return True


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(iso_times(data), ensure_ascii=False, indent=2, default=str) + "\n")


# Keys whose number is a moment (seconds since the epoch) in what memlane records: shown as ISO 8601.
_TIME_KEYS = ("started", "mtime", "lastAccess", "loadedAt", "failed_at", "time", "ts")
_EPOCH_RANGE = (946684800, 4102444800)  # 2000-01-01 .. 2100-01-01: a count in that range is not a time


def _is_time_key(key: str) -> bool:
    return key in _TIME_KEYS or key.endswith(("_at", "At"))


def iso_times(data: Any) -> Any:
    """``data`` with every epoch-seconds time under a time key (``created_at``, ``started``…) as ISO 8601 UTC,
    the form stored timestamps have, so every ``--json`` output uses one time format."""
    from memlane.store.keys import iso

    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            if (
                isinstance(key, str)
                and _is_time_key(key)
                and isinstance(value, (int, float))
                and not isinstance(value, bool)
                and _EPOCH_RANGE[0] <= value < _EPOCH_RANGE[1]
            ):
                out[key] = iso(float(value))
            else:
                out[key] = iso_times(value)
        return out
    if isinstance(data, (list, tuple)):
        return [iso_times(v) for v in data]
    return data


def short(text: str, limit: int = 100) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def events_table(events: Sequence[Event], title: str | None = None, score: Sequence[float] | None = None) -> None:
    header = ["citation", "time", "type", *(["score"] if score is not None else []), "content"]
    rows = [
        [e.cite, e.ts[:19].replace("T", " "), e.type, *([f"{score[i]:.2f}"] if score is not None else []), e.content]
        for i, e in enumerate(events)
    ]
    if records(header, rows, title):
        return
    table = Table(title=title, show_lines=False, header_style="bold")
    table.add_column("citation", style="cyan", no_wrap=True)
    table.add_column("time", style="dim", no_wrap=True)
    table.add_column("type", style="magenta", no_wrap=True)
    if score is not None:
        table.add_column("score", justify="right", no_wrap=True)
    table.add_column("content", overflow="fold")
    for i, e in enumerate(events):
        row = [e.cite, e.ts[:19].replace("T", " "), e.type]
        if score is not None:
            row.append(f"{score[i]:.2f}")
        row.append(short(e.content, 120))
        table.add_row(*row)
    console.print(table)


def kv_table(rows: Sequence[tuple[str, Any]], title: str | None = None) -> None:
    """Key/value rows: a two-column table on a terminal; ``key<TAB>value`` lines in a pipe (``cut -f2``)."""
    if layout() == "plain":
        for key, value in rows:
            sys.stdout.write(f"{key}\t{one_line(value)}\n")
        return
    table = Table(title=title, show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, escape(str(value)))
    console.print(table)


def dict_table(rows: Sequence[dict[str, Any]], columns: Sequence[str], title: str | None = None) -> None:
    if records(columns, [[row.get(c) for c in columns] for row in rows], title, plain_title=True):
        return
    table = Table(title=title, header_style="bold")
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*[one_line(row.get(c)) for c in columns])  # folded in its column, never cut
    console.print(table)


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


SEARCH_HEADER = ["citation", "rank", "match", "level", "time", "type", "summary"]


def search_results(rows: Sequence[dict[str, Any]], query: str) -> None:
    """Disclosure rows: an index table, then any timelines / details below it.

    The number shown is ``rank``, what the list is sorted by, so it falls from top to bottom (a superseded
    memory, listed last whatever its rank, says so in ``match``). ``match`` is the band of P, the chance the
    memory bears on the query that injection reads: high (the top result, P >= 0.6 and well ahead of other
    sessions), suggested (P >= 0.15), none. P itself is ``score`` in ``--json``. Showing P in the table made
    the column read as unsorted ("0.82, 0.59, 0.98"): P carries a session's whole support, the order only a
    bounded part of it (docs/retrieval.md "Order").
    """
    flat = [
        [r["citation"], f"{r['rank']:.2f}", r["confidence"], r.get("level", "L0"), r["ts"][:16].replace("T", " "),
         r["type"], _with_insight(r)]
        for r in rows
    ]  # fmt: skip
    if records(SEARCH_HEADER, flat, f"'{query}'"):
        _search_extras(rows)
        return
    table = Table(title=f"'{query}'", header_style="bold")
    for col, style in (("citation", "cyan"), ("rank", ""), ("match", "green"), ("level", "yellow"), ("time", "dim"),
                       ("type", "magenta")):  # fmt: skip
        table.add_column(col, style=style or None, no_wrap=True)
    table.add_column("summary", overflow="fold")
    for row in flat:
        table.add_row(*row[:-1], escape(str(row[-1])))
    console.print(table)
    _search_extras(rows)


def _with_insight(row: dict[str, Any]) -> str:
    """A result's summary, with the insight it is evidence of (the learning loop) after it."""
    insight = row.get("insight")
    if not insight:
        return str(row["summary"])
    mark = "verified " if insight.get("verified") else ""
    return f"{row['summary']} [{mark}{insight['type']} {insight['level']}: {short(insight['content'], 80)}]"


def _search_extras(rows: Sequence[dict[str, Any]]) -> None:
    for row in rows:
        if "timeline" in row:
            console.print(f"[bold]{row['citation']}[/] timeline:")
            for item in row["timeline"]:
                mark = "→" if item["current"] else " "
                console.print(
                    f"  {mark} [cyan]{item['citation']}[/] {item['type']}: {escape(short(item['summary'], 100))}"
                )
        if "detail" in row:
            console.print(f"[bold]{row['citation']}[/] ({row['type']}, {row['ts']}):")
            console.print(row["detail"]["content"], markup=False)


def queue_line(q: dict[str, Any]) -> str:
    """The embedding outbox in one line (vector-outbox-v2 §9): waiting, failed (with what to do), average time."""
    if "error" in q:
        return f"unreadable ({q['error']})"
    parts = [f"{q['pending'] + q['processing']} waiting"]
    if q["failed"]:
        parts.append(f"{q['failed']} FAILED (memlane vectors status; memlane vectors retry)")
    if q["avg_ms"] is not None:
        parts.append(f"avg {q['avg_ms'] / 1000:.1f} s queued → embedded over {q['done']} done")
    return ", ".join(parts)


def supersession_rows(info: dict[str, Any]) -> list[tuple[str, str]]:
    """``memlane show``'s lines for what replaced a memory, what replaces it now and what it replaced."""
    rows: list[tuple[str, str]] = []
    by: dict[str, list[dict[str, Any]]] = {}
    for b in info.get("superseded_by") or []:
        by.setdefault(b["citation"], []).append(b)
    for citation, reasons in by.items():
        first = reasons[0]
        why = ", ".join(dict.fromkeys(r["rule"].replace("_", " ") for r in reasons))
        where = next((r["path"] for r in reasons if r.get("path")), None)
        partial = all(r["partial"] for r in reasons)
        rows.append(
            (
                "partly superseded by" if partial else "superseded by",
                f"{citation} ({first['ts'][:10]}, {why}{': ' + where if where else ''}) {short(first['summary'], 160)}",
            )
        )
    current = info.get("current")
    if current and all(b["citation"] != current for b in info.get("superseded_by") or []):
        rows.append(("current", f"{current} (what replaces it now)"))
    if info.get("replaces"):
        rows.append(("replaces", ", ".join(r["citation"] for r in info["replaces"])))
    return rows
