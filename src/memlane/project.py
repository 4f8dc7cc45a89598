"""Project identity: which memory a working directory belongs to. Stdlib only (hook path).

Inside git, a project is the main work tree of the repository's common git dir, so every worktree of
one repo shares one memory; outside git it is the real path. The id is a readable slug plus a short
hash of the root, so two folders both called ``api`` never share memory. No ``git`` subprocess is
spawned: the ``.git`` file/dir layout is read directly, which keeps hooks fast. Paths are handled as
strings here (pathlib costs ~8 ms of hook start-up); ``Project.root`` gives a ``Path`` to callers.
"""

from __future__ import annotations

import json
import os
import re
import time

from memlane import atomic, paths
from memlane.errors import UnknownProjectError
from memlane.store.keys import sha256_hex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

_SLUG = re.compile(r"[^a-z0-9]+")


class Project:
    __slots__ = ("id", "name", "root_str")

    def __init__(self, id: str, root: str | os.PathLike[str], name: str) -> None:
        self.id = id
        self.root_str = os.fspath(root)
        self.name = name

    @property
    def root(self) -> Path:
        from pathlib import Path

        return Path(self.root_str)

    @property
    def dir(self) -> Path:
        return paths.project_dir(self.id)

    @property
    def db_path(self) -> Path:
        return paths.db_path(self.id)

    @property
    def db_file(self) -> str:
        return paths.project_join(self.id, "memory.db")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Project) and (self.id, self.root_str) == (other.id, other.root_str)

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"Project(id={self.id!r}, root={self.root_str!r}, name={self.name!r})"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _git_common_dir(git_path: str) -> str | None:
    """The common git dir for a ``.git`` dir or a worktree's ``.git`` file."""
    if os.path.isdir(git_path):
        return git_path
    text = _read(git_path)
    if text is None or not text.startswith("gitdir:"):
        return None
    gitdir = text[len("gitdir:") :].strip()
    if not os.path.isabs(gitdir):
        gitdir = os.path.realpath(os.path.join(os.path.dirname(git_path), gitdir))
    common = _read(os.path.join(gitdir, "commondir"))
    if common is None:
        return gitdir  # a submodule or a plain gitdir pointer: the gitdir is its own common dir
    if not os.path.isabs(common):
        common = os.path.realpath(os.path.join(gitdir, common))
    return common


def find_root_str(cwd: str | os.PathLike[str]) -> str:
    """The project root for ``cwd`` as a string: git main work tree, else the real path of ``cwd``."""
    start = os.path.realpath(cwd)
    candidate = start
    while True:
        git_path = os.path.join(candidate, ".git")
        if os.path.lexists(git_path):
            common = _git_common_dir(git_path)
            if common is None:
                return candidate
            common = os.path.realpath(common)
            # The main work tree is the parent of the common dir when that dir is a ".git" folder;
            # for bare repositories (worktrees of a bare repo) the common dir itself is the identity.
            return os.path.dirname(common) if os.path.basename(common) == ".git" else common
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return start
        candidate = parent


def find_root(cwd: str | os.PathLike[str]) -> Path:
    from pathlib import Path

    return Path(find_root_str(cwd))


def slug(name: str) -> str:
    return _SLUG.sub("-", name.lower()).strip("-")[:40] or "root"


def project_id(root: str | os.PathLike[str]) -> str:
    root_s = os.fspath(root)
    return f"{slug(os.path.basename(root_s))}-{sha256_hex(root_s)[:8]}"


def identify(cwd: str | os.PathLike[str]) -> Project:
    root = find_root_str(cwd)
    return Project(id=project_id(root), root=root, name=os.path.basename(root) or root)


def register(project: Project) -> None:
    """Record the project in the registry (``projects/<id>/project.json``) once, atomically."""
    directory = paths.project_join(project.id)
    meta = os.path.join(directory, "project.json")
    if os.path.exists(meta):
        return
    paths.ensure_dir(directory)
    body = {"id": project.id, "root": project.root_str, "name": project.name, "created_at": time.time()}
    atomic.write_text(meta, json.dumps(body, indent=2), atomic.PRIVATE)  # it names the user's folders


def known_projects() -> list[dict[str, object]]:
    """Every registered project (id, root, name, created_at), newest first."""
    out: list[dict[str, object]] = []
    base = paths.projects_root()
    if not os.path.isdir(base):
        return out
    for entry in os.listdir(base):
        try:
            with open(os.path.join(base, entry, "project.json"), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out.append(data)
    out.sort(key=lambda d: float(d.get("created_at") or 0), reverse=True)  # type: ignore[arg-type]
    return out


def by_id(project_id_: str) -> Project | None:
    for data in known_projects():
        if data.get("id") == project_id_:
            root = str(data["root"])
            return Project(id=project_id_, root=root, name=str(data.get("name") or os.path.basename(root)))
    return None


def resolve(cwd: str | os.PathLike[str] | None = None, project_id_: str | None = None) -> Project:
    """The project a command or call is about: a registered id when given, else the one holding ``cwd``
    (default: the current directory). Every ``--project-id`` / ``project_id`` is looked up here."""
    if project_id_:
        found = by_id(project_id_)
        if found is None:
            raise UnknownProjectError(f"unknown project id '{project_id_}' (see `memlane projects`)")
        return found
    return identify(cwd or os.getcwd())
