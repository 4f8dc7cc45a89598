"""Is a process still there? Stdlib only (used by hooks, the worker and the CLI).

A pid alone is a weak identity: after a crash the number can be reused by an unrelated process. On
Linux the kernel's start time of the process (``/proc/<pid>/stat`` field 22, in clock ticks since
boot) pins it down, so a claim or a daemon is identified as ``host:pid:start``. Elsewhere the start
time is unknown and the pid alone is used.
"""

from __future__ import annotations

import os
import socket


def start_time(pid: int) -> str:
    """The kernel's start time of ``pid`` ("" when unknown: not Linux, or no such process)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return ""
    # The command name (field 2) is in parentheses and may contain spaces: split after its last ")".
    fields = raw[raw.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else ""


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return False
    return raw[raw.rfind(b")") + 2 : raw.rfind(b")") + 3] == b"Z"


def alive(pid: int, started: str = "") -> bool:
    """Whether ``pid`` runs (not a zombie) and, when ``started`` is given, is the same process as then."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: it exists
    if _zombie(pid):
        return False
    if started:
        now = start_time(pid)
        return not now or now == started
    return True


def host() -> str:
    return socket.gethostname()


def identity(pid: int | None = None) -> str:
    """``host:pid:start`` for this process (or ``pid``)."""
    pid = os.getpid() if pid is None else pid
    return f"{host()}:{pid}:{start_time(pid)}"


def claimant_gone(claimant: str) -> bool:
    """Whether the process named by an ``identity()`` string has certainly exited.

    A claimant on another host (a store on a shared disk) cannot be checked from here: never gone.
    """
    parts = claimant.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return False
    claim_host, pid, started = parts
    if claim_host != host():
        return False
    return not alive(int(pid), started)
