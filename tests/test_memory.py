"""memlane.memory: the library's own argument handling (the entry points' parity is in test_entry_points)."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import PAYLOADS, payload
from memlane.config import ConfigError
from memlane.context.scope import ContextError
from memlane.daemon.server import DaemonError
from memlane.embed import EmbeddingError
from memlane.errors import InputError, MemlaneError, NotFoundError, UnknownProjectError
from memlane.hooks import HookInputError
from memlane.importers.run import ImportError_
from memlane.install import InstallError
from memlane.mcp.tools import ToolInputError
from memlane.memory import Memory
from memlane.regions.model import RegionError
from memlane.workflow.store import WorkflowError


@pytest.fixture
def mem(proj: Path, hook: Callable[..., str]) -> Memory:
    for path in sorted(PAYLOADS.glob("0[1-6]-*.json")):
        data = payload(path.name)
        hook(data["hook_event_name"], data)
    return Memory.open(proj)


def test_an_age_is_a_time_everywhere_the_library_takes_one(mem: Memory) -> None:
    everything = mem.history(limit=1000)
    assert everything
    assert mem.history(since="7d", limit=1000) == everything
    assert mem.history(until="7d", limit=1000) == []
    out = io.StringIO()
    assert mem.export("jsonl", out, since="7d") == len(everything)


def test_forget_before_an_age_keeps_newer_events(mem: Memory) -> None:
    # Compared as a string, "7d" sorts after every ISO timestamp: it would have selected every event.
    assert mem.forget_preview(before="7d") == []
    assert mem.forget(before="7d") == 0
    assert mem.history(limit=1000)


def test_a_bad_time_names_the_argument(mem: Memory) -> None:
    with pytest.raises(InputError, match=r"^until: 'soon' is not a date \(use 2026-11-01"):
        mem.history(until="soon")


def test_an_unknown_project_id(proj: Path) -> None:
    with pytest.raises(UnknownProjectError, match=r"^unknown project id 'nope-1' \(see `memlane projects`\)$"):
        Memory.open(project_id="nope-1")


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (InputError, ValueError),
        (NotFoundError, LookupError),
        (ConfigError, ValueError),
        (ContextError, ValueError),
        (DaemonError, RuntimeError),
        (EmbeddingError, RuntimeError),
        (HookInputError, ValueError),
        (ImportError_, ValueError),
        (InstallError, RuntimeError),
        (RegionError, ValueError),
        (ToolInputError, ValueError),
        (WorkflowError, ValueError),
    ],
)
def test_every_user_error_is_a_memlane_error_and_still_its_old_builtin(error: type, builtin: type) -> None:
    assert issubclass(error, MemlaneError)
    assert issubclass(error, builtin)  # code that caught the builtin before this hierarchy still does
