"""The hook relay: ``hook_relay.c``, compiled once per installation, hands a hook's payload to the daemon.

Claude Code starts a process for every hook and waits for SessionStart, UserPromptSubmit and Stop: with the
daemon up, the daemon does the hook's work (``daemon.warm``), and what is left is starting a Python interpreter
just to forward bytes, ~6.5 ms of the ~9 ms each such hook costs a turn. The relay is a small C program that
does what ``warm.answer``/``warm.hand_off`` do and, in every other case, executes the Python hook with the
payload on its stdin (``hook_relay.c`` says which cases). ``memlane install`` registers
``<relay> <python> -I -S <hook_launcher.py>`` when a C compiler is at hand and the plain Python command
otherwise: the relay only ever saves time, never changes what is stored.

The binary is named for a hash of its source, so an upgrade builds a new one and an old settings file keeps
running the binary it names. The registered copy lives in the data directory's ``bin/`` (``~/.memlane/bin``),
which outlives the package: an upgrade or a reinstall that replaces the package folder must not leave Claude
Code's settings naming a binary that is gone. It is compiled once per installation into the package's
``_relay/`` (when that folder is writable) and copied from there, so a new data directory costs a copy, not a
compile.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from memlane import paths

SOURCE = Path(__file__).with_name("hook_relay.c")
VERSION = b"memlane-hook-relay 1"  # what ``<relay> --version`` prints (RELAY_VERSION in the source)
DISABLE_ENV = "MEMLANE_HOOK_RELAY"  # "0": install the plain Python hook command
COMPILE_TIMEOUT_S = 120


def wanted() -> bool:
    return os.name == "posix" and os.environ.get(DISABLE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def compiler() -> str | None:
    """The C compiler to build with: ``$CC``, else ``cc``, ``gcc`` or ``clang`` on PATH."""
    named = os.environ.get("CC", "").strip()
    if named:
        return shutil.which(named)
    return next((found for name in ("cc", "gcc", "clang") if (found := shutil.which(name))), None)


def binary_name() -> str:
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    return f"hook-relay-{digest}"


def candidates() -> tuple[Path, Path]:
    """Where the binary lives: the registered copy in the data directory, and the build in the package."""
    name = binary_name()
    return Path(paths.join("bin")) / name, SOURCE.parent / "_relay" / name


def works(binary: Path) -> bool:
    """A built relay that runs on this machine (a copied-in binary from elsewhere, or a folder mounted
    ``noexec``, would not)."""
    if not binary.is_file():
        return False
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.strip() == VERSION


def path() -> Path | None:
    """The relay to register, built or copied now if needed; None where it is disabled, or cannot be built
    or run."""
    if not wanted() or not SOURCE.is_file():
        return None
    registered, build = candidates()
    if works(registered):
        return registered
    if not works(build):
        cc = compiler()
        if cc is None:
            return None
        if not (_build(cc, build) and works(build)):  # a read-only package folder: compile in place instead
            return registered if _build(cc, registered) and works(registered) else None
    return registered if _copy(build, registered) and works(registered) else build


def planned() -> Path | None:
    """The relay ``path`` would register, without building or copying anything (``install --dry-run``)."""
    if not wanted() or not SOURCE.is_file():
        return None
    registered, build = candidates()
    if works(registered) or works(build) or compiler() is not None:
        return registered
    return None


def _copy(source: Path, target: Path) -> bool:
    """Copy into a temporary file beside ``target`` and rename: a half-written binary is never run."""
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".copy-", dir=target.parent)
        os.close(fd)
    except OSError:
        return False
    try:
        shutil.copyfile(source, tmp)
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
        return True
    except OSError:
        return False
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _build(cc: str, binary: Path) -> bool:
    """Compile into a temporary file beside ``binary`` and rename it into place: concurrent installs each see
    either no binary or a whole one."""
    try:
        binary.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".build-", dir=binary.parent)
        os.close(fd)
    except OSError:
        return False
    try:
        done = subprocess.run(
            [cc, "-O2", "-o", tmp, str(SOURCE)], capture_output=True, timeout=COMPILE_TIMEOUT_S, check=False
        )
        if done.returncode != 0:
            return False
        os.chmod(tmp, 0o755)
        os.replace(tmp, binary)
        return True
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
