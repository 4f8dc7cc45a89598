"""Cross-project memory in `search`, `show` and the MCP tools when the user turned on retrieval.cross_project
(injection already used it); off by default, and the results say which project they come from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memlane import config
from memlane.capture import inject
from memlane.cli.main import cli
from memlane.errors import InputError
from memlane.mcp.tools import MemoryTools
from memlane.memory import Memory
from memlane.retrieval.hybrid import Hit
from memlane.retrieval.select import Injection, Item
from memlane.store.db import NewEvent


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path]:
    shop, billing = tmp_path / "shop", tmp_path / "billing"
    for root, words in ((shop, "the cart total"), (billing, "quokka invoice rounding bug")):
        (root / ".git").mkdir(parents=True)
        with Memory.open(str(root)) as mem:
            mem.store.append(
                [
                    NewEvent("user_prompt", "s1", f"why is {words} wrong?", "t1"),
                    NewEvent("agent_response", "s1", f"Fixed {words}: round half up at the end.", "t2"),
                ]
            )
    return shop, billing


def _search(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["-C", str(root), "search", *args, "--text-only"])
    return result.exit_code, result.stdout, result.stderr


def test_off_by_default(two: tuple[Path, Path]) -> None:
    shop, _ = two
    code, out, _ = _search(shop, "quokka invoice", "--json")
    assert code == 0 and json.loads(out) == []
    result = CliRunner().invoke(cli, ["-C", str(shop), "show", _billing_cite(two)])
    assert result.exit_code == 1 and "no event" in result.output


def _billing_cite(two: tuple[Path, Path]) -> str:
    with Memory.open(str(two[1]), create=False) as mem:
        return mem.history(types=["agent_response"])[0].cite


def test_cli_search_and_show_across_projects(two: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    shop, billing = two
    monkeypatch.setenv("MEMLANE_RETRIEVAL_CROSS_PROJECT", "true")
    code, out, err = _search(shop, "quokka invoice")
    assert code == 0 and "quokka invoice rounding" in out and "from shop and 1 other project(s)" in err
    code, out, _ = _search(shop, "quokka invoice", "--json")
    assert _billing_cite(two) in {r["citation"] for r in json.loads(out)}
    code, out, _ = _search(shop, "quokka invoice", "-d", "timeline", "--json")
    assert all(len(r["timeline"]) == 2 for r in json.loads(out))  # read from billing's own store
    result = CliRunner().invoke(cli, ["-C", str(shop), "show", _billing_cite(two), "--json"])
    assert result.exit_code == 0 and "quokka" in json.loads(result.output)["content"]
    with Memory.open(str(shop), create=False) as mem, Memory.open(str(billing), create=False) as other:
        assert {h.event.project_id for h in mem.search("quokka invoice", semantic=False)} == {other.project.id}
        assert mem.search("quokka invoice", semantic=False, cross_project=False) == []  # the caller may say no


def test_mcp_tools_across_projects(two: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    shop, _ = two
    monkeypatch.setenv("MEMLANE_RETRIEVAL_CROSS_PROJECT", "true")
    tools = MemoryTools(config.load(), None, str(shop))
    reply = tools.search("quokka invoice")
    assert "in shop (" in reply.text and "and 1 other project(s) (retrieval.cross_project is on)" in reply.text
    assert "[project billing]" in reply.text
    cite = _billing_cite(two)
    assert {r.get("project_id") for r in reply.data["results"]} == {reply.data["results"][0]["project_id"]}
    assert "quokka invoice rounding" in tools.details([cite]).text
    assert "→" in tools.timeline(cite).text and "quokka" in tools.source(cite).text
    monkeypatch.setenv("MEMLANE_RETRIEVAL_CROSS_PROJECT", "false")
    off = MemoryTools(config.load(), None, str(shop))
    assert off.search("quokka invoice").data["results"] == []
    with pytest.raises(InputError, match="unknown memory"):
        off.details([cite])


def test_injection_header_names_other_projects(two: tuple[Path, Path]) -> None:
    shop, billing = two
    cfg = config.Config()
    with Memory.open(str(shop), create=False) as here, Memory.open(str(billing), create=False) as there:
        own = Hit(here.history()[0], 0.8, {}, "high")
        foreign = Hit(there.history()[0], 0.7, {}, "suggested")
        text = inject.hits_context(Injection([Item([own])], [foreign]), cfg, here.project.id)
        assert text.startswith("memlane: relevant memory from earlier sessions in this project and 1 other project(s)")
        assert f"[project {there.project.id}]" in text
        assert inject.hits_context(Injection([Item([own])]), cfg, here.project.id).startswith(inject.HEADER)
