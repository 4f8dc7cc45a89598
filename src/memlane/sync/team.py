"""What ``memlane team …`` and ``memlane migrate`` do, over a ``Memory`` (its local store) and the server.

- ``init_server``: the schema on the server (an administrator; ``memlane.store.postgres.schema``).
- ``share``: per-project opt-in. The project gets a name on the server (shared by every clone of it: two
  teammates' folders have different local ids), created there (owned by you) or joined (it was shared
  with you); optionally encrypted with the team key. From then on the daemon syncs it.
- ``status``: what is shared, what is waiting to go, what came from teammates, the last error.
- ``grant``/``revoke``/``members``: the owner decides which roles (or group roles) see the project.
- ``migrate_to``: share, copy everything across with ``COPY`` (vectors too), verify counts and searches.
"""

from __future__ import annotations

import json
import os
from typing import Any

from memlane import config, paths
from memlane.errors import InputError
from memlane.store.postgres.connection import DatabaseError, connect, database_url, redact
from memlane.sync.crypto import TeamKey
from memlane.sync.engine import ProjectSync, SyncReport, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memlane.memory import Memory
    from memlane.store.postgres.store import PgStore


def _url(cfg: config.Config, url: str | None = None) -> str:
    url = url or database_url(cfg)
    if not url:
        raise InputError("no team database: set database.url (memlane config set database.url postgresql://…)"
                         " or MEMLANE_DATABASE_URL")  # fmt: skip
    if not url.startswith(("postgresql://", "postgres://")):
        raise InputError(f"not a PostgreSQL URL: {redact(url)} (postgresql://host/db)")
    return url


def init_server(cfg: config.Config, url: str | None = None) -> list[int]:
    from memlane.store.postgres import schema

    url = _url(cfg, url)
    conn = connect(url)
    try:
        import psycopg

        try:
            return schema.migrate(conn)
        except psycopg.Error as exc:
            from memlane.store.postgres.connection import first_line

            raise DatabaseError(f"cannot set up memlane on {redact(url)}: {first_line(exc)}") from exc
    finally:
        conn.close()


def remote(mem: Memory, url: str | None = None, *, create: bool = False, encrypted: bool = False) -> PgStore:
    from memlane.store.postgres.store import PgStore

    state = mem.store.sync_state()
    name = state.get("remote")
    if not name:
        raise InputError(f"project {mem.project.id} is not shared: memlane team share")
    return PgStore(_url(mem.config, url), name, create=create, encrypted=encrypted)


def share(mem: Memory, name: str | None = None, *, encrypt: bool = False, url: str | None = None) -> dict[str, Any]:
    """Share the project as ``name`` (default: its folder's name) on the team server."""
    from memlane.store.postgres.store import PgStore

    url = _url(mem.config, url)
    state = mem.store.sync_state()
    name = (name or state.get("remote") or mem.project.name).strip()
    if not name or len(name) > 200:
        raise InputError("a project name on the server is 1 to 200 characters")
    if state.get("remote") and state["remote"] != name:
        raise InputError(f"already shared as '{state['remote']}': memlane team unshare first")
    key = TeamKey.load(mem.config.team.key_file) if encrypt else None
    server = PgStore(url, name, encrypted=encrypt)
    try:
        info = server.project()
        if info.get("encrypted") and key is None:
            key = TeamKey.load(mem.config.team.key_file)  # joining an encrypted project needs the key
        if key is not None and not info.get("encrypted"):
            raise InputError(f"'{name}' exists on the server unencrypted; share it without --encrypt")
        if key is not None:
            if info.get("key_check"):
                key.verify(name, bytes(info["key_check"]))
            else:
                server.set_key_check(key.check(name))
        owner = info.get("owner")
    finally:
        server.close()
    if not state.get("remote"):
        mem.store.sync_set(
            remote=name,
            server=redact(url),
            origin=os.urandom(8).hex(),
            push_seq=0,
            pull_seq=0,
            vector_seq=0,
            forget_push=mem.store.sync_forgotten_last(),
            forget_pull=0,
        )
    return {"project": mem.project.id, "remote": name, "server": redact(url), "owner": owner,
            "encrypted": bool(key)}  # fmt: skip


def unshare(mem: Memory) -> str:
    state = mem.store.sync_state()
    if not state.get("remote"):
        raise InputError(f"project {mem.project.id} is not shared")
    mem.store.sync_clear()
    return state["remote"]


def sync_now(mem: Memory) -> SyncReport:
    """One pass now, in this process (the daemon does the same every ``team.sync_interval_s``)."""
    import psycopg

    from memlane.store.postgres.connection import first_line

    try:
        report = ProjectSync(mem.store, mem.config).run()
    except psycopg.Error as exc:  # the network or the server: one line, as for the daemon's job
        record(mem.store, None, first_line(exc))
        raise DatabaseError(f"sync with {mem.store.sync_state().get('server')} failed: {first_line(exc)}") from exc
    except Exception as exc:
        record(mem.store, None, first_line(exc))
        raise
    record(mem.store, report, None)
    return report


