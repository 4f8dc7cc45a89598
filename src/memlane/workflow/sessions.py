"""Workflow session records: ``sessions/<YYYY-MM-DD>_<workflow>_<short-id>.md``. Stdlib only.

A record is opened by a ``/workflow-<name>`` prompt, gets every later prompt and Claude's answers
(cut to ``max_response_length``, with the tools used) appended, and is closed when the workflow
completes — with an extractive summary when ``workflow.summarization`` is on.
"""

from __future__ import annotations

import os
import re
import time

from memlane.workflow import store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
ENTRY = "### "
CUT = "… [cut]"


def safe(name: str, limit: int = 40) -> str:
    return _UNSAFE.sub("-", name).strip("-.")[:limit] or "x"


def file_name(workflow: str, session_id: str, day: str | None = None) -> str:
    return f"{day or time.strftime('%Y-%m-%d')}_{safe(workflow)}_{safe(session_id, 8)}.md"


def file_path(memory_id: str, name: str) -> str:
    return os.path.join(store.sessions_dir(memory_id), name)


def _clock() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


def start(memory_id: str, workflow: str, session_id: str, project_name: str, root: str) -> str:
    """Create (or reopen, same day) the record; returns its file name."""
    name = file_name(workflow, session_id)
    path = file_path(memory_id, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not os.path.exists(path):
        head = (
            f"# Workflow session: {workflow}\n\n"
            f"- Workflow: {workflow}\n- Session: {session_id}\n- Project: {project_name} ({root})\n"
            f"- Started: {store.now_iso()}\n\n---\n\n"
        )
        store.append(path, head)
    return name


def cut(text: str, limit: int) -> str:
    text = text.strip()
    return text if limit <= 0 or len(text) <= limit else text[:limit].rstrip() + " " + CUT


def add_prompt(memory_id: str, name: str, prompt: str) -> None:
    store.append(file_path(memory_id, name), f"{ENTRY}User — {_clock()}\n\n{prompt.strip()}\n\n")


def add_response(memory_id: str, name: str, response: str, tools: list[str], limit: int) -> None:
    body = cut(response, limit) or "_(no text)_"
    used = f"\n\n_Tools: {', '.join(tools)}_" if tools else ""
    store.append(file_path(memory_id, name), f"{ENTRY}Claude — {_clock()}\n\n{body}{used}\n\n")


def close(memory_id: str, name: str, reason: str, summarize: bool, max_chars: int = 500) -> None:
    """End a record; with ``summarize`` (``workflow.summarization``) add a summary of at most ``max_chars``
    (``workflow.summary_max_length``: the seed's summarization.enabled / maxLength)."""
    path = file_path(memory_id, name)
    if not os.path.exists(path):
        return
    tail = f"---\n\n{ENTRY}Completed — {_clock()} ({reason})\n\n"
    if summarize and max_chars > 0:
        with open(path, encoding="utf-8") as fh:
            summary = summary_of(fh.read(), max_chars)
        if summary:
            tail += f"## Summary\n\n{summary}\n\n"
    store.append(path, tail)


# ---- reading -------------------------------------------------------------------------------------


def entries(text: str) -> list[tuple[str, str]]:
    """(heading, body) pairs of a record; the header block is the first entry, headed by its title."""
    out: list[tuple[str, str]] = []
    heading, body = "", list[str]()
    for line in text.splitlines():
        if line.startswith(ENTRY) or (line.startswith("# ") and not out and not heading):
            if heading or any(b.strip() for b in body):
                out.append((heading, "\n".join(body).strip()))
            heading, body = line.lstrip("#").strip(), []
        else:
            body.append(line)
    if heading or any(b.strip() for b in body):
        out.append((heading, "\n".join(body).strip()))
    return out


def _first_sentence(text: str, limit: int) -> str:
    line = " ".join(text.replace(CUT, "").split())
    match = re.search(r"(?<=[.!?。])\s", line)
    if match and match.start() < limit:
        line = line[: match.start()]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def summary_of(text: str, max_chars: int = 500) -> str:
    """Extractive summary of a record: counts, first request, tools, last answer's lead. No LLM."""
    items = entries(text)
    prompts = [b for h, b in items if h.startswith("User")]
    answers = [b for h, b in items if h.startswith("Claude")]
    tools: list[str] = []
    for answer in answers:
        for match in re.finditer(r"^_Tools: (.*)_$", answer, re.M):
            tools += [t.strip() for t in match.group(1).split(",") if t.strip() not in tools]
    lines = [f"- {len(prompts)} prompt(s), {len(answers)} response(s)"]
    if prompts:
        lines.append(f"- Asked: {_first_sentence(prompts[0], 160)}")
    if len(prompts) > 1:
        lines.append(f"- Last request: {_first_sentence(prompts[-1], 160)}")
    if tools:
        lines.append(f"- Tools: {', '.join(dict.fromkeys(tools))}")
    if answers:
        lead = re.sub(r"\n*_Tools: .*_$", "", answers[-1], flags=re.M)
        lines.append(f"- Outcome: {_first_sentence(lead, 200)}")
    summary = "\n".join(lines)
    return summary if len(summary) <= max_chars else summary[: max_chars - 1] + "…"


def list_files(memory_id: str) -> list[dict[str, Any]]:
    """Session records, newest first: name, path, mtime, size, workflow, day."""
    directory = store.sessions_dir(memory_id)
    out: list[dict[str, Any]] = []
    if not os.path.isdir(directory):
        return out
    for name in os.listdir(directory):
        if not name.endswith(".md") or name.startswith("."):
            continue
        full = os.path.join(directory, name)
        try:
            st = os.stat(full)
        except OSError:
            continue
        parts = name[:-3].split("_")
        out.append(
            {
                "name": name,
                "path": full,
                "mtime": st.st_mtime,
                "size": st.st_size,
                "day": parts[0] if len(parts) >= 3 else "",
                "workflow": "_".join(parts[1:-1]) if len(parts) >= 3 else "",
            }
        )
    out.sort(key=lambda r: (r["mtime"], r["name"]), reverse=True)
    return out


def _tokens(text: str) -> list[str]:
    return [t for t in re.split(r"[\s,.;:!?()\[\]{}\"'`]+", text.casefold()) if t]


def search(memory_ids: list[str], query: str, limit: int = 20) -> list[dict[str, Any]]:
    """Entries of session records matching every query token (casefolded substring), best first.

    Score: whole-phrase hits count most, then token hits, damped by entry length; newer files win ties.
    """
    tokens = _tokens(query)
    if not tokens:
        return []
    phrase = " ".join(query.casefold().split())
    hits: list[dict[str, Any]] = []
    for memory_id in memory_ids:
        for info in list_files(memory_id):  # newest first: the stable sort keeps ties that way
            try:
                with open(info["path"], encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            for heading, body in entries(text):
                hay = " ".join(f"{heading}\n{body}".casefold().split())
                found = [hay.count(t) for t in tokens]
                if not all(found):
                    continue
                raw = 3 * hay.count(phrase) + sum(min(n, 5) for n in found)
                score = raw / (1 + len(hay) / 2000)
                hits.append(
                    {
                        "memory": memory_id,
                        "file": info["name"],
                        "workflow": info["workflow"],
                        "entry": heading,
                        "score": round(score, 3),
                        "snippet": _snippet(body or heading, tokens[0]),
                    }
                )
    hits.sort(key=lambda h: h["score"], reverse=True)
    return hits[:limit]


def _snippet(text: str, token: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    at = flat.casefold().find(token)
    start = max(0, at - width // 3) if at >= 0 else 0
    piece = flat[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")
