"""Fault injection: what survives kill -9, a full disk, a corrupt page and a dead job claimant.

    python benchmarks/faults.py [--hooks 60] [--events 400]

Every scenario runs real memlane processes (`python -m memlane …`) against a fresh data dir and prints
what was sent, what the store holds afterwards and SQLite's ``integrity_check``:

- kill -9 of hooks mid-write: hook processes are killed at random moments; every hook that finished
  must be stored exactly once, and the store must stay intact.
- disk full: the data dir is a real 8 MB tmpfs filled to the last byte (root only; otherwise an
  injected ENOSPC); events go to the in-memory fallback spool and are ingested once space returns.
- corrupt page: pages in the middle of memory.db are overwritten; the CLI must answer in one line and
  `memlane doctor --repair` must recover what is readable into a new file.
- dead claimant: a process claims embedding jobs and is killed; the jobs must come back at once.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def env_for(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
    env.update(MEMLANE_HOME=str(home), MEMLANE_DAEMON_AUTOSTART="false", PYTHONPATH=str(REPO / "src"))
    env.setdefault("MEMLANE_FALLBACK_SPOOL", str(home.parent / "runtime-spool"))
    env.update(extra)
    return env


def hook(event: str, payload: dict[str, object], env: dict[str, str]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlane", "hook", event],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(payload).encode())
    proc.stdin.close()
    return proc


def store_file(home: Path) -> Path:
    return next((home / "projects").glob("*/memory.db"))


def contents(home: Path) -> list[str]:
    with sqlite3.connect(store_file(home)) as conn:
        return [r[0] for r in conn.execute("SELECT content FROM events WHERE type = 'user_prompt'")]


def integrity(home: Path) -> str:
    with sqlite3.connect(store_file(home)) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def prompt(proj: Path, i: int) -> dict[str, object]:
    return {
        "session_id": "s-faults",
        "cwd": str(proj),
        "hook_event_name": "UserPromptSubmit",
        "prompt": f"fault prompt number {i} about the zebrafinch pool",
        "prompt_id": f"p{i}",
    }


def project(root: Path) -> Path:
    proj = root / "proj"
    (proj / ".git").mkdir(parents=True, exist_ok=True)
    return proj


def report(name: str, **fields: object) -> None:
    print(f"{name:<22} " + "  ".join(f"{k}={v}" for k, v in fields.items()), flush=True)


# ---- scenarios -----------------------------------------------------------------------------------------------


def kill_hooks(root: Path, n: int) -> bool:
    home, proj = root / "home", project(root)
    env = env_for(home)
    hook("UserPromptSubmit", prompt(proj, -1), env).wait()  # the store exists
    rng = random.Random(7)
    procs = [(i, hook("UserPromptSubmit", prompt(proj, i), env)) for i in range(n)]
    for _, proc in procs:
        if rng.random() < 0.5:
            time.sleep(rng.uniform(0.0, 0.08))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
    finished = {i for i, proc in procs if proc.wait() == 0}
    killed = {i for i, proc in procs if proc.returncode == -signal.SIGKILL}
    hook("UserPromptSubmit", prompt(proj, n), env).wait()  # drains anything spooled
    stored = contents(home)
    numbers = [int(c.split()[3]) for c in stored]
    lost = sorted(finished - set(numbers))
    dupes = len(numbers) - len(set(numbers))
    ok = not lost and not dupes and integrity(home) == "ok"
    report(
        "kill -9 hooks",
        hooks=n,
        killed=len(killed),
        finished=len(finished),
        stored=len(set(numbers) - {-1, n}),
        finished_lost=len(lost),
        duplicates=dupes,
        integrity=integrity(home),
        verdict="OK" if ok else "FAIL",
    )
    return ok


def _mount_tmpfs(where: Path) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", str(where)], check=False)
    return done.returncode == 0


def _fill(where: Path) -> Path:
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 65536, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                continue
    finally:
        os.close(fd)
    return filler


def disk_full(root: Path, n: int = 13) -> bool:
    mount = root / "tiny"
    if not _mount_tmpfs(mount):
        report("disk full", skipped="needs root to mount an 8 MB tmpfs (tests/test_disk_full.py injects ENOSPC)")
        return True
    try:
        home, proj = mount / "home", project(root)
        env = env_for(home, MEMLANE_FALLBACK_SPOOL=str(root / "runtime-spool"))  # another filesystem
        hook("UserPromptSubmit", prompt(proj, 0), env).wait()
        filler = _fill(mount)
        for i in range(1, n + 1):
            hook("UserPromptSubmit", prompt(proj, i), env).wait()
        fallback = Path(env["MEMLANE_FALLBACK_SPOOL"])
        in_memory = len(list(fallback.glob("*.json"))) if fallback.is_dir() else 0
        tmp_left = len([p for d in (home / "spool", fallback) if d.is_dir() for p in d.glob(".*.tmp")])
        filler.unlink()  # space returns
        hook("UserPromptSubmit", prompt(proj, n + 1), env).wait()
        stored = sorted({int(c.split()[3]) for c in contents(home)})
        left = len(list(fallback.glob("*"))) if fallback.is_dir() else 0
        ok = stored == list(range(n + 2)) and left == 0 and integrity(home) == "ok"
        report(
            "disk full (0 B free)",
            sent=n + 2,
            spooled_in_memory=in_memory,
            tmp_files_left=tmp_left,
            stored=len(stored),
            lost=n + 2 - len(stored),
            spool_left=left,
            integrity=integrity(home),
            verdict="OK" if ok else "FAIL",
        )
        return ok
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def corrupt_page(root: Path, n: int) -> bool:
    home, proj = root / "home", project(root)
    env = env_for(home)
    from memlane.store.db import NewEvent, Store

    os.environ["MEMLANE_HOME"] = str(home)
    from memlane import project as projects

    pid = projects.identify(proj).id
    db = home / "projects" / pid / "memory.db"
    with Store(db, pid) as store:
        store.append(
            NewEvent("user_prompt", f"s{i // 50}", f"fault prompt number {i} zebra{i}", f"t{i}") for i in range(n)
        )
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = db.stat().st_size
    with open(db, "r+b") as fh:
        fh.seek(size // 2 // 4096 * 4096)
        fh.write(os.urandom(4096 * 2))
    cli = [sys.executable, "-m", "memlane", "-C", str(proj)]
    # every row: the newest rows alone may all sit on pages that survived
    history = subprocess.run([*cli, "history", "-n", "100000"], capture_output=True, text=True, env=env)
    err = (history.stdout + history.stderr).strip()
    started = time.perf_counter()
    repair = subprocess.run([*cli, "doctor", "--repair"], capture_output=True, text=True, env=env)
    took = time.perf_counter() - started
    after = subprocess.run([*cli, "history", "--json", "-n", "100000"], capture_output=True, text=True, env=env)
    recovered = len(json.loads(after.stdout)) if after.returncode == 0 else 0
    kept = [p.name for p in db.parent.iterdir() if ".damaged-" in p.name and not p.name.endswith(("-wal", "-shm"))]
    one_line = history.returncode == 1 and len(err.splitlines()) == 1 and "Traceback" not in err
    ok = one_line and recovered > 0 and integrity(home) == "ok" and bool(kept)
    report(
        "corrupt page",
        events=n,
        cli_error_lines=len(err.splitlines()),
        recovered=recovered,
        repair_s=f"{took:.1f}",
        kept_aside=len(kept),
        integrity=integrity(home),
        verdict="OK" if ok else "FAIL",
    )
    print(f"{'':<22} history said: {err[:160]}")
    for line in (repair.stdout.splitlines() or ["(no output)"])[:1]:
        print(f"{'':<22} {line[:200]}")
    return ok


CLAIMER = """
import sys, time
from memlane.memory import Memory
from memlane.vectors import worker
with Memory.open(sys.argv[1]) as mem:
    ids = worker._claim(mem, 1000)
