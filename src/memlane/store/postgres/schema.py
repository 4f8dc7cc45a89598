"""The PostgreSQL schema: numbered migrations of their own, recorded in ``memlane.schema_migrations``.

Everything lives in the ``memlane`` schema of the database the URL names, so it can share a database with
other applications. One database holds many projects: every table has ``project_id``, and row-level
security shows a role only the projects it owns or that were shared with it (a role, or a group role it is
a member of, in ``memlane.members``). The access check is one ``SECURITY DEFINER`` function, so the
policies do not recurse through the tables they protect; it answers only for the calling login role.

Migrations are applied by a role that may create tables, roles and the ``vector`` extension (an
administrator: ``memlane team init-server``); users are members of the group role ``memlane_member``,
which has the table privileges and nothing else. As with SQLite, never edit a shipped migration.
"""

from __future__ import annotations

from typing import Any

SCHEMA = "memlane"
MEMBER_ROLE = "memlane_member"
# Tables with a project_id and the one access policy; ``projects`` and ``members`` have their own.
DATA_TABLES = (
    "events",
    "sessions",
    "outbox",
    "tombstones",
    "forgotten",
    "term_counts",
    "project_stats",
    "imports",
    "vectors",
)

_M1 = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE SCHEMA IF NOT EXISTS memlane;
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'memlane_member') THEN
    CREATE ROLE memlane_member NOLOGIN;
  END IF;
END $$;

