"""The checked-out branch, read from ``.git/HEAD`` without a ``git`` process. Stdlib only.

Its own module because both ``gather.py`` (which builds on ``service.py``) and ``service.py`` need it:
kept in ``gather.py`` it made the two import each other.
"""

from __future__ import annotations

import os


def _git_dir(start: str) -> str | None:
    """The ``.git`` directory of the work tree containing ``start`` (a worktree's own gitdir too)."""
    candidate = os.path.realpath(start)
    while True:
        dot_git = os.path.join(candidate, ".git")
        if os.path.isdir(dot_git):
            return dot_git
        if os.path.isfile(dot_git):
            try:
                with open(dot_git, encoding="utf-8") as fh:
                    text = fh.read(4096).strip()
            except OSError:
                return None
            if not text.startswith("gitdir:"):
                return None
            gitdir = text[len("gitdir:") :].strip()
            return gitdir if os.path.isabs(gitdir) else os.path.normpath(os.path.join(candidate, gitdir))
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return None
        candidate = parent


def git_branch(path: str) -> str:
    """The checked-out branch at ``path`` from ``.git/HEAD`` (no ``git`` process); '' outside git."""
    git_dir = _git_dir(path)
    if git_dir is None:
        return ""
    try:
        with open(os.path.join(git_dir, "HEAD"), encoding="utf-8") as fh:
            head = fh.read(512).strip()
    except OSError:
        return ""
    if head.startswith("ref:"):
        ref = head[4:].strip()
        return ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ref
    return f"{head[:12]} (detached)" if head else ""
