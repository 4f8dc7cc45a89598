"""The one-line install, for real: build the wheel, install it into a fresh virtualenv with uv, use it.

Offline: the wheel is built from a copy of the source with the build backend already installed
(``--no-build-isolation --no-index``) and installed with ``uv pip install --offline --no-deps``; the
dependencies (torch, sentence-transformers, … several gigabytes) are not downloaded again but made
importable through a ``.pth`` file naming this environment's site-packages. That folder's own ``.pth``
files are not processed, so the editable install of the source tree stays out and ``memlane`` is
imported from the wheel (the test checks where it comes from). The wheel's declared dependencies are
checked against what is importable, so a missing one in pyproject.toml still fails here.

Where uv is not installed (it is in the dev extras), the same steps run with ``python -m venv`` and
``pip --python`` — what pipx does under the hood.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import PAYLOADS
from memlane import relay

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _uv() -> str | None:
    found = shutil.which("uv") or shutil.which("uv", path=os.path.dirname(sys.executable))
    return found


def sh(*args: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{args}: {result.stdout}\n{result.stderr}"
    return result  # type: ignore[no-any-return]


def build_wheel(tmp: Path, before: Callable[[], None] | None = None) -> Path:
    src = tmp / "src-copy"  # a copy: building writes build/ and *.egg-info into the tree
    src.mkdir()
    for name in ("src", "pyproject.toml", "README.md"):
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy)(REPO / name, src / name)
    if before is not None:
        before()
    sh(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", tmp / "dist", src)
    (wheel,) = (tmp / "dist").glob("memlane-*.whl")
    return wheel


def fresh_venv(tmp: Path, wheel: Path) -> Path:
    venv = tmp / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    uv = _uv()
    if uv:
        sh(uv, "venv", "--offline", "--python", base, venv)
    else:
        sh(base, "-m", "venv", "--without-pip", venv)
    site = Path(
        sh(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    )
    import click

    (site / "_memlane_test_deps.pth").write_text(str(Path(click.__file__).parents[1]) + "\n")
    if uv:
        sh(uv, "pip", "install", "--offline", "--no-deps", "--python", venv / "bin" / "python", wheel)
    else:
        sh(
            sys.executable,
            "-m",
            "pip",
            "--python",
            venv / "bin" / "python",
            "install",
            "--no-deps",
            "--no-index",
            wheel,
        )
    return venv


def test_the_wheel_carries_the_relay_source_but_no_build_leftovers(tmp_path: Path) -> None:
    """A checkout holds bytecode beside the plugin's files and relay binaries (tests build them); the wheel
    ships the relay's C source and none of those."""
    stray = tmp_path / "src-copy" / "src" / "memlane"
    build_wheel(tmp_path, before=lambda: _leave_leftovers(stray))
    (wheel,) = (tmp_path / "dist").glob("memlane-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "memlane/hook_relay.c" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or "/_relay/" in n], names


def _leave_leftovers(package: Path) -> None:
    for leftover in (package / "plugin" / "__pycache__" / "stray.cpython-311.pyc", package / "_relay" / "hook-relay-x"):
        leftover.parent.mkdir(parents=True, exist_ok=True)
        leftover.write_bytes(b"leftover")


def test_built_wheel_installs_and_works(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    venv = fresh_venv(tmp_path, wheel)
    bin_dir = venv / "bin"
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLANE_", "PYTHON", "VIRTUAL_ENV", "CLAUDE"))}
    env.update(
        HOME=str(home),
        MEMLANE_HOME=str(tmp_path / "memlane-home"),
        MEMLANE_DAEMON_AUTOSTART="false",
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
    )

    def memlane(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return sh(bin_dir / "memlane", *args, env=env, cwd=project, input=stdin)

    # memlane comes from the wheel, and every dependency the wheel declares is there.
    where = sh(bin_dir / "python", "-c", "import memlane; print(memlane.__file__)", env=env).stdout.strip()
    assert where.startswith(str(venv)), where
    missing = sh(bin_dir / "python", "-c", _CHECK_REQUIREMENTS, env=env).stdout.strip()
    assert missing == ""
    assert memlane("--version").stdout.startswith("memlane, version ")

    out = memlane("install").stdout
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    launcher = Path(where).parent / "hook_launcher.py"
    python_hook = f"{bin_dir / 'python'} -I -S {launcher} UserPromptSubmit"  # no site: memlane from the launcher
    # The C relay, built from the source the wheel carries, in front of it wherever a compiler is at hand.
    relays = sorted((tmp_path / "memlane-home" / "bin").glob("hook-relay-*"))  # the copy that outlives upgrades
    assert command == (f"{relays[0]} {python_hook}" if relay.compiler() else python_hook)
    assert "Installed memlane hooks" in out

    # A hook exactly as Claude Code runs it: the registered command through a shell, the payload on stdin.
    for event, name in (("UserPromptSubmit", "02-UserPromptSubmit.json"), ("PostToolUse", "04-PostToolUse.json")):
        data = json.loads((PAYLOADS / name).read_text())
        data["cwd"] = str(project)
        registered = settings["hooks"][event][0]["hooks"][0]["command"]
        hooked = sh("sh", "-c", registered, env=env, cwd=project, input=json.dumps(data))
        assert hooked.stderr == ""
    for _ in range(200):  # PostToolUse is stored by a detached child, after the hook process has returned
        hits = json.loads(memlane("search", "narwhal", "--json").stdout)
        if hits:
            break
        time.sleep(0.1)
    assert hits and hits[0]["type"] == "tool_observation" and "narwhal" in hits[0]["summary"]
    plugin = Path(memlane("plugin", "path").stdout.strip())  # package data made it into the wheel
    assert (plugin / "commands" / "memory-search.md").is_file()
    # So did the default model's config and tokenizer (its int8 weights are a dependency): it embeds.
    model_dir, version, dim = sh(bin_dir / "python", "-c", _EMBED_WITH_THE_DEFAULT_MODEL, env=env).stdout.split()
    assert model_dir.startswith(str(venv)) and version.startswith("all-MiniLM-L6-v2-int8@") and dim == "384"


_EMBED_WITH_THE_DEFAULT_MODEL = """
from memlane.config import EmbeddingConfig
from memlane.embed import get_embedder
embedder = get_embedder(EmbeddingConfig())
print(embedder.encoder.model_dir, embedder.version, len(embedder.embed_query("where is the pool configured?")))
"""

_CHECK_REQUIREMENTS = """
import importlib.metadata as md, re
for req in md.requires("memlane") or []:
    if "extra ==" in req:
        continue
    name = re.match(r"[A-Za-z0-9_.-]+", req).group(0)
    try:
        md.version(name)
    except md.PackageNotFoundError:
        print(name)
"""
