"""Project identity: which memory a working directory belongs to. Stdlib only (hook path).

Inside git, a project is the main work tree of the repository's common git dir, so every worktree of
one repo shares one memory; outside git it is the real path. The id is a readable slug plus a short
hash of the root, so two folders both called ``api`` never share memory. No ``git`` subprocess is
spawned: the ``.git`` file/dir layout is read directly, which keeps hooks fast.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from memlane import paths

_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Project:
    id: str
    root: Path
    name: str

    @property
    def dir(self) -> Path:
        return paths.project_dir(self.id)

    @property
    def db_path(self) -> Path:
        return paths.db_path(self.id)


def _git_common_dir(git_path: Path) -> Path | None:
    """The common git dir for a ``.git`` dir or a worktree's ``.git`` file."""
    if git_path.is_dir():
        return git_path
    try:
        text = git_path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text[len("gitdir:"):].strip())
    if not gitdir.is_absolute():
        gitdir = (git_path.parent / gitdir).resolve()
    commondir_file = gitdir / "commondir"
    try:
        common = Path(commondir_file.read_text(encoding="utf-8").strip())
    except OSError:
        return gitdir  # a submodule or a plain gitdir pointer: the gitdir is its own common dir
    if not common.is_absolute():
        common = (gitdir / common).resolve()
    return common


def find_root(cwd: str | os.PathLike[str]) -> Path:
    """The project root for ``cwd``: git main work tree, else the real path of ``cwd``."""
    start = Path(os.path.realpath(cwd))
    for candidate in (start, *start.parents):
        git_path = candidate / ".git"
        if not os.path.lexists(git_path):
            continue
        common = _git_common_dir(git_path)
        if common is None:
            return candidate
        common = Path(os.path.realpath(common))
        # The main work tree is the parent of the common dir when that dir is a ".git" folder;
        # for bare repositories (worktrees of a bare repo) the common dir itself is the identity.
        return common.parent if common.name == ".git" else common
    return start


def slug(name: str) -> str:
    return _SLUG.sub("-", name.lower()).strip("-")[:40] or "root"


def project_id(root: Path) -> str:
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{slug(root.name)}-{digest}"


def identify(cwd: str | os.PathLike[str]) -> Project:
    root = find_root(cwd)
    return Project(id=project_id(root), root=root, name=root.name or str(root))


def register(project: Project) -> None:
    """Record the project in the registry (``projects/<id>/project.json``) once, atomically."""
    meta = project.dir / "project.json"
    if meta.exists():
        return
    paths.ensure_dir(project.dir)
    body = {"id": project.id, "root": str(project.root), "name": project.name, "created_at": time.time()}
    tmp = meta.with_name(f".project.json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(body, indent=2), encoding="utf-8")
    os.replace(tmp, meta)


def known_projects() -> list[dict[str, object]]:
    """Every registered project (id, root, name, created_at), newest first."""
    out: list[dict[str, object]] = []
    base = paths.projects_dir()
    if not base.is_dir():
        return out
    for entry in base.iterdir():
        meta = entry / "project.json"
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out.append(data)
    out.sort(key=lambda d: float(d.get("created_at") or 0), reverse=True)  # type: ignore[arg-type]
    return out


def by_id(project_id_: str) -> Project | None:
    for data in known_projects():
        if data.get("id") == project_id_:
            root = Path(str(data["root"]))
            return Project(id=project_id_, root=root, name=str(data.get("name") or root.name))
    return None