CREATE TABLE memlane.projects (
    id          text PRIMARY KEY CHECK (id <> ''),
    owner       name NOT NULL DEFAULT current_user,
    encrypted   boolean NOT NULL DEFAULT false,
    key_check   bytea,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE memlane.members (
    project_id  text NOT NULL REFERENCES memlane.projects(id) ON DELETE CASCADE,
    member      name NOT NULL,
    PRIMARY KEY (project_id, member)
);

-- The projects a role may see: its own and those shared with it or a group it belongs to. Only for the
-- calling login role (or a role it may become): nobody lists another role's projects through it.
CREATE FUNCTION memlane.visible_projects(who name) RETURNS SETOF text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT p.id FROM memlane.projects p
  WHERE pg_has_role(session_user, who, 'MEMBER')
    AND (p.owner = who OR EXISTS (
      SELECT 1 FROM memlane.members m JOIN pg_catalog.pg_roles r ON r.rolname = m.member
      WHERE m.project_id = p.id AND pg_has_role(who, r.oid, 'MEMBER')))
$$;
REVOKE ALL ON FUNCTION memlane.visible_projects(name) FROM PUBLIC;

CREATE TABLE memlane.events (
    seq           bigserial PRIMARY KEY,
    project_id    text NOT NULL REFERENCES memlane.projects(id) ON DELETE CASCADE,
    id            text NOT NULL,
    citation      text NOT NULL,
    type          text NOT NULL,
    session_id    text NOT NULL,
    ts            text NOT NULL,
    content       text NOT NULL,
    canonical_key text NOT NULL,
    dedupe_key    text NOT NULL,
    has_cjk       boolean NOT NULL DEFAULT false,
    metadata      text NOT NULL DEFAULT '{}',
    searchable    boolean NOT NULL DEFAULT true,
    tsv           tsvector,
    grams         text[],
    dl            integer NOT NULL DEFAULT 0,
    sealed        bytea,
    origin        text NOT NULL DEFAULT '',
    author        name NOT NULL DEFAULT current_user,
    UNIQUE (project_id, id),
    UNIQUE (project_id, dedupe_key),
    UNIQUE (project_id, citation)
);
CREATE INDEX events_tsv ON memlane.events USING gin (tsv);
CREATE INDEX events_grams ON memlane.events USING gin (grams);
-- A project's events in order: pulls, iteration, and "newest matches" walk this, not the whole table.
CREATE INDEX events_project_seq ON memlane.events (project_id, seq);
CREATE INDEX events_session ON memlane.events (project_id, session_id, seq);
CREATE INDEX events_type_seq ON memlane.events (project_id, type, seq);
CREATE INDEX events_ts ON memlane.events (project_id, ts, seq);

CREATE TABLE memlane.sessions (
    project_id      text NOT NULL REFERENCES memlane.projects(id) ON DELETE CASCADE,
    id              text NOT NULL,
    started_at      text NOT NULL,
    last_activity   text NOT NULL,
    ended_at        text,
    end_reason      text,
    source          text,
    cwd             text,
    transcript_path text,
    event_count     integer NOT NULL DEFAULT 0,
    prompt_count    integer NOT NULL DEFAULT 0,
    summary         text,
    PRIMARY KEY (project_id, id)
);
CREATE INDEX sessions_activity ON memlane.sessions (project_id, last_activity);

CREATE TABLE memlane.outbox (
    project_id      text NOT NULL,
    event_id        text NOT NULL,
    status          text NOT NULL DEFAULT 'pending',
    attempts        integer NOT NULL DEFAULT 0,
    created_at      text NOT NULL,
    updated_at      text NOT NULL,
    next_attempt_at text,
    error           text,
    claimed_by      text,
    queued          bigserial,
    PRIMARY KEY (project_id, event_id),
    FOREIGN KEY (project_id, event_id) REFERENCES memlane.events(project_id, id) ON DELETE CASCADE
);
CREATE INDEX outbox_status ON memlane.outbox (project_id, status, queued);

CREATE TABLE memlane.tombstones (
    id          bigserial PRIMARY KEY,
    project_id  text NOT NULL REFERENCES memlane.projects(id) ON DELETE CASCADE,
    ts          text NOT NULL,
    scope       text NOT NULL,
    selector    text NOT NULL,
    event_count integer NOT NULL,
    detail      text NOT NULL DEFAULT '{}',
    origin      text NOT NULL DEFAULT ''
);
CREATE INDEX tombstones_project ON memlane.tombstones (project_id, id);

-- Every forgotten event id, so other machines delete their copies and nobody pushes it again.
CREATE TABLE memlane.forgotten (
    seq          bigserial PRIMARY KEY,
    project_id   text NOT NULL REFERENCES memlane.projects(id) ON DELETE CASCADE,
    event_id     text NOT NULL,
    tombstone_id bigint,
    origin       text NOT NULL DEFAULT '',
    UNIQUE (project_id, event_id)
);
CREATE INDEX forgotten_project ON memlane.forgotten (project_id, seq);

CREATE TABLE memlane.term_counts (
    project_id text NOT NULL,
    term       text NOT NULL,
    doc        bigint NOT NULL,
    size       bigint NOT NULL,
    PRIMARY KEY (project_id, term)
);

CREATE TABLE memlane.project_stats (
    project_id      text PRIMARY KEY REFERENCES memlane.projects(id) ON DELETE CASCADE,
    events          bigint NOT NULL DEFAULT 0,
    indexed_rows    bigint NOT NULL DEFAULT 0,
    indexed_tokens  bigint NOT NULL DEFAULT 0,
    vectors_version bigint NOT NULL DEFAULT 0
);

CREATE TABLE memlane.imports (
    project_id  text NOT NULL REFERENCES memlane.projects(id) ON DELETE CASCADE,
    source      text NOT NULL,
    path        text NOT NULL,
    session_id  text,
    size        bigint NOT NULL,
    mtime_ns    bigint NOT NULL,
    events      integer NOT NULL DEFAULT 0,
    imported_at text NOT NULL,
    PRIMARY KEY (project_id, source, path)
);

-- One row per chunk and model version; ``dim`` picks the HNSW index (a partial index per dimension, on the
-- vector cast to that dimension), so models of any size share the table.
CREATE TABLE memlane.vectors (
    project_id    text NOT NULL,
    event_id      text NOT NULL,
    chunk         integer NOT NULL,
    model_version text NOT NULL,
    type          text NOT NULL DEFAULT '',
    session_id    text NOT NULL DEFAULT '',
    ts            text NOT NULL DEFAULT '',
    dim           integer NOT NULL,
    embedding     vector NOT NULL,
    PRIMARY KEY (project_id, model_version, event_id, chunk),
    FOREIGN KEY (project_id, event_id) REFERENCES memlane.events(project_id, id) ON DELETE CASCADE
);
CREATE INDEX vectors_event ON memlane.vectors (project_id, event_id);
CREATE INDEX vectors_hnsw_384 ON memlane.vectors
    USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE dim = 384;

-- An HNSW index for another dimension, made on first use by a member (who may not create indexes).
CREATE FUNCTION memlane.ensure_vector_index(d integer) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE ext name := (SELECT n.nspname FROM pg_extension x JOIN pg_namespace n ON n.oid = x.extnamespace
                     WHERE x.extname = 'vector');
BEGIN
  IF d < 1 OR d > 2000 THEN RAISE EXCEPTION 'vector dimension % is outside 1..2000', d; END IF;
  EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON memlane.vectors USING hnsw ((embedding::%I.vector(%s)) '
                 '%I.vector_cosine_ops) WHERE dim = %s', 'vectors_hnsw_' || d, ext, d, ext, d);
END $$;
REVOKE ALL ON FUNCTION memlane.ensure_vector_index(integer) FROM PUBLIC;
"""


def _policies() -> str:
    visible = "project_id IN (SELECT memlane.visible_projects(current_user))"
    lines = [
        "ALTER TABLE memlane.projects ENABLE ROW LEVEL SECURITY;",
        "CREATE POLICY read ON memlane.projects FOR SELECT"
        " USING (id IN (SELECT memlane.visible_projects(current_user)));",
        "CREATE POLICY make ON memlane.projects FOR INSERT WITH CHECK (owner = current_user);",
        "CREATE POLICY own ON memlane.projects FOR UPDATE USING (owner = current_user)"
        " WITH CHECK (owner = current_user);",
        "CREATE POLICY drop ON memlane.projects FOR DELETE USING (owner = current_user);",
        "ALTER TABLE memlane.members ENABLE ROW LEVEL SECURITY;",
        f"CREATE POLICY read ON memlane.members FOR SELECT USING ({visible});",
        "CREATE POLICY grant_ ON memlane.members FOR INSERT WITH CHECK"
        " (project_id IN (SELECT id FROM memlane.projects WHERE owner = current_user));",
        "CREATE POLICY revoke_ ON memlane.members FOR DELETE USING"
        " (project_id IN (SELECT id FROM memlane.projects WHERE owner = current_user));",
    ]
    for table in DATA_TABLES:
        lines.append(f"ALTER TABLE memlane.{table} ENABLE ROW LEVEL SECURITY;")
        lines.append(f"CREATE POLICY shared ON memlane.{table} USING ({visible}) WITH CHECK ({visible});")
    lines += [
        f"GRANT USAGE ON SCHEMA memlane TO {MEMBER_ROLE};",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA memlane TO {MEMBER_ROLE};",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA memlane TO {MEMBER_ROLE};",
        f"GRANT EXECUTE ON FUNCTION memlane.visible_projects(name) TO {MEMBER_ROLE};",
        f"GRANT EXECUTE ON FUNCTION memlane.ensure_vector_index(integer) TO {MEMBER_ROLE};",
    ]
    return "\n".join(lines)


def _m1_initial(cur: Any) -> None:
    cur.execute(_M1)
    cur.execute(_policies())


# Row-level security keeps an index from being used with an operator that is not LEAKPROOF (PostgreSQL must
# not run it on rows the policy hides): ``tsvector @@ tsquery`` and ``text[] && text[]`` are not, so under the
# policies every word search read the whole project (200 ms at 100k events, seconds at 1M). These functions
# check access once, for the calling login role, then search the one project as the tables' owner with the
# GIN indexes; the filters are parameters, never SQL from the caller.
# Each runs its query with EXECUTE, so it is planned for the values at hand: a cached generic plan does not
# know how common the words are and read the project through its btree instead (1.4 s at 100k events).
_FILTERS = (
    " AND ($3 IS NULL OR e.session_id = $3) AND ($4 IS NULL OR e.type = ANY($4))"
    " AND ($5 IS NULL OR e.ts >= $5) AND ($6 IS NULL OR e.ts < $6) AND ($7 IS NULL OR NOT (e.id = ANY($7)))"
)
_M2 = f"""
CREATE FUNCTION memlane.readable(p_project text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT p_project IN (SELECT memlane.visible_projects(session_user))
$$;

CREATE FUNCTION memlane.word_search(
    p_project text, q tsquery, terms tsquery[], weights float8[], p_limit integer, newest boolean,
    p_session text, p_types text[], p_since text, p_until text, p_exclude text[])
RETURNS TABLE (seq bigint) LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF NOT memlane.readable(p_project) THEN RETURN; END IF;
  IF newest THEN
    RETURN QUERY EXECUTE 'SELECT e.seq FROM memlane.events e WHERE e.project_id = $1 AND e.tsv @@ $2{_FILTERS}'
      ' ORDER BY e.seq DESC LIMIT $8'
      USING p_project, q, p_session, p_types, p_since, p_until, p_exclude, p_limit;
  ELSE
    RETURN QUERY EXECUTE 'SELECT e.seq FROM memlane.events e WHERE e.project_id = $1 AND e.tsv @@ $2{_FILTERS}'
      ' ORDER BY (SELECT sum(x.w * ts_rank(e.tsv, x.t, 1)) FROM unnest($9, $10) AS x(t, w)) DESC, e.seq DESC'
      ' LIMIT $8'
      USING p_project, q, p_session, p_types, p_since, p_until, p_exclude, p_limit, terms, weights;
  END IF;
END $$;

CREATE FUNCTION memlane.gram_search(
    p_project text, wanted text[], p_limit integer,
    p_session text, p_types text[], p_since text, p_until text, p_exclude text[])
RETURNS TABLE (seq bigint, n integer) LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF NOT memlane.readable(p_project) THEN RETURN; END IF;
  RETURN QUERY EXECUTE 'SELECT e.seq, cardinality(ARRAY(SELECT unnest(e.grams) INTERSECT SELECT unnest($2)))'
    ' FROM memlane.events e WHERE e.project_id = $1 AND e.grams && $2{_FILTERS} ORDER BY 2 DESC, e.seq DESC LIMIT $8'
    USING p_project, wanted, p_session, p_types, p_since, p_until, p_exclude, p_limit;
END $$;

CREATE FUNCTION memlane.doc_counts(p_project text, terms tsquery[]) RETURNS bigint[]
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE out bigint[] := '{{}}'; t tsquery; c bigint;
BEGIN
  IF NOT memlane.readable(p_project) THEN RETURN NULL; END IF;
  FOREACH t IN ARRAY terms LOOP
    EXECUTE 'SELECT count(*) FROM memlane.events e WHERE e.project_id = $1 AND e.tsv @@ $2' INTO c USING p_project, t;
    out := out || c;
  END LOOP;
  RETURN out;
END $$;

-- Each project's own HNSW index (partial: its rows of one dimension). With one index for every project a
-- search that filters to a project holding a tenth of it kept walking the others' vectors (pgvector's iterative
-- scan): 100-120 ms for a 100k-event project beside a 1M-event one, against 15-18 ms for the large one.
CREATE FUNCTION memlane.ensure_project_vector_index(d integer, p_project text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE name text := 'vectors_hnsw_' || d || '_' || left(md5(p_project), 16);
        ext name := (SELECT n.nspname FROM pg_extension x JOIN pg_namespace n ON n.oid = x.extnamespace
                     WHERE x.extname = 'vector');
BEGIN
  IF d < 1 OR d > 2000 THEN RAISE EXCEPTION 'vector dimension % is outside 1..2000', d; END IF;
  IF NOT memlane.readable(p_project) THEN RETURN false; END IF;
  IF to_regclass('memlane.' || name) IS NOT NULL THEN RETURN false; END IF;
  EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON memlane.vectors USING hnsw ((embedding::%I.vector(%s)) '
                 '%I.vector_cosine_ops) WHERE dim = %s AND project_id = %L', name, ext, d, ext, d, p_project);
  RETURN true;
END $$;
REVOKE ALL ON FUNCTION memlane.ensure_project_vector_index(integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memlane.ensure_project_vector_index(integer, text) TO memlane_member;

REVOKE ALL ON FUNCTION memlane.readable(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION memlane.word_search(text, tsquery, tsquery[], float8[], integer, boolean, text, text[], text,
    text, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION memlane.gram_search(text, text[], integer, text, text[], text, text, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION memlane.doc_counts(text, tsquery[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memlane.readable(text) TO memlane_member;
GRANT EXECUTE ON FUNCTION memlane.word_search(text, tsquery, tsquery[], float8[], integer, boolean, text, text[],
    text, text, text[]) TO memlane_member;
GRANT EXECUTE ON FUNCTION memlane.gram_search(text, text[], integer, text, text[], text, text, text[])
    TO memlane_member;
GRANT EXECUTE ON FUNCTION memlane.doc_counts(text, tsquery[]) TO memlane_member;
"""


def _m2_index_searches(cur: Any) -> None:
    cur.execute(_M2)


MIGRATIONS: list[tuple[int, str, Any]] = [
    (1, "initial", _m1_initial),
    (2, "index_searches", _m2_index_searches),
]
LATEST = MIGRATIONS[-1][0]
_LOCK = 0x6D656D6C616E65  # "memlane": one migrator at a time


def current_version(conn: Any) -> int:
    """The schema's version on the server (0 when memlane was never installed there)."""
    row = conn.execute("SELECT to_regclass('memlane.schema_migrations')").fetchone()
    if row is None or row[0] is None:
        return 0
    return int(conn.execute("SELECT COALESCE(MAX(version), 0) FROM memlane.schema_migrations").fetchone()[0])


def migrate(conn: Any, target: int = LATEST) -> list[int]:
    """Apply the migrations the server lacks, in one transaction; returns the versions applied."""
    applied: list[int] = []
    if current_version(conn) >= target:
        return applied
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        version = current_version(conn)
        cur = conn.cursor()
        if version == 0:
            cur.execute("CREATE SCHEMA IF NOT EXISTS memlane")
            cur.execute(
                "CREATE TABLE IF NOT EXISTS memlane.schema_migrations"
                " (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
        for number, name, step in MIGRATIONS:
            if version < number <= target:
                step(cur)
                cur.execute("INSERT INTO memlane.schema_migrations (version, name) VALUES (%s, %s)", (number, name))
                applied.append(number)
        cur.execute(f"REVOKE ALL ON memlane.schema_migrations FROM {MEMBER_ROLE}")
        cur.execute(f"GRANT SELECT ON memlane.schema_migrations TO {MEMBER_ROLE}")
    return applied
