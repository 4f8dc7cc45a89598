"""Helpers shared by the endless tests: events shaped as memlane captures them (``capture/observe.py``'s texts and
metadata) at chosen times, and a dump of every endless table for comparisons."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from memlane import derived
from memlane.config import Config
from memlane.endless import service
from memlane.store.db import Event, NewEvent, Store

ROOT = "/home/dev/src/shop"
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class Log:
    """Appends events at ``hours`` after ``START`` (default: a minute after the last one)."""

    def __init__(self, store: Store, start: datetime = START) -> None:
        self.store = store
        self.start = start
        self.at = start

    def add(self, kind: str, content: str, session: str, hours: float | None = None, **meta: Any) -> Event:
        self.at = self.start + timedelta(hours=hours) if hours is not None else self.at + timedelta(minutes=1)
        ts = self.at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        meta.setdefault("cwd", ROOT)
        turn = f"{session}:{ts}:{len(content)}:{self.store.count()}"
        inserted = self.store.append([NewEvent(kind, session, content, turn, meta, ts=ts)]).inserted
        return self.store.by_ids(inserted)[0]

    def prompt(self, text: str, session: str, hours: float | None = None) -> Event:
        return self.add("user_prompt", text, session, hours)

    def answer(self, text: str, session: str, hours: float | None = None) -> Event:
        return self.add("agent_response", text, session, hours)

    def edit(self, path: str, old: str, new: str, session: str, hours: float | None = None) -> Event:
        full = f"{ROOT}/{path}"
        return self.add("tool_observation", f"Edit: {full}\n- {old}\n+ {new}", session, hours,
                        tool_name="Edit", file_path=full, success=True)  # fmt: skip

    def read(self, path: str, body: str, session: str, hours: float | None = None) -> Event:
        full = f"{ROOT}/{path}"
        return self.add("tool_observation", f"Read: {full}\n{body}", session, hours,
                        tool_name="Read", file_path=full, success=True)  # fmt: skip

    def bash(self, command: str, output: str, session: str, hours: float | None = None, code: int = 0) -> Event:
        return self.add("tool_observation", f"Bash: {command}\n{output}", session, hours, tool_name="Bash",
                        command=command, exit_code=code, success=code == 0)  # fmt: skip

    def exchange(self, session: str, prompt: str, path: str, old: str, new: str, answer: str, hours: float) -> None:
        """A prompt, an edit of ``path`` and the answer, a minute apart, starting at ``hours``."""
        self.prompt(prompt, session, hours)
        self.edit(path, old, new, session)
        self.answer(answer, session)

    def project(self, cfg: Config | None = None, consolidate: bool = True) -> None:
        """What the daemon does: the projection, then the endless job (consolidating when asked)."""
        derived.catch_up(self.store)
        service.refresh(self.store, cfg or Config(), consolidate=consolidate)


TABLES = {
    "endless_marks": "*",
    "endless_sessions": "session_id, started, last_ts, prev_session_id, score, transition, detail",
    "working_set": "*",
    "consolidated_memories": "*",
    "consolidated_sources": "*",
    "consolidated_fts": "memory_id, title, summary",
    "consolidated_cjk": "memory_id, text",
    "endless_dirty": "*",
}


def dump(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    return {t: sorted(store.db.execute(f"SELECT {cols} FROM {t}").fetchall(), key=repr) for t, cols in TABLES.items()}


# ---- a history of long-running topics, and what endless mode shows of it (tests/endless/test_llm_key_facts.py) ----


def history(log: Log) -> None:
    """Three long-running topics over two sessions each: a file (app/db.py), a command that failed and was fixed
    (pytest), and one that failed only (alembic). Uses only what endless mode had before its LLM path."""
    log.exchange("s1", "Configure the engine pool.", "app/db.py", "engine = create_engine(URL)",
                 "engine = create_engine(URL, pool_size=10)", "app/db.py now uses pool_size=10.", hours=0)  # fmt: skip
    log.prompt("Run the tests.", "s1")
    log.bash("pytest -q", "tests/test_pool.py F\nE   TimeoutError: pool exhausted after 30s\n1 failed", "s1", code=1)
    log.answer("The pool test fails: TimeoutError, the pool is exhausted after 30s with 10 connections.", "s1")
    log.bash("alembic upgrade head", "INFO ok\nERROR: relation users already exists", "s1", code=1)
    log.exchange("s2", "The load test throws 500s.", "app/db.py", "pool_size=10", "pool_size=25",
                 "QueuePool was exhausted under load, so app/db.py now uses pool_size=25 and max_overflow=10. "
                 "With 4 workers that stays under Postgres max_connections=200.", hours=50)  # fmt: skip
    log.bash("pytest -q", "tests/test_pool.py F\nE   TimeoutError: pool exhausted after 30s\n1 failed", "s2", code=1)
    log.bash("pytest -q", "12 passed", "s2")
    log.bash("alembic upgrade head", "INFO ok\nERROR: relation users already exists", "s2", code=1)


def snapshot(store: Store, cfg: Config | None = None) -> dict[str, Any]:
    """What endless mode keeps and shows of the consolidated memories — the rows (the columns of schema 90), their
    sources and search rows, ``memories`` (listed and searched), ``status`` and the SessionStart text — with event
    ids and citations replaced by the events' order (they are random) and wall-clock times left out."""
    import json
    import re

    from memlane.endless import inject

    cfg = cfg or Config()
    cols = "id, kind, key, title, summary, facts, confidence, sessions, sources, first_ts, last_ts"
    status = service.status(store, cfg)
    for key in ("working_set_at", "last_consolidation"):
        status.pop(key)
    data = {
        "consolidated_memories": [list(r) for r in store.db.execute(f"SELECT {cols} FROM consolidated_memories")],
        "consolidated_sources": [list(r) for r in store.db.execute("SELECT * FROM consolidated_sources")],
        "consolidated_fts": [
            list(r) for r in store.db.execute("SELECT memory_id, title, summary FROM consolidated_fts")
        ],
        "memories": service.memories(store, None, sources=True),
        "search": service.memories(store, "pool exhausted"),
        "status": status,
        "session_start": inject.session_start_context(store, cfg),
    }
    names = {}
    for n, (event_id, citation) in enumerate(store.db.execute("SELECT id, citation FROM events ORDER BY seq")):
        names[event_id] = f"E{n}"
        names[citation] = f"C{n}"
    text = json.dumps(data, ensure_ascii=False, sort_keys=True)
    text = re.sub(r"\b[0-9a-f]{32}\b", lambda m: names.get(m.group(0), m.group(0)), text)
    text = re.sub(r"mem:([0-9a-z]{6,8})\b", lambda m: "mem:" + names.get(m.group(1), m.group(1)), text)
    out: dict[str, Any] = json.loads(text)
    for table in ("consolidated_memories", "consolidated_sources", "consolidated_fts"):
        out[table].sort(key=repr)
    return out
