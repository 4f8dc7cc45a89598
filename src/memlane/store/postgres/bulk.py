"""Bulk loading into a PostgreSQL project with ``COPY``: ``memlane migrate --to`` and the benchmarks.

Row by row, an event costs five statements (the event, its citation check, its outbox job, its session, the
statistics); ``COPY`` sends a whole batch in one stream, and sessions and statistics are recounted once at
the end from what was loaded. PostgreSQL refuses ``COPY`` into a table with row-level security for anyone
but its owner, so rows are copied into a temporary table and inserted from there (the policies apply).
Only for loading into a project nobody else writes at that moment (it holds the project's lock throughout).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memlane.store import keys
from memlane.store import schema as sqlite_schema
from memlane.store.postgres import text
from memlane.store.postgres.vectors import literal

_EVENT_COLUMNS = (
    "project_id, id, citation, type, session_id, ts, content, canonical_key, dedupe_key, has_cjk, metadata,"
    " searchable, tsv, grams, dl, origin"
)


def copy_events(store: Any, rows: Iterable[dict[str, Any]], *, embedded: bool = False) -> int:
    """Load event rows (``id``, ``type``, ``session_id``, ``ts``, ``content``, ``dedupe_key``, ``metadata`` as JSON
    text; optional ``citation``, ``origin``) that are not on the server yet; ``embedded`` loads no outbox jobs
    (their vectors come with them). Sessions and statistics are recounted at the end. Returns the count."""
    pid = store.project_id
    loaded = 0
    with store.write() as cur:
        first = int(cur.execute("SELECT COALESCE(max(seq), 0) FROM memlane.events").fetchone()[0])
        taken = {r[0] for r in cur.execute("SELECT citation FROM memlane.events WHERE project_id = %s", (pid,))}
        cur.execute("CREATE TEMP TABLE memlane_load_events (LIKE memlane.events INCLUDING DEFAULTS) ON COMMIT DROP")
        with cur.copy(f"COPY memlane_load_events ({_EVENT_COLUMNS}) FROM STDIN") as copy:
            for row in rows:
                content = row["content"]
                citation = row.get("citation")
                if not citation or citation in taken:
                    citation = next(c for c in keys.citation_candidates(row["id"]) if c not in taken)
                taken.add(citation)
                searchable = sqlite_schema.indexed(row["type"], content)
                cjk = keys.has_cjk(content)
                tsv, length = text.tsvector(content) if searchable else (None, 0)
                grams = text.grams(content) if searchable and cjk else None
                copy.write_row(
                    (
                        pid,
                        row["id"],
                        citation,
                        row["type"],
                        row["session_id"],
                        row["ts"],
                        content,
                        keys.canonical_key(content),
                        row["dedupe_key"],
                        cjk,
                        row.get("metadata") or "{}",
                        searchable,
                        tsv,
                        grams,
                        length,
                        row.get("origin") or "",
                    )
                )
                loaded += 1
        cur.execute(
            f"INSERT INTO memlane.events ({_EVENT_COLUMNS}) SELECT {_EVENT_COLUMNS} FROM memlane_load_events"
            " ORDER BY seq ON CONFLICT DO NOTHING"
        )
        if not embedded:
            now = keys.now_iso()
            cur.execute(
                "INSERT INTO memlane.outbox (project_id, event_id, status, created_at, updated_at)"
                " SELECT project_id, id, 'pending', %s, %s FROM memlane.events"
                " WHERE project_id = %s AND seq > %s AND searchable ORDER BY seq",
                (now, now, pid, first),
            )
        recount(cur, pid)
    return loaded


def recount(cur: Any, pid: str) -> None:
    """Sessions and statistics from the project's events (after a bulk load)."""
    cur.execute("DELETE FROM memlane.sessions WHERE project_id = %s", (pid,))
    cur.execute(
        "INSERT INTO memlane.sessions (project_id, id, started_at, last_activity, event_count, prompt_count)"
        " SELECT project_id, session_id, min(ts), max(ts), count(*), count(*) FILTER (WHERE type = 'user_prompt')"
        " FROM memlane.events WHERE project_id = %s GROUP BY project_id, session_id",
        (pid,),
    )
    cur.execute(
        "UPDATE memlane.sessions s SET cwd = x.cwd, transcript_path = x.tp FROM ("
        " SELECT DISTINCT ON (session_id) session_id, metadata::jsonb->>'cwd' AS cwd,"
        " metadata::jsonb->>'transcript_path' AS tp FROM memlane.events WHERE project_id = %s"
        " AND (metadata::jsonb ? 'cwd' OR metadata::jsonb ? 'transcript_path') ORDER BY session_id, seq) x"
        " WHERE s.project_id = %s AND s.id = x.session_id",
        (pid, pid),
    )
    cur.execute(
        "UPDATE memlane.sessions s SET source = x.source FROM (SELECT DISTINCT ON (session_id) session_id,"
        " metadata::jsonb->>'source' AS source FROM memlane.events WHERE project_id = %s AND type = 'session_start'"
        " ORDER BY session_id, seq DESC) x WHERE s.project_id = %s AND s.id = x.session_id",
        (pid, pid),
    )
    cur.execute(
        "UPDATE memlane.sessions s SET ended_at = x.ts, end_reason = x.reason FROM (SELECT DISTINCT ON (session_id)"
        " session_id, ts, metadata::jsonb->>'reason' AS reason FROM memlane.events WHERE project_id = %s"
        " AND type = 'session_end' ORDER BY session_id, seq DESC) x WHERE s.project_id = %s AND s.id = x.session_id",
        (pid, pid),
    )
    cur.execute(
        "UPDATE memlane.sessions s SET summary = x.content FROM (SELECT DISTINCT ON (session_id) session_id, content"
        " FROM memlane.events WHERE project_id = %s AND type = 'session_summary' AND sealed IS NULL"
        " ORDER BY session_id, seq DESC) x WHERE s.project_id = %s AND s.id = x.session_id",
        (pid, pid),
    )
    cur.execute(
        "UPDATE memlane.project_stats SET (events, indexed_rows, indexed_tokens) = (SELECT count(*),"
        " count(*) FILTER (WHERE searchable), COALESCE(sum(dl) FILTER (WHERE searchable), 0)"
        " FROM memlane.events WHERE project_id = %s) WHERE project_id = %s",
        (pid, pid),
    )
    cur.execute("DELETE FROM memlane.term_counts WHERE project_id = %s", (pid,))


