"""The per-project SQLite store: connection, appends, queries, forget. Stdlib only (hook path).

Writes happen in ``BEGIN IMMEDIATE`` transactions so concurrent hook processes serialise on
SQLite's own lock (WAL + busy_timeout); the dedupe key is checked inside the transaction, so two
processes delivering the same event store it once. The event, its FTS rows (triggers), its session
counters and its embedding outbox job are one transaction: either all exist or none.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3

from memlane.errors import MemlaneError
from memlane.store import keys, schema

TYPE_CHECKING = False  # dataclasses, typing and pathlib together cost ~25 ms of hook start-up
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from pathlib import Path
    from typing import Any

EVENT_TYPES = (
    "user_prompt",
    "agent_response",
    "tool_observation",
    "session_start",
    "session_end",
    "session_summary",
    "compaction",
)

_EVENT_COLUMNS = "seq, id, citation, type, session_id, project_id, ts, content, canonical_key, metadata"


class NewEvent:
    """An event about to be stored (already privacy-filtered)."""

    __slots__ = ("content", "dedupe_key", "metadata", "session_id", "ts", "turn", "type")

    def __init__(
        self,
        type: str,
        session_id: str,
        content: str,
        turn: str = "",
        metadata: dict[str, Any] | None = None,
        ts: str | None = None,
        dedupe_key: str | None = None,
    ) -> None:
        self.type = type
        self.session_id = session_id
        self.content = content
        self.turn = turn
        self.metadata = metadata if metadata is not None else {}
        self.ts = ts
        self.dedupe_key = dedupe_key

    def key(self) -> str:
        return self.dedupe_key or keys.dedupe_key(self.session_id, self.type, self.turn, self.content)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "session_id": self.session_id,
            "content": self.content,
            "turn": self.turn,
            "metadata": self.metadata,
            "ts": self.ts,
            "dedupe_key": self.key(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NewEvent:
        return cls(
            type=str(data["type"]),
            session_id=str(data["session_id"]),
            content=str(data["content"]),
            turn=str(data.get("turn") or ""),
            metadata=dict(data.get("metadata") or {}),
            ts=data.get("ts"),
            dedupe_key=data.get("dedupe_key"),
        )

    def __repr__(self) -> str:
        return f"NewEvent({self.type!r}, {self.session_id!r}, {self.content[:40]!r})"


class Event:
    """A stored event."""

    __slots__ = (
        "canonical_key",
        "citation",
        "content",
        "id",
        "metadata",
        "project_id",
        "seq",
        "session_id",
        "ts",
        "type",
    )

    def __init__(
        self,
        seq: int,
        id: str,
        citation: str,
        type: str,
        session_id: str,
        project_id: str,
        ts: str,
        content: str,
        canonical_key: str,
        metadata: dict[str, Any],
    ) -> None:
        self.seq = seq
        self.id = id
        self.citation = citation
        self.type = type
        self.session_id = session_id
        self.project_id = project_id
        self.ts = ts
        self.content = content
        self.canonical_key = canonical_key
        self.metadata = metadata

    @property
    def cite(self) -> str:
        return f"mem:{self.citation}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "citation": self.cite,
            "type": self.type,
            "session_id": self.session_id,
            "project_id": self.project_id,
            "ts": self.ts,
            "content": self.content,
            "canonical_key": self.canonical_key,
            "metadata": self.metadata,
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Event) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"Event({self.cite}, {self.type}, {self.content[:40]!r})"


def _event(row: Sequence[Any]) -> Event:
    try:
        meta = json.loads(row[9]) if row[9] else {}
    except ValueError:
        meta = {}
    return Event(row[0], row[1], row[2] or "", row[3], row[4], row[5], row[6], row[7], row[8], meta)


class AppendResult:
    __slots__ = ("duplicates", "inserted")

    def __init__(self) -> None:
        self.inserted: list[str] = []
        self.duplicates = 0

    def __repr__(self) -> str:
        return f"AppendResult(inserted={self.inserted!r}, duplicates={self.duplicates})"


class _Write:
    """``with store.write():`` — one ``BEGIN IMMEDIATE`` transaction (contextlib costs start-up time)."""

    __slots__ = ("db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            self._rollback()
            return
        try:
            self.db.execute("COMMIT")
        except sqlite3.Error:
            # A COMMIT that fails (disk full, I/O error) can leave the transaction open, and the next
            # BEGIN on this connection would fail with "cannot start a transaction within a transaction".
            self._rollback()
            raise

    def _rollback(self) -> None:
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # SQLite already rolled back (it does on SQLITE_FULL in some states)


_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "please",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)
POSTINGS_BUDGET = 20_000
_PLAIN_WORD = re.compile(r"[a-z0-9]+")
_DF_STALE = 0.05  # document counts are reused until the store has grown by 5%
_DF_CACHE_MAX = 50_000
_DF_CACHE: dict[tuple[str, str], tuple[int, int]] = {}  # (db file, term) → (document count, store size then)
_CHUNK_STRIP = "\"'`()[]{}<>,;:!?."
_CHUNK = re.compile(r"\S+")


class StoreDamaged(MemlaneError, sqlite3.DatabaseError):
    """memory.db cannot be read as a database (corrupt, truncated, empty). The message is one line.

    A ``MemlaneError`` (the message says what to do: ``memlane doctor --repair``) and a
    ``sqlite3.DatabaseError``, so every caller that already fails open on storage errors (hooks spool,
    the daemon answers 503, MCP logs it) handles it without knowing about it.
    """


# SQLITE_CORRUPT and SQLITE_NOTADB: the primary result codes of a damaged file (extended codes add high bits).
_DAMAGE_CODES = (11, 26)


def is_damage(exc: BaseException) -> bool:
    """Whether a SQLite error means the file itself is damaged (as opposed to locked, full, read-only)."""
    if isinstance(exc, StoreDamaged):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _DAMAGE_CODES:
        return True
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "corrupt" in text


def damage_message(file: str, exc: BaseException | str) -> str:
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"memory store {file} is damaged ({reason}); run `memlane doctor --repair`"


def _create(file: str) -> None:
    """Create a new store atomically: build it as a temp file (0600, WAL, migrated), then link it in place.

    Other processes therefore never see a half-made memory.db, so a zero-length memory.db is always
    damage, never "someone is creating it right now". ``link`` fails if another process won the race,
    and theirs is as good as ours.
    """
    directory = os.path.dirname(file) or "."
    os.makedirs(directory, mode=0o700, exist_ok=True)
    tmp = f"{file}.{os.getpid()}-{os.urandom(3).hex()}.new"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # SQLite gives -wal/-shm this mode too
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            schema.migrate(conn)
        finally:
            conn.close()  # the last connection checkpoints and removes the temp -wal
        try:
            os.link(tmp, file)
        except FileExistsError:
            pass
        except OSError:
            # No hard links on this filesystem: rename only when nothing is there (a small race that the
            # old, non-atomic creation always had).
            if not os.path.exists(file):
                os.replace(tmp, file)
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(tmp + suffix)
            except OSError:
                pass


REPAIR_SUFFIX = ".repairing"


def _under_repair(file: str) -> bool:
    """Whether ``doctor --repair`` is rebuilding this store now (it holds an exclusive lock on the marker).

    A marker nobody holds is left by a repair that died, and is ignored. Costs one ``stat`` otherwise.
    """
    marker = file + REPAIR_SUFFIX
    if not os.path.exists(marker):
        return False
    import fcntl

    try:
        fd = os.open(marker, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _private(file: str, mode: int) -> None:
    """Stores made before files were created 0600 are tightened on open (contents are private)."""
    if mode & 0o077:
        for suffix in ("", "-wal", "-shm"):
            try:
                os.chmod(file + suffix, 0o600)
            except OSError:
                pass


class Store:
    """One project's memory database."""

    def __init__(
        self, path: str | os.PathLike[str], project_id: str, busy_timeout_ms: int = 5000, *, create: bool = True
    ) -> None:
        """Open the store at ``path``; ``create=False`` raises ``FileNotFoundError`` instead of making one.

        Raises ``StoreDamaged`` (one-line message) when the file is empty or not a readable database.
        """
        self.file = os.fspath(path)
        self.project_id = project_id
        if self.file != ":memory:":
            if _under_repair(self.file):
                # An OperationalError like "database is locked": hooks spool, the CLI says so in one line.
                raise sqlite3.OperationalError(f"memory store {self.file} is being repaired; try again shortly")
            try:
                st = os.stat(self.file)
            except FileNotFoundError:
                if not create:
                    raise
                _create(self.file)
                st = os.stat(self.file)
            if st.st_size == 0:
                raise StoreDamaged(damage_message(self.file, "empty file, 0 bytes"))
            _private(self.file, st.st_mode)
        self.db = sqlite3.connect(self.file, timeout=busy_timeout_ms / 1000, isolation_level=None)
        try:
            self.db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            if self.db.execute("PRAGMA journal_mode").fetchone()[0] not in ("wal", "memory"):
                self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = NORMAL")
            self.db.execute("PRAGMA foreign_keys = ON")
            schema.migrate(self.db)
        except sqlite3.DatabaseError as exc:
            self.db.close()
            if is_damage(exc):
                raise StoreDamaged(damage_message(self.file, exc)) from exc
            raise

    @property
    def ephemeral(self) -> bool:
        """An in-memory stand-in for a project with no store (see ``empty``): nothing to persist for it."""
        return self.file == ":memory:"

    @classmethod
    def empty(cls, project_id: str) -> Store:
        """An in-memory store with the schema and no events: what a read of a project with no memory sees."""
        return cls(":memory:", project_id)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def path(self) -> Path:
        from pathlib import Path

        return Path(self.file)

    def write(self) -> _Write:
        return _Write(self.db)

    # ---- appends -------------------------------------------------------------------------------

    def append(self, events: Iterable[NewEvent]) -> AppendResult:
        """Store events once each (by dedupe key), with outbox jobs and session counters."""
        result = AppendResult()
        with self.write() as db:
            for event in events:
                event_id = self._insert(db, event)
                if event_id is None:
                    result.duplicates += 1
                else:
                    result.inserted.append(event_id)
        return result

    def replace_derived(self, old_ids: Sequence[str], events: Iterable[NewEvent]) -> AppendResult:
        """Swap derived events (a session's summary or its import markers) for new ones in one transaction.

        Unlike ``forget`` this is routine upkeep, not a purge: no tombstone and no index rewrite, so a
        hook can afford it. Only for events rebuilt from the session's own events.
        """
        result = AppendResult()
        with self.write() as db:
            sessions: set[str] = set()
            for start in range(0, len(old_ids), 500):
                chunk = list(old_ids[start : start + 500])
                marks = ",".join("?" * len(chunk))
                sessions.update(
                    r[0] for r in db.execute(f"SELECT DISTINCT session_id FROM events WHERE id IN ({marks})", chunk)
                )
                db.execute(f"DELETE FROM events WHERE id IN ({marks})", chunk)
            for sid in sessions:
                self._recount_session(db, sid)
            for event in events:
                event_id = self._insert(db, event)
                if event_id is None:
                    result.duplicates += 1
                else:
                    result.inserted.append(event_id)
        return result

    def _insert(self, db: sqlite3.Connection, event: NewEvent) -> str | None:
        dedupe = event.key()
        if db.execute("SELECT 1 FROM events WHERE dedupe_key = ?", (dedupe,)).fetchone():
            return None
        ts = event.ts or keys.now_iso()
        event_id = keys.new_event_id()
        citation = next(
            c
            for c in keys.citation_candidates(event_id)
            if not db.execute("SELECT 1 FROM events WHERE citation = ?", (c,)).fetchone()
        )
        db.execute(
            "INSERT INTO events (id, citation, type, session_id, project_id, ts, content, canonical_key,"
            " dedupe_key, has_cjk, metadata) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                event_id,
                citation,
                event.type,
                event.session_id,
                self.project_id,
                ts,
                event.content,
                keys.canonical_key(event.content),
                dedupe,
                int(keys.has_cjk(event.content)),
                json.dumps(event.metadata, ensure_ascii=False),
            ),
        )
        now = keys.now_iso()
        db.execute(
            "INSERT INTO outbox (event_id, status, created_at, updated_at) VALUES (?, 'pending', ?, ?)",
            (event_id, now, now),
        )
        self._touch_session(db, event, ts)
        return event_id

    def _touch_session(self, db: sqlite3.Connection, event: NewEvent, ts: str) -> None:
        meta = event.metadata
        db.execute(
            "INSERT INTO sessions (id, project_id, started_at, last_activity, cwd, transcript_path,"
            " event_count, prompt_count) VALUES (?,?,?,?,?,?,1,?)"
            " ON CONFLICT(id) DO UPDATE SET event_count = event_count + 1,"
            " prompt_count = prompt_count + excluded.prompt_count,"
            " started_at = min(started_at, excluded.started_at),"
            " last_activity = max(last_activity, excluded.last_activity),"
            " cwd = coalesce(cwd, excluded.cwd), transcript_path = coalesce(transcript_path, excluded.transcript_path)",
            (
                event.session_id,
                self.project_id,
                ts,
                ts,
                _str_or_none(meta.get("cwd")),  # metadata comes from outside: only text goes in these columns
                _str_or_none(meta.get("transcript_path")),
                int(event.type == "user_prompt"),
            ),
        )
        if event.type == "session_start":
            db.execute(
                "UPDATE sessions SET source = ? WHERE id = ?", (_str_or_none(meta.get("source")), event.session_id)
            )
        elif event.type == "session_end":
            db.execute(
                "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?",
                (ts, _str_or_none(meta.get("reason")), event.session_id),
            )
        elif event.type == "session_summary":
            db.execute("UPDATE sessions SET summary = ? WHERE id = ?", (event.content, event.session_id))

    # ---- reads ---------------------------------------------------------------------------------

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM events").fetchone()[0])

    def size_estimate(self) -> int:
        """About how many events there are, in O(1): COUNT(*) reads a whole index (10 ms at 1M events).

        Forgotten events leave gaps in ``seq``, so this can overshoot; IDF weights do not mind.
        """
        return int(self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0])

    def doc_freqs(self, terms: Iterable[str]) -> dict[str, int]:
        """How many events contain each word term (absent terms are left out).

        The word index counts a term's documents by walking its whole postings list (~7 ms for a word in
        30% of 1M events), and a search needs the counts twice (choosing what to match, weighting
        matches), so counts are cached per database while it grows by less than ``_DF_STALE``.
        """
        size = self.size_estimate()
        out: dict[str, int] = {}
        missing = []
        for term in set(terms):
            cached = _DF_CACHE.get((self.file, term))
            if cached is not None and cached[1] <= size <= cached[1] * (1 + _DF_STALE) + 100:
                if cached[0]:
                    out[term] = cached[0]
            else:
                missing.append(term)
        if missing:
            marks = ",".join("?" * len(missing))
            found = dict(self.db.execute(f"SELECT term, doc FROM events_vocab WHERE term IN ({marks})", missing))
            if len(_DF_CACHE) > _DF_CACHE_MAX:
                _DF_CACHE.clear()
            for term in missing:
                _DF_CACHE[(self.file, term)] = (int(found.get(term, 0)), size)
                if found.get(term):
                    out[term] = int(found[term])
        return out

    def get(self, ref: str) -> Event | None:
        """An event by id, unique id prefix (≥ 8 chars) or citation (``mem:abc123``)."""
        ref = ref.strip()
        citation = keys.parse_citation(ref)
        if citation:
            row = self.db.execute(f"SELECT {_EVENT_COLUMNS} FROM events WHERE citation = ?", (citation,)).fetchone()
            if row:
                return _event(row)
        row = self.db.execute(f"SELECT {_EVENT_COLUMNS} FROM events WHERE id = ?", (ref,)).fetchone()
        if row:
            return _event(row)
        if len(ref) >= 8 and re.fullmatch(r"[0-9a-f]+", ref):
            rows = self.db.execute(
                f"SELECT {_EVENT_COLUMNS} FROM events WHERE id >= ? AND id < ? LIMIT 2", (ref, ref + "g")
            ).fetchall()
            if len(rows) == 1:
                return _event(rows[0])
        return None

    def by_ids(self, ids: Sequence[str]) -> list[Event]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(f"SELECT {_EVENT_COLUMNS} FROM events WHERE id IN ({marks})", list(ids)).fetchall()
        found = {r[1]: _event(r) for r in rows}
        return [found[i] for i in ids if i in found]

    def by_seqs(self, seqs: Sequence[int]) -> dict[int, Event]:
        if not seqs:
            return {}
        out: dict[int, Event] = {}
        for start in range(0, len(seqs), 500):
            chunk = list(seqs[start : start + 500])
            marks = ",".join("?" * len(chunk))
            for row in self.db.execute(f"SELECT {_EVENT_COLUMNS} FROM events WHERE seq IN ({marks})", chunk):
                out[row[0]] = _event(row)
        return out

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
        # By the event's own time, not insertion: an import adds old sessions (and a session's interim
        # texts) after newer events; seq only breaks ties.
        rows = self.db.execute(
            f"SELECT {_EVENT_COLUMNS} FROM events {where} ORDER BY ts {order}, seq {order} LIMIT ?", [*args, limit]
        ).fetchall()
        return [_event(r) for r in rows]

    def iter_events(self, batch: int = 1000) -> Iterator[Event]:
        last = 0
        while True:
            rows = self.db.execute(
                f"SELECT {_EVENT_COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?", (last, batch)
            ).fetchall()
            if not rows:
                return
            for row in rows:
                yield _event(row)
            last = rows[-1][0]

    def exchange_prompts(self, events: Sequence[Event]) -> dict[str, Event]:
        """For each event, the user prompt that opened its exchange (the latest prompt of its session
        at or before it), keyed by the event's id. Events with no prompt before them are left out."""
        out: dict[str, Event] = {}
        for event in events:
            row = self.db.execute(
                f"SELECT {_EVENT_COLUMNS} FROM events WHERE session_id = ? AND seq <= ? AND type = 'user_prompt' "
                "ORDER BY seq DESC LIMIT 1",
                (event.session_id, event.seq),
            ).fetchone()
            if row is not None:
                out[event.id] = _event(row)
        return out

    def neighbours(self, event: Event, before: int = 3, after: int = 3) -> list[Event]:
        """Events of the same session around ``event``, in time order (then insertion), including it."""
        prev = self.db.execute(
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE session_id = ? AND (ts < ? OR (ts = ? AND seq < ?))"
            " ORDER BY ts DESC, seq DESC LIMIT ?",
            (event.session_id, event.ts, event.ts, event.seq, before),
        ).fetchall()
        nxt = self.db.execute(
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE session_id = ? AND (ts > ? OR (ts = ? AND seq > ?))"
            " ORDER BY ts, seq LIMIT ?",
            (event.session_id, event.ts, event.ts, event.seq, after),
        ).fetchall()
        return [*(_event(r) for r in reversed(prev)), event, *(_event(r) for r in nxt)]

    @staticmethod
    def _filters(
        *,
        session: str | None = None,
        types: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        alias: str = "",
    ) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        args: list[Any] = []
        p = f"{alias}." if alias else ""
        if session:
            clauses.append(f"{p}session_id = ?")
            args.append(session)
        if types:
            clauses.append(f"{p}type IN ({','.join('?' * len(types))})")
            args.extend(types)
        if since:
            clauses.append(f"{p}ts >= ?")
            args.append(since)
        if until:
            clauses.append(f"{p}ts < ?")
            args.append(until)
        return ("WHERE " + " AND ".join(clauses)) if clauses else "", args

    def sessions(self, limit: int = 20) -> list[dict[str, Any]]:
        cur = self.db.execute(
            "SELECT id, started_at, last_activity, ended_at, end_reason, source, cwd, event_count,"
            " prompt_count, summary FROM sessions ORDER BY last_activity DESC LIMIT ?",
            (limit,),
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def session(self, session_id: str) -> dict[str, Any] | None:
        cur = self.db.execute("SELECT * FROM sessions WHERE id = ?", (session_id,))
        row = cur.fetchone()
        return dict(zip([d[0] for d in cur.description], row, strict=True)) if row else None

    def stats(self) -> dict[str, Any]:
        db = self.db
        by_type = dict(db.execute("SELECT type, COUNT(*) FROM events GROUP BY type ORDER BY 2 DESC").fetchall())
        privacy = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(json_extract(metadata, '$.privacy.private_sections')), 0),"
            " COALESCE(SUM(json_extract(metadata, '$.privacy.secrets_redacted')), 0),"
            " COALESCE(SUM(json_extract(metadata, '$.privacy.chars_filtered')), 0)"
            " FROM events WHERE json_extract(metadata, '$.privacy') IS NOT NULL"
        ).fetchone()
        outbox = dict(db.execute("SELECT status, COUNT(*) FROM outbox GROUP BY status").fetchall())
        first, last = db.execute("SELECT MIN(ts), MAX(ts) FROM events").fetchone()
        return {
            "project_id": self.project_id,
            "events": sum(by_type.values()),
            "sessions": db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
            "by_type": by_type,
            "first_activity": first,
            "last_activity": last,
            "privacy": {
                "events_filtered": privacy[0],
                "private_sections": privacy[1],
                "secrets_redacted": privacy[2],
                "chars_filtered": privacy[3],
            },
            "outbox": outbox,
            "tombstones": db.execute("SELECT COUNT(*) FROM tombstones").fetchone()[0],
            "db_bytes": _db_size(self.file),
        }

    # ---- full-text -----------------------------------------------------------------------------

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
        """BM25 hits for ``query``: (event, relevance in 0..1 relative to the best hit), best first.

        Words go to the word index as quoted phrases (so ``pool_manager.py`` matches as a phrase);
        CJK chunks go to the trigram index as OR'ed trigrams, which tolerates Korean particles.
        """
        words, trigrams, short_cjk = parse_query(query)
        where, args = self._filters(session=session, types=types, since=since, until=until, alias="e")
        if exclude_ids:
            where += (" AND " if where else "WHERE ") + f"e.id NOT IN ({','.join('?' * len(exclude_ids))})"
            args.extend(exclude_ids)
        scored: dict[int, float] = {}
        match, bounded = self._word_match(words) if words else ("", True)
        if match:
            self._fts_table("events_fts", match, where, args, limit, scored, ranked=bounded)
        if trigrams:
            self._fts_table("events_cjk", " OR ".join(trigrams), where, args, limit, scored)
        for chunk in short_cjk:  # one- or two-character CJK words: too short for trigrams
            rows = self.db.execute(
                f"SELECT e.seq FROM events e {where + (' AND ' if where else 'WHERE ')} e.has_cjk = 1"
                " AND e.content LIKE ? ORDER BY e.seq DESC LIMIT ?",
                [*args, f"%{chunk}%", limit],
            ).fetchall()
            for (seq,) in rows:
                scored[seq] = max(scored.get(seq, 0.0), 0.5)
        best = sorted(scored.items(), key=lambda kv: (-kv[1], -kv[0]))[:limit]
        events = self.by_seqs([seq for seq, _ in best])
        return [(events[seq], score) for seq, score in best if seq in events]

    def _word_match(self, words: list[str]) -> tuple[str, bool]:
        """(the MATCH expression for quoted word terms, whether it is within a postings budget).

        BM25 must score every row a query matches: an OR of common words over a large store can match
        most of it (100k rows ≈ 100 ms). Common words carry little evidence (their IDF is near zero),
        so terms are taken rarest first until their document counts reach ``POSTINGS_BUDGET``; when even
        the rarest word is that common, the two rarest must appear together, and as that can still
        match a large share of the store, it is not ranked (see ``_fts_table``).
        """
        tokens = {w.strip('"').replace('""', '"').lower(): w for w in words}
        try:
            df = self.doc_freqs(tokens)
        except sqlite3.OperationalError:
            return " OR ".join(words), True
        # A plain ASCII word the index has never seen matches nothing: leave it out, or as the "rarest"
        # word it would crowd out the words that can match. Phrases (pool_manager.py) and accented words
        # are not looked up in their indexed form, so they stay and count as rare.
        words = [w for t, w in tokens.items() if t in df or not _PLAIN_WORD.fullmatch(t)]
        if not words:
            return "", True
        if sum(df.values()) <= POSTINGS_BUDGET:
            return " OR ".join(words), True
        ranked = sorted(words, key=lambda w: df.get(w.strip('"').replace('""', '"').lower(), 0))
        chosen: list[str] = []
        total = 0
        for word in ranked:
            count = df.get(word.strip('"').replace('""', '"').lower(), 0)
            if chosen and total + count > POSTINGS_BUDGET:
                break
            chosen.append(word)
            total += count
        if total > POSTINGS_BUDGET and len(ranked) > 1:
            return f"{ranked[0]} AND {ranked[1]}", False
        return " OR ".join(chosen), total <= POSTINGS_BUDGET

    def _fts_table(
        self,
        table: str,
        match: str,
        where: str,
        args: list[Any],
        limit: int,
        scored: dict[int, float],
        ranked: bool = True,
    ) -> None:
        """Add ``table``'s hits for ``match`` to ``scored`` (seq → relevance relative to the best hit).

        ``ranked=False`` is for a match too broad to score: BM25 would rank every matching row (seconds
        over a million events), so the newest matches are taken instead, walking the index backwards
        and stopping at ``limit``, each with a middling relevance.
        """
        source = f"{table} f JOIN events e ON e.seq = f.rowid" if where else f"{table} f"
        join_where = where.replace("WHERE", "AND", 1) if where else ""
        rank, order = (f"bm25({table})", "rank") if ranked else ("-1", "f.rowid DESC")
        try:
            rows = self.db.execute(
                f"SELECT f.rowid, {rank} AS rank FROM {source}"
                f" WHERE {table} MATCH ? {join_where} ORDER BY {order} LIMIT ?",
                [match, *args, limit],
            ).fetchall()
        except sqlite3.OperationalError:
            return  # a query FTS5 cannot parse finds nothing rather than failing the caller
        if not rows:
            return
        top = rows[0][1] or -1e-9  # bm25 is negative: more negative is better
        for seq, rank in rows:
            relevance = float(rank) / top if ranked else 0.5
            scored[seq] = max(scored.get(seq, 0.0), relevance)

    # ---- forget --------------------------------------------------------------------------------

    def select_for_forget(
        self,
        *,
        ids: Sequence[str] = (),
        session: str | None = None,
        before: str | None = None,
        everything: bool = False,
    ) -> list[tuple[str, str]]:
        """(id, type) of the events a forget would remove."""
        if everything:
            return [tuple(r) for r in self.db.execute("SELECT id, type FROM events")]
        if ids:
            marks = ",".join("?" * len(ids))
            return [tuple(r) for r in self.db.execute(f"SELECT id, type FROM events WHERE id IN ({marks})", list(ids))]
        if session:
            return [tuple(r) for r in self.db.execute("SELECT id, type FROM events WHERE session_id = ?", (session,))]
        if before:
            return [tuple(r) for r in self.db.execute("SELECT id, type FROM events WHERE ts < ?", (before,))]
        return []

    def forget(self, targets: Sequence[tuple[str, str]], scope: str, selector: str) -> int:
        """Purge events (FTS rows via triggers, outbox via cascade), tombstone, then scrub free pages."""
        if not targets:
            return 0
        ids = [t[0] for t in targets]
        types: dict[str, int] = {}
        for _, etype in targets:
            types[etype] = types.get(etype, 0) + 1
        self.db.execute("PRAGMA secure_delete = ON")
        with self.write() as db:
            sessions: set[str] = set()
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                sessions.update(
                    r[0] for r in db.execute(f"SELECT DISTINCT session_id FROM events WHERE id IN ({marks})", chunk)
                )
                db.execute(f"DELETE FROM events WHERE id IN ({marks})", chunk)
            for sid in sessions:
                self._recount_session(db, sid)
            db.execute(
                "INSERT INTO tombstones (ts, scope, selector, event_count, detail) VALUES (?,?,?,?,?)",
                (keys.now_iso(), scope, selector, len(ids), json.dumps({"types": types, "ids": ids[:1000]})),
            )
        # Merge FTS segments so deleted terms are gone from the index files too, and push the
        # WAL into the main file so old pages do not linger there.
        self.db.execute("INSERT INTO events_fts(events_fts) VALUES ('optimize')")
        self.db.execute("INSERT INTO events_cjk(events_cjk) VALUES ('optimize')")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return len(ids)

    def _recount_session(self, db: sqlite3.Connection, session_id: str) -> None:
        count, prompts = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(type = 'user_prompt'), 0) FROM events WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        if count == 0:
            db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            return
        summary = db.execute(
            "SELECT content FROM events WHERE session_id = ? AND type = 'session_summary' ORDER BY seq DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        db.execute(
            "UPDATE sessions SET event_count = ?, prompt_count = ?, summary = ? WHERE id = ?",
            (count, prompts, summary[0] if summary else None, session_id),
        )

    # ---- redact in place (memlane privacy scan --redact) ------------------------------------------

    def fts_holds(self, seq: int, terms: Sequence[str]) -> bool:
        """Does the word index still hold all of ``terms`` for this row? (A redaction must remove them.)"""
        words = [t for t in terms if t]
        if not words:
            return False
        query = " ".join(_quote(t) for t in words)
        try:
            row = self.db.execute(
                "SELECT 1 FROM events_fts WHERE events_fts MATCH ? AND rowid = ?", (query, seq)
            ).fetchone()
        except sqlite3.OperationalError:
            return False
        return row is not None

    def redact(self, updates: Sequence[tuple[str, str, dict[str, Any]]], detail: dict[str, Any]) -> int:
        """Replace events' content and metadata in place: ``(event id, new content, new metadata)``.

        Events are append-only except for privacy (like ``forget``). The FTS tables are external-content
        with insert/delete triggers only, so the old row is deleted from them with its *old* text and
        the new text indexed; the embedding job is re-queued (the caller drops the old vectors); a
        tombstone records what was redacted (ids and counts, never content). Free pages are scrubbed.
        """
        if not updates:
            return 0
        self.db.execute("PRAGMA secure_delete = ON")
        now = keys.now_iso()
        with self.write() as db:
            for event_id, content, metadata in updates:
                row = db.execute(
                    "SELECT seq, type, session_id, content, has_cjk FROM events WHERE id = ?", (event_id,)
                ).fetchone()
                if row is None:
                    continue
                seq, etype, session_id, old, old_cjk = row
                db.execute("INSERT INTO events_fts(events_fts, rowid, content) VALUES ('delete', ?, ?)", (seq, old))
                if old_cjk:
                    db.execute("INSERT INTO events_cjk(events_cjk, rowid, content) VALUES ('delete', ?, ?)", (seq, old))
                cjk = int(keys.has_cjk(content))
                db.execute(
                    "UPDATE events SET content = ?, canonical_key = ?, has_cjk = ?, metadata = ? WHERE seq = ?",
                    (content, keys.canonical_key(content), cjk, json.dumps(metadata, ensure_ascii=False), seq),
                )
                db.execute("INSERT INTO events_fts(rowid, content) VALUES (?, ?)", (seq, content))
                if cjk:
                    db.execute("INSERT INTO events_cjk(rowid, content) VALUES (?, ?)", (seq, content))
                if etype == "session_summary":
                    db.execute(
                        "UPDATE sessions SET summary = ? WHERE id = ? AND summary = ?", (content, session_id, old)
                    )
                db.execute(
                    "INSERT INTO outbox (event_id, status, created_at, updated_at) VALUES (?, 'pending', ?, ?)"
                    " ON CONFLICT(event_id) DO UPDATE SET status = 'pending', attempts = 0,"
                    " next_attempt_at = NULL, error = NULL, updated_at = excluded.updated_at",
                    (event_id, now, now),
                )
            ids = [u[0] for u in updates]
            db.execute(
                "INSERT INTO tombstones (ts, scope, selector, event_count, detail) VALUES (?,?,?,?,?)",
                (now, "redact", "privacy scan", len(ids), json.dumps({**detail, "ids": ids[:1000]})),
            )
        self.db.execute("INSERT INTO events_fts(events_fts) VALUES ('optimize')")
        self.db.execute("INSERT INTO events_cjk(events_cjk) VALUES ('optimize')")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return len(updates)

    def tombstones(self, limit: int = 50) -> list[dict[str, Any]]:
        cur = self.db.execute(
            "SELECT id, ts, scope, selector, event_count, detail FROM tombstones ORDER BY id DESC LIMIT ?", (limit,)
        )
        out = []
        for row in cur.fetchall():
            item = dict(zip(["id", "ts", "scope", "selector", "event_count", "detail"], row, strict=True))
            item["detail"] = json.loads(item["detail"] or "{}")
            out.append(item)
        return out


