"""Finish a capture hook in a detached child, so Claude Code does not wait for the store.

Claude Code waits for a synchronous hook until its process exits and its stdout and stderr close. Stop
must be synchronous (``claude -p`` exits right after the turn and does not wait for an async hook), and
it cost a turn ~80 ms in the real CLI: imports, the store, and the transcript catch-up, which waits for
Claude Code to write the turn's last lines (``benchmarks/turn_overhead.py --trace``). The installed hook
command (``memlane.hook_launcher``) therefore forks as soon as it has read the payload: the parent exits
at once and Claude Code goes on; the child does the whole capture. The child leaves Claude Code's
process group (``setsid``) and puts its stdio on /dev/null, so neither the wait for the pipes nor the
end of the ``claude`` process touches it (seen with Claude Code 2.1.328: such a child finishes after
``claude -p`` has exited, where an async hook still running may be cut short).

Order: the summary SessionEnd writes must see the answer Stop stored just before it, so the children of
one session run one at a time, in the order Claude Code delivered their hooks. The parent takes the
session's lock when it is free and the child inherits it (a flock belongs to the open file, not the
process); when it is held, the child waits for it. Claude Code starts SessionEnd only after Stop's
parent has exited, holding the lock, so SessionEnd's child runs after Stop's.

Stdlib only, and nothing heavier than ``os`` before the fork: what the parent imports, Claude Code waits for.
"""

from __future__ import annotations

import os
import time

from memlane import paths

# A child waits this long at most for the session's earlier child, then goes ahead (and says so in the log).
LOCK_WAIT_S = 30.0
LOCK_POLL_S = 0.01
NICE = 10  # the child's priority step down
LOCK_FILES = 64  # sessions share lock files by a stable hash: a bounded folder, rare and short waits


def session_of(raw: bytes) -> str:
    """The payload's ``session_id``, read without a JSON parser (importing ``json`` costs the parent more
    than everything else it does). "" when there is none: such payloads share one lock."""
    at = raw.find(b'"session_id"')
    if at < 0:
        return ""
    start = raw.find(b'"', raw.find(b":", at) + 1) + 1
    end = raw.find(b'"', start)
    return raw[start:end].decode("ascii", "replace") if 0 < start <= end else ""


def lock_path(session_id: str) -> str:
    return paths.join("locks", f"hooks-{sum(session_id.encode()) % LOCK_FILES:02d}.lock")


def _open_lock(session_id: str) -> tuple[int, bool]:
    """The session's lock file, and whether this process now holds it."""
    import fcntl

    path = lock_path(session_id)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd, True
    except OSError:
        return fd, False


def _wait_lock(fd: int) -> float | None:
    """Take the lock, polling; the seconds waited, or None when it stayed held past ``LOCK_WAIT_S``."""
    import fcntl

    start = time.monotonic()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return time.monotonic() - start
        except OSError:
            if time.monotonic() - start > LOCK_WAIT_S:
                return None
            time.sleep(LOCK_POLL_S)


def _quiet_stdio() -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if null > 2:
        os.close(null)


def fork(raw: bytes) -> bool:
    """Go on in a detached child: returns True in the child; the parent exits here with status 0.

    False where there is no ``fork`` or it fails: the caller then does the work itself, as before.
    """
    if not hasattr(os, "fork"):
        return False
    try:
        fd, held = _open_lock(session_of(raw))
    except OSError:
        fd, held = -1, True  # no lock to be had: the child runs unordered rather than not at all
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid:
        os._exit(0)
    os.setsid()
    _quiet_stdio()
    try:  # background work: on a busy machine the agent's own process goes first
        os.nice(NICE)
    except OSError:
        pass
    if not held:
        waited = _wait_lock(fd)
        if waited is None or waited > 1.0:
            from memlane.logs import log

            state = "went ahead without it" if waited is None else f"waited {waited:.1f} s"
            log("hooks", "warning", f"detached hook: the session's earlier hook held its lock; {state}")
    return True
