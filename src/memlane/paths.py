"""Where memlane keeps its files. Stdlib only: imported by every hook.

The ``*_dir``/``*_path`` functions return ``pathlib.Path`` for the CLI and library; hooks use the
``str`` variants (``home_dir``, ``join``) because importing pathlib alone costs ~8 ms of start-up.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def home_dir() -> str:
    """The data directory (``MEMLANE_HOME`` or ``~/.memlane``), created 0700 on first use."""
    raw = os.environ.get("MEMLANE_HOME")
    path = os.path.expanduser(raw) if raw else os.path.join(os.path.expanduser("~"), ".memlane")
    if not os.path.isdir(path):
        os.makedirs(path, mode=0o700, exist_ok=True)
        os.chmod(path, 0o700)  # makedirs' mode is filtered by the umask
    return path


def join(*parts: str) -> str:
    """A path inside the data directory, as a string."""
    return os.path.join(home_dir(), *parts)


def _p(*parts: str) -> Path:
    from pathlib import Path

    return Path(join(*parts))


def home() -> Path:
    return _p()


def config_path() -> Path:
    return _p("config.toml")


def projects_dir() -> Path:
    return _p("projects")


def project_dir(project_id: str) -> Path:
    return _p("projects", project_id)


def db_path(project_id: str) -> Path:
    return _p("projects", project_id, "memory.db")


def vectors_dir(project_id: str) -> Path:
    return _p("projects", project_id, "vectors")


def logs_dir() -> Path:
    return _p("logs")


def spool_dir() -> Path:
    return _p("spool")


def ensure_dir(path: str | os.PathLike[str]) -> str:
    os.makedirs(path, mode=0o700, exist_ok=True)
    return os.fspath(path)
