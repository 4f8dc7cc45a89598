"""Numbered schema migrations, recorded in ``schema_migrations``.

Each migration is a small named function applied once, in order, inside one transaction (the
sqlite-utils style). A new database runs them all; an old one runs only what it lacks. Never edit a
migration that has shipped: add the next number.
"""

from __future__ import annotations

import sqlite3

from memlane.store.keys import citation_candidates

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def _script(db: sqlite3.Connection, sql: str) -> None:
    """Run statements one by one: ``executescript`` would COMMIT the migration's transaction."""
    buffer = ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            db.execute(buffer)
            buffer = ""
    if buffer.strip():
        raise ValueError(f"incomplete SQL statement in migration: {buffer.strip()[:60]}")


def _m1_initial(db: sqlite3.Connection) -> None:
    _script(
        db,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        -- The source of truth: append-only (forget is the only delete, and leaves a tombstone).
        CREATE TABLE events (
            seq           INTEGER PRIMARY KEY AUTOINCREMENT,
            id            TEXT NOT NULL UNIQUE,
            type          TEXT NOT NULL,
            session_id    TEXT NOT NULL,
            project_id    TEXT NOT NULL,
            ts            TEXT NOT NULL,
            content       TEXT NOT NULL,
            canonical_key TEXT NOT NULL,
            dedupe_key    TEXT NOT NULL UNIQUE,
            has_cjk       INTEGER NOT NULL DEFAULT 0,
            metadata      TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX events_session ON events(session_id, seq);
        CREATE INDEX events_type_ts ON events(type, ts);
        CREATE INDEX events_ts ON events(ts);

        CREATE TABLE sessions (
            id              TEXT PRIMARY KEY,
            project_id      TEXT NOT NULL,
            started_at      TEXT NOT NULL,
            last_activity   TEXT NOT NULL,
            ended_at        TEXT,
            end_reason      TEXT,
            source          TEXT,
            cwd             TEXT,
            transcript_path TEXT,
            event_count     INTEGER NOT NULL DEFAULT 0,
            prompt_count    INTEGER NOT NULL DEFAULT 0,
            summary         TEXT
        );
        CREATE INDEX sessions_activity ON sessions(last_activity);

        -- Word index (BM25). External content: the text lives once, in events.
        CREATE VIRTUAL TABLE events_fts USING fts5(
            content, content='events', content_rowid='seq', tokenize='unicode61 remove_diacritics 2'
        );
        -- Trigram index for CJK text, whose words are not space-separated; only CJK rows are indexed.
        CREATE VIRTUAL TABLE events_cjk USING fts5(
            content, content='events', content_rowid='seq', tokenize='trigram'
        );
        CREATE TRIGGER events_ai AFTER INSERT ON events BEGIN
            INSERT INTO events_fts(rowid, content) VALUES (new.seq, new.content);
        END;
        CREATE TRIGGER events_ai_cjk AFTER INSERT ON events WHEN new.has_cjk BEGIN
            INSERT INTO events_cjk(rowid, content) VALUES (new.seq, new.content);
        END;
        CREATE TRIGGER events_ad AFTER DELETE ON events BEGIN
            INSERT INTO events_fts(events_fts, rowid, content) VALUES ('delete', old.seq, old.content);
        END;
        CREATE TRIGGER events_ad_cjk AFTER DELETE ON events WHEN old.has_cjk BEGIN
            INSERT INTO events_cjk(events_cjk, rowid, content) VALUES ('delete', old.seq, old.content);
        END;

        -- Transactional outbox: one embedding job per event, written in the event's transaction.
        CREATE TABLE outbox (
            event_id        TEXT PRIMARY KEY REFERENCES events(id) ON DELETE CASCADE,
            status          TEXT NOT NULL DEFAULT 'pending',
            attempts        INTEGER NOT NULL DEFAULT 0,
            created_at      TEXT NOT NULL,
            updated_at      TEXT NOT NULL,
            next_attempt_at TEXT,
            error           TEXT
        );
        CREATE INDEX outbox_status ON outbox(status, next_attempt_at);

        -- What forget removed: counts, ids and types, never content.
        CREATE TABLE tombstones (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            ts          TEXT NOT NULL,
            scope       TEXT NOT NULL,
            selector    TEXT NOT NULL,
            event_count INTEGER NOT NULL,
            detail      TEXT NOT NULL DEFAULT '{}'
        );
        """,
    )


def _m2_citations(db: sqlite3.Connection) -> None:
    """Short stable citation ids (``mem:xxxxxx``), backfilled for existing events."""
    db.execute("ALTER TABLE events ADD COLUMN citation TEXT")
    taken: set[str] = set()
    rows = db.execute("SELECT seq, id FROM events ORDER BY seq").fetchall()
    for seq, event_id in rows:
        for candidate in citation_candidates(event_id):
            if candidate not in taken:
                taken.add(candidate)
                db.execute("UPDATE events SET citation = ? WHERE seq = ?", (candidate, seq))
                break
    db.execute("CREATE UNIQUE INDEX events_citation ON events(citation)")


def _m3_vocab(db: sqlite3.Connection) -> None:
    """Document frequencies of indexed words, for IDF-weighted query coverage in retrieval."""
    db.execute("CREATE VIRTUAL TABLE events_vocab USING fts5vocab('events_fts', 'row')")


def _m4_type_seq_index(db: sqlite3.Connection) -> None:
    """ "Latest events of a type" (session start, history --type) without sorting every row of it."""
    db.execute("CREATE INDEX events_type_seq ON events(type, seq)")


def _m5_imports(db: sqlite3.Connection) -> None:
    """The importer's ledger: which history files were read, so an unchanged file is not parsed again."""
    _script(
        db,
        """
        CREATE TABLE imports (
            source      TEXT NOT NULL,
            path        TEXT NOT NULL,
            session_id  TEXT,
            size        INTEGER NOT NULL,
            mtime_ns    INTEGER NOT NULL,
            events      INTEGER NOT NULL DEFAULT 0,
            imported_at TEXT NOT NULL,
            PRIMARY KEY (source, path)
        );
        """,
    )


def _m6_outbox_claimant(db: sqlite3.Connection) -> None:
    """Who claimed a job (``host:pid:start``), so jobs of a dead worker are taken back at once."""
    db.execute("ALTER TABLE outbox ADD COLUMN claimed_by TEXT")


def _m7_term_counts(db: sqlite3.Connection) -> None:
    """Document counts of words, kept between processes. fts5vocab counts a word's documents by walking its
    postings (~4 ms for a word in 40% of 100k events), and every hook is a new process that would pay it again."""
    db.execute(
        "CREATE TABLE term_counts (term TEXT PRIMARY KEY, doc INTEGER NOT NULL, size INTEGER NOT NULL) WITHOUT ROWID"
    )


# Bookkeeping events say when and where, not what happened: session start/end markers ("Session started
# (startup) in /path") and PreCompact's own line ("Context compaction (auto)"; the compaction summary
# stored after it is content). They stay in the events table (history, timeline, session listing) but
# out of everything retrieval measures or returns: the full-text indexes and the vectors.
# Changing what counts needs a migration (the triggers and stored jobs follow it); shipped migrations keep
# the literal they ran with.
UNSEARCHED_TYPES = ("session_start", "session_end")
COMPACTION_MARKER = "Context compaction ("  # capture/events.compaction writes it


def indexed(event_type: str, content: str) -> bool:
    """Whether an event is searchable: in the full-text indexes (the triggers' condition) and given vectors."""
    if event_type in UNSEARCHED_TYPES:
        return False
    return not (event_type == "compaction" and content.startswith(COMPACTION_MARKER))


def bookkeeping_sql(row: str = "") -> str:
    """SQL that is true for a bookkeeping event; ``row`` is a trigger's ``new.`` / ``old.`` or a table alias."""
    return _BOOKKEEPING.format(r=row)


_UNSEARCHED = "('session_start', 'session_end')"  # schema 8's bookkeeping


def _m8_fts_without_boundaries(db: sqlite3.Connection) -> None:
    """Session start/end markers leave the word and trigram indexes. Retrieval never returns them, but
    counted in BM25's statistics these short "Session started in /path" rows lowered the average event
    length and inflated the document count (coding replay: 122 of 439 rows), which put memlane's full
    text below plain BM25 over the events it can return."""
    for name in ("events_ai", "events_ai_cjk", "events_ad", "events_ad_cjk"):
        db.execute(f"DROP TRIGGER {name}")
    _script(
        db,
        f"""
        CREATE TRIGGER events_ai AFTER INSERT ON events WHEN new.type NOT IN {_UNSEARCHED} BEGIN
            INSERT INTO events_fts(rowid, content) VALUES (new.seq, new.content);
        END;
        CREATE TRIGGER events_ai_cjk AFTER INSERT ON events WHEN new.has_cjk AND new.type NOT IN {_UNSEARCHED} BEGIN
            INSERT INTO events_cjk(rowid, content) VALUES (new.seq, new.content);
        END;
        CREATE TRIGGER events_ad AFTER DELETE ON events WHEN old.type NOT IN {_UNSEARCHED} BEGIN
            INSERT INTO events_fts(events_fts, rowid, content) VALUES ('delete', old.seq, old.content);
        END;
        CREATE TRIGGER events_ad_cjk AFTER DELETE ON events WHEN old.has_cjk AND old.type NOT IN {_UNSEARCHED} BEGIN
            INSERT INTO events_cjk(events_cjk, rowid, content) VALUES ('delete', old.seq, old.content);
        END;
        """,
    )
    rows = db.execute(f"SELECT seq, content, has_cjk FROM events WHERE type IN {_UNSEARCHED}").fetchall()
    for seq, content, cjk in rows:
        db.execute("INSERT INTO events_fts(events_fts, rowid, content) VALUES ('delete', ?, ?)", (seq, content))
        if cjk:
            db.execute("INSERT INTO events_cjk(events_cjk, rowid, content) VALUES ('delete', ?, ?)", (seq, content))
    db.execute("DELETE FROM term_counts")  # document counts without them are lower


def _m9_bookkeeping_out_of_search(db: sqlite3.Connection) -> None:
    """Bookkeeping leaves the vectors, and PreCompact's line the full-text indexes too (session markers left
    them in schema 8). A session marker's vector is mostly its folder path: the markers were among every
    query's nearest neighbours, moved the median cosine that the stand-out feature subtracts and took
    candidate places, so rankings depended on the folder a store was built in (coding replay: building it
    under ".../gate2-cache" flipped one prompt). Their embedding jobs go back to pending: the worker, the
    only writer of vectors, drops a bookkeeping event's vectors and its job instead of embedding it."""
    old, new = _M9_BOOKKEEPING.format(r="old."), _M9_BOOKKEEPING.format(r="new.")
    for name in ("events_ai", "events_ai_cjk", "events_ad", "events_ad_cjk"):
        db.execute(f"DROP TRIGGER {name}")
    _script(
        db,
        f"""
        CREATE TRIGGER events_ai AFTER INSERT ON events WHEN NOT {new} BEGIN
            INSERT INTO events_fts(rowid, content) VALUES (new.seq, new.content);
        END;
        CREATE TRIGGER events_ai_cjk AFTER INSERT ON events WHEN new.has_cjk AND NOT {new} BEGIN
            INSERT INTO events_cjk(rowid, content) VALUES (new.seq, new.content);
        END;
        CREATE TRIGGER events_ad AFTER DELETE ON events WHEN NOT {old} BEGIN
            INSERT INTO events_fts(events_fts, rowid, content) VALUES ('delete', old.seq, old.content);
        END;
        CREATE TRIGGER events_ad_cjk AFTER DELETE ON events WHEN old.has_cjk AND NOT {old} BEGIN
            INSERT INTO events_cjk(events_cjk, rowid, content) VALUES ('delete', old.seq, old.content);
        END;
        """,
    )
    precompact = _M9_PRECOMPACT.format(r="")  # in the full-text indexes until now
    rows = db.execute(f"SELECT seq, content, has_cjk FROM events WHERE {precompact}").fetchall()
    for seq, content, cjk in rows:
        db.execute("INSERT INTO events_fts(events_fts, rowid, content) VALUES ('delete', ?, ?)", (seq, content))
        if cjk:
            db.execute("INSERT INTO events_cjk(events_cjk, rowid, content) VALUES ('delete', ?, ?)", (seq, content))
    if rows:
        db.execute("DELETE FROM term_counts")  # document counts without them are lower
    db.execute(
        "UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = NULL, error = NULL"
        f" WHERE event_id IN (SELECT id FROM events WHERE {_M9_BOOKKEEPING.format(r='')})"
    )


_M9_PRECOMPACT = "({r}type = 'compaction' AND substr({r}content, 1, 20) = 'Context compaction (')"
_M9_BOOKKEEPING = "({r}type IN ('session_start', 'session_end') OR " + _M9_PRECOMPACT + ")"
_BOOKKEEPING = _M9_BOOKKEEPING  # what schema 9 installed; changing it is a new migration with its own literal


def _m10_knowledge(db: sqlite3.Connection) -> None:
    """The knowledge model (issue 32): entries, entities and their aliases, edges, task history and memory
    resolutions, all derived from ``events`` by projectors (``memlane.knowledge``) and rebuilt by
    ``memlane rebuild``; ``projection_offsets`` says how far each projector has read. Rows that come from one
    event go with it (``ON DELETE CASCADE``): a session summary replaced by a newer one takes its derived rows
    along without the hook doing anything. A store from before this migration gets empty tables, and the
    daemon's projection job fills them in the background."""
    _script(
        db,
        """
        CREATE TABLE projection_offsets (
            name       TEXT PRIMARY KEY,
            last_seq   INTEGER NOT NULL DEFAULT 0,
            version    INTEGER NOT NULL DEFAULT 0,
            updated_at TEXT NOT NULL
        ) WITHOUT ROWID;

        -- Records taken from one event: a file change, a snapshot of a file, a decision, a commit, a task note.
        -- stage: raw|working|candidate|verified|certified; status: active|contested|deprecated|superseded.
        CREATE TABLE entries (
            id               TEXT PRIMARY KEY,
            entry_type       TEXT NOT NULL,
            title            TEXT NOT NULL,
            body             TEXT NOT NULL DEFAULT '{}',
            canonical_key    TEXT,
            stage            TEXT NOT NULL DEFAULT 'raw',
            status           TEXT NOT NULL DEFAULT 'active',
            superseded_by    TEXT,
            evidence         TEXT NOT NULL DEFAULT '[]',
            evidence_aligned INTEGER NOT NULL DEFAULT 0,
            event_id         TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
            session_id       TEXT NOT NULL,
            ts               TEXT NOT NULL
        );
        CREATE INDEX entries_event ON entries(event_id);
        CREATE INDEX entries_key ON entries(canonical_key, ts);
        CREATE INDEX entries_type ON entries(entry_type, ts);

        -- Things whose state changes over time (task, condition, artifact) and things memories name (file,
        -- lib, code): one row per (type, canonical key); state is the folded current state (JSON).
        CREATE TABLE entities (
            id             TEXT PRIMARY KEY,
            entity_type    TEXT NOT NULL,
            canonical_key  TEXT NOT NULL,
            title          TEXT NOT NULL,
            title_norm     TEXT NOT NULL,
            stage          TEXT NOT NULL DEFAULT 'raw',
            status         TEXT NOT NULL DEFAULT 'active',
            state          TEXT NOT NULL DEFAULT '{}',
            first_event_id TEXT,
            last_event_id  TEXT,
            created_ts     TEXT NOT NULL,
            updated_ts     TEXT NOT NULL,
            UNIQUE (entity_type, canonical_key)
        );
        CREATE INDEX entities_type_status ON entities(entity_type, status, updated_ts);

        CREATE TABLE entity_aliases (
            entity_type   TEXT NOT NULL,
            canonical_key TEXT NOT NULL,
            entity_id     TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            is_primary    INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (entity_type, canonical_key)
        ) WITHOUT ROWID;
        CREATE INDEX entity_aliases_entity ON entity_aliases(entity_id);

        CREATE TABLE edges (
            id       INTEGER PRIMARY KEY,
            src_type TEXT NOT NULL,
            src_id   TEXT NOT NULL,
            rel_type TEXT NOT NULL,
            dst_type TEXT NOT NULL,
            dst_id   TEXT NOT NULL,
            meta     TEXT NOT NULL DEFAULT '{}',
            event_id TEXT REFERENCES events(id) ON DELETE CASCADE,
            ts       TEXT NOT NULL,
            UNIQUE (src_type, src_id, rel_type, dst_type, dst_id)
        );
        CREATE INDEX edges_src ON edges(src_id, rel_type);
        CREATE INDEX edges_dst ON edges(dst_id, rel_type);
        CREATE INDEX edges_rel ON edges(rel_type);
        CREATE INDEX edges_event ON edges(event_id);

        -- A task's history as the fold saw it: created, status, priority, blockers, rejected, unblocked.
        CREATE TABLE task_history (
            task_id     TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            seq         INTEGER NOT NULL,
            idx         INTEGER NOT NULL,
            event_id    TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
            ts          TEXT NOT NULL,
            kind        TEXT NOT NULL,
            from_status TEXT,
            to_status   TEXT,
            detail      TEXT NOT NULL DEFAULT '{}',
            PRIMARY KEY (task_id, seq, idx)
        ) WITHOUT ROWID;
        CREATE INDEX task_history_event ON task_history(event_id);

        -- Memory resolutions: old_id was replaced by new_id (a later edit of the same file region, a revert,
        -- a decision that removed what it introduced, ...). direct = 0: it came with its exchange (old_exchange),
        -- because it says what was replaced; partial = 1: only some of what it says was replaced.
        CREATE TABLE resolutions (
            old_id       TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
            new_id       TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
            rule         TEXT NOT NULL,
            direct       INTEGER NOT NULL,
            partial      INTEGER NOT NULL DEFAULT 0,
            old_exchange TEXT NOT NULL,
            entry_id     TEXT,
            detail       TEXT NOT NULL DEFAULT '{}',
            ts           TEXT NOT NULL,
            PRIMARY KEY (old_id, new_id, rule)
        ) WITHOUT ROWID;
        CREATE INDEX resolutions_new ON resolutions(new_id, rule);
        CREATE INDEX resolutions_exchange ON resolutions(old_exchange);

        -- The effective view, kept by the projector: each wholly replaced memory, the replacement it points to
        -- (the latest of its resolutions; a package command only if nothing else) and what replaces it now
        -- (that one's own current, chains followed). One indexed read answers "replaced? by what now?".
        CREATE TABLE memory_current (
            event_id   TEXT PRIMARY KEY REFERENCES events(id) ON DELETE CASCADE,
            hop_id     TEXT NOT NULL,
            current_id TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX memory_current_hop ON memory_current(hop_id);

        -- A task's blockers with conditions followed to what they resolved to (entity-edge-model §5.2).
        CREATE VIEW v_task_blockers_effective AS
        SELECT b.src_id AS task_id, b.dst_id AS blocker_id, b.dst_type AS blocker_type,
               COALESCE(r.dst_id, b.dst_id) AS effective_blocker_id,
               COALESCE(r.dst_type, b.dst_type) AS effective_blocker_type,
               b.meta AS meta
        FROM edges b
        LEFT JOIN edges r ON r.src_type = 'entity' AND r.src_id = b.dst_id AND r.rel_type = 'resolves_to'
        WHERE b.src_type = 'entity' AND b.rel_type = 'blocked_by';

        -- Every event with what it is now: itself, or what replaces it (chains followed: 10 -> 25 -> 40 gives 40).
        CREATE VIEW v_memory_effective AS
        SELECT e.id AS event_id, COALESCE(m.current_id, e.id) AS current_id,
               CASE WHEN m.event_id IS NULL THEN 'current' ELSE 'superseded' END AS status
        FROM events e LEFT JOIN memory_current m ON m.event_id = e.id;
        """,
    )


def _m20_injections(db: sqlite3.Connection) -> None:
    """What each prompt was told (``store/injections.py``): not derived from events, so kept by rebuild."""
    _script(
        db,
        """
        CREATE TABLE injections (
            prompt_id  TEXT PRIMARY KEY REFERENCES events(id) ON DELETE CASCADE,
            session_id TEXT NOT NULL,
            ts         TEXT NOT NULL,
            record     TEXT NOT NULL
        );
        CREATE INDEX injections_ts ON injections(ts);
        CREATE INDEX injections_session ON injections(session_id, ts);
        """,
    )


def _m40_learning(db: sqlite3.Connection) -> None:
    """The learning loop (issue 33, docs/learning.md): citation usage, graduation levels, insights, and the
    optional LLM extractor's answers.

    Two logs that are not derived from events, so ``rebuild`` keeps them: ``memory_fetches`` (a memory opened in
    full: MCP mem-details, ``memlane show``, the dashboard's event page) and ``llm_extractions`` (what a
    configured model answered, so a rebuild reuses it instead of paying again). The rest is derived: the
    learning projector and the graduation job fill it, ``rebuild`` recreates it."""
    _script(
        db,
        """
        CREATE TABLE memory_fetches (
            id         INTEGER PRIMARY KEY,
            event_id   TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
            session_id TEXT,
            source     TEXT NOT NULL,
            ts         TEXT NOT NULL
        );
        CREATE INDEX memory_fetches_event ON memory_fetches(event_id);

        -- Every use of a memory: injected (full tier) or listed (index tier) for a prompt, fetched, cited in
        -- an answer. source_id: the prompt, 'fetch:<id>', or the answer that cited it.
        CREATE TABLE memory_usage (
            event_id   TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
            kind       TEXT NOT NULL,
            source_id  TEXT NOT NULL,
            session_id TEXT,
            ts         TEXT NOT NULL,
            confidence REAL NOT NULL,
            PRIMARY KEY (event_id, kind, source_id)
        ) WITHOUT ROWID;
        CREATE INDEX memory_usage_session ON memory_usage(session_id, kind);
        CREATE INDEX memory_usage_source ON memory_usage(source_id);
        CREATE INDEX memory_usage_ts ON memory_usage(ts);

        -- A used memory's level (0-4: L0 raw ... L4 active) with the counters it was judged on. An event
        -- without a row is L0 and unused. demote_at: when it drops a level if it is not used again.
        CREATE TABLE memory_levels (
            event_id      TEXT PRIMARY KEY REFERENCES events(id) ON DELETE CASCADE,
            level         INTEGER NOT NULL,
            injected      INTEGER NOT NULL,
            listed        INTEGER NOT NULL,
            fetched       INTEGER NOT NULL,
            cited         INTEGER NOT NULL,
            access        INTEGER NOT NULL,
            sessions      INTEGER NOT NULL,
            cross_session INTEGER NOT NULL,
            confidence    REAL NOT NULL,
            replaced      INTEGER NOT NULL,
            last_used     TEXT NOT NULL,
            demote_at     TEXT,
            reason        TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX memory_levels_level ON memory_levels(level);
        CREATE INDEX memory_levels_demote ON memory_levels(demote_at) WHERE demote_at IS NOT NULL;

        -- Insights: decisions, conventions, preferences, recurring errors with their fix, each with its evidence
        -- (insight_sources: the quoted span of each source event) and its level, judged like a memory's.
        CREATE TABLE insights (
            id               TEXT PRIMARY KEY,
            insight_type     TEXT NOT NULL,
            canonical_key    TEXT NOT NULL,
            content          TEXT NOT NULL,
            origin           TEXT NOT NULL,
            confidence       REAL NOT NULL,
            evidence_aligned INTEGER NOT NULL,
            anchor_id        TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
            support          INTEGER NOT NULL,
            first_ts         TEXT NOT NULL,
            last_ts          TEXT NOT NULL,
            detail           TEXT NOT NULL DEFAULT '{}',
            level            INTEGER NOT NULL DEFAULT 1,
            access           INTEGER NOT NULL DEFAULT 0,
            sessions         INTEGER NOT NULL DEFAULT 0,
            cross_session    INTEGER NOT NULL DEFAULT 0,
            used_confidence  REAL NOT NULL DEFAULT 0,
            replaced         INTEGER NOT NULL DEFAULT 0,
            last_used        TEXT,
            demote_at        TEXT,
            reason           TEXT NOT NULL DEFAULT '',
            UNIQUE (insight_type, canonical_key)
        );
        CREATE INDEX insights_anchor ON insights(anchor_id);
        CREATE INDEX insights_level ON insights(level, insight_type);
        CREATE TABLE insight_sources (
            insight_id TEXT NOT NULL REFERENCES insights(id) ON DELETE CASCADE,
            event_id   TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
            role       TEXT NOT NULL,
            method     TEXT NOT NULL,
            span_start INTEGER,
            span_end   INTEGER,
            confidence REAL NOT NULL,
            PRIMARY KEY (insight_id, event_id, role)
        ) WITHOUT ROWID;
        CREATE INDEX insight_sources_event ON insight_sources(event_id);

        -- Failed shell commands by error signature, and the run that passed again after them (error_fix insights).
        CREATE TABLE learning_errors (
            event_id    TEXT PRIMARY KEY REFERENCES events(id) ON DELETE CASCADE,
            session_id  TEXT NOT NULL,
            signature   TEXT NOT NULL,
            command_key TEXT NOT NULL,
            line_start  INTEGER NOT NULL,
            line_end    INTEGER NOT NULL,
            fixed_by    TEXT,
            seq         INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX learning_errors_signature ON learning_errors(signature);
        CREATE INDEX learning_errors_open ON learning_errors(session_id, command_key) WHERE fixed_by IS NULL;

        -- Where the graduation job got to: the last injection, fetch and LLM answer it folded in, the clock;
        -- and the memories and insights to judge again (their uses or sources changed).
        CREATE TABLE learning_state (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE learning_dirty (kind TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (kind, id)) WITHOUT ROWID;

        -- The optional LLM extractor's answers (quotes only), per slice of a session, with what they cost.
        CREATE TABLE llm_extractions (
            id            INTEGER PRIMARY KEY,
            session_id    TEXT NOT NULL,
            input_hash    TEXT NOT NULL UNIQUE,
            last_seq      INTEGER NOT NULL,
            provider      TEXT NOT NULL,
            model         TEXT NOT NULL,
            response      TEXT NOT NULL,
            input_tokens  INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cost_usd      REAL NOT NULL,
            ts            TEXT NOT NULL
        );
        CREATE INDEX llm_extractions_session ON llm_extractions(session_id, last_seq);
        -- The events an answer quotes from: forgetting (or redacting) any of them removes the answer too.
        CREATE TABLE llm_extraction_events (
            extraction_id INTEGER NOT NULL REFERENCES llm_extractions(id) ON DELETE CASCADE,
            event_id      TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
            idx           INTEGER NOT NULL,
            PRIMARY KEY (extraction_id, event_id)
        ) WITHOUT ROWID;
        CREATE INDEX llm_extraction_events_event ON llm_extraction_events(event_id);
        CREATE TRIGGER llm_extraction_events_gone AFTER DELETE ON llm_extraction_events
        BEGIN
            DELETE FROM llm_extractions WHERE id = OLD.extraction_id;
        END;
        """,
    )


def _m70_team_sync(db: sqlite3.Connection) -> None:
    """Team sync's local state (issue 37): where a shared project goes and how far push and pull got, which
    events came from teammates (never pushed back), and the ids ``forget`` removed while the project is shared
    (pushed as a tombstone). Ids only, never content."""
    _script(
        db,
        """
        CREATE TABLE sync_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE sync_pulled (event_id TEXT PRIMARY KEY, origin TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE sync_forgotten (
            seq      INTEGER PRIMARY KEY AUTOINCREMENT,
            event_id TEXT NOT NULL UNIQUE,
            pulled   INTEGER NOT NULL DEFAULT 0
        );
        """,
    )


def _m90_endless(db: sqlite3.Connection) -> None:
    """Endless mode (issue 34), all derived from ``events`` and rebuilt by ``memlane rebuild``: what each event
    did (``endless_marks``: the file it changed, the command it ran, the decision or task it stated, one line
    of fact each), each session's span and its continuity with the one before (``endless_sessions``), the
    working set (``working_set``, a ranked snapshot the daemon keeps and SessionStart reads), consolidated
    memories per long-running topic with their source events (``consolidated_*``), and the bookkeeping of the
    daemon's endless job (``endless_state``, ``endless_dirty``). Rows from one event go with it (``ON DELETE
    CASCADE``)."""
    _script(
        db,
        """
        CREATE TABLE endless_marks (
            event_id   TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
            idx        INTEGER NOT NULL,
            seq        INTEGER NOT NULL,
            session_id TEXT NOT NULL,
            ts         TEXT NOT NULL,
            kind       TEXT NOT NULL,
            key        TEXT NOT NULL,
            role       TEXT NOT NULL,
            fact       TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (event_id, idx)
        ) WITHOUT ROWID;
        CREATE INDEX endless_marks_ts ON endless_marks(ts);
        CREATE INDEX endless_marks_key ON endless_marks(kind, key, ts);
        CREATE INDEX endless_marks_session ON endless_marks(session_id, seq);

        -- A session's span (its first and last marked event) and its continuity with the session before it
        -- (spec §4.1): score, transition (seamless | topic_shift | break) and what raised or lowered it.
        CREATE TABLE endless_sessions (
            session_id      TEXT PRIMARY KEY,
            started         TEXT NOT NULL,
            last_ts         TEXT NOT NULL,
            prev_session_id TEXT,
            score           REAL,
            transition      TEXT,
            detail          TEXT NOT NULL DEFAULT '{}',
            dirty           INTEGER NOT NULL DEFAULT 1
        ) WITHOUT ROWID;
        CREATE INDEX endless_sessions_started ON endless_sessions(started);
        CREATE INDEX endless_sessions_dirty ON endless_sessions(dirty) WHERE dirty = 1;

        -- The working set as last computed: ranked items (file, decision, task, error, prompt), cited by the event
        -- that last touched each.
        CREATE TABLE working_set (
            rank     INTEGER PRIMARY KEY,
            kind     TEXT NOT NULL,
            key      TEXT NOT NULL,
            title    TEXT NOT NULL,
            event_id TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
            first_ts TEXT NOT NULL,
            last_ts  TEXT NOT NULL,
            touches  INTEGER NOT NULL,
            sessions INTEGER NOT NULL,
            status   TEXT NOT NULL DEFAULT '',
            score    REAL NOT NULL,
            detail   TEXT NOT NULL DEFAULT '{}'
        );

        -- Consolidated memories: one per long-running topic (a file, a command, a decision's subject, a task),
        -- its key facts (each with its source event) and every source event.
        CREATE TABLE consolidated_memories (
            id          TEXT PRIMARY KEY,
            kind        TEXT NOT NULL,
            key         TEXT NOT NULL,
            title       TEXT NOT NULL,
            summary     TEXT NOT NULL,
            facts       TEXT NOT NULL DEFAULT '[]',
            confidence  REAL NOT NULL,
            sessions    INTEGER NOT NULL,
            sources     INTEGER NOT NULL,
            first_ts    TEXT NOT NULL,
            last_ts     TEXT NOT NULL,
            UNIQUE (kind, key)
        );
        CREATE INDEX consolidated_last ON consolidated_memories(last_ts);
        CREATE TABLE consolidated_sources (
            memory_id TEXT NOT NULL REFERENCES consolidated_memories(id) ON DELETE CASCADE,
            event_id  TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
            PRIMARY KEY (memory_id, event_id)
        ) WITHOUT ROWID;
        CREATE INDEX consolidated_sources_event ON consolidated_sources(event_id);
        -- Search over consolidated memories: words, and trigrams for Korean, Chinese and Japanese.
        CREATE VIRTUAL TABLE consolidated_fts USING fts5(
            memory_id UNINDEXED, title, summary, tokenize='unicode61 remove_diacritics 2'
        );
        CREATE VIRTUAL TABLE consolidated_cjk USING fts5(memory_id UNINDEXED, text, tokenize='trigram');

        -- Topics whose marks changed since their consolidated memory was written (the consolidation's queue).
        CREATE TABLE endless_dirty (
            kind TEXT NOT NULL,
            key  TEXT NOT NULL,
            PRIMARY KEY (kind, key)
        ) WITHOUT ROWID;

        CREATE TABLE endless_state (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        """,
    )


def _m91_endless_llm(db: sqlite3.Connection) -> None:
    """Endless mode's LLM-assisted key facts (docs/endless.md): the answers a configured model gave for a
    consolidated memory, quotes only (``llm_consolidations``, a log beside the learning loop's ``llm_extractions``:
    not derived, so ``rebuild`` reuses them instead of asking again), the events each was given (forgetting or
    redacting any of them removes the answer), and on each memory the input its key facts would be asked with
    (``llm_input``, a hash; '' when no model is asked) and the answer they come from (``llm_answer``; NULL:
    extractive)."""
    _script(
        db,
        """
        CREATE TABLE llm_consolidations (
            id            INTEGER PRIMARY KEY,
            input_hash    TEXT NOT NULL UNIQUE,
            memory_id     TEXT NOT NULL,
            provider      TEXT NOT NULL,
            model         TEXT NOT NULL,
            response      TEXT NOT NULL,
            input_tokens  INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            cost_usd      REAL NOT NULL,
            ts            TEXT NOT NULL
        );
        CREATE INDEX llm_consolidations_memory ON llm_consolidations(memory_id);
        CREATE TABLE llm_consolidation_events (
            consolidation_id INTEGER NOT NULL REFERENCES llm_consolidations(id) ON DELETE CASCADE,
            event_id         TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
            idx              INTEGER NOT NULL,
            PRIMARY KEY (consolidation_id, event_id)
        ) WITHOUT ROWID;
        CREATE INDEX llm_consolidation_events_event ON llm_consolidation_events(event_id);
        CREATE TRIGGER llm_consolidation_events_gone AFTER DELETE ON llm_consolidation_events
        BEGIN
            DELETE FROM llm_consolidations WHERE id = OLD.consolidation_id;
        END;
        ALTER TABLE consolidated_memories ADD COLUMN llm_input TEXT NOT NULL DEFAULT '';
        ALTER TABLE consolidated_memories ADD COLUMN llm_answer INTEGER;
        CREATE INDEX consolidated_llm_input ON consolidated_memories(llm_input) WHERE llm_input != '';
        """,
    )


def _m21_cjk_seq_index(db: sqlite3.Connection) -> None:
    """The events with Korean, Chinese or Japanese text, newest first: a query's one- and two-letter CJK words
    (풀, 부하) are too short for the trigram index and are looked for with LIKE among these. Without the index
    each such word walked the whole table (100k events: ~20 ms a word, ~100 ms for a Korean prompt)."""
    db.execute("CREATE INDEX IF NOT EXISTS events_cjk_seq ON events(seq) WHERE has_cjk = 1")


MIGRATIONS: list[tuple[int, str, Callable[[sqlite3.Connection], None]]] = [
    (1, "initial", _m1_initial),
    (2, "citations", _m2_citations),
    (3, "vocab", _m3_vocab),
    (4, "type_seq_index", _m4_type_seq_index),
    (5, "imports", _m5_imports),
    (6, "outbox_claimant", _m6_outbox_claimant),
    (7, "term_counts", _m7_term_counts),
    (8, "fts_without_boundaries", _m8_fts_without_boundaries),
    (9, "bookkeeping_out_of_search", _m9_bookkeeping_out_of_search),
    (10, "knowledge", _m10_knowledge),
    (20, "injections", _m20_injections),
    (21, "cjk_seq_index", _m21_cjk_seq_index),
    (40, "learning", _m40_learning),
    (70, "team_sync", _m70_team_sync),
    (90, "endless", _m90_endless),
    (91, "endless_llm", _m91_endless_llm),
]

LATEST = MIGRATIONS[-1][0]


def current_version(db: sqlite3.Connection) -> int:
    """The highest migration applied (0 for a new database)."""
    return max(applied_versions(db), default=0)


def applied_versions(db: sqlite3.Connection) -> set[int]:
    db.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    return {int(r[0]) for r in db.execute("SELECT version FROM schema_migrations")}


def migrate(db: sqlite3.Connection, target: int = LATEST) -> list[int]:
    """Apply every migration up to ``target`` that the database lacks, in number order; returns those applied.

    A lacking migration is applied even below the highest one applied: work that lands in parallel takes
    its own range of numbers, so a store may have 20 before 10 arrives. ``BEGIN IMMEDIATE`` serialises
    concurrent first-openers: the loser waits, then sees the work done.
    """
    wanted = {number for number, _, _ in MIGRATIONS if number <= target}
    if wanted <= applied_versions(db):
        return []
    applied: list[int] = []
    db.execute("BEGIN IMMEDIATE")
    try:
        done = applied_versions(db)
        for number, name, step in MIGRATIONS:
            if number in wanted and number not in done:
                step(db)
                db.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) "
                    "VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ','now'))",
                    (number, name),
                )
                applied.append(number)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return applied
