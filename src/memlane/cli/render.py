"""Terminal output: rich tables on a TTY, plain text in pipes, JSON with ``--json``."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from memlane.store.db import Event

console = Console(highlight=False, soft_wrap=False)
err_console = Console(stderr=True, highlight=False)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def short(text: str, limit: int = 100) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def events_table(events: Sequence[Event], title: str | None = None, score: Sequence[float] | None = None) -> None:
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
    table = Table(title=title, show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, str(value))
    console.print(table)


def dict_table(rows: Sequence[dict[str, Any]], columns: Sequence[str], title: str | None = None) -> None:
    table = Table(title=title, header_style="bold")
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*[short(str(row.get(c) if row.get(c) is not None else ""), 80) for c in columns])
    console.print(table)


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def search_results(rows: Sequence[dict[str, Any]], query: str) -> None:
    """Disclosure rows: an index table, then any timelines / details below it."""
    table = Table(title=f"'{query}'", header_style="bold")
    for col, style in (("citation", "cyan"), ("score", ""), ("match", "green"), ("time", "dim"), ("type", "magenta")):
        table.add_column(col, style=style or None, no_wrap=True)
    table.add_column("summary", overflow="fold")
    for row in rows:
        table.add_row(
            row["citation"],
            f"{row['score']:.2f}",
            row["confidence"],
            row["ts"][:16].replace("T", " "),
            row["type"],
            row["summary"],
        )
    console.print(table)
    for row in rows:
        if "timeline" in row:
            console.print(f"[bold]{row['citation']}[/] timeline:")
            for item in row["timeline"]:
                mark = "→" if item["current"] else " "
                console.print(
                    f"  {mark} [cyan]{item['citation']}[/] {item['type']}: {short(item['summary'], 100)}", markup=True
                )
        if "detail" in row:
            console.print(f"[bold]{row['citation']}[/] ({row['type']}, {row['ts']}):")
            console.print(row["detail"]["content"], markup=False)
