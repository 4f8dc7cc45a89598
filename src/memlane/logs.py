"""Log files in ``~/.memlane/logs``, size-rotated. Stdlib only and cheap: hooks log through this.

``logging.handlers`` costs ~15 ms of import time, a third of a capture hook's budget, so rotation is
done here with one stat and a rename.
"""

from __future__ import annotations

import os
import time

from memlane import paths

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
_settings = {"level": 20, "max_bytes": 1_000_000, "backups": 3}


def configure(level: str = "info", max_bytes: int = 1_000_000, backups: int = 3) -> None:
    _settings.update(level=_LEVELS.get(level, 20), max_bytes=max_bytes, backups=backups)


def _rotate(path: str) -> None:
    backups = int(_settings["backups"])
    for i in range(backups - 1, 0, -1):
        src = f"{path}.{i}"
        if os.path.exists(src):
            os.replace(src, f"{path}.{i + 1}")
    if backups > 0:
        os.replace(path, f"{path}.1")
    else:
        os.remove(path)


def log(name: str, level: str, message: str) -> None:
    """Append one line to ``logs/<name>.log``; never raises (logging must not break a hook)."""
    if _LEVELS.get(level, 20) < int(_settings["level"]):
        return
    try:
        directory = paths.ensure_dir(paths.join("logs"))
        path = os.path.join(directory, f"{name}.log")
        try:
            if os.path.getsize(path) > int(_settings["max_bytes"]):
                _rotate(path)
        except OSError:
            pass
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        line = f"{stamp}Z {level.upper()} [{os.getpid()}] {' '.join(message.split())}\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except Exception:  # noqa: BLE001 - a failing log must never fail the caller
        pass
