"""One project's memory on PostgreSQL: the same surface as the SQLite ``Store`` (``store.backend.MemoryStore``).

Events, sessions, full text (``tsvector`` + CJK trigrams, see ``text.py``), the embedding outbox, forget with
tombstones, the import ledger. Vectors are ``vectors.PgVectorIndex``.

Writes run in one transaction that holds the project's advisory lock, so a project's ``seq`` values become
visible in the order they were given: a reader that has seen ``seq`` N has seen every smaller one, which is
what lets the team sync pull by ``seq`` alone. The statistics BM25 needs (rows in the word index and their
words) are kept in ``project_stats`` by the same transactions; document counts of words are cached in
``term_counts`` as the SQLite store caches them.

Full-text ranking: the server ranks the matches with ``ts_rank`` weighted by each term's IDF to pick a pool
three times the size asked for; the pool is then ranked exactly by Okapi BM25 (FTS5's k1 = 1.2, b = 0.75 and
IDF) over the same words SQLite indexes, so both backends hand retrieval the same candidates.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from memlane.errors import NotFoundError
from memlane.store import keys
from memlane.store import schema as sqlite_schema
from memlane.store.fulltext import _PLAIN_WORD, parse_query
from memlane.store.postgres import schema, text
from memlane.store.postgres.connection import DatabaseError, connect, first_line, redact
from memlane.store.records import EVENT_COLUMNS, AppendResult, Event, NewEvent, event_from_row

POSTINGS_BUDGET = 20_000
POOL_FACTOR = 3
K1, B = 1.2, 0.75
_DF_STALE = 0.05
_DF_CACHE: dict[tuple[str, str, str], tuple[int, int]] = {}
_COLUMNS = ", ".join(f"e.{c.strip()}" for c in EVENT_COLUMNS.split(","))


def _fresh(then: int, size: int) -> bool:
    return then <= size <= then * (1 + _DF_STALE) + 100


def _unquote(word: str) -> str:
    return word.strip('"').replace('""', '"')


class _Write:
    """``with store.write() as cur:`` — a transaction holding the project's lock; stats deltas flushed at the end."""

    def __init__(self, store: PgStore) -> None:
        self.store = store
        self.tx: Any = None
        self.delta = [0, 0, 0]  # events, indexed rows, indexed words

    def __enter__(self) -> Any:
        self.tx = self.store.db.transaction()
        self.tx.__enter__()
        cur = self.store.db.cursor()
        cur.execute("SELECT pg_advisory_xact_lock(hashtext('memlane:' || %s))", (self.store.project_id,))
        self.store._writing = self
        return cur

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.store._writing = None
        try:
            if exc_type is None and any(self.delta):
                self.store.db.execute(
                    "UPDATE memlane.project_stats SET events = events + %s, indexed_rows = indexed_rows + %s,"
                    " indexed_tokens = indexed_tokens + %s WHERE project_id = %s",
                    (*self.delta, self.store.project_id),
                )
        finally:
            self.tx.__exit__(exc_type, exc, tb)


