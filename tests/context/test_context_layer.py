"""Seed 002's Layer scope: one persistent store per named layer of a pipeline, composed when named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlane import config, project
from memlane.cli.main import cli
from memlane.context.compose import PromptComposer
from memlane.context.scope import ContextError, ContextScope, PersistenceKind
from memlane.context.service import PromptContext
from memlane.context.store import check_layer, layer_names, layer_store


def run(proj: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["-C", str(proj), "context", *args])
    return result.exit_code, result.output


def test_store_per_layer(proj: Path, memlane_home: Path) -> None:
    pid = project.identify(proj).id
    store = layer_store(pid, "planner")
    assert (store.scope, store.kind) == (ContextScope.LAYER, PersistenceKind.PERSISTENT)
    assert store.path == str(memlane_home / "projects" / pid / "context" / "layer-planner.json")
    store.put_all({"role": "break the task into steps", "args": {"depth": 2}})
    assert layer_store(pid, "planner").snapshot() == {"role": "break the task into steps", "args": {"depth": 2}}
    layer_store(pid, "reviewer").put("role", "check the steps")
    assert layer_names(pid) == ["planner", "reviewer"]
    for bad in ("", "../x", ".hidden", "a/b", "x" * 65, 3):
        with pytest.raises(ContextError, match="layer name"):
            check_layer(bad)


def test_composer_puts_a_named_layer_in_the_persistent_block(proj: Path) -> None:
    pid = project.identify(proj).id
    layer_store(pid, "reviewer").put("checklist", "races, leaks")
    snap = PromptContext({"preferences": "be brief"}, {"workingDirectory": str(proj)}).with_layer(pid, "reviewer")
    text = PromptComposer(config.Config()).compose("llm_task", snap, "Review the diff.")
    persistent = text.split("## Project context (persistent)\n", 1)[1].split("\n## ", 1)[0]
    assert persistent.splitlines() == ["preferences: be brief", "layer/reviewer/checklist: races, leaks"]
    plain = PromptComposer(config.Config()).compose("llm_task", PromptContext({"preferences": "be brief"}), "x")
    assert "layer/" not in plain


def test_cli_set_list_compose_unset(proj: Path) -> None:
    code, out = run(proj, "set", "--layer", "reviewer", "checklist", "races, leaks (marker lynx)")
    assert code == 0 and out.strip() == 'checklist = "races, leaks (marker lynx)"  [layer reviewer]'
    code, out = run(proj, "layers", "--json")
    assert json.loads(out) == {"reviewer": {"checklist": "races, leaks (marker lynx)"}}
    code, out = run(proj, "compose", "-t", "llm_task", "--layer", "reviewer", "--body", "Review it.")
    assert code == 0 and "layer/reviewer/checklist: races, leaks (marker lynx)" in out
    code, out = run(proj, "compose", "-t", "llm_task", "--body", "Review it.")
    assert "lynx" not in out  # only a composition that names the layer gets it
    code, out = run(proj, "unset", "--layer", "reviewer", "checklist")
    assert code == 0 and out.strip() == "checklist removed [layer reviewer]"
    code, out = run(proj, "layers")
    assert out.strip() == "## layer reviewer\n(empty)"


@pytest.mark.parametrize(
    ("args", "message", "status"),
    [
        (["set", "--layer", "../up", "k", "v"], "Error: layer name '../up'", 1),
        (["compose", "-t", "llm_task", "--layer", "a b", "--body", "x"], "Error: layer name 'a b'", 1),
        (["set", "--layer", "x", "--persistent", "k", "v"], "--layer and --persistent are two different stores", 2),
    ],
)
def test_cli_bad_layer_input(proj: Path, args: list[str], message: str, status: int) -> None:
    code, out = run(proj, *args)
    assert code == status and message in out and "Traceback" not in out
