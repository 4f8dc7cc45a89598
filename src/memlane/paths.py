"""Where memlane keeps its files. Stdlib only: imported by every hook."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """The data directory (``MEMLANE_HOME`` or ``~/.memlane``), created 0700 on first use."""
    raw = os.environ.get("MEMLANE_HOME")
    path = Path(raw).expanduser() if raw else Path.home() / ".memlane"
    if not path.is_dir():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path, 0o700)  # mkdir's mode is filtered by the umask
    return path


def config_path() -> Path:
    return home() / "config.toml"


def projects_dir() -> Path:
    return home() / "projects"


def project_dir(project_id: str) -> Path:
    return projects_dir() / project_id


def db_path(project_id: str) -> Path:
    return project_dir(project_id) / "memory.db"


def vectors_dir(project_id: str) -> Path:
    return project_dir(project_id) / "vectors"


def logs_dir() -> Path:
    return home() / "logs"


def spool_dir() -> Path:
    return home() / "spool"


def token_path() -> Path:
    return home() / "daemon.token"


def ensure_dir(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path
