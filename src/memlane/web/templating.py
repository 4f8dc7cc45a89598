"""The Jinja2 environment of the dashboard and the filters its templates use.

Autoescaping is on for every template: stored content is hostile input (a captured ``<script>`` is text). The
filters that return markup (``marked``, ``highlight``) escape every piece of stored text themselves and add only
their own fixed tags around it.
"""

from __future__ import annotations

import re
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

ICONS = {
    "user_prompt": "💬",
    "agent_response": "🤖",
    "tool_observation": "🛠️",
    "session_start": "▶",
    "session_end": "■",
    "session_summary": "📝",
    "compaction": "🗜",
    "task_update": "✅",
}
LABELS = {
    "user_prompt": "User prompt",
    "agent_response": "Assistant response",
    "tool_observation": "Tool",
    "session_start": "Session start",
    "session_end": "Session end",
    "session_summary": "Session summary",
    "compaction": "Compaction",
    "task_update": "Task update",
}
REGION_ICONS = {"heading": "📌", "direct-ref": "🔗", "indirect-ref": "💡", "code-block": "💻", "text": "📝"}
PRIVATE_HTML = '<span class="private-marker" title="private section, not stored">🔒 private content (not stored)</span>'
SECRET_HTML = '<span class="secret-marker" title="secret redacted before storage">🔑 secret redacted</span>'
_WORD = re.compile(r"\w{2,}", re.UNICODE)


def one_line(text: str, limit: int = 160) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def when(ts: str | None) -> str:
    """A stored timestamp for people: ``2026-11-27 10:18:03`` (UTC)."""
    if not ts:
        return "-"
    return str(ts).replace("T", " ")[:19]


def marked(text: str, private_marker: str, secret_marker: str) -> Markup:
    """Stored text, escaped, with each place the privacy filter removed something shown as a marker:
    🔒 for a private section (never stored), 🔑 for a redacted secret."""
    markers = [(m, kind) for m, kind in ((private_marker, "private"), (secret_marker, "secret")) if m]
    if not markers:
        return escape(text)
    pattern = re.compile("|".join(re.escape(m) for m, _ in sorted(markers, key=lambda x: -len(x[0]))))
    kinds = dict(markers)
    out: list[str] = []
    last = 0
    for match in pattern.finditer(text):
        out.append(str(escape(text[last : match.start()])))
        if kinds[match.group()] == "private":
            out.append(PRIVATE_HTML)
        else:
            out.append(SECRET_HTML)
        last = match.end()
    out.append(str(escape(text[last:])))
    return Markup("".join(out))


def terms_of(query: str) -> list[str]:
    return sorted({w.lower() for w in _WORD.findall(query or "")}, key=len, reverse=True)[:20]


def highlight(text: str, terms: list[str]) -> Markup:
    """``text`` escaped, with the query's words wrapped in ``<mark>``."""
    if not terms:
        return escape(text)
    pattern = re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE)
    out: list[str] = []
    last = 0
    for match in pattern.finditer(text):
        out.append(str(escape(text[last : match.start()])))
        out.append(f"<mark>{escape(match.group())}</mark>")
        last = match.end()
    out.append(str(escape(text[last:])))
    return Markup("".join(out))


def human_bytes(n: int | None) -> str:
    size = float(n or 0)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


def count(n: int, cap: int | None = None) -> str:
    return f"{cap:,}+" if cap is not None and n > cap else f"{n:,}"


def env() -> Environment:
    environment = Environment(
        loader=PackageLoader("memlane.web", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    filters: dict[str, Any] = {
        "one_line": one_line,
        "when": when,
        "marked": marked,
        "highlight": highlight,
        "human_bytes": human_bytes,
        "count": count,
    }
    environment.filters.update(filters)
    environment.globals.update(icons=ICONS, labels=LABELS, region_icons=REGION_ICONS)
    return environment
