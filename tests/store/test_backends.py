"""The backend interface and the schemas: both backends have every method of it; SQLite stores from before
team sync upgrade in place; the PostgreSQL schema installs on a fresh database, once."""

from __future__ import annotations

import inspect
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import psycopg

from memlane.store import NewEvent, Store, schema
from memlane.store.backend import MEMORY_STORE_METHODS, VECTOR_STORE_METHODS, MemoryStore
from memlane.store.postgres import schema as pg_schema
from memlane.store.postgres.store import PgStore
from memlane.store.postgres.vectors import PgVectorIndex
from memlane.vectors.index import VectorIndex


def test_both_backends_implement_the_whole_interface_with_the_same_parameters() -> None:
    assert len(MEMORY_STORE_METHODS) > 45 and len(VECTOR_STORE_METHODS) == 12
    for name in MEMORY_STORE_METHODS:
        wanted = list(inspect.signature(getattr(MemoryStore, name)).parameters)
        for impl in (Store, PgStore):
            have = list(inspect.signature(getattr(impl, name)).parameters)
            assert have[: len(wanted)] == wanted, (impl.__name__, name, have)
    for name in VECTOR_STORE_METHODS:
        assert callable(getattr(VectorIndex, name)) and callable(getattr(PgVectorIndex, name)), name


def test_a_store_from_schema_9_upgrades_in_place_to_team_sync(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    schema.migrate(db, target=9)
    db.execute(
        "INSERT INTO events (id, citation, type, session_id, project_id, ts, content, canonical_key, dedupe_key)"
        " VALUES ('e1', 'abc123', 'user_prompt', 's', 'p', '2026-01-01T00:00:00.000Z', 'old prompt', '', 'k1')"
    )
    db.close()
    with Store(path, "p") as store:
        versions = [r[0] for r in store.db.execute("SELECT version FROM schema_migrations ORDER BY version")]
        assert 70 in versions and 9 in versions  # (and every other branch's, 10 the knowledge model's)
        assert store.sync_state() == {} and store.sync_outgoing(0, 10)[0]["content"] == "old prompt"
        # Not shared: a forget records nothing for a sync.
        store.forget(store.select_for_forget(ids=["e1"]), "event", "e1")
        assert store.sync_forgotten_after(0) == []


def test_a_shared_store_keeps_forgotten_ids_for_the_sync_in_the_same_transaction(tmp_path: Path) -> None:
    with Store(tmp_path / "m.db", "p") as store:
        store.sync_set(remote="shop", origin="o1")
        ids = store.append([NewEvent("user_prompt", "s", f"p{i}", str(i)) for i in range(3)]).inserted
        store.forget(store.select_for_forget(ids=ids[:2]), "event", "x")
        assert sorted(i for _, i in store.sync_forgotten_after(0)) == sorted(ids[:2])
        # A teammate's forget is applied without being queued to go back.
        store.sync_apply_forgets([ids[2]], "their-machine", 7)
        assert sorted(i for _, i in store.sync_forgotten_after(0)) == sorted(ids[:2]) and store.count() == 0
        assert store.sync_state()["forget_pull"] == "7"


def test_the_postgres_schema_installs_once_with_row_level_security_on_every_table(pg_server: Any) -> None:
    name = pg_server.create_database(f"schema_{uuid.uuid4().hex[:8]}")
    with psycopg.connect(pg_server.url(database=name), autocommit=True) as conn:
        assert pg_schema.current_version(conn) == 0
        assert pg_schema.migrate(conn) == [n for n, _, _ in pg_schema.MIGRATIONS]
        assert pg_schema.migrate(conn) == []
        rls = dict(
            conn.execute(
                "SELECT c.relname, c.relrowsecurity FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = 'memlane' AND c.relkind = 'r'"
            ).fetchall()
        )
        assert {t for t, on in rls.items() if not on} == {"schema_migrations"}
        assert (
            conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'vectors_hnsw_384'")
            .fetchone()[0]
            .endswith("USING hnsw (((embedding)::vector(384)) vector_cosine_ops) WHERE (dim = 384)")
        )
