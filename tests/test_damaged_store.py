"""A corrupt, truncated or empty memory.db: one-line errors everywhere, and `doctor --repair` recovers it."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlane import project
from memlane.cli.main import cli
from memlane.memory import Memory
from memlane.store.db import NewEvent, Store, StoreDamaged
from memlane.store.repair import diagnose, recover

N_EVENTS = 400


def _fill(proj: Path, n: int = N_EVENTS) -> str:
    with Memory.open(proj) as mem:
        mem.store.append(
            NewEvent("user_prompt", f"s{i // 50}", f"prompt {i} about the connection pool zebra{i}", f"t{i}")
            for i in range(n)
        )
        mem.store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return mem.store.file


def _smash(path: str, at_fraction: float = 0.5, pages: int = 3) -> None:
    """Overwrite a few pages in the middle of the file with garbage, as a bad sector would."""
    size = os.path.getsize(path)
    with open(path, "r+b") as fh:
        fh.seek(int(size * at_fraction) // 4096 * 4096)
        fh.write(b"\xde\xad\xbe\xef" * 1024 * pages)


def _cli(proj: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["-C", str(proj), *args])
    return result.exit_code, result.output


@pytest.mark.parametrize("damage", ["header", "truncate", "pages"])
@pytest.mark.parametrize("command", [["history"], ["search", "pool", "--text-only"], ["stats"], ["sessions"]])
def test_cli_gives_one_line_on_a_damaged_store(proj: Path, damage: str, command: list[str]) -> None:
    db = _fill(proj)
    if damage == "header":
        with open(db, "r+b") as fh:
            fh.write(b"this is not sqlite" * 10)
    elif damage == "truncate":
        os.truncate(db, os.path.getsize(db) // 3)
    else:
        _smash(db, 0.3, pages=6)
        _smash(db, 0.7, pages=6)
    code, out = _cli(proj, *command)
    if damage == "pages" and code == 0:
        pytest.skip("this command read no damaged page")  # e.g. sessions reads only its own small table
    assert code == 1
    assert "Traceback" not in out
    assert len(out.strip().splitlines()) == 1
    assert "doctor --repair" in out


def test_empty_file_is_reported_not_reused(proj: Path) -> None:
    db = _fill(proj, 5)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    open(db, "wb").close()
    with pytest.raises(StoreDamaged, match="empty"):
        Store(db, "x")
    assert os.path.getsize(db) == 0  # untouched: not silently turned into a new store
    code, out = _cli(proj, "history")
    assert code == 1 and "empty" in out and "doctor --repair" in out
    assert not diagnose(db).ok


def test_doctor_repair_recovers_a_damaged_store(proj: Path) -> None:
    db = _fill(proj)
    _smash(db, 0.5, pages=2)
    assert not diagnose(db).ok
    _code, out = _cli(proj, "doctor", "--repair")
    assert "recovered" in out and "Traceback" not in out
    assert diagnose(db).ok
    kept = [n for n in os.listdir(os.path.dirname(db)) if ".damaged-" in n]
    assert kept, "the damaged file is kept aside"
    with Memory.open(proj, create=False) as mem:
        count = mem.store.count()
        assert N_EVENTS // 2 < count <= N_EVENTS  # most rows survive a two-page hole
        # FTS was rebuilt from the recovered events
        survivor = mem.store.history(limit=1)[0]
        word = survivor.content.split()[-1]
        assert [e.id for e, _ in mem.store.fts(word)] == [survivor.id]
        pending = mem.store.db.execute("SELECT COUNT(*) FROM outbox WHERE status = 'pending'").fetchone()[0]
        assert pending == count  # every recovered event is queued for its vector
        sessions = sum(s["event_count"] for s in mem.store.sessions(100))
        assert sessions == count


@pytest.mark.parametrize("use_cli", [True, False])
def test_recover_with_and_without_the_sqlite3_shell(proj: Path, use_cli: bool) -> None:
    db = _fill(proj)
    pid = project.identify(proj).id
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO imports VALUES ('claude', '/h/a.jsonl', 's', 1, 1, 400, 'now')")
    _smash(db, 0.6, pages=1)
    report = recover(db, pid, use_cli=use_cli)
    # Some builds of the shell (Debian's 3.40) fail `.recover` outright: the Python copy must take over.
    assert report.method in (("sqlite3 .recover", "a row-by-row copy") if use_cli else ("a row-by-row copy",))
    assert report.integrity == "ok"
    assert 0 < report.rows["events"] <= N_EVENTS
    with Store(db, pid) as store:
        # what the salvage read, plus what the page reader found under a page the salvage could not reach
        # (which page the smash hits depends on the schema's layout)
        assert store.count() == sum(report.sources.values()) <= N_EVENTS
        # no ledger: `memlane import` re-reads history and restores imported events that were lost
        assert store.db.execute("SELECT COUNT(*) FROM imports").fetchone()[0] == 0
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_doctor_repair_of_an_empty_file_starts_a_clean_store(proj: Path) -> None:
    db = _fill(proj, 3)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    open(db, "wb").close()
    _code, out = _cli(proj, "doctor", "--repair")
    assert "was empty" in out
    assert os.path.getsize(db) > 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0


def test_hook_spools_when_the_store_is_damaged_and_repair_replays(proj: Path) -> None:
    import json

    from memlane import hooks
    from memlane.capture import spool

    db = _fill(proj, 10)
    with open(db, "r+b") as fh:
        fh.write(b"garbage!" * 20)
    payload = {"session_id": "s-x", "cwd": str(proj), "hook_event_name": "UserPromptSubmit", "prompt": "keep me"}
    assert hooks.handle("UserPromptSubmit", json.dumps(payload).encode()) == ""
    assert len(spool.pending()) == 1
    _cli(proj, "doctor", "--repair")
    assert spool.pending() == []
    with Memory.open(proj, create=False) as mem:
        assert [e.content for e in mem.store.history(limit=1)] == ["keep me"]


def test_a_store_under_repair_is_left_alone_and_hooks_spool(proj: Path) -> None:
    import fcntl
    import json

    from memlane import hooks
    from memlane.capture import spool
    from memlane.store.db import REPAIR_SUFFIX

    db = _fill(proj, 3)
    fd = os.open(db + REPAIR_SUFFIX, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # what `doctor --repair` holds while it works
    try:
        with pytest.raises(sqlite3.OperationalError, match="being repaired"):
            Store(db, "x")
        payload = {"session_id": "s-r", "cwd": str(proj), "prompt": "during the repair"}
        hooks.handle("UserPromptSubmit", json.dumps(payload).encode())
        assert len(spool.pending()) == 1
    finally:
        os.close(fd)
    # the marker of a repair that died (nobody holds its lock) is ignored
    with Store(db, "x") as store:
        assert store.count() == 3
    hooks.handle("UserPromptSubmit", json.dumps({**payload, "prompt": "after"}).encode())
    assert spool.pending() == []
    with Memory.open(proj, create=False) as mem:
        assert {"during the repair", "after"} <= {e.content for e in mem.store.history()}


# ---- a lost root page of the events table (issue 36) ---------------------------------------------------


def _lose_events_root(db: str, how: str) -> None:
    """Overwrite the events table's root page, the whole table in a small store: with garbage, zeros, or a
    valid empty leaf (which SQLite reads as a table with no rows, so only memlane's check can tell)."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'events'").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    page = {
        "garbage": b"\xde\xad\xbe\xef" * (size // 4),
        "zeros": bytes(size),
        "empty leaf": bytes([0x0D, 0, 0, 0, 0, (size >> 8) & 0xFF, size & 0xFF, 0]) + bytes(size - 8),
    }[how]
    with open(db, "r+b") as fh:
        fh.seek((root - 1) * size)
        fh.write(page)


@pytest.mark.parametrize("how", ["garbage", "zeros", "empty leaf"])
def test_a_lost_events_root_is_reported_by_every_command(proj: Path, how: str) -> None:
    db = _fill(proj, 8)
    cite = Memory.open(proj, create=False).store.history(limit=1)[0].cite
    _lose_events_root(db, how)
    for command in (
        ["history"],
        ["history", "--json"],
        ["stats"],
        ["sessions"],
        ["search", "pool", "--text-only"],
        ["show", cite],
        ["timeline", cite],
        ["export"],
        ["forget", "--session", "s0", "--dry-run"],
        ["privacy", "scan"],
        ["vectors", "status"],
        ["context", "learn"],
        ["process"],
    ):
        code, out = _cli(proj, *command)
        assert code == 1, (command, out)
        assert out.count("\n") == 1 and out.startswith("Error: memory store"), (command, out)
        assert "damaged" in out and "doctor --repair" in out, (command, out)
    code, out = _cli(proj, "status")  # a report of many lines: the project's line says it, and the exit
    assert code == 1 and "store damaged (" in out and "doctor --repair" in out
    code, out = _cli(proj, "doctor")
    assert code == 1 and "FAIL store" in out


def test_the_damage_check_passes_healthy_stores_of_every_shape(proj: Path) -> None:
    from memlane.store.health import probe

    with Memory.open(proj) as mem:
        assert probe(mem.store.db) is None  # empty
        mem.store.append([NewEvent("session_start", "s", "Session started in /x", "t0")])
        assert probe(mem.store.db) is None  # only bookkeeping: nothing in the full-text index
        mem.store.append(NewEvent("user_prompt", "s", f"prompt {i}", f"t{i}") for i in range(1, 2000))
        assert probe(mem.store.db) is None  # several pages: an interior root
        mem.forget(session="s")
        assert probe(mem.store.db) is None  # emptied by a forget


def test_repair_brings_back_the_events_of_a_lost_root_from_a_backup(proj: Path) -> None:
    from memlane.store import backup

    db = _fill(proj, 8)
    with Memory.open(proj, create=False) as mem:
        before = {(e.id, e.content) for e in mem.store.history(limit=100)}
    taken = backup.take(db, keep=3)
    assert taken is not None and oct(os.stat(taken).st_mode & 0o777) == "0o600"
    _lose_events_root(db, "empty leaf")
    code, out = _cli(proj, "doctor", "--repair")
    assert "Traceback" not in out
    assert f"8 from backup {os.path.basename(taken)}" in out, out
    assert "0 from the damaged file" in out
    with Memory.open(proj, create=False) as mem:
        assert {(e.id, e.content) for e in mem.store.history(limit=100)} == before  # same ids: vectors still match
        assert sum(s["event_count"] for s in mem.store.sessions(100)) == 8
    code, out = _cli(proj, "history")
    assert code == 0 and out.count("mem:") == 8


def test_repair_brings_back_hook_captured_events_from_the_transcript(
    proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from conftest import PAYLOADS
    from memlane import hooks

    claude_dir = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_dir))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    for path in sorted(PAYLOADS.glob("*.json")):
        data = {**json.loads(path.read_text()), "cwd": str(proj)}
        hooks.handle(data["hook_event_name"], json.dumps(data).encode())
    conversation = ("user_prompt", "agent_response", "tool_observation")
    with Memory.open(proj, create=False) as mem:
        captured = {(e.type, e.content) for e in mem.store.history(limit=500) if e.type in conversation}
        db = mem.store.file
    assert len(captured) >= 6
    sys_path_fixture = Path(__file__).parent / "importers"
    monkeypatch.syspath_prepend(str(sys_path_fixture))
    from history_fixtures import real_transcript

    real_transcript(claude_dir, proj)
    _lose_events_root(db, "garbage")
    code, out = _cli(proj, "history")
    assert code == 1 and "damaged" in out
    code, out = _cli(proj, "doctor", "--repair")
    assert "Traceback" not in out
    assert "from Claude Code transcripts" in out and "0 from Claude Code transcripts" not in out, out
    with Memory.open(proj, create=False) as mem:
        back = {(e.type, e.content) for e in mem.store.history(limit=500) if e.type in conversation}
    assert captured <= back  # every prompt, answer and tool result the hooks had stored


