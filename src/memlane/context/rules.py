"""Project rules and workflow progress: what the persistent block is loaded from. Stdlib only.

Change detection is a fingerprint per file: (mtime_ns, size) first — one ``stat`` each, so an
unchanged project costs a handful of syscalls — then a content hash when a stat differs, so a file
that was touched but not changed (``git checkout``, an editor saving the same bytes) reloads nothing.
Folders in the list (``.cursor/rules``) contribute every ``.md``/``.mdc``/``.txt`` file inside them.
"""

from __future__ import annotations

import os
import stat

from memlane.store.keys import sha256_hex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memlane.config import Config

MAX_FILE_BYTES = 65536  # a rule file bigger than this is read up to here; the block budget trims further
RULE_SUFFIXES = (".md", ".mdc", ".txt")
WORKFLOW_KEY = "workflowProgress"
RULES_PREFIX = "rules/"


class Candidate:
    __slots__ = ("key", "mtime_ns", "path", "size")

    def __init__(self, key: str, path: str, mtime_ns: int, size: int) -> None:
        self.key = key
        self.path = path
        self.mtime_ns = mtime_ns
        self.size = size


def _file(key: str, path: str) -> Candidate | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):  # regular files only (after symlinks)
        return None
    return Candidate(key, path, st.st_mtime_ns, st.st_size)


def candidates(root: str, rule_files: list[str], workflow_file: str) -> list[Candidate]:
    """Every rule file present under ``root``, in priority order, then the workflow file."""
    out: list[Candidate] = []
    for rel in rule_files:
        rel = rel.strip().strip("/")
        if not rel or os.path.isabs(rel) or ".." in rel.split("/"):
            continue  # the rule list names files inside the project only
        path = os.path.join(root, rel)
        found = _file(RULES_PREFIX + rel, path)
        if found is not None:
            out.append(found)
            continue
        try:
            names = sorted(e.name for e in os.scandir(path) if e.name.endswith(RULE_SUFFIXES))
        except OSError:
            continue  # absent, or not a folder
        for name in names:
            found = _file(f"{RULES_PREFIX}{rel}/{name}", os.path.join(path, name))
            if found is not None:
                out.append(found)
    if workflow_file:
        found = _file(WORKFLOW_KEY, os.path.join(root, workflow_file))
        if found is not None:
            out.append(found)
    return out


def stat_fingerprint(found: list[Candidate]) -> dict[str, list[int]]:
    return {c.key: [c.mtime_ns, c.size] for c in found}


def read_text(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError:
        return ""
    text = raw[:MAX_FILE_BYTES].decode("utf-8", "replace").replace("\r\n", "\n").strip()
    if len(raw) > MAX_FILE_BYTES:
        text += f"\n… [file longer than {MAX_FILE_BYTES} bytes; read the rest from the file]"
    return text


def load(found: list[Candidate], cfg: Config) -> tuple[dict[str, str], dict[str, str]]:
    """``(entries, hashes)`` for the candidates: privacy-filtered text, and a hash of each raw file.

    A file whose text repeats one already loaded (CLAUDE.md symlinked to AGENTS.md) is left out.
    """
    from memlane.privacy import filter_text

    entries: dict[str, str] = {}
    hashes: dict[str, str] = {}
    seen: set[str] = set()
    for c in found:
        text = read_text(c.path)
        digest = sha256_hex(text)
        hashes[c.key] = digest
        if not text or digest in seen:
            continue
        seen.add(digest)
        if cfg.privacy.enabled:
            text = filter_text(text, cfg.privacy).text
        entries[c.key] = text
    return entries, hashes


def owned(key: str) -> bool:
    """Keys the loader owns (replaced on every reload); other persistent keys are the user's."""
    return key == WORKFLOW_KEY or key.startswith(RULES_PREFIX)
