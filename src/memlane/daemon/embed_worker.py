"""The daemon's embedding worker: a child process that drains every project's outbox at low priority.

A backlog (an import, a long session) can mean minutes of model inference. Run inside the daemon it
competed with searches for the CPU and the interpreter, and prompts missed the hooks' deadline. As a
child process with a nice value of 10 and one fewer inference thread than there are cores, the
scheduler gives searches the CPU the moment they need it and the backlog gets what is left.

The child reports one JSON line per step on stdout (``{"processed": n}``, 0 when idle, or
``{"error": "..."}``) and exits when its parent does.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memlane.config import Config
    from memlane.embed import Embedder

STEP = 32  # events per project per step: the outbox lock is re-taken between steps
NICE = 10


def _threads() -> int:
    return max(1, (os.cpu_count() or 2) - 1)


def _lower_priority() -> None:
    try:
        os.nice(NICE)
    except OSError:
        pass
    # The numpy runtime's BLAS reads its thread count once, when numpy is first imported (below, with the
    # model): set it now. Spinning BLAS threads on an oversubscribed machine also cost more than they give.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(_threads()))


def _limit_torch() -> None:
    """Only when the model runs on torch: importing torch just to limit it would cost seconds and ~300 MB."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(_threads())


def _report(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def drain_step(cfg: Config, embedder: Embedder) -> int:
    """One step over every known project; returns how many events were embedded."""
    from memlane import project
    from memlane.memory import Memory
    from memlane.vectors import process_outbox

    done = 0
    for entry in project.known_projects():
        try:
            with Memory.open(project_id=str(entry["id"]), cfg=cfg, create=None) as mem:
                report = process_outbox(mem, embedder, limit=STEP)
                done += int(getattr(report, "processed", 0) or 0)
        except Exception as exc:  # noqa: BLE001 - one broken project must not stop the others
            _report(error=f"{entry.get('id')}: {exc!r}")
    return done


def _exit_with_parent(parent: int, every_s: float = 0.5) -> None:
    """Exit within ``every_s`` of the daemon's death (kill -9 included), even in the middle of a batch.

    The main loop checks its parent only between steps, and one step of a backlog can take minutes.
    Stopping mid-batch is safe: vectors are upserted by event id, and the outbox jobs this process
    claimed are taken back at once because their claimant is gone.
    """
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every_s)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main() -> None:
    _lower_priority()
    from memlane import config
    from memlane.embed import get_embedder

    try:
        cfg = config.load()
        embedder = get_embedder(cfg.embedding)
        _limit_torch()
    except Exception as exc:  # noqa: BLE001 - say why on the one channel the daemon reads, then stop
        _report(error=f"cannot start: {exc}")
        sys.exit(1)
    parent = os.getppid()
    _exit_with_parent(parent)
    _report(ready=embedder.version)
    while os.getppid() == parent:
        done = drain_step(cfg, embedder)
        _report(processed=done)
        time.sleep(0.05 if done else 2.0)


if __name__ == "__main__":
    main()
