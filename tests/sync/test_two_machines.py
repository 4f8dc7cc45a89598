"""Two simulated machines (two data dirs, two real daemons, two PostgreSQL roles) share one project through a
real PostgreSQL server: they converge after concurrent writes, after one of them loses the network for a
while, and after a forget; a third role that the project was not shared with sees nothing of it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from conftest import pg_role, wait_until


class Cuttable:
    """A TCP forwarder on loopback in front of the server: ``cut()`` drops every connection and refuses new
    ones (a network cut for the machine that connects through it), ``mend()`` lets them through again."""

    def __init__(self, target_port: int) -> None:
        self.target = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open = True
        self.links: list[socket.socket] = []
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.open:
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target))
            with self.lock:
                self.links += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        self.open = False
        with self.lock:
            for s in self.links:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.links.clear()

    def mend(self) -> None:
        self.open = True

    def close(self) -> None:
        self.closed = True
        self.cut()
        self.listener.close()


class Machine:
    """A data dir, a user home, a clone of the project, and the memlane CLI and daemon run with them."""

    def __init__(self, root: Path, url: str) -> None:
        self.home = root / "memlane-home"
        self.user = root / "user-home"
        self.user.mkdir(parents=True)
        self.project = root / "src" / "shop"
        (self.project / ".git").mkdir(parents=True)
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")},
            "MEMLANE_HOME": str(self.home),
            "HOME": str(self.user),
            "MEMLANE_DATABASE_URL": url,
            "MEMLANE_TEAM_SYNC_INTERVAL_S": "0.2",
            "MEMLANE_DAEMON_AUTOSTART": "false",
        }
        self.daemon: subprocess.Popen[bytes] | None = None

    def run(self, *args: str, ok: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "memlane", "-C", str(self.project), *args],
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if ok:
            assert done.returncode == 0, done.stderr
        return done

    def prompt(self, text: str, session: str) -> None:
        payload = {"session_id": session, "cwd": str(self.project), "prompt": text, "prompt_id": text}
        subprocess.run(
            [sys.executable, "-m", "memlane", "hook", "UserPromptSubmit"],
            input=json.dumps(payload),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )

    def contents(self) -> set[str]:
        out = self.run("history", "--json", "--limit", "100000").stdout
        return {e["content"] for e in json.loads(out or "[]")}

    def ids(self) -> set[str]:
        out = self.run("history", "--json", "--limit", "100000").stdout
        return {e["id"] for e in json.loads(out or "[]")}

    def status(self) -> dict[str, Any]:
        return dict(json.loads(self.run("team", "status", "--json").stdout))

    def start_daemon(self) -> None:
        self.daemon = subprocess.Popen(
            [sys.executable, "-m", "memlane", "serve", "--port", "0", "--quiet", "--no-worker"],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(lambda: (self.home / "daemon.json").exists() or list(self.home.glob("daemon*.json")), "daemon up")

    def stop_daemon(self) -> None:
        if self.daemon is not None:
            self.daemon.terminate()
            self.daemon.wait(timeout=30)
            self.daemon = None


@pytest.fixture
def machines(pg_server: Any, tmp_path: Path) -> Iterator[tuple[Machine, Machine, Cuttable]]:
    alice = pg_role(pg_server, "alice")
    bob = pg_role(pg_server, "bob")
    link = Cuttable(pg_server.port)
    bob = bob.replace(f":{pg_server.port}/", f":{link.port}/")  # bob reaches the server through the cuttable link
    a, b = Machine(tmp_path / "a", alice), Machine(tmp_path / "b", bob)
    try:
        yield a, b, link
    finally:
        a.stop_daemon()
        b.stop_daemon()
        link.close()
        with psycopg.connect(pg_server.url(), autocommit=True) as conn:
            conn.execute("DELETE FROM memlane.projects WHERE id = 'shop-two-machines'")


def test_two_machines_converge_after_concurrent_writes_a_network_cut_and_a_forget(
    machines: tuple[Machine, Machine, Cuttable], pg_server: Any
) -> None:
    a, b, link = machines
    a.prompt("first prompt on machine a: the checkout pool size", "sa0")
    a.run("team", "share", "--as", "shop-two-machines")
    a.run("team", "grant", "bob")
    b.prompt("first prompt on machine b: the invoice exporter", "sb0")
    b.run("team", "share", "--as", "shop-two-machines")
    a.start_daemon()
    b.start_daemon()

    def write(m: Machine, tag: str) -> None:
        for i in range(8):
            m.prompt(f"{tag} concurrent prompt {i} about the label worker", f"s{tag}1")

    threads = [threading.Thread(target=write, args=(m, tag)) for m, tag in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = {f"{tag} concurrent prompt {i} about the label worker" for tag in "ab" for i in range(8)}
    expected |= {"first prompt on machine a: the checkout pool size", "first prompt on machine b: the invoice exporter"}
    wait_until(lambda: a.contents() == expected and b.contents() == expected, "both machines hold all 18 prompts")
    assert a.ids() == b.ids(), "a pulled event keeps its id"

    # Machine b loses the network: its hooks still store at once; machine a's work waits on the server.
    link.cut()
    b.prompt("written on b while its network is down", "sb2")
    a.prompt("written on a while b is cut off", "sa2")
    wait_until(lambda: b.status().get("last_error"), "b's status shows the failed sync")
    assert "written on b while its network is down" in b.contents()
    assert b.status()["pending"] >= 1
    link.mend()
    expected |= {"written on b while its network is down", "written on a while b is cut off"}
    wait_until(lambda: a.contents() == expected and b.contents() == expected, "converged after the cut")
    wait_until(lambda: not b.status().get("last_error") and b.status()["pending"] == 0, "b caught up, no error")

    # Machine b forgets one of a's prompts: it goes from the server and from machine a too.
    history = json.loads(b.run("history", "--json", "--limit", "100").stdout)
    victim = next(e for e in history if e["content"] == "a concurrent prompt 3 about the label worker")
    b.run("forget", victim["citation"], "--yes")
    expected.discard(victim["content"])
    wait_until(lambda: a.contents() == expected and b.contents() == expected, "the forget reached machine a")
    tombstones = [t for t in json.loads(a.run("stats", "--json").stdout).items() if t[0] == "tombstones"]
    assert tombstones == [("tombstones", 1)], "machine a keeps a tombstone of the teammate's forget"
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        rows = conn.execute("SELECT content FROM memlane.events WHERE project_id = 'shop-two-machines'").fetchall()
        gone = conn.execute(
            "SELECT count(*) FROM memlane.forgotten WHERE project_id = 'shop-two-machines' AND event_id = %s",
            (victim["id"],),
        ).fetchone()[0]
    assert {r[0] for r in rows} == expected and len(rows) == len(expected), "the server holds each event once"
    assert gone == 1
