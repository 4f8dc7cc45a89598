"""Reading and writing CLAUDE.md safely.

Input that is not a text file memlane should edit (missing, a folder, binary, not UTF-8, huge) is a
one-line RegionError before anything is parsed. Writes go to a temp file in the same folder, are
fsynced and renamed over the original, and only after checking the file is still what was read
(mtime, size and SHA-256): someone else's edit in between is an error, never overwritten.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from memlane import atomic
from memlane.regions.document import Document
from memlane.regions.model import RegionError

MAX_BYTES = 5 * 1024 * 1024


@dataclass(frozen=True)
class Fingerprint:
    mtime_ns: int
    size: int
    sha256: str


def _fingerprint(st: os.stat_result, data: bytes) -> Fingerprint:
    return Fingerprint(st.st_mtime_ns, st.st_size, hashlib.sha256(data).hexdigest())


def decode(data: bytes, name: str, max_bytes: int = MAX_BYTES) -> str:
    """The text of ``data``, or a RegionError saying why memlane will not touch it."""
    if len(data) > max_bytes:
        raise RegionError(_too_big(name, len(data), max_bytes))
    nul = data.find(b"\0")
    if nul >= 0:
        raise RegionError(f"{name} looks binary (NUL byte at offset {nul}); left untouched")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RegionError(
            f"{name} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); left untouched"
        ) from exc


def _too_big(name: str, size: int, max_bytes: int) -> str:
    return f"{name} is {size} bytes, over the {_human(max_bytes)} limit for editing; left untouched"


def _human(n: int) -> str:
    if n >= 1048576:
        return f"{n / 1048576:g} MB"
    return f"{n / 1024:g} KB" if n >= 1024 else f"{n} bytes"


class RegionFile:
    """A CLAUDE.md opened for editing: ``doc`` is its parsed text; ``save()`` writes it back."""

    def __init__(self, path: Path, doc: Document, fingerprint: Fingerprint | None, max_bytes: int) -> None:
        self.path = path
        self.doc = doc
        self.original = doc.render()
        self._fingerprint = fingerprint
        self._max_bytes = max_bytes

    @property
    def real(self) -> Path:
        # Write through a symlinked CLAUDE.md to its target rather than replacing the link.
        return Path(os.path.realpath(self.path))

    @property
    def exists(self) -> bool:
        return self._fingerprint is not None

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, create: bool = False, max_bytes: int = MAX_BYTES) -> RegionFile:
        """Read ``path``; with ``create``, a missing file opens as an empty document."""
        p = Path(path)
        data, fp = _read(p, max_bytes, missing_ok=create)
        return cls(p, Document(decode(data, p.name, max_bytes)), fp, max_bytes)

    @property
    def changed(self) -> bool:
        return self.doc.render() != self.original

    def save(self) -> bool:
        """Write the document if it changed; False when there was nothing to write."""
        if not self.changed:
            return False
        self._check_unchanged_on_disk()
        data = self.doc.render().encode("utf-8")
        real = self.real
        mode = stat.S_IMODE(real.stat().st_mode) if self._fingerprint is not None else None
        if mode is not None and not os.access(real, os.W_OK):
            raise RegionError(f"{self.path} is read-only; left untouched")
        try:
            atomic.write_bytes(real, data, mode)
        except OSError as exc:
            raise RegionError(f"cannot write {self.path}: {exc.strerror or exc}; left untouched") from exc
        st = real.stat()
        self._fingerprint = _fingerprint(st, data)
        self.original = self.doc.render()
        return True

    def _check_unchanged_on_disk(self) -> None:
        conflict = RegionError(f"{self.path} changed on disk since it was read; nothing written, run the command again")
        try:
            _, now = _read(self.real, self._max_bytes, missing_ok=self._fingerprint is None)
        except RegionError as exc:
            raise conflict from exc
        if now != self._fingerprint:
            raise conflict


def _read(path: Path, max_bytes: int, missing_ok: bool) -> tuple[bytes, Fingerprint | None]:
    try:
        st = path.stat()
    except FileNotFoundError:
        if missing_ok:
            return b"", None
        raise RegionError(f"no such file: {path}") from None
    except OSError as exc:
        raise RegionError(f"cannot read {path}: {exc.strerror}") from exc
    if stat.S_ISDIR(st.st_mode):
        raise RegionError(f"{path} is a folder, not a file")
    if st.st_size > max_bytes:
        raise RegionError(_too_big(path.name, st.st_size, max_bytes))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RegionError(f"cannot read {path}: {exc.strerror}") from exc
    return data, _fingerprint(st, data)
