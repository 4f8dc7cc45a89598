"""Connecting to the team's PostgreSQL: the URL, where credentials may come from, errors in one line.

The URL comes from ``database.url`` in config.toml or ``MEMLANE_DATABASE_URL``. Credentials never come from
config.toml (a URL there with a password is refused when the config is read): libpq takes them from
``PGPASSWORD``/``PGUSER`` (or ``MEMLANE_DATABASE_URL`` itself, which is the environment), from a password
file (``~/.pgpass``, ``PGPASSFILE`` or ``passfile=`` in the URL; memlane refuses one that others can
read, where libpq would only warn and skip it), or from a connection service file (``service=`` in the
URL, ``PGSERVICEFILE``). TLS options (``sslmode``, ``sslrootcert``, ``sslcert``, ``sslkey``, …) in the URL
reach libpq unchanged.

psycopg 3 is an optional dependency (``memlane[postgres]``); nothing imports it until a URL is used.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

from memlane.errors import MemlaneError


class DatabaseError(MemlaneError):
    """The team database cannot be used (unreachable, refused, not set up); the message says what to do."""


def is_url(value: str) -> bool:
    return value.startswith(("postgresql://", "postgres://"))


def has_password(url: str) -> bool:
    """Whether a URL carries a password (``user:secret@``, or ``password=`` in its query)."""
    parts = urlsplit(url)
    return bool(parts.password) or "password" in parse_qs(parts.query)


def redact(url: str) -> str:
    """The URL without its password, for messages and status lines."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(f":{parts.password}@", ":***@", 1)
    query = "&".join(
        f"{k}=***" if k == "password" else f"{k}={v}" for k, vs in parse_qs(parts.query).items() for v in vs
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _passfile(url: str) -> str | None:
    named = parse_qs(urlsplit(url).query).get("passfile")
    if named:
        return named[-1]
    if os.environ.get("PGPASSFILE"):
        return os.environ["PGPASSFILE"]
    home = os.path.expanduser("~")
    return os.path.join(home, ".pgpass")


def check_passfile(url: str) -> None:
    """A password file others can read is refused (libpq would skip it with a warning on stderr)."""
    path = _passfile(url)
    if not path or not os.path.exists(path):
        return
    mode = os.stat(path).st_mode
    if mode & 0o077:
        raise DatabaseError(
            f"password file {path} is readable by others (mode {mode & 0o777:o}); run: chmod 600 {path}"
        )


def connect(url: str, *, autocommit: bool = True, timeout_s: int = 10) -> Any:
    """A psycopg connection; ``DatabaseError`` (one line) when the driver is missing or the server refuses."""
    try:
        import psycopg
    except ImportError as exc:
        raise DatabaseError("PostgreSQL support is not installed: pip install 'memlane[postgres]' (psycopg 3)") from exc
    check_passfile(url)
    # prepare_threshold None: every statement is planned with its values, so a search can use its project's
    # partial HNSW index (a generic plan does not know which project it is for).
    params: dict[str, Any] = {"application_name": "memlane", "prepare_threshold": None}
    if "connect_timeout" not in parse_qs(urlsplit(url).query):
        params["connect_timeout"] = timeout_s
    try:
        return psycopg.connect(url, autocommit=autocommit, **params)
    except psycopg.Error as exc:
        raise DatabaseError(f"cannot connect to {redact(url)}: {first_line(exc)}") from exc


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def database_url(cfg: Any) -> str:
    """The configured URL (``MEMLANE_DATABASE_URL`` overrides config.toml); "" when none."""
    return str(getattr(getattr(cfg, "database", None), "url", "") or "")
