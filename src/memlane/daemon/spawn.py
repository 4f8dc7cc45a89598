"""Start the daemon detached (from SessionStart or the CLI) without waiting for it. Stdlib only."""

from __future__ import annotations

import os
import sys

from memlane import paths
from memlane.daemon import state


def start_detached() -> int | None:
    """Launch ``memlane serve`` in its own session; returns its pid, or None if one is already up."""
    if state.read_info():
        return None
    import subprocess  # only on this path: ~3 ms of import

    log_path = os.path.join(paths.ensure_dir(paths.join("logs")), "daemon.out")
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memlane", "serve", "--quiet"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            cwd=paths.home_dir(),
        )
    return proc.pid