def status(mem: Memory) -> dict[str, Any]:
    state = mem.store.sync_state()
    out: dict[str, Any] = {"project": mem.project.id, "shared": bool(state.get("remote"))}
    if not state.get("remote"):
        return out
    push = int(state.get("push_seq", 0))
    forgotten = mem.store.sync_forgotten_after(int(state.get("forget_push", 0)))
    out.update(
        remote=state["remote"],
        server=state.get("server", ""),
        pushed=int(state.get("pushed_total", 0)),
        pending=mem.store.sync_outgoing_count(push),
        pending_forgets=len(forgotten),
        from_teammates=mem.store.sync_pulled_count(),
        last_sync=state.get("last_sync") or None,
        last_error=state.get("last_error") or None,
    )
    return out


def members(mem: Memory) -> list[str]:
    server = remote(mem)
    try:
        return server.members()
    finally:
        server.close()


def grant(mem: Memory, role: str, *, allow: bool = True) -> None:
    server = remote(mem)
    try:
        (server.grant if allow else server.revoke)(role)
    finally:
        server.close()


# ---- migrate ----------------------------------------------------------------------------------


def migrate_to(mem: Memory, url: str, name: str | None = None, *, samples: int = 20) -> dict[str, Any]:
    """Copy the local store into a new project on ``url`` and verify it: event and session counts, vectors, and
    ``samples`` full-text searches (prompts of the store) that must find the same best events on both."""
    from memlane.store.postgres import bulk
    from memlane.store.postgres.store import PgStore

    url = _url(mem.config, url)
    if mem.store.sync_state().get("remote"):
        raise InputError(f"project {mem.project.id} is already shared as '{mem.store.sync_state()['remote']}'")
    name = (name or mem.project.name).strip()
    server = PgStore(url, name)
    try:
        if server.count():
            raise InputError(f"'{name}' on {redact(url)} already holds events: migrate into a new name (--as NAME)")
        origin = os.urandom(8).hex()
        rows = mem.store.sync_outgoing(0, 1 << 62)
        loaded = bulk.copy_events(server, _as_rows(mem, rows, origin), embedded=False)
        vectors = _copy_vectors(mem, server)
        report = verify(mem, server, samples)
    finally:
        server.close()
    last = rows[-1]["seq"] if rows else 0
    mem.store.sync_set(
        remote=name, server=redact(url), origin=origin, push_seq=last, pull_seq=0, vector_seq=last,
        forget_push=mem.store.sync_forgotten_last(), forget_pull=0, pushed_total=loaded,
    )  # fmt: skip
    return {"remote": name, "server": redact(url), "events": loaded, "vectors": vectors, **report}


def _as_rows(mem: Memory, rows: list[dict[str, Any]], origin: str) -> Any:
    from memlane import privacy

    for row in rows:
        content = privacy.filter_text(row["content"], mem.config.privacy).text
        metadata, _ = privacy.filter_value(json.loads(row["metadata"] or "{}"), mem.config.privacy)
        yield {**row, "content": content, "metadata": json.dumps(metadata, ensure_ascii=False), "origin": origin}


def _copy_vectors(mem: Memory, server: PgStore) -> int:
    try:
        model = json.loads((paths.vectors_dir(mem.project.id) / "model.json").read_text())
    except (OSError, ValueError):
        return 0
    from memlane.store.postgres import bulk
    from memlane.store.postgres.vectors import PgVectorIndex
    from memlane.vectors.index import VectorIndex

    local = VectorIndex(mem.project.id, model["version"], int(model["dim"]), mem.config.vectors)
    ids = sorted(local.event_ids() & {e for e in mem.store.embeddable_event_ids()})
    PgVectorIndex(server, model["version"], int(model["dim"])).ensure_index()
    copied = 0
    for start in range(0, len(ids), 2000):
        chunk = ids[start : start + 2000]
        copied += bulk.copy_vectors(server, model["version"], int(model["dim"]), local.vectors_of(chunk))
        server.outbox_complete(chunk)
    return copied


def verify(mem: Memory, server: PgStore, samples: int) -> dict[str, Any]:
    """Counts must match; each sampled search must find the same best event (or have it in the other's top 3)."""
    from memlane.retrieval.hybrid import Retriever

    local_stats, server_stats = mem.store.stats(), server.stats()
    problems = []
    for key in ("events", "sessions"):
        if local_stats[key] != server_stats[key]:
            problems.append(f"{key}: {local_stats[key]} here, {server_stats[key]} on the server")
    if local_stats["by_type"] != server_stats["by_type"]:
        problems.append("events by type differ")
    prompts = [e.content for e in mem.store.history(types=["user_prompt"], limit=samples)]
    agree = 0
    for prompt in prompts:
        query = " ".join(prompt.split()[:12])
        mine = [h.event.id for h in Retriever(mem.store, mem.config).search(query, limit=3)]
        theirs = [h.event.id for h in Retriever(server, mem.config).search(query, limit=3)]
        if (not mine and not theirs) or (mine and theirs and (mine[0] in theirs or theirs[0] in mine)):
            agree += 1
    if agree < len(prompts):
        problems.append(f"searches: {agree} of {len(prompts)} agree")
    return {"searches": len(prompts), "searches_agree": agree, "problems": problems}
