"""The daemon's backup job: each store that changed is copied at most every ``store.backup_interval_min``.

A small job scheduled by the daemon's one loop (``Daemon.idle_watch`` calls ``tick`` every second); it
looks at the stores once a minute and backs up those that are due (``store.backup``: SQLite's online
backup API, 0600, the newest ``store.backups_kept`` kept). The daemon runs while Claude Code sessions
do, which is when stores change. A failure is logged and retried at the next look.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from memlane import config, paths
from memlane.logs import log
from memlane.store import backup

LOOK_EVERY_S = 60.0
FIRST_LOOK_S = 30.0  # not while a session's first hooks reach a daemon that has just started


class BackupJob:
    def __init__(
        self, cfg: config.Config, clock: Callable[[], float] = time.monotonic, first_look_s: float = FIRST_LOOK_S
    ) -> None:
        self.cfg = cfg
        self.clock = clock
        self.next_look = clock() + first_look_s  # then a store that changed while no daemon ran is backed up
        self.taken = 0

    def tick(self) -> list[str]:
        """Back up the stores that are due, when a look is due; returns the backups made."""
        interval_min = self.cfg.store.backup_interval_min
        if interval_min <= 0 or self.clock() < self.next_look:
            return []
        self.next_look = self.clock() + LOOK_EVERY_S
        made = []
        base = paths.projects_dir()
        for db in sorted(base.glob("*/memory.db")) if base.is_dir() else []:
            if not backup.due(str(db), interval_min * 60):
                continue
            try:
                target = backup.take(str(db), self.cfg.store.backups_kept)
            except Exception as exc:  # noqa: BLE001 - a failed backup must not stop the daemon; retried later
                log("daemon", "warning", f"backup of {db.parent.name} failed: {exc!r}")
                continue
            if target is None:
                log("daemon", "warning", f"{db.parent.name}: store looks damaged, not backed up (memlane doctor)")
                continue
            made.append(target)
            self.taken += 1
        return made
