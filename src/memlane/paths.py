"""Where memlane keeps its files. Stdlib only: imported by every hook.

The ``*_dir``/``*_path`` functions return ``pathlib.Path`` for the CLI and library; hooks use the
``str`` variants (``home_dir``, ``join``) because importing pathlib alone costs ~8 ms of start-up.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def home_path() -> str:
    """The data directory's path (``MEMLANE_HOME`` or ``~/.memlane``), without creating it."""
    raw = os.environ.get("MEMLANE_HOME")
    return os.path.expanduser(raw) if raw else os.path.join(os.path.expanduser("~"), ".memlane")


def home_dir() -> str:
    """The data directory (``MEMLANE_HOME`` or ``~/.memlane``), created 0700 on first use."""
    path = home_path()
    if not os.path.isdir(path):
        os.makedirs(path, mode=0o700, exist_ok=True)
        os.chmod(path, 0o700)  # makedirs' mode is filtered by the umask
    return path


def join(*parts: str) -> str:
    """A path inside the data directory, as a string."""
    return os.path.join(home_dir(), *parts)


# storage.path of each data dir's config, recorded by ``config.load``/``load_cached`` (which every entry point
# calls before it touches a store): this module imports nothing of memlane's, so it is told rather than asking.
_storage_path: dict[str, str] = {}


def set_storage_path(value: str) -> None:
    _storage_path[home_dir()] = value


def projects_root() -> str:
    """Where project stores live: ``storage.path`` (``MEMLANE_STORAGE_PATH`` or config.toml; relative to the
    data dir; ``~`` expanded), else ``<data dir>/projects``."""
    home = home_dir()
    raw = os.environ.get("MEMLANE_STORAGE_PATH")
    if raw is None:
        raw = _storage_path.get(home, "")
    raw = raw.strip().strip('"')
    if not raw:
        return os.path.join(home, "projects")
    return os.path.join(home, os.path.expanduser(raw))  # an absolute path replaces home


def project_join(project_id: str, *parts: str) -> str:
    """A path inside one project's folder of the store (``<projects root>/<id>/…``), as a string."""
    return os.path.join(projects_root(), project_id, *parts)


def _p(*parts: str) -> Path:
    from pathlib import Path

    return Path(join(*parts))


def home() -> Path:
    return _p()


def config_path() -> Path:
    return _p("config.toml")


def projects_dir() -> Path:
    from pathlib import Path

    return Path(projects_root())


def project_dir(project_id: str) -> Path:
    return projects_dir() / project_id


def db_path(project_id: str) -> Path:
    return projects_dir() / project_id / "memory.db"


def vectors_dir(project_id: str) -> Path:
    return projects_dir() / project_id / "vectors"


def logs_dir() -> Path:
    return _p("logs")


def spool_dir() -> Path:
    return _p("spool")


def ensure_dir(path: str | os.PathLike[str]) -> str:
    os.makedirs(path, mode=0o700, exist_ok=True)
    return os.fspath(path)