def test_repair_never_brings_back_a_forgotten_event(
    proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from history_fixtures import rich_claude_session

    from memlane.store import backup

    claude_dir = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_dir))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    rich_claude_session("s-forget", proj).write(claude_dir)
    code, out = _cli(proj, "import", "--no-embed")
    assert code == 0, out
    with Memory.open(proj, create=False) as mem:
        prompt = mem.store.history(types=["user_prompt"], limit=1)[0]
        db = mem.store.file
    backup.take(db, keep=3)
    code, out = _cli(proj, "forget", prompt.cite, "--yes")
    assert code == 0 and backup.existing(db) == []  # a forget takes the backups with it
    backup.take(db, keep=3)
    _lose_events_root(db, "garbage")
    _cli(proj, "doctor", "--repair")
    with Memory.open(proj, create=False) as mem:
        contents = [e.content for e in mem.store.history(limit=500)]
    assert contents and prompt.content not in contents
    code, out = _cli(proj, "import", "--no-embed", "--force", "--json")
    assert code == 0
    with Memory.open(proj, create=False) as mem:
        assert prompt.content not in [e.content for e in mem.store.history(limit=500)]


@pytest.mark.parametrize("how", ["garbage", "empty leaf"])
def test_repair_reads_the_leaves_of_a_lost_interior_root_page_by_page(proj: Path, how: str) -> None:
    db = _fill(proj, N_EVENTS)  # several leaf pages under an interior root
    with Memory.open(proj, create=False) as mem:
        before = {(e.id, e.cite, e.content, e.ts) for e in mem.store.history(limit=1000)}
        forgotten = mem.store.history(limit=1)[0]
    _cli(proj, "forget", forgotten.cite, "--yes")
    _lose_events_root(db, how)
    _code, out = _cli(proj, "doctor", "--repair")
    assert f"{N_EVENTS - 1} from the damaged file's pages, read one by one" in out, out
    with Memory.open(proj, create=False) as mem:
        after = {(e.id, e.cite, e.content, e.ts) for e in mem.store.history(limit=1000)}
        assert after == before - {(forgotten.id, forgotten.cite, forgotten.content, forgotten.ts)}
        assert mem.store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert [e.id for e, _ in mem.store.fts("zebra7")] != []  # the full-text index is rebuilt from them