print(len(ids), flush=True)
time.sleep(600)
"""


def dead_claimant(root: Path, n: int) -> bool:
    home, proj = root / "home", project(root)
    env = env_for(home)
    os.environ["MEMLANE_HOME"] = str(home)
    from memlane.memory import Memory
    from memlane.store.db import NewEvent
    from memlane.vectors import worker

    with Memory.open(proj) as mem:
        mem.store.append(NewEvent("user_prompt", "s", f"job {i}", f"j{i}") for i in range(n))
    child = subprocess.Popen([sys.executable, "-c", CLAIMER, str(proj)], stdout=subprocess.PIPE, text=True, env=env)
    assert child.stdout is not None
    claimed = int(child.stdout.readline())
    child.send_signal(signal.SIGKILL)
    child.wait()
    started = time.perf_counter()
    with Memory.open(proj) as mem:
        recovered = worker._recover_stuck(mem)
        stuck_after = mem.config.vectors.stuck_after_s
        left = mem.store.db.execute("SELECT COUNT(*) FROM outbox WHERE status = 'processing'").fetchone()[0]
    took = time.perf_counter() - started
    ok = recovered == claimed and left == 0
    report(
        "dead claimant",
        claimed=claimed,
        recovered=recovered,
        still_processing=left,
        after_s=f"{took:.2f}",
        timeout_would_be_s=stuck_after,
        verdict="OK" if ok else "FAIL",
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hooks", type=int, default=60, help="hook processes in the kill -9 scenario")
    parser.add_argument("--events", type=int, default=400, help="events in the corrupt-page and claimant scenarios")
    args = parser.parse_args()
    results = []
    for name, run in (
        ("kill", lambda r: kill_hooks(r, args.hooks)),
        ("full", disk_full),
        ("corrupt", lambda r: corrupt_page(r, args.events)),
        ("claimant", lambda r: dead_claimant(r, args.events)),
    ):
        with tempfile.TemporaryDirectory(prefix=f"memlane-faults-{name}-") as tmp:
            results.append(run(Path(tmp)))
    print("all scenarios OK" if all(results) else "SOME SCENARIOS FAILED")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
