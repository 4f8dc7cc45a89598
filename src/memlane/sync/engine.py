"""One sync pass of a shared project, and the daemon's job that runs them.

A pass, in order (each step resumable from its own cursor):

1. forgets: ids this machine forgot since the last pass go to the server, which deletes its copies and lists
   them in ``memlane.forgotten`` (so nobody pushes them again);
2. events: this machine's own events after ``push_seq`` (never the teammates' it pulled), privacy filter
   applied again, sealed with the team key when the project is encrypted; inserted by id, so a batch sent
   twice (a crash between the server's commit and the local cursor) adds nothing;
3. vectors: of own events already embedded here (plain projects only: vectors would say what sealed text
   means), so the server can search by meaning without embedding anything;
4. teammates' events after ``pull_seq``, stored here under their own ids with the cursor in one transaction;
5. teammates' forgets after ``forget_pull``: deleted here too, vectors included.

The server gives a project's ``seq`` values in commit order (each write holds the project's advisory lock),
so pulling by ``seq`` misses nothing.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from memlane import config, paths, privacy
from memlane.logs import log
from memlane.store.keys import now_iso
from memlane.store.postgres.connection import DatabaseError, connect, database_url, first_line, redact
from memlane.sync.crypto import TeamKey


@dataclass
class SyncReport:
    pushed: int = 0
    pulled: int = 0
    vectors: int = 0
    forgets_pushed: int = 0
    forgets_pulled: int = 0
    errors: list[str] = field(default_factory=list)


def aad(project: str, event_id: str) -> str:
    return f"memlane:{project}:{event_id}"


class ProjectSync:
    """Push and pull one shared project between its local store and the server."""

    def __init__(self, local: Any, cfg: config.Config, conn: Any = None) -> None:
        from memlane.store.postgres.store import PgStore

        state = local.sync_state()
        if not state.get("remote"):
            raise DatabaseError("this project is not shared: memlane team share")
        url = database_url(cfg)
        if not url:
            raise DatabaseError(f"project is shared on {state.get('server')}: set database.url or MEMLANE_DATABASE_URL")
        if state.get("server") and redact(url) != state["server"]:
            raise DatabaseError(f"project is shared on {state['server']}, but database.url is {redact(url)}")
        self.local = local
        self.cfg = cfg
        self.state = state
        self.name = state["remote"]
        self.origin = state["origin"]
        self.batch = max(1, cfg.team.batch)
        self.remote = PgStore(url, self.name, conn=conn if conn is not None else connect(url), create=False)
        self.key: TeamKey | None = None
        if self.remote.project().get("encrypted"):
            self.key = TeamKey.load(cfg.team.key_file)
            check = self.remote.project().get("key_check")
            if check:
                self.key.verify(self.name, bytes(check))

    def _cursor(self, name: str) -> int:
        return int(self.local.sync_state().get(name, 0))

    def run(self) -> SyncReport:
        report = SyncReport()
        report.forgets_pushed = self.push_forgets()
        report.pushed = self.push_events()
        report.vectors = self.push_vectors()
        report.pulled = self.pull_events()
        report.forgets_pulled = self.pull_forgets()
        return report

    # ---- out ---------------------------------------------------------------------------------

    def outgoing(self, row: dict[str, Any]) -> dict[str, Any]:
        """An event as it leaves the machine: filtered again (settings may be stricter than when it was stored)."""
        content = privacy.filter_text(row["content"], self.cfg.privacy).text
        metadata, _ = privacy.filter_value(json.loads(row["metadata"] or "{}"), self.cfg.privacy)
        out = {k: row[k] for k in ("id", "type", "session_id", "ts", "dedupe_key")}
        out["origin"] = self.origin
        if self.key is None:
            return {**out, "content": content, "metadata": json.dumps(metadata, ensure_ascii=False)}
        payload = json.dumps({"content": content, "metadata": metadata, "dedupe_key": row["dedupe_key"]})
        sealed = self.key.seal(payload.encode(), aad(self.name, row["id"]))
        return {**out, "content": "", "metadata": "{}", "dedupe_key": f"sealed:{row['id']}", "sealed": sealed}

    def push_events(self) -> int:
        pushed = 0
        cursor = self._cursor("push_seq")
        while True:
            rows = self.local.sync_outgoing(cursor, self.batch)
            if not rows:
                return pushed
            ready = [self.outgoing(r) for r in rows]
            with self.remote.write() as cur:
                pushed += sum(self.remote.insert_row(cur, r) for r in ready)
            cursor = rows[-1]["seq"]
            self.local.sync_set(push_seq=cursor)

    def push_forgets(self) -> int:
        cursor = self._cursor("forget_push")
        found = self.local.sync_forgotten_after(cursor)
        if not found:
            return 0
        ids = [i for _, i in found]
        present = self.remote.select_for_forget(ids=ids)
        here = {p[0] for p in present}
        self.remote.forget(
            present, "team", f"forgotten on {self.origin}", origin=self.origin, also=[i for i in ids if i not in here]
        )
        self.local.sync_set(forget_push=found[-1][0])
        return len(ids)

    def push_vectors(self) -> int:
        if self.key is not None:
            return 0
        try:
            model = json.loads((paths.vectors_dir(self.local.project_id) / "model.json").read_text())
        except (OSError, ValueError):
            return 0  # nothing embedded here yet
        from memlane.store.postgres.vectors import PgVectorIndex
        from memlane.vectors.index import VectorIndex

        local = VectorIndex(self.local.project_id, model["version"], int(model["dim"]), self.cfg.vectors)
        remote = PgVectorIndex(self.remote, model["version"], int(model["dim"]))
        sent = 0
        cursor = self._cursor("vector_seq")
        while True:
            ids, last = self.local.sync_embedded_after(cursor, self.batch)
            if last == cursor:
                return sent
            rows = local.vectors_of(ids) if ids else []
            on_server = {e.id for e in self.remote.by_ids(ids)} if ids else set()
            rows = [r for r in rows if r["event_id"] in on_server]  # an event forgotten meanwhile has none
            remote.upsert(rows)
            if rows:
                self.remote.outbox_complete(sorted({r["event_id"] for r in rows}))
            sent += len(rows)
            cursor = last
            self.local.sync_set(vector_seq=cursor)

    # ---- in ----------------------------------------------------------------------------------

    def incoming(self, row: dict[str, Any]) -> dict[str, Any]:
        if row.get("sealed") is None:
            return row
        if self.key is None:
            raise DatabaseError(f"project '{self.name}' holds sealed events: set team.key_file to the team key")
        payload = json.loads(self.key.open(bytes(row["sealed"]), aad(self.name, row["id"])))
        return {
            **row,
            "content": payload["content"],
            "metadata": json.dumps(payload["metadata"], ensure_ascii=False),
            "dedupe_key": payload["dedupe_key"],
        }

    def pull_events(self) -> int:
        pulled = 0
        cursor = self._cursor("pull_seq")
        while True:
            rows = self.remote.pull_events(cursor, self.origin, self.batch)
            if not rows:
                return pulled
            cursor = rows[-1]["seq"]
            pulled += self.local.sync_append_pulled([self.incoming(r) for r in rows], cursor)

    def pull_forgets(self) -> int:
        from memlane.vectors.index import forget_vectors

        done = 0
        cursor = self._cursor("forget_pull")
        while True:
            found = self.remote.pull_forgotten(cursor, self.origin)
            if not found:
                return done
            cursor = found[-1][0]
            removed = self.local.sync_apply_forgets([f[1] for f in found], found[-1][2], cursor)
            if removed:
                forget_vectors(self.local.project_id, removed)
            done += len(removed)


def record(local: Any, report: SyncReport | None, error: str | None) -> None:
    """What the last pass did, for ``memlane team status``."""
    values: dict[str, object] = {"last_attempt": now_iso()}
    if error is None:
        values.update(last_sync=now_iso(), last_error="")
        assert report is not None
        values.update(
            pushed_total=int(local.sync_state().get("pushed_total", 0)) + report.pushed,
            pulled_total=int(local.sync_state().get("pulled_total", 0)) + report.pulled,
        )
    else:
        values["last_error"] = error
    local.sync_set(**values)


class SyncJob:
    """The daemon's team-sync job: every ``team.sync_interval_s``, one pass over each shared project.

    A small class with ``run_once`` (one pass, what tests call) and ``run`` (the loop until ``stop``): the
    daemon starts ``run`` on a thread of its own next to the embedding worker (``daemon/server.py``,
    ``serve``); with a shared job loop it becomes one more job there. Errors (a network cut, a server
    restarting) are recorded per project and retried next time; one connection per pass is kept while it
    works and dropped on any error, so a pass after a cut starts afresh.
    """

    name = "team-sync"

    def __init__(self, cfg: config.Config, stop: threading.Event | None = None) -> None:
        self.cfg = cfg
        self.stop = stop or threading.Event()
        self.conn: Any = None
        self.state: dict[str, Any] = {"passes": 0, "last_error": None}

    def shared_projects(self) -> list[str]:
        from memlane import project

        return [str(e.get("id")) for e in project.known_projects()]

    def run_once(self) -> SyncReport:
        from memlane.memory import Memory

        total = SyncReport()
        url = database_url(self.cfg)
        for pid in self.shared_projects():
            if self.stop.is_set():
                break
            with Memory.open(project_id=pid, cfg=self.cfg, create=None) as mem:
                if mem.store.ephemeral or not mem.store.sync_state().get("remote"):
                    continue
                try:
                    if self.conn is None or self.conn.closed:
                        if not url:
                            raise DatabaseError("database.url is not set")
                        self.conn = connect(url)
                    report = ProjectSync(mem.store, self.cfg, conn=self.conn).run()
                except Exception as exc:  # noqa: BLE001 - one project's failure (or the network) must not stop the rest
                    message = first_line(exc)
                    record(mem.store, None, message)
                    total.errors.append(f"{pid}: {message}")
                    self.state["last_error"] = message
                    log("sync", "warning", f"{pid}: {message}")
                    self._drop()
                    continue
                record(mem.store, report, None)
                for name in ("pushed", "pulled", "vectors", "forgets_pushed", "forgets_pulled"):
                    setattr(total, name, getattr(total, name) + getattr(report, name))
        self.state["passes"] += 1
        return total

    def _drop(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001 - already broken
                pass
        self.conn = None

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                self.run_once()
            except Exception as exc:  # noqa: BLE001 - e.g. the projects registry unreadable: try again later
                self.state["last_error"] = repr(exc)
                log("sync", "error", f"pass failed: {exc!r}")
            self.stop.wait(max(0.05, self.cfg.team.sync_interval_s - (time.monotonic() - started)))
        self._drop()