_MAX_WORDS, _MAX_TRIGRAMS, _MAX_SHORT_CJK = 32, 64, 8
# Past this many whitespace-separated chunks a query has said all it can (its first distinct words are
# kept): scanning on would make a pasted multi-megabyte prompt cost seconds for nothing.
_MAX_QUERY_CHUNKS = 4000


def parse_query(query: str) -> tuple[list[str], list[str], list[str]]:
    """Split a free-text query into FTS5 word phrases, CJK trigrams and too-short CJK words."""
    words: dict[str, None] = {}
    trigrams: dict[str, None] = {}
    short_cjk: dict[str, None] = {}
    for n, match in enumerate(_CHUNK.finditer(query)):
        if n >= _MAX_QUERY_CHUNKS or (
            len(words) >= _MAX_WORDS and len(trigrams) >= _MAX_TRIGRAMS and len(short_cjk) >= _MAX_SHORT_CJK
        ):
            break
        chunk = match.group().strip(_CHUNK_STRIP)
        if not chunk:
            continue
        if keys.has_cjk(chunk):
            if len(chunk) < 3:
                short_cjk[chunk] = None
            else:
                for i in range(len(chunk) - 2):
                    trigrams[_quote(chunk[i : i + 3])] = None
            continue
        if chunk.lower() in _STOPWORDS or not any(ch.isalnum() for ch in chunk):
            continue
        words[_quote(chunk)] = None
    return list(words)[:_MAX_WORDS], list(trigrams)[:_MAX_TRIGRAMS], list(short_cjk)[:_MAX_SHORT_CJK]


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _db_size(path: str) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            total += os.path.getsize(path + suffix)
        except OSError:
            pass
    return total