def copy_vectors(store: Any, version: str, dim: int, rows: Iterable[dict[str, Any]]) -> int:
    """Load vector rows (``event_id``, ``chunk``, ``type``, ``session_id``, ``ts``, ``vector``) of one model."""
    pid = store.project_id
    loaded = 0
    columns = "project_id, event_id, chunk, model_version, type, session_id, ts, dim, embedding"
    with store.db.transaction(), store.db.cursor() as cur:
        cur.execute("CREATE TEMP TABLE memlane_load_vectors (LIKE memlane.vectors) ON COMMIT DROP")
        with cur.copy(f"COPY memlane_load_vectors ({columns}) FROM STDIN") as copy:
            for r in rows:
                copy.write_row(
                    (pid, r["event_id"], int(r["chunk"]), version, r.get("type") or "", r.get("session_id") or "",
                     r.get("ts") or "", dim, literal(r["vector"]))
                )  # fmt: skip
                loaded += 1
        cur.execute(
            f"INSERT INTO memlane.vectors ({columns}) SELECT {columns} FROM memlane_load_vectors ON CONFLICT DO NOTHING"
        )
        cur.execute(
            "UPDATE memlane.project_stats SET vectors_version = vectors_version + 1 WHERE project_id = %s", (pid,)
        )
    return loaded
