"""Team mode against a real PostgreSQL: access by roles and row-level security, the team key, the privacy
filter at the door, idempotent and resumable sync, credentials and TLS options, the CLI's one-line errors."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from conftest import pg_role
from memlane import config
from memlane.cli.main import cli
from memlane.errors import NotFoundError
from memlane.memory import Memory
from memlane.store import NewEvent
from memlane.store.postgres.connection import DatabaseError, check_passfile, connect
from memlane.store.postgres.store import PgStore
from memlane.sync import team
from memlane.sync.crypto import KeyError_, TeamKey


def _name() -> str:
    return f"shop-{uuid.uuid4().hex[:10]}"


def _memory(root: Path, url: str, monkeypatch: pytest.MonkeyPatch, **env: str) -> Memory:
    root.mkdir(parents=True, exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    monkeypatch.setenv("MEMLANE_DATABASE_URL", url)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return Memory.open(root, cfg=config.load())


def _prompt(mem: Memory, text: str, turn: str = "1", session: str = "s1") -> str:
    return mem.store.append([NewEvent("user_prompt", session, text, turn, {"cwd": "/home/alice/shop"})]).inserted[0]


# ---- access: roles and row-level security ----------------------------------------------------------


def test_a_role_the_project_was_not_shared_with_sees_nothing_of_it(pg_server: Any) -> None:
    alice, bob, carol = (pg_role(pg_server, r) for r in ("alice", "bob", "carol"))
    name = _name()
    with PgStore(alice, name) as owned:
        owned.append([NewEvent("user_prompt", "s1", "the secret roadmap of the checkout", "1")])
        owned.grant("bob")
        assert owned.members() == ["bob"]
    with PgStore(bob, name, create=False) as shared:
        assert [e.content for e, _ in shared.fts("roadmap")] == ["the secret roadmap of the checkout"]
    with pytest.raises(NotFoundError):
        PgStore(carol, name, create=False)
    with psycopg.connect(carol, autocommit=True) as conn:
        for table in ("projects", "members", "events", "sessions", "outbox", "vectors", "forgotten", "project_stats"):
            assert conn.execute(f"SELECT count(*) FROM memlane.{table}").fetchone() == (0,), table
        # Asking the access function about someone else answers nothing either.
        assert conn.execute("SELECT count(*) FROM memlane.visible_projects('alice')").fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # row-level security refuses the row
            conn.execute(
                "INSERT INTO memlane.events (project_id, id, citation, type, session_id, ts, content, canonical_key,"
                " dedupe_key) VALUES (%s, 'x', 'x', 'user_prompt', 's', '', 'planted', '', 'k')",
                (name,),
            )
    # Creating a project of the same name does not take it over.
    with pytest.raises(DatabaseError, match="not shared with you"):
        PgStore(carol, name)
    # Revoked: bob sees nothing again; only the owner may change members.
    with PgStore(bob, name, create=False) as shared, pytest.raises(DatabaseError, match="only the owner"):
        shared.grant("carol")
    with PgStore(alice, name) as owned:
        owned.revoke("bob")
    with pytest.raises(NotFoundError):
        PgStore(bob, name, create=False)


def test_a_group_role_shares_a_project_with_its_members(pg_server: Any) -> None:
    alice, dave = pg_role(pg_server, "alice"), pg_role(pg_server, "dave")
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'payments_team'").fetchone():
            conn.execute("CREATE ROLE payments_team NOLOGIN")
        conn.execute("GRANT payments_team TO dave")
    name = _name()
    with PgStore(alice, name) as owned:
        owned.append([NewEvent("user_prompt", "s1", "invoice rounding rule", "1")])
        owned.grant("payments_team")
    with PgStore(dave, name, create=False) as member:
        assert member.count() == 1


def test_members_cannot_change_the_schema_and_the_server_must_be_set_up_first(pg_server: Any) -> None:
    alice = pg_role(pg_server, "alice")
    with psycopg.connect(alice, autocommit=True) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("INSERT INTO memlane.schema_migrations (version, name) VALUES (99, 'x')")
    fresh = pg_server.create_database(f"fresh_{uuid.uuid4().hex[:8]}")
    with pytest.raises(DatabaseError, match="team init-server"):
        PgStore(pg_server.url(database=fresh), "p")
    assert team.init_server(config.Config(), pg_server.url(database=fresh)) == [1, 2]
    assert team.init_server(config.Config(), pg_server.url(database=fresh)) == []
    with PgStore(pg_server.url(database=fresh), "p") as store:
        assert store.count() == 0


# ---- sync: privacy, idempotence, resuming, the team key -------------------------------------------


def test_the_privacy_filter_runs_again_before_anything_leaves_the_machine(
    pg_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = pg_role(pg_server, "alice")
    mem = _memory(tmp_path / "shop", alice, monkeypatch)
    name = _name()
    team.share(mem, name)
    _prompt(mem, "the staging token is PLUTO-7781-ZX, rotate it")  # stored before a rule knew it
    mem.close()
    monkeypatch.setenv("MEMLANE_PRIVACY_EXTRA_PATTERNS", '["PLUTO-[0-9]+-[A-Z]+"]')
    with Memory.open(tmp_path / "shop", cfg=config.load()) as mem:
        assert team.sync_now(mem).pushed == 1
        assert "PLUTO-7781-ZX" in mem.history()[0].content  # the local store is as it was
    with PgStore(alice, name, create=False) as server:
        (event,) = server.history()
        assert "PLUTO" not in event.content and "rotate it" in event.content


def test_sync_is_idempotent_by_event_id_and_resumes_from_its_cursors(
    pg_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = pg_role(pg_server, "alice"), pg_role(pg_server, "bob")
    name = _name()
    a = _memory(tmp_path / "a", alice, monkeypatch)
    team.share(a, name)
    ids = [_prompt(a, f"prompt {i} about the cache", str(i)) for i in range(5)]
    assert team.sync_now(a).pushed == 5
    # A crash after the server committed but before the cursor was saved: the batch goes again, adds nothing.
    a.store.sync_set(push_seq=0)
    assert team.sync_now(a).pushed == 0
    with PgStore(alice, name, create=False) as server:
        assert server.count() == 5 and sorted(e.id for e in server.history(limit=10)) == sorted(ids)
        server.grant("bob")
    monkeypatch.setenv("MEMLANE_DATABASE_URL", bob)
    b = Memory.open(_dir(tmp_path / "b"), cfg=config.load())
    team.share(b, name)
    monkeypatch.setattr(b.config.team, "batch", 2)  # a pull of several batches, each its own transaction
    assert team.sync_now(b).pulled == 5
    b.store.sync_set(pull_seq=0)  # pulled again from the start: nothing is stored twice
    assert team.sync_now(b).pulled == 0
    assert sorted(e.id for e in b.history(limit=10)) == sorted(ids)
    assert team.status(b)["from_teammates"] == 5 and team.status(b)["pending"] == 0
    assert team.sync_now(b).pushed == 0, "teammates' events are never pushed back"
    a.close()
    b.close()


def _dir(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    return path


def test_an_encrypted_project_leaves_only_ciphertext_on_the_server(
    pg_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = pg_role(pg_server, "alice"), pg_role(pg_server, "bob")
    key = tmp_path / "team.key"
    TeamKey.new_file(str(key))
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    name = _name()
    a = _memory(tmp_path / "a", alice, monkeypatch, MEMLANE_TEAM_KEY_FILE=str(key))
    assert team.share(a, name, encrypt=True)["encrypted"]
    _prompt(a, "the acquisition of Initech closes in March")
    _prompt(a, "the acquisition of Initech closes in March", "2")  # the same words twice: two sealings
    team.sync_now(a)
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:  # the administrator, without the key
        rows = admin.execute(
            "SELECT content, metadata, dedupe_key, tsv, sealed FROM memlane.events WHERE project_id = %s", (name,)
        ).fetchall()
        sessions = admin.execute("SELECT cwd, summary FROM memlane.sessions WHERE project_id = %s", (name,)).fetchall()
        vectors = admin.execute("SELECT count(*) FROM memlane.vectors WHERE project_id = %s", (name,)).fetchone()
    assert len(rows) == 2 and vectors == (0,)
    for content, metadata, dedupe, tsv, sealed in rows:
        assert (content, metadata, tsv) == ("", "{}", None) and dedupe.startswith("sealed:")
        assert b"Initech" not in bytes(sealed) and b"alice" not in bytes(sealed)
    assert bytes(rows[0][4])[:12] != bytes(rows[1][4])[:12], "a fresh nonce per event"
    assert sessions == [(None, None)]
    # A teammate with the key reads it; without it, or with another key, sync stops with a one-line error.
    monkeypatch.setenv("MEMLANE_DATABASE_URL", bob)
    with PgStore(alice, name, create=False) as server:
        server.grant("bob")
    other = tmp_path / "other.key"
    TeamKey.new_file(str(other))
    monkeypatch.setenv("MEMLANE_TEAM_KEY_FILE", str(other))
    b = Memory.open(_dir(tmp_path / "b"), cfg=config.load())
    with pytest.raises(KeyError_, match="does not open"):
        team.share(b, name)
    monkeypatch.setenv("MEMLANE_TEAM_KEY_FILE", str(key))
    b.config = config.load()
    team.share(b, name)
    assert team.sync_now(b).pulled == 2
    assert [e.content for e in b.history()] == ["the acquisition of Initech closes in March"] * 2
    a.close()
    b.close()


def test_a_sealed_row_moved_to_another_event_does_not_open() -> None:
    key = TeamKey(os.urandom(32))
    sealed = key.seal(b"payload", "memlane:shop:event-1")
    assert key.open(sealed, "memlane:shop:event-1") == b"payload"
    with pytest.raises(KeyError_):
        key.open(sealed, "memlane:shop:event-2")


def test_a_team_key_readable_by_others_is_refused(tmp_path: Path) -> None:
    key = tmp_path / "k"
    TeamKey.new_file(str(key))
    key.chmod(0o644)
    with pytest.raises(KeyError_, match="chmod 600"):
        TeamKey.load(str(key))


# ---- credentials and TLS ---------------------------------------------------------------------------


def test_a_password_in_config_toml_is_refused_but_the_environment_may_carry_one(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[database]\nurl = "postgresql://alice:hunter2@db.example/memlane"\n')
    with pytest.raises(config.ConfigError, match="holds a password"):
        config.load(path, environ={})
    path.write_text('[database]\nurl = "postgresql://alice@db.example/memlane?sslmode=verify-full"\n')
    assert config.load(path, environ={}).database.url.endswith("sslmode=verify-full")
    env = {"MEMLANE_DATABASE_URL": "postgresql://alice:hunter2@db.example/memlane"}
    assert config.load(path, environ=env).database.url == env["MEMLANE_DATABASE_URL"]


def test_credentials_come_from_a_private_password_file_or_a_service_file(
    pg_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pg_role(pg_server, "alice")
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{pg_server.port}:*:alice:pw-alice\n")
    passfile.chmod(0o644)
    url = f"postgresql://alice@127.0.0.1:{pg_server.port}/postgres?passfile={passfile}"
    with pytest.raises(DatabaseError, match="readable by others"):
        connect(url)
    passfile.chmod(0o600)
    check_passfile(url)
    with connect(url) as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("alice",)
    services = tmp_path / "pg_service.conf"
    services.write_text(f"[memlane]\nhost=127.0.0.1\nport={pg_server.port}\nuser=alice\ndbname=postgres\n")
    monkeypatch.setenv("PGSERVICEFILE", str(services))
    monkeypatch.setenv("PGPASSWORD", "pw-alice")
    with connect("postgresql://?service=memlane") as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("alice",)


def test_tls_options_reach_libpq(pg_server: Any) -> None:
    # The throwaway server has no TLS: libpq, told to require it, refuses to go on without.
    with pytest.raises(DatabaseError, match="SSL"):
        connect(pg_server.url("alice", "pw-alice", sslmode="require"))
    with connect(pg_server.url("alice", "pw-alice", sslmode="prefer")) as conn:
        assert conn.info.parameter_status("server_version")


# ---- the CLI: errors in one line, status, migrate ----------------------------------------------


def _cli(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_team_commands_say_what_is_wrong_in_one_line(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory.open(proj) as mem:
        _prompt(mem, "hello")
    for args, message in [
        (["team", "share"], "no team database"),
        (["team", "sync"], "not shared"),
        (["team", "unshare"], "not shared"),
        (["migrate", "--to", "mysql://x"], "not a PostgreSQL URL"),
        (["--server", "history"], "not shared on a team server"),
    ]:
        result = _cli("-C", str(proj), *args)
        assert result.exit_code == 1, args
        assert result.output.startswith("Error: ") and message in result.output, (args, result.output)
        assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    status = _cli("-C", str(proj), "team", "status")
    assert status.exit_code == 0 and "is not shared (memlane team share)" in status.output
    monkeypatch.setenv("MEMLANE_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    result = _cli("-C", str(proj), "team", "share")
    assert result.exit_code == 1 and result.output.startswith("Error: cannot connect to")
    assert len(result.output.strip().splitlines()) == 1


def test_team_status_and_sync_from_the_cli(pg_server: Any, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_DATABASE_URL", pg_role(pg_server, "alice"))
    with Memory.open(proj) as mem:
        _prompt(mem, "why does the checkout pool time out")
    name = _name()
    assert _cli("-C", str(proj), "team", "share", "--as", name).exit_code == 0
    status = json.loads(_cli("-C", str(proj), "team", "status", "--json").output)
    assert status["shared"] and status["remote"] == name and status["pending"] == 1 and status["last_sync"] is None
    assert json.loads(_cli("-C", str(proj), "team", "sync", "--json").output)["pushed"] == 1
    status = json.loads(_cli("-C", str(proj), "team", "status", "--json").output)
    assert status["pending"] == 0 and status["pushed"] == 1 and status["last_error"] is None
    text = _cli("-C", str(proj), "team", "status").output
    assert f"{name} on postgresql://alice:***@127.0.0.1:{pg_server.port}/postgres" in text and "pw-alice" not in text
    found = _cli("-C", str(proj), "--server", "search", "--text-only", "--json", "checkout pool")
    (row,) = json.loads(found.output)
    assert "why does the checkout pool time out" in json.dumps(row)


def test_migrate_copies_a_store_and_verifies_counts_and_searches(
    pg_server: Any, proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = pg_role(pg_server, "alice")
    with Memory.open(proj) as mem:
        for i, text in enumerate(
            [
                "why does the checkout pool time out under load",
                "데이터베이스 연결 풀이 부하에서 시간 초과됩니다",
                "rename the invoice exporter to billing export",
                "the label worker runs on rq with the redis broker",
            ]
        ):
            mem.store.append([NewEvent("user_prompt", f"s{i % 2}", text, str(i), {"cwd": str(proj)})])
            mem.store.append([NewEvent("agent_response", f"s{i % 2}", f"done: {text}", str(i))])
        mem.store.append([NewEvent("session_end", "s0", "Session ended (other)", "end", {"reason": "other"})])
    name = _name()
    result = _cli("-C", str(proj), "migrate", "--to", alice, "--as", name, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["events"] == 9 and report["problems"] == [] and report["searches_agree"] == report["searches"] == 4
    with PgStore(alice, name, create=False) as server, Memory.open(proj) as mem:
        assert server.count() == mem.store.count() == 9
        assert [s["event_count"] for s in server.sessions()] == [s["event_count"] for s in mem.store.sessions()]
        assert server.session("s0")["ended_at"] is not None
        assert team.status(mem)["pending"] == 0  # shared from now on, nothing left to push
    again = _cli("-C", str(proj), "migrate", "--to", alice, "--as", _name())
    assert again.exit_code == 1 and "already shared" in again.output


def test_word_searches_use_the_indexes_under_row_level_security_and_check_access(pg_server: Any) -> None:
    """``@@`` is not LEAKPROOF, so under the policies a plain query cannot use the GIN index; the search
    functions check access once and use it — for the caller's own projects only."""
    alice, carol = pg_role(pg_server, "alice"), pg_role(pg_server, "carol")
    name = _name()
    with PgStore(alice, name) as store:
        store.append([NewEvent("user_prompt", "s1", f"note {i} about zebrafinch pools", str(i)) for i in range(5)])
        plan = "\n".join(
            r[0]
            for r in store.db.execute(
                "EXPLAIN SELECT e.seq FROM memlane.events e WHERE e.project_id = %s AND e.tsv @@ 'zebrafinch'::tsquery",
                (name,),
            )
        )
        assert "events_tsv" not in plan, "the policy keeps the index out of a plain query"
        found = store.db.execute(
            "SELECT count(*) FROM memlane.word_search(%s, 'zebrafinch'::tsquery, '{}', '{}', 10, true,"
            " NULL, NULL, NULL, NULL, NULL)",
            (name,),
        ).fetchone()
        assert found == (5,)
        assert store.doc_freqs(["zebrafinch", "pools"]) == {"zebrafinch": 5, "pools": 5}
    with psycopg.connect(carol, autocommit=True) as conn:
        for sql in (
            "SELECT count(*) FROM memlane.word_search(%s, 'zebrafinch'::tsquery, '{}', '{}', 10, true,"
            " NULL, NULL, NULL, NULL, NULL)",
            "SELECT count(*) FROM memlane.gram_search(%s, '{zeb}', 10, NULL, NULL, NULL, NULL, NULL)",
        ):
            assert conn.execute(sql, (name,)).fetchone() == (0,)
        assert conn.execute("SELECT memlane.doc_counts(%s, '{zebrafinch}')", (name,)).fetchone() == (None,)