class PgStore:
    """One project's memory on a PostgreSQL server (``project_id`` is the project's id there)."""

    backend = "postgres"
    ephemeral = False

    def __init__(
        self,
        url: str,
        project_id: str,
        *,
        conn: Any = None,
        create: bool = True,
        migrate: bool = False,
        encrypted: bool = False,
    ) -> None:
        self.url = url
        self.project_id = project_id
        self.file = redact(url)
        self.db = conn if conn is not None else connect(url)
        self._writing: _Write | None = None
        try:
            version = schema.current_version(self.db)
            if version < schema.LATEST:
                if not migrate:
                    raise DatabaseError(
                        f"memlane's tables on {self.file} are at schema {version}, this memlane needs"
                        f" {schema.LATEST}: an administrator runs `memlane team init-server`"
                    )
                schema.migrate(self.db)
            if not self._visible():
                if not create:
                    raise NotFoundError(f"no project '{project_id}' on {self.file} that you can read")
                self._create_project(encrypted)
        except Exception:
            if conn is None:
                self.db.close()
            raise

    # ---- the project ---------------------------------------------------------------------------

    def _visible(self) -> bool:
        row = self.db.execute("SELECT 1 FROM memlane.projects WHERE id = %s", (self.project_id,)).fetchone()
        return row is not None

    def _create_project(self, encrypted: bool) -> None:
        import psycopg

        try:
            with self.db.transaction():
                self.db.execute(
                    "INSERT INTO memlane.projects (id, encrypted) VALUES (%s, %s)", (self.project_id, encrypted)
                )
                self.db.execute("INSERT INTO memlane.project_stats (project_id) VALUES (%s)", (self.project_id,))
        except psycopg.errors.UniqueViolation as exc:
            raise DatabaseError(
                f"project '{self.project_id}' exists on {self.file} and is not shared with you: its owner runs"
                f" `memlane team grant <your role>`"
            ) from exc
        except psycopg.Error as exc:
            raise DatabaseError(f"cannot create project '{self.project_id}' on {self.file}: {first_line(exc)}") from exc

    def project(self) -> dict[str, Any]:
        cur = self.db.execute(
            "SELECT id, owner, encrypted, key_check, created_at FROM memlane.projects WHERE id = %s",
            (self.project_id,),
        )
        row = cur.fetchone()
        return dict(zip([d.name for d in cur.description], row, strict=True)) if row else {}

    # ---- connection ----------------------------------------------------------------------------

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> PgStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def path(self) -> str:
        return self.file

    def write(self) -> _Write:
        return _Write(self)

    def _delta(self, events: int, rows: int, words: int) -> None:
        if self._writing is not None:
            d = self._writing.delta
            d[0] += events
            d[1] += rows
            d[2] += words

    # ---- appends -------------------------------------------------------------------------------

    def append(self, events: Iterable[NewEvent]) -> AppendResult:
        with self.write() as cur:
            return self._insert_all(cur, events)

    def replace_derived(self, old_ids: Sequence[str], events: Iterable[NewEvent]) -> AppendResult:
        with self.write() as cur:
            self._delete_ids(cur, old_ids)
            return self._insert_all(cur, events)

    def _insert_all(self, cur: Any, events: Iterable[NewEvent]) -> AppendResult:
        result = AppendResult()
        for event in events:
            event_id = self._insert(cur, event)
            if event_id is None:
                result.duplicates += 1
            else:
                result.inserted.append(event_id)
        return result

    def _insert(self, cur: Any, event: NewEvent) -> str | None:
        dedupe = event.key()
        if self.has_dedupe_key(dedupe):
            return None
        event_id = keys.new_event_id()
        row = {
            "id": event_id,
            "type": event.type,
            "session_id": event.session_id,
            "ts": event.ts or keys.now_iso(),
            "content": event.content,
            "dedupe_key": dedupe,
            "metadata": json.dumps(event.metadata, ensure_ascii=False),
        }
        return event_id if self.insert_row(cur, row) else None

    def free_citation(self, cur: Any, event_id: str, taken: set[str] | None = None) -> str:
        for candidate in keys.citation_candidates(event_id):
            if taken is not None and candidate in taken:
                continue
            found = cur.execute(
                "SELECT 1 FROM memlane.events WHERE project_id = %s AND citation = %s", (self.project_id, candidate)
            ).fetchone()
            if found is None:
                return candidate
        raise AssertionError("unreachable: citation candidates are endless")

    def insert_row(self, cur: Any, row: dict[str, Any], *, embedded: bool = False) -> bool:
        """Insert one event row (``id``, ``type``, ``session_id``, ``ts``, ``content``, ``dedupe_key``,
        ``metadata`` as JSON text; optional ``citation``, ``sealed``, ``origin``) unless its id or dedupe key is
        there; with its outbox job (unless ``embedded`` or sealed), session counters and statistics."""
        sealed = row.get("sealed")
        content = row["content"]
        searchable = sqlite_schema.indexed(row["type"], content) and sealed is None
        cjk = sealed is None and keys.has_cjk(content)
        tsv, length = text.tsvector(content) if searchable else (None, 0)
        citation = row.get("citation") or self.free_citation(cur, row["id"])
        inserted = cur.execute(
            "INSERT INTO memlane.events (project_id, id, citation, type, session_id, ts, content, canonical_key,"
            " dedupe_key, has_cjk, metadata, searchable, tsv, grams, dl, sealed, origin)"
            " SELECT %s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s::tsvector,%s,%s,%s,%s"
            " WHERE NOT EXISTS (SELECT 1 FROM memlane.forgotten WHERE project_id = %s AND event_id = %s)"
            " ON CONFLICT DO NOTHING RETURNING seq",
            (
                self.project_id,
                row["id"],
                citation,
                row["type"],
                row["session_id"],
                row["ts"],
                content,
                keys.canonical_key(content) if sealed is None else "",
                row["dedupe_key"],
                cjk,
                row.get("metadata") or "{}",
                searchable,
                tsv,
                text.grams(content) if searchable and cjk else None,
                length,
                sealed,
                row.get("origin") or "",
                self.project_id,
                row["id"],
            ),
        ).fetchone()
        if inserted is None:
            return False
        if searchable and not embedded:
            now = keys.now_iso()
            cur.execute(
                "INSERT INTO memlane.outbox (project_id, event_id, status, created_at, updated_at)"
                " VALUES (%s, %s, 'pending', %s, %s)",
                (self.project_id, row["id"], now, now),
            )
        meta = json.loads(row.get("metadata") or "{}") if sealed is None else {}
        self._touch_session(cur, row, meta, sealed is not None)
        self._delta(1, int(searchable), length)
        return True

    def _touch_session(self, cur: Any, row: dict[str, Any], meta: dict[str, Any], sealed: bool) -> None:
        ts, kind, sid = row["ts"], row["type"], row["session_id"]
        cur.execute(
            "INSERT INTO memlane.sessions AS s (project_id, id, started_at, last_activity, cwd, transcript_path,"
            " event_count, prompt_count) VALUES (%s,%s,%s,%s,%s,%s,1,%s)"
            " ON CONFLICT (project_id, id) DO UPDATE SET event_count = s.event_count + 1,"
            " prompt_count = s.prompt_count + excluded.prompt_count,"
            " started_at = LEAST(s.started_at, excluded.started_at),"
            " last_activity = GREATEST(s.last_activity, excluded.last_activity),"
            " cwd = COALESCE(s.cwd, excluded.cwd),"
            " transcript_path = COALESCE(s.transcript_path, excluded.transcript_path)",
            (
                self.project_id,
                sid,
                ts,
                ts,
                _str_or_none(meta.get("cwd")),
                _str_or_none(meta.get("transcript_path")),
                int(kind == "user_prompt"),
            ),
        )
        if kind == "session_start":
            cur.execute(
                "UPDATE memlane.sessions SET source = %s WHERE project_id = %s AND id = %s",
                (_str_or_none(meta.get("source")), self.project_id, sid),
            )
        elif kind == "session_end":
            cur.execute(
                "UPDATE memlane.sessions SET ended_at = %s, end_reason = %s WHERE project_id = %s AND id = %s",
                (ts, _str_or_none(meta.get("reason")), self.project_id, sid),
            )
        elif kind == "session_summary" and not sealed:
            cur.execute(
                "UPDATE memlane.sessions SET summary = %s WHERE project_id = %s AND id = %s",
                (row["content"], self.project_id, sid),
            )

    def _delete_ids(self, cur: Any, ids: Sequence[str]) -> int:
        """Delete events (outbox and vectors cascade), keep the statistics, recount their sessions."""
        ids = list(ids)
        if not ids:
            return 0
        count, rows, words = cur.execute(
            "SELECT count(*), count(*) FILTER (WHERE searchable), COALESCE(sum(dl) FILTER (WHERE searchable), 0)"
            " FROM memlane.events WHERE project_id = %s AND id = ANY(%s)",
            (self.project_id, ids),
        ).fetchone()
        sessions = [
            r[0]
            for r in cur.execute(
                "DELETE FROM memlane.events WHERE project_id = %s AND id = ANY(%s) RETURNING session_id",
                (self.project_id, ids),
            ).fetchall()
        ]
        for sid in set(sessions):
            self._recount_session(cur, sid)
        self._delta(-int(count), -int(rows), -int(words))
        return int(count)

    def _recount_session(self, cur: Any, session_id: str) -> None:
        count, prompts = cur.execute(
            "SELECT count(*), count(*) FILTER (WHERE type = 'user_prompt') FROM memlane.events"
            " WHERE project_id = %s AND session_id = %s",
            (self.project_id, session_id),
        ).fetchone()
        if count == 0:
            cur.execute("DELETE FROM memlane.sessions WHERE project_id = %s AND id = %s", (self.project_id, session_id))
            return
        summary = cur.execute(
            "SELECT content FROM memlane.events WHERE project_id = %s AND session_id = %s"
            " AND type = 'session_summary' AND sealed IS NULL ORDER BY seq DESC LIMIT 1",
            (self.project_id, session_id),
        ).fetchone()
        cur.execute(
            "UPDATE memlane.sessions SET event_count = %s, prompt_count = %s, summary = %s"
            " WHERE project_id = %s AND id = %s",
            (count, prompts, summary[0] if summary else None, self.project_id, session_id),
        )

    # ---- reads ---------------------------------------------------------------------------------

    def _stats_row(self) -> tuple[int, int, int, int]:
        row = self.db.execute(
            "SELECT events, indexed_rows, indexed_tokens, vectors_version FROM memlane.project_stats"
            " WHERE project_id = %s",
            (self.project_id,),
        ).fetchone()
        return (int(row[0]), int(row[1]), int(row[2]), int(row[3])) if row else (0, 0, 0, 0)

    def count(self) -> int:
        return self._stats_row()[0]

    def recent_type_counts(self, limit: int) -> dict[str, int]:
        rows = self.db.execute(
            "SELECT type, COUNT(*) FROM (SELECT type FROM memlane.events WHERE project_id = %s"
            " ORDER BY seq DESC LIMIT %s) AS latest GROUP BY type",
            (self.project_id, limit),
        ).fetchall()
        return {str(t): int(n) for t, n in rows}

    def _events(self, where: str, args: Sequence[Any], tail: str = "") -> list[Event]:
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM memlane.events e WHERE e.project_id = %s AND {where} {tail}",
            [self.project_id, *args],
        ).fetchall()
        return [event_from_row(r) for r in rows]

    def ids_by_dedupe_keys(self, dedupe_keys: Sequence[str]) -> list[str]:
        found = dict(
            self.db.execute(
                "SELECT dedupe_key, id FROM memlane.events WHERE project_id = %s AND dedupe_key = ANY(%s)",
                (self.project_id, list(dedupe_keys)),
            ).fetchall()
        )
        return [found[k] for k in dedupe_keys if k in found]

    def unsummarized_sessions(self, exclude: str, limit: int) -> list[str]:
        rows = self.db.execute(
            "SELECT id FROM memlane.sessions WHERE project_id = %s AND id != %s AND ended_at IS NULL"
            " AND summary IS NULL AND prompt_count > 0 ORDER BY last_activity DESC LIMIT %s",
            (self.project_id, exclude, limit),
        )
        return [r[0] for r in rows]

    def has_dedupe_key(self, dedupe_key: str) -> bool:
        row = self.db.execute(
            "SELECT 1 FROM memlane.events WHERE project_id = %s AND dedupe_key = %s", (self.project_id, dedupe_key)
        ).fetchone()
        return row is not None

    def _session_meta(self, session_id: str, key: str, scan: int) -> list[Any]:
        rows = self.db.execute(
            "SELECT metadata FROM memlane.events WHERE project_id = %s AND session_id = %s"
            " AND type = 'tool_observation' ORDER BY seq DESC LIMIT %s",
            (self.project_id, session_id, scan),
        )
        out = []
        for (meta,) in rows:
            try:
                value = json.loads(meta).get(key)
            except (ValueError, AttributeError):
                value = None
            out.append(value)
        return out

    def session_tool_file_paths(self, session_id: str, scan: int) -> list[object]:
        return self._session_meta(session_id, "file_path", scan)

    def stored_tool_use_ids(self, session_id: str, tool_use_ids: Sequence[str], scan: int) -> set[str]:
        wanted = set(tool_use_ids)
        if not wanted:
            return set()
        return {str(v) for v in self._session_meta(session_id, "tool_use_id", scan) if v in wanted}

    def embeddable_event_ids(self) -> set[str]:
        rows = self.db.execute("SELECT id FROM memlane.events WHERE project_id = %s AND searchable", (self.project_id,))
        return {r[0] for r in rows}

    def get(self, ref: str) -> Event | None:
        ref = ref.strip()
        citation = keys.parse_citation(ref)
        if citation:
            found = self._events("e.citation = %s", [citation])
            if found:
                return found[0]
        found = self._events("e.id = %s", [ref])
        if found:
            return found[0]
        if len(ref) >= 8 and re.fullmatch(r"[0-9a-f]+", ref):
            found = self._events("e.id >= %s AND e.id < %s", [ref, ref + "g"], "LIMIT 2")
            if len(found) == 1:
                return found[0]
        return None

    def by_ids(self, ids: Sequence[str]) -> list[Event]:
        if not ids:
            return []
        found = {e.id: e for e in self._events("e.id = ANY(%s)", [list(ids)])}
        return [found[i] for i in ids if i in found]

    def by_seqs(self, seqs: Sequence[int]) -> dict[int, Event]:
        if not seqs:
            return {}
        return {e.seq: e for e in self._events("e.seq = ANY(%s)", [list(seqs)])}

    def history(
        self,
        *,
        session: str | None = None,
        types: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = 50,
        oldest_first: bool = False,
    ) -> list[Event]:
        where, args = self._filters(session=session, types=types, since=since, until=until)
        order = "ASC" if oldest_first else "DESC"
        tail = f"ORDER BY e.ts {order}, e.seq {order}" + (" LIMIT %s" if limit >= 0 else "")
        return self._events(where or "TRUE", [*args, *([limit] if limit >= 0 else [])], tail)

    def iter_events(self, batch: int = 1000) -> Iterator[Event]:
        last = 0
        while True:
            rows = self._events("e.seq > %s", [last, batch], "ORDER BY e.seq LIMIT %s")
            if not rows:
                return
            yield from rows
            last = rows[-1].seq

    def exchange_prompts(self, events: Sequence[Event]) -> dict[str, Event]:
        """One round trip for all of them (a search asks about ~30 events; each query is a network round trip)."""
        if not events:
            return {}
        rows = self.db.execute(
            f"SELECT x.id, {_COLUMNS} FROM unnest(%s::text[], %s::text[], %s::bigint[]) AS x(id, session_id, seq)"
            " CROSS JOIN LATERAL (SELECT * FROM memlane.events e WHERE e.project_id = %s"
            " AND e.session_id = x.session_id AND e.seq <= x.seq AND e.type = 'user_prompt'"
            " ORDER BY e.seq DESC LIMIT 1) e",
            ([e.id for e in events], [e.session_id for e in events], [e.seq for e in events], self.project_id),
        ).fetchall()
        return {r[0]: event_from_row(r[1:]) for r in rows}

    def replies(self, events: Sequence[Event]) -> dict[str, Event]:
        """One round trip for all of them, as ``exchange_prompts`` (what a reply is: the SQLite store's docstring)."""
        if not events:
            return {}
        rows = self.db.execute(
            f"SELECT x.id, x.type, {_COLUMNS} FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::text[])"
            " AS x(id, session_id, seq, type) CROSS JOIN LATERAL (SELECT * FROM memlane.events e"
            " WHERE e.project_id = %s AND e.session_id = x.session_id AND e.seq > x.seq AND CASE"
            "  WHEN x.type = 'user_prompt' THEN e.type = 'agent_response' AND e.seq < COALESCE((SELECT MIN(n.seq)"
            "   FROM memlane.events n WHERE n.project_id = %s AND n.session_id = x.session_id AND n.seq > x.seq"
            "   AND n.type = 'user_prompt'), 9223372036854775807)"
            "  ELSE e.type IN ('user_prompt', 'agent_response') END"
            " ORDER BY CASE WHEN x.type = 'user_prompt' THEN -e.seq ELSE e.seq END LIMIT 1) e",
            (
                [e.id for e in events],
                [e.session_id for e in events],
                [e.seq for e in events],
                [e.type for e in events],
                self.project_id,
                self.project_id,
            ),
        ).fetchall()
        return {r[0]: reply for r in rows if (reply := event_from_row(r[2:])).type != r[1]}

    def neighbours(self, event: Event, before: int = 3, after: int = 3) -> list[Event]:
        prev = self._events(
            "e.session_id = %s AND (e.ts < %s OR (e.ts = %s AND e.seq < %s))",
            [event.session_id, event.ts, event.ts, event.seq, before],
            "ORDER BY e.ts DESC, e.seq DESC LIMIT %s",
        )
        nxt = self._events(
            "e.session_id = %s AND (e.ts > %s OR (e.ts = %s AND e.seq > %s))",
            [event.session_id, event.ts, event.ts, event.seq, after],
            "ORDER BY e.ts, e.seq LIMIT %s",
        )
        return [*reversed(prev), event, *nxt]

    @staticmethod
    def _filters(
        *,
        session: str | None = None,
        types: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        args: list[Any] = []
        if session:
            clauses.append("e.session_id = %s")
            args.append(session)
        if types:
            clauses.append("e.type = ANY(%s)")
            args.append(list(types))
        if since:
            clauses.append("e.ts >= %s")
            args.append(since)
        if until:
            clauses.append("e.ts < %s")
            args.append(until)
        return " AND ".join(clauses), args

    def sessions(self, limit: int = 20) -> list[dict[str, Any]]:
        cur = self.db.execute(
            "SELECT id, started_at, last_activity, ended_at, end_reason, source, cwd, event_count,"
            " prompt_count, summary FROM memlane.sessions WHERE project_id = %s"
            " ORDER BY last_activity DESC LIMIT %s",
            (self.project_id, limit),
        )
        names = [d.name for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def session(self, session_id: str) -> dict[str, Any] | None:
        cur = self.db.execute(
            "SELECT id, project_id, started_at, last_activity, ended_at, end_reason, source, cwd, transcript_path,"
            " event_count, prompt_count, summary FROM memlane.sessions WHERE project_id = %s AND id = %s",
            (self.project_id, session_id),
        )
        row = cur.fetchone()
        return dict(zip([d.name for d in cur.description], row, strict=True)) if row else None

    def stats(self) -> dict[str, Any]:
        p = self.project_id
        by_type = dict(
            self.db.execute(
                "SELECT type, count(*) FROM memlane.events WHERE project_id = %s GROUP BY type ORDER BY 2 DESC", (p,)
            ).fetchall()
        )
        privacy = self.db.execute(
            "SELECT count(*), COALESCE(sum((m->>'private_sections')::numeric), 0),"
            " COALESCE(sum((m->>'secrets_redacted')::numeric), 0), COALESCE(sum((m->>'chars_filtered')::numeric), 0)"
            " FROM (SELECT metadata::jsonb->'privacy' AS m FROM memlane.events WHERE project_id = %s) x"
            " WHERE m IS NOT NULL AND m != 'null'::jsonb",
            (p,),
        ).fetchone()
        first, last = self.db.execute(
            "SELECT min(ts), max(ts) FROM memlane.events WHERE project_id = %s", (p,)
        ).fetchone()
        size = self.db.execute(
            "SELECT COALESCE(sum(pg_column_size(e.*)), 0) FROM memlane.events e WHERE project_id = %s", (p,)
        ).fetchone()[0]
        return {
            "project_id": p,
            "events": sum(by_type.values()),
            "sessions": self.db.execute("SELECT count(*) FROM memlane.sessions WHERE project_id = %s", (p,)).fetchone()[
                0
            ],
            "by_type": by_type,
            "first_activity": first,
            "last_activity": last,
            "privacy": {
                "events_filtered": int(privacy[0]),
                "private_sections": int(privacy[1]),
                "secrets_redacted": int(privacy[2]),
                "chars_filtered": int(privacy[3]),
            },
            "outbox": self.outbox_status_counts(),
            "tombstones": self.db.execute(
                "SELECT count(*) FROM memlane.tombstones WHERE project_id = %s", (p,)
            ).fetchone()[0],
            "db_bytes": int(size),
        }

    # ---- full text -----------------------------------------------------------------------------

    def size_estimate(self) -> int:
        return self.count()

    def index_stats(self) -> tuple[int, float]:
        _, rows, words, _ = self._stats_row()
        return rows, (words / rows if rows else 0.0)

    def doc_freqs(self, terms: Iterable[str]) -> dict[str, int]:
        """Documents holding each word term (absent terms left out), cached like the SQLite store's counts.

        A term is one indexed word; anything else (``pool_manager.py``) is not in the word index as such and,
        as in FTS5's vocabulary table, counts as absent."""
        size = self.size_estimate()
        out: dict[str, int] = {}
        missing: list[str] = []
        for term in set(terms):
            if text.words(term) != [term]:
                continue
            cached = _DF_CACHE.get((self.url, self.project_id, term))
            if cached is not None and _fresh(cached[1], size):
                if cached[0]:
                    out[term] = cached[0]
            else:
                missing.append(term)
        if not missing:
            return out
        kept = self.db.execute(
            "SELECT term, doc, size FROM memlane.term_counts WHERE project_id = %s AND term = ANY(%s)",
            (self.project_id, missing),
        ).fetchall()
        for term, doc, then in kept:
            if _fresh(int(then), size):
                _DF_CACHE[(self.url, self.project_id, term)] = (int(doc), int(then))
                missing.remove(term)
                if doc:
                    out[term] = int(doc)
        if not missing:
            return out
        found = self.db.execute(
            "SELECT memlane.doc_counts(%s, %s::tsquery[])", (self.project_id, [text.quote(t) for t in missing])
        ).fetchone()[0] or [0] * len(missing)
        rows = []
        for term, doc in zip(missing, found, strict=True):
            _DF_CACHE[(self.url, self.project_id, term)] = (int(doc), size)
            if doc:
                out[term] = int(doc)
                rows.append((self.project_id, term, int(doc), size))
        if rows and self.db.info.transaction_status == 0:  # idle: a cache, written only outside a transaction
            try:
                with self.db.transaction(), self.db.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO memlane.term_counts (project_id, term, doc, size) VALUES (%s,%s,%s,%s)"
                        " ON CONFLICT (project_id, term) DO UPDATE SET doc = excluded.doc, size = excluded.size",
                        rows,
                    )
            except Exception:  # noqa: BLE001 - only a cache (a read-only role, a conflict): counts stand
                pass
        return out

    def fts(
        self,
        query: str,
        *,
        limit: int = 20,
        session: str | None = None,
        types: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        exclude_ids: Sequence[str] = (),
    ) -> list[tuple[Event, float]]:
        """BM25 hits for ``query``: (event, relevance in 0..1 relative to the best hit), best first."""
        words, trigrams, short_cjk = parse_query(query)
        # The index searches take the filters as parameters (see schema migration 2).
        params = [session or None, list(types) if types else None, since or None, until or None,
                  list(exclude_ids) if exclude_ids else None]  # fmt: skip
        where, args = self._filters(session=session, types=types, since=since, until=until)
        if exclude_ids:
            where += (" AND " if where else "") + "NOT (e.id = ANY(%s))"
            args.append(list(exclude_ids))
        extra = f" AND {where}" if where else ""
        scored: dict[int, float] = {}
        if words:
            self._words(words, params, limit, scored)
        if trigrams:
            wanted = [_unquote(g).lower() for g in trigrams]
            rows = self.db.execute(
                "SELECT seq, n FROM memlane.gram_search(%s, %s::text[], %s, %s, %s, %s, %s, %s)",
                [self.project_id, wanted, limit, *params],
            ).fetchall()
            if rows:
                top = rows[0][1] or 1
                for seq, n in rows:
                    scored[seq] = max(scored.get(seq, 0.0), n / top)
        for chunk in short_cjk:
            rows = self.db.execute(
                f"SELECT e.seq FROM memlane.events e WHERE e.project_id = %s AND e.has_cjk AND e.searchable{extra}"
                " AND strpos(lower(e.content), %s) > 0 ORDER BY e.seq DESC LIMIT %s",
                [self.project_id, *args, chunk.lower(), limit],
            ).fetchall()
            for (seq,) in rows:
                scored[seq] = max(scored.get(seq, 0.0), 0.5)
        best = sorted(scored.items(), key=lambda kv: (-kv[1], -kv[0]))[:limit]
        events = self.by_seqs([seq for seq, _ in best])
        return [(events[seq], score) for seq, score in best if seq in events]

    def _terms(self, words: list[str]) -> list[list[str]]:
        return [toks for toks in (text.words(_unquote(w)) for w in words) if toks]

    def _words(self, words: list[str], params: list[Any], limit: int, scored: dict[int, float]) -> None:
        """The word index's part of ``fts``: the same choice of terms as the SQLite store (rarest first within a
        postings budget; the two rarest together when even one is too common, newest first, unranked)."""
        tokens = {_unquote(w).lower(): w for w in words}
        df = self.doc_freqs(tokens)
        words = [w for t, w in tokens.items() if t in df or not _PLAIN_WORD.fullmatch(t)]
        if not words:
            return
        mode = "or"
        if sum(df.values()) > POSTINGS_BUDGET:
            ranked = sorted(words, key=lambda w: df.get(_unquote(w).lower(), 0))
            chosen: list[str] = []
            total = 0
            for word in ranked:
                n = df.get(_unquote(word).lower(), 0)
                if chosen and total + n > POSTINGS_BUDGET:
                    break
                chosen.append(word)
                total += n
            if total > POSTINGS_BUDGET and len(ranked) > 1:
                words, mode = ranked[:2], "and"
            else:
                words, mode = chosen, ("or" if total <= POSTINGS_BUDGET else "newest")
        terms = self._terms(words)
        if not terms:
            return
        joiner = " & " if mode == "and" else " | "
        match = joiner.join(f"({text.phrase(t)})" for t in terms)
        search = "SELECT seq FROM memlane.word_search(%s, %s::tsquery, %s::tsquery[], %s, %s, %s, %s, %s, %s, %s, %s)"
        if mode != "or":  # too broad to rank: the newest matches
            rows = self.db.execute(search, [self.project_id, match, [], [], limit, True, *params]).fetchall()
            for (seq,) in rows:
                scored[seq] = max(scored.get(seq, 0.0), 0.5)
            return
        token_df = self.doc_freqs({t for term in terms for t in term})
        n_rows, avgdl = self.index_stats()
        idf = [_idf(n_rows, min(token_df.get(t, 0) for t in term)) for term in terms]
        pool = self.db.execute(
            search,
            [self.project_id, match, [text.phrase(t) for t in terms], idf, limit * POOL_FACTOR, False, *params],
        ).fetchall()
        events = self.by_seqs([seq for (seq,) in pool])
        rows = [(seq, events[seq].content) for (seq,) in pool if seq in events]
        exact = sorted(((_bm25(content, terms, idf, avgdl), seq) for seq, content in rows), reverse=True)[:limit]
        if not exact:
            return
        top = exact[0][0] or 1e-9
        for score, seq in exact:
            scored[seq] = max(scored.get(seq, 0.0), score / top if top > 0 else 0.0)

    def fts_holds(self, seq: int, terms: Sequence[str]) -> bool:
        phrases = self._terms([t for t in terms if t])
        if not phrases:
            return False
        row = self.db.execute(
            "SELECT 1 FROM memlane.events WHERE project_id = %s AND seq = %s AND tsv @@ %s::tsquery",
            (self.project_id, seq, " & ".join(f"({text.phrase(p)})" for p in phrases)),
        ).fetchone()
        return row is not None

    # ---- forget, redact, tombstones ------------------------------------------------------------

    def select_for_forget(
        self,
        *,
        ids: Sequence[str] = (),
        session: str | None = None,
        before: str | None = None,
        since: str | None = None,
        until: str | None = None,
        everything: bool = False,
    ) -> list[tuple[str, str]]:
        base = "SELECT id, type FROM memlane.events WHERE project_id = %s"
        if everything:
            rows = self.db.execute(base, (self.project_id,))
        elif ids:
            rows = self.db.execute(base + " AND id = ANY(%s)", (self.project_id, list(ids)))
        elif session:
            rows = self.db.execute(base + " AND session_id = %s", (self.project_id, session))
        elif before:
            rows = self.db.execute(base + " AND ts < %s", (self.project_id, before))
        elif since or until:
            where, args = self._filters(since=since, until=until)
            rows = self.db.execute(
                "SELECT e.id, e.type FROM memlane.events e WHERE e.project_id = %s AND " + where,
                [self.project_id, *args],
            )
        else:
            return []
        return [(r[0], r[1]) for r in rows]

    def forget(
        self,
        targets: Sequence[tuple[str, str]],
        scope: str,
        selector: str,
        *,
        origin: str = "",
        also: Sequence[str] = (),
    ) -> int:
        """Purge events (their outbox jobs and vectors go with them), tombstone, and list every id in
        ``forgotten`` so other machines delete their copies (``also``: ids forgotten elsewhere before they
        reached the server, so they never will). Dead rows stay until (auto)vacuum reclaims them."""
        if not targets and not also:
            return 0
        ids = [t[0] for t in targets]
        types = Counter(t[1] for t in targets)
        with self.write() as cur:
            self._delete_ids(cur, ids)
            cur.execute("DELETE FROM memlane.term_counts WHERE project_id = %s", (self.project_id,))
            tomb = cur.execute(
                "INSERT INTO memlane.tombstones (project_id, ts, scope, selector, event_count, detail, origin)"
                " VALUES (%s,%s,%s,%s,%s,%s,%s) RETURNING id",
                (
                    self.project_id,
                    keys.now_iso(),
                    scope,
                    selector,
                    len(ids),
                    json.dumps({"types": dict(types), "ids": ids[:1000], "elsewhere": len(also)}),
                    origin,
                ),
            ).fetchone()[0]
            cur.executemany(
                "INSERT INTO memlane.forgotten (project_id, event_id, tombstone_id, origin) VALUES (%s,%s,%s,%s)"
                " ON CONFLICT (project_id, event_id) DO NOTHING",
                [(self.project_id, i, tomb, origin) for i in dict.fromkeys([*ids, *also])],
            )
        _forget_counts(self.url, self.project_id)
        return len(ids)

    def redact(self, updates: Sequence[tuple[str, str, dict[str, Any]]], detail: dict[str, Any]) -> int:
        if not updates:
            return 0
        now = keys.now_iso()
        with self.write() as cur:
            for event_id, content, metadata in updates:
                row = cur.execute(
                    "SELECT type, session_id, content, searchable, dl FROM memlane.events"
                    " WHERE project_id = %s AND id = %s AND sealed IS NULL",
                    (self.project_id, event_id),
                ).fetchone()
                if row is None:
                    continue
                kind, session_id, old, searchable, old_length = row
                cjk = keys.has_cjk(content)
                tsv, length = text.tsvector(content) if searchable else (None, 0)
                cur.execute(
                    "UPDATE memlane.events SET content = %s, canonical_key = %s, has_cjk = %s, metadata = %s,"
                    " tsv = %s::tsvector, grams = %s, dl = %s WHERE project_id = %s AND id = %s",
                    (
                        content,
                        keys.canonical_key(content),
                        cjk,
                        json.dumps(metadata, ensure_ascii=False),
                        tsv,
                        text.grams(content) if searchable and cjk else None,
                        length,
                        self.project_id,
                        event_id,
                    ),
                )
                self._delta(0, 0, length - int(old_length))
                if kind == "session_summary":
                    cur.execute(
                        "UPDATE memlane.sessions SET summary = %s WHERE project_id = %s AND id = %s AND summary = %s",
                        (content, self.project_id, session_id, old),
                    )
                if searchable:
                    cur.execute(
                        "DELETE FROM memlane.vectors WHERE project_id = %s AND event_id = %s",
                        (self.project_id, event_id),
                    )
                    cur.execute(
                        "INSERT INTO memlane.outbox (project_id, event_id, status, created_at, updated_at)"
                        " VALUES (%s, %s, 'pending', %s, %s) ON CONFLICT (project_id, event_id) DO UPDATE SET"
                        " status = 'pending', attempts = 0, next_attempt_at = NULL, error = NULL,"
                        " updated_at = excluded.updated_at",
                        (self.project_id, event_id, now, now),
                    )
            cur.execute("DELETE FROM memlane.term_counts WHERE project_id = %s", (self.project_id,))
            ids = [u[0] for u in updates]
            cur.execute(
                "INSERT INTO memlane.tombstones (project_id, ts, scope, selector, event_count, detail)"
                " VALUES (%s,%s,'redact','privacy scan',%s,%s)",
                (self.project_id, now, len(ids), json.dumps({**detail, "ids": ids[:1000]})),
            )
        _forget_counts(self.url, self.project_id)
        return len(updates)

    def tombstones(self, limit: int = 50) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT id, ts, scope, selector, event_count, detail FROM memlane.tombstones WHERE project_id = %s"
            " ORDER BY id DESC LIMIT %s",
            (self.project_id, limit),
        ).fetchall()
        out = []
        for row in rows:
            item = dict(zip(["id", "ts", "scope", "selector", "event_count", "detail"], row, strict=True))
            item["detail"] = json.loads(item["detail"] or "{}")
            out.append(item)
        return out

    # ---- team sync (the server side) -----------------------------------------------------------

    def pull_events(self, after_seq: int, origin: str, limit: int) -> list[dict[str, Any]]:
        """Events other machines pushed, after ``after_seq``, oldest first (``seq`` is the cursor)."""
        cur = self.db.execute(
            "SELECT seq, id, type, session_id, ts, content, dedupe_key, metadata, sealed, origin FROM memlane.events"
            " WHERE project_id = %s AND seq > %s AND origin != %s ORDER BY seq LIMIT %s",
            (self.project_id, after_seq, origin, limit),
        )
        names = [d.name for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def last_seq(self) -> int:
        row = self.db.execute(
            "SELECT COALESCE(max(seq), 0) FROM memlane.events WHERE project_id = %s", (self.project_id,)
        )
        return int(row.fetchone()[0])

    def pull_forgotten(self, after: int, origin: str, limit: int = 1000) -> list[tuple[int, str, str]]:
        """(seq, event id, origin) of ids forgotten by other machines, after ``after``."""
        rows = self.db.execute(
            "SELECT seq, event_id, origin FROM memlane.forgotten WHERE project_id = %s AND seq > %s AND origin != %s"
            " ORDER BY seq LIMIT %s",
            (self.project_id, after, origin, limit),
        ).fetchall()
        return [(int(r[0]), r[1], r[2]) for r in rows]

    def members(self) -> list[str]:
        rows = self.db.execute(
            "SELECT member FROM memlane.members WHERE project_id = %s ORDER BY member", (self.project_id,)
        )
        return [r[0] for r in rows]

    def grant(self, role: str) -> None:
        self._membership(
            "INSERT INTO memlane.members (project_id, member) VALUES (%s, %s) ON CONFLICT DO NOTHING", role
        )

    def revoke(self, role: str) -> None:
        self._membership("DELETE FROM memlane.members WHERE project_id = %s AND member = %s", role)

    def _membership(self, sql: str, role: str) -> None:
        import psycopg

        owner = self.project().get("owner")
        me = self.db.execute("SELECT current_user").fetchone()[0]
        if owner != me:
            raise DatabaseError(f"only the owner of project '{self.project_id}' ({owner}) can change who shares it")
        if self.db.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
            raise DatabaseError(f"no role '{role}' on {self.file}")
        try:
            self.db.execute(sql, (self.project_id, role))
        except psycopg.Error as exc:
            raise DatabaseError(f"cannot change members of '{self.project_id}': {first_line(exc)}") from exc

    def set_key_check(self, check: bytes) -> None:
        self.db.execute(
            "UPDATE memlane.projects SET key_check = %s WHERE id = %s AND key_check IS NULL", (check, self.project_id)
        )

    # ---- the embedding outbox ------------------------------------------------------------------

    def outbox_claim(self, size: int, claimant: str) -> list[str]:
        now = keys.now_iso()
        with self.db.transaction():
            rows = self.db.execute(
                "UPDATE memlane.outbox SET status = 'processing', claimed_by = %s, updated_at = %s"
                " WHERE project_id = %s AND event_id IN (SELECT event_id FROM memlane.outbox WHERE project_id = %s"
                " AND status = 'pending' AND (next_attempt_at IS NULL OR next_attempt_at <= %s)"
                " ORDER BY queued LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING event_id, queued",
                (claimant, now, self.project_id, self.project_id, now, size),
            ).fetchall()
        return [r[0] for r in sorted(rows, key=lambda r: r[1])]

    def outbox_complete(self, ids: Sequence[str]) -> None:
        self.db.execute(
            "UPDATE memlane.outbox SET status = 'done', updated_at = %s, error = NULL"
            " WHERE project_id = %s AND event_id = ANY(%s)",
            (keys.now_iso(), self.project_id, list(ids)),
        )

    def outbox_fail(self, ids: Sequence[str], error: str, max_attempts: int, retry_at: Any) -> tuple[int, int]:
        failed = retry = 0
        with self.db.transaction():
            for event_id in ids:
                row = self.db.execute(
                    "SELECT attempts FROM memlane.outbox WHERE project_id = %s AND event_id = %s FOR UPDATE",
                    (self.project_id, event_id),
                ).fetchone()
                if row is None:
                    continue
                attempts = int(row[0]) + 1
                if attempts >= max_attempts:
                    self.db.execute(
                        "UPDATE memlane.outbox SET status = 'failed', attempts = %s, updated_at = %s, error = %s"
                        " WHERE project_id = %s AND event_id = %s",
                        (attempts, keys.now_iso(), error[:500], self.project_id, event_id),
                    )
                    failed += 1
                else:
                    self.db.execute(
                        "UPDATE memlane.outbox SET status = 'pending', attempts = %s, updated_at = %s, error = %s,"
                        " next_attempt_at = %s WHERE project_id = %s AND event_id = %s",
                        (attempts, keys.now_iso(), error[:500], retry_at(attempts), self.project_id, event_id),
                    )
                    retry += 1
        return failed, retry

    def outbox_recover(self, gone: Any, cutoff: str) -> int:
        with self.db.transaction():
            claimants = [
                r[0]
                for r in self.db.execute(
                    "SELECT DISTINCT claimed_by FROM memlane.outbox WHERE project_id = %s AND status = 'processing'",
                    (self.project_id,),
                )
            ]
            recovered = 0
            for claimant in (c for c in claimants if gone(c)):
                recovered += self.db.execute(
                    "UPDATE memlane.outbox SET status = 'pending', claimed_by = NULL, updated_at = %s"
                    " WHERE project_id = %s AND status = 'processing' AND claimed_by IS NOT DISTINCT FROM %s",
                    (keys.now_iso(), self.project_id, claimant),
                ).rowcount
            recovered += self.db.execute(
                "UPDATE memlane.outbox SET status = 'pending', claimed_by = NULL, updated_at = %s"
                " WHERE project_id = %s AND status = 'processing' AND updated_at < %s",
                (keys.now_iso(), self.project_id, cutoff),
            ).rowcount
        return recovered

    def outbox_pending_count(self) -> int:
        return int(
            self.db.execute(
                "SELECT count(*) FROM memlane.outbox WHERE project_id = %s AND status IN ('pending', 'processing')",
                (self.project_id,),
            ).fetchone()[0]
        )

    def outbox_queued_ids(self) -> set[str]:
        rows = self.db.execute(
            "SELECT event_id FROM memlane.outbox WHERE project_id = %s AND status IN ('pending', 'processing')",
            (self.project_id,),
        )
        return {r[0] for r in rows}

    def outbox_status_counts(self) -> dict[str, int]:
        rows = self.db.execute(
            "SELECT status, count(*) FROM memlane.outbox WHERE project_id = %s GROUP BY status", (self.project_id,)
        )
        return {r[0]: int(r[1]) for r in rows}

    def outbox_failed_errors(self, limit: int = 5) -> list[str]:
        rows = self.db.execute(
            "SELECT DISTINCT error FROM memlane.outbox WHERE project_id = %s AND status = 'failed' LIMIT %s",
            (self.project_id, limit),
        )
        return [r[0] for r in rows]

    def _reset(self, where: str, args: Sequence[Any]) -> int:
        return int(
            self.db.execute(
                "UPDATE memlane.outbox SET status = 'pending', attempts = 0, next_attempt_at = NULL, error = NULL,"
                f" updated_at = %s WHERE project_id = %s{where}",
                [keys.now_iso(), self.project_id, *args],
            ).rowcount
        )

    def outbox_retry_failed(self) -> int:
        return self._reset(" AND status = 'failed'", [])

    def outbox_reset_all(self) -> int:
        return self._reset("", [])

    def outbox_requeue(self, event_ids: Sequence[str]) -> None:
        now = keys.now_iso()
        with self.db.transaction(), self.db.cursor() as cur:
            cur.executemany(
                "INSERT INTO memlane.outbox (project_id, event_id, status, created_at, updated_at)"
                " VALUES (%s, %s, 'pending', %s, %s) ON CONFLICT (project_id, event_id) DO UPDATE SET"
                " status = 'pending', attempts = 0, next_attempt_at = NULL",
                [(self.project_id, e, now, now) for e in event_ids],
            )

    def outbox_drop(self, event_ids: Sequence[str]) -> None:
        self.db.execute(
            "DELETE FROM memlane.outbox WHERE project_id = %s AND event_id = ANY(%s)",
            (self.project_id, list(event_ids)),
        )

    def outbox_requeue_every_event(self) -> int:
        now = keys.now_iso()
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO memlane.outbox (project_id, event_id, status, created_at, updated_at)"
                " SELECT project_id, id, 'pending', %s, %s FROM memlane.events WHERE project_id = %s AND searchable"
                " ON CONFLICT DO NOTHING",
                (now, now, self.project_id),
            )
            return self._reset("", [])

    # ---- the import ledger ---------------------------------------------------------------------

    def import_ledger_entry(self, source: str, path: str) -> tuple[int, int] | None:
        row = self.db.execute(
            "SELECT size, mtime_ns FROM memlane.imports WHERE project_id = %s AND source = %s AND path = %s",
            (self.project_id, source, path),
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else None

    def record_import(
        self, source: str, path: str, session_id: str | None, size: int, mtime_ns: int, events: int
    ) -> None:
        self.db.execute(
            "INSERT INTO memlane.imports (project_id, source, path, session_id, size, mtime_ns, events, imported_at)"
            " VALUES (%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (project_id, source, path) DO UPDATE SET"
            " session_id = excluded.session_id, size = excluded.size, mtime_ns = excluded.mtime_ns,"
            " events = excluded.events, imported_at = excluded.imported_at",
            (self.project_id, source, path, session_id, size, mtime_ns, events, keys.now_iso()),
        )

    def _imported(self, where: str, args: Sequence[Any], columns: str = "id") -> list[Any]:
        return self.db.execute(
            f"SELECT {columns} FROM memlane.events WHERE project_id = %s AND {where}", [self.project_id, *args]
        ).fetchall()

    def imported_markers(self, session_id: str, event_type: str) -> list[tuple[str, str]]:
        rows = self._imported(
            "session_id = %s AND type = %s AND metadata::jsonb ? 'imported'"
            " AND metadata::jsonb->'imported' != 'null'::jsonb",
            [session_id, event_type],
            "id, ts",
        )
        return [(r[0], r[1]) for r in rows]

    def imported_event_ids(self, session_id: str | None, source: str) -> list[str]:
        rows = self._imported("session_id = %s AND metadata::jsonb->>'imported' = %s", [session_id, source])
        return [r[0] for r in rows]

    def captured_live(self, session_id: str) -> bool:
        rows = self._imported(
            "session_id = %s AND type = 'session_start' AND COALESCE(metadata::jsonb->'imported', 'null'::jsonb)"
            " = 'null'::jsonb LIMIT 1",
            [session_id],
        )
        return bool(rows)


def _idf(total: int, df: int) -> float:
    """FTS5's IDF for BM25: log((N - n + 0.5) / (n + 0.5)), floored just above zero."""
    value = math.log((total - df + 0.5) / (df + 0.5)) if total else 0.0
    return value if value > 1e-6 else 1e-6


def _bm25(content: str, terms: list[list[str]], idf: list[float], avgdl: float) -> float:
    found = text.words(content)
    counts = Counter(found)
    length = len(found)
    norm = K1 * (1 - B + B * (length / avgdl if avgdl else 1.0))
    score = 0.0
    for term, weight in zip(terms, idf, strict=True):
        if len(term) == 1:
            tf = counts[term[0]]
        else:
            n = len(term)
            tf = sum(1 for i, t in enumerate(found) if t == term[0] and found[i : i + n] == term)
        if tf:
            score += weight * tf * (K1 + 1) / (tf + norm)
    return score


def _forget_counts(url: str, project_id: str) -> None:
    for key in [k for k in _DF_CACHE if k[0] == url and k[1] == project_id]:
        del _DF_CACHE[key]


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None
