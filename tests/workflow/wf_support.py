"""Helpers shared by the workflow tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from memlane import config, project
from memlane.workflow import lifecycle, store

FIXTURES = Path(__file__).parent / "fixtures"


def cfg(**values: Any) -> config.WorkflowConfig:
    return config.WorkflowConfig(**values)


def init(proj: Path, memory_id: str | None = None, mode: str = "auto") -> str:
    p = project.identify(proj)
    memory_id = memory_id or p.id
    lifecycle.init(p.root_str, p.name, memory_id, cfg(), mode)
    return memory_id


def cli(proj: Path, *args: str, input: str | None = None) -> tuple[int, str]:
    from memlane.cli.main import cli as root

    result = CliRunner().invoke(root, ["-C", str(proj), "workflow", *args], input=input, catch_exceptions=False)
    return result.exit_code, result.output


def meta(memory_id: str) -> dict[str, Any]:
    return store.load_meta(memory_id)


def raw_progress(memory_id: str) -> dict[str, Any]:
    return json.loads(Path(store.file(memory_id, "progress.json")).read_text())
