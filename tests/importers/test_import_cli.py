"""`memlane import` and `memlane import validate` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from history_fixtures import RICH_CODEX_COUNTS, RICH_COUNTS, real_transcript, rich_claude_session, rich_codex_rollout

from memlane.cli.main import cli


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    claude_dir, codex_dir = tmp_path / "claude-config", tmp_path / "codex-home"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_dir))
    monkeypatch.setenv("CODEX_HOME", str(codex_dir))
    return claude_dir, codex_dir


def memlane(proj: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["-C", str(proj), *args])
    return result.exit_code, result.output


def test_import_both_sources_then_rerun(proj: Path, homes: tuple[Path, Path]) -> None:
    claude_dir, codex_dir = homes
    rich_claude_session("s-cli-1", proj).write(claude_dir)
    rich_codex_rollout("019a2d7a-41c4-78b1-b7cc-a45d62a89cd6", proj).write(codex_dir)

    code, out = memlane(proj, "import", "validate", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["files"] == {"dry-run": 2}
    # per session: the conversation + start and end markers + the summary, as the import itself counts
    assert data["new_events"] == sum(RICH_COUNTS.values()) + sum(RICH_CODEX_COUNTS.values()) + 2 * 3
    assert data["bad_lines"] == 4

    code, out = memlane(proj, "import", "--no-embed")
    assert code == 0, out
    assert "imported" in out and "unreadable line(s) skipped" in out

    # The Claude session has sidechain lines a plain import leaves out, so it is not in the ledger and is
    # read again (adding nothing); the Codex rollout was imported whole and is unchanged.
    code, out = memlane(proj, "import", "--no-embed", "--json")
    data = json.loads(out)
    assert data["files"] == {"unchanged": 1, "imported": 1} and data["new_events"] == 0
    code, out = memlane(proj, "import", "--no-embed", "--sidechains", "--json")
    assert json.loads(out)["files"] == {"unchanged": 1, "imported": 1}
    code, out = memlane(proj, "import", "--no-embed", "--json")
    assert json.loads(out)["files"] == {"unchanged": 2}

    code, out = memlane(proj, "import", "validate")
    assert code == 0 and "in memory" in out

    code, out = memlane(proj, "history", "--json", "--limit", "1000")
    events = json.loads(out)
    assert sum(e["type"] == "user_prompt" for e in events) == 5  # 4 + the sidechain prompt --sidechains added


def test_source_filter_and_dry_run(proj: Path, homes: tuple[Path, Path]) -> None:
    claude_dir, codex_dir = homes
    rich_claude_session("s-cli-2", proj).write(claude_dir)
    rich_codex_rollout("019a2d7a-41c4-78b1-b7cc-a45d62a89cd7", proj).write(codex_dir)
    code, out = memlane(proj, "import", "--source", "codex", "--dry-run", "--json")
    data = json.loads(out)
    assert code == 0 and data["files"] == {"dry-run": 1} and data["details"][0]["source"] == "codex"
    code, out = memlane(proj, "history", "--json")
    assert json.loads(out) == []


def test_nothing_to_import(proj: Path, homes: tuple[Path, Path]) -> None:
    code, out = memlane(proj, "import", "--no-embed")
    assert code == 0 and "No Claude Code or Codex history" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["import", "--source", "cursor"], "Invalid value for '--source'"),
        (["import", "--session", "/no/such/file.jsonl"], "does not exist"),
        (["import", "--limit", "0"], "Invalid value for '--limit'"),
        (["import", "--since", "last tuesday"], "is not a date"),
    ],
)
def test_bad_arguments(proj: Path, homes: tuple[Path, Path], args: list[str], message: str) -> None:
    code, out = memlane(proj, *args)
    assert code == 2 and message in out


def test_session_of_another_project_is_a_clear_error(proj: Path, tmp_path: Path, homes: tuple[Path, Path]) -> None:
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    path = rich_claude_session("s-other", other).write(homes[0])
    code, out = memlane(proj, "import", "--session", str(path))
    assert code == 1 and "was recorded in" in out and "memlane -C" in out


@pytest.mark.slow
def test_import_embeds_with_the_bundled_model(proj: Path, homes: tuple[Path, Path]) -> None:
    real_transcript(homes[0], proj)
    code, out = memlane(proj, "import", "--source", "claude")
    assert code == 0, out
    assert "embedded 9 event(s)" in out  # the 9 imported; the session start/end markers get no vectors
    code, out = memlane(proj, "search", "connection pool exhausted", "--json")
    assert code == 0 and "narwhal" in out