def test_the_page_reader_decodes_what_sqlite_wrote(tmp_path: Path) -> None:
    from memlane.store import pagewalk

    db = str(tmp_path / "t.db")
    long_text = "x" * 20000  # several overflow pages
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, a TEXT, b INTEGER, c REAL, d BLOB, e TEXT)")
        rows = [(None, "short", -5, 1.5, b"\x00\x01", None), (None, long_text, 2**40, -0.25, b"", "é" * 3)]
        conn.executemany("INSERT INTO t VALUES (?,?,?,?,?,?)", rows)
    got = [values for _rowid, values in pagewalk.records(db)]
    assert [None, "short", -5, 1.5, b"\x00\x01", None] in got
    assert [None, long_text, 2**40, -0.25, b"", "é" * 3] in got


def test_repair_brings_back_codex_sessions_from_their_rollouts(
    proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "importers"))
    from history_fixtures import rich_codex_rollout

    codex_dir = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(codex_dir))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "no-claude"))
    rich_codex_rollout("019a2d7a-41c4-78b1-b7cc-a45d62a89cd9", proj).write(codex_dir)
    code, out = _cli(proj, "import", "--no-embed")
    assert code == 0, out
    with Memory.open(proj, create=False) as mem:
        before = {(e.type, e.content) for e in mem.store.history(limit=500)}
        db = mem.store.file
    _lose_events_root(db, "zeros")
    # The rollout's tool outputs make a root with leaves under it, which the page reader would bring back:
    # take that source away, so what comes back comes from the rollout.
    from memlane.store import pagewalk

    monkeypatch.setattr(pagewalk, "rows_like", lambda _path, shapes: {name: [] for name in shapes})
    _code, out = _cli(proj, "doctor", "--repair")
    assert f"{len(before)} from Codex rollouts" in out, out
    with Memory.open(proj, create=False) as mem:
        assert {(e.type, e.content) for e in mem.store.history(limit=500)} == before


def test_the_damage_probe_reads_one_snapshot_while_another_process_writes(tmp_path: Path) -> None:
    """A commit between the probe's reads (a hook, the daemon's sync) must not look like a lost page."""
    import sqlite3

    from memlane.store import NewEvent, Store
    from memlane.store.health import probe

    store = Store(tmp_path / "memory.db", "p")
    store.append([NewEvent("user_prompt", "s", "first", "1")])
    reader = sqlite3.connect(tmp_path / "memory.db", isolation_level=None)
    real = reader.execute

    class Interleaved:  # commits a new event right after the probe's first statement
        done = False

        def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
            cursor = real(sql, *args)
            if not Interleaved.done and "max(id) FROM events_fts_docsize" in sql:
                Interleaved.done = True
                store.append([NewEvent("user_prompt", "s", "second", "2")])
            return cursor

        def __getattr__(self, name: str) -> object:
            return getattr(reader, name)

    assert probe(Interleaved()) is None  # type: ignore[arg-type]
    assert Interleaved.done
    reader.close()
    store.close()
