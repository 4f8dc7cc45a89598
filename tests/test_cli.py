from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import payload
from memlane import paths
from memlane.cli.main import cli


@pytest.fixture
def filled(hook: Callable[..., str], proj: Path) -> Path:
    hook("SessionStart", payload("01-SessionStart.json"))
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    hook("PostToolUse", payload("04-PostToolUse.json"))
    hook("Stop", payload("05-Stop.json"))
    hook("SessionEnd", payload("06-SessionEnd.json"))
    hook(
        "UserPromptSubmit",
        payload("08-UserPromptSubmit.json", session_id="s-two", prompt="데이터베이스 연결 풀 문제를 해결해 주세요"),
    )
    return proj


def invoke(proj: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["-C", str(proj), *args], catch_exceptions=False)
    return result.exit_code, result.stdout


def test_history_filters_and_json(filled: Path) -> None:
    code, out = invoke(filled, "history", "--json")
    rows = json.loads(out)
    assert code == 0 and rows[0]["type"] == "user_prompt" and len(rows) >= 6
    code, out = invoke(filled, "history", "--type", "tool_observation", "--json")
    assert [r["type"] for r in json.loads(out)] == ["tool_observation"]
    code, out = invoke(filled, "history", "--session", "s-two", "--json")
    assert len(json.loads(out)) == 1
    code, out = invoke(filled, "history", "--since", "1d", "--limit", "2", "--json")
    assert len(json.loads(out)) == 2
    code, out = invoke(filled, "history")
    assert "user_prompt" in out and "mem:" in out


def test_show_by_citation_and_timeline(filled: Path) -> None:
    rows = json.loads(invoke(filled, "history", "--type", "tool_observation", "--json")[1])
    code, out = invoke(filled, "show", rows[0]["citation"])
    assert code == 0 and "narwhal" in out and "command" in out
    code, out = invoke(filled, "timeline", rows[0]["citation"], "--json")
    assert [r["type"] for r in json.loads(out)][:3] == ["session_start", "user_prompt", "tool_observation"]


def test_search_fts_and_korean(filled: Path) -> None:
    code, out = invoke(filled, "search", "pool", "exhausted", "--json", "--text-only")
    assert code == 0 and any("narwhal" in h["summary"] for h in json.loads(out))
    code, out = invoke(filled, "search", "데이터베이스", "--json")
    assert json.loads(out)[0]["session_id"] == "s-two"
    code, out = invoke(filled, "search", "nothingmatcheshere")
    assert "Nothing found" in out


def test_stats_and_sessions(filled: Path) -> None:
    data = json.loads(invoke(filled, "stats", "--json")[1])
    assert data["events"] >= 7 and data["sessions"] == 2 and data["by_type"]["user_prompt"] == 2
    markers = data["by_type"]["session_start"] + data["by_type"].get("session_end", 0)
    assert markers >= 2 and data["outbox"]["pending"] == data["events"] - markers  # bookkeeping is not embedded
    sessions = json.loads(invoke(filled, "sessions", "--json")[1])
    assert {s["id"] for s in sessions} == {"s-two", "6f8a962b-e546-4507-8ff4-23e5a2f295f8"}
    assert any(s["summary"] and "zebrafinch" in s["summary"] for s in sessions)
    _code, out = invoke(filled, "stats")
    assert "privacy" in out


def test_forget_event_session_before_and_project(filled: Path) -> None:
    rows = json.loads(invoke(filled, "history", "--type", "user_prompt", "--json")[1])
    code, out = invoke(filled, "forget", rows[0]["citation"], "--yes")
    assert code == 0 and "Forgot 1" in out
    result = CliRunner().invoke(
        cli, ["-C", str(filled), "forget", "--session", "6f8a962b-e546-4507-8ff4-23e5a2f295f8"], input="n\n"
    )
    assert result.exit_code == 1 and "Aborted" in result.output
    session = "6f8a962b-e546-4507-8ff4-23e5a2f295f8"
    expected = [r["citation"] for r in json.loads(invoke(filled, "history", "--session", session, "--json")[1])]
    code, out = invoke(filled, "forget", "--session", session, "--dry-run")
    listed = [line.split("\t")[0] for line in out.splitlines()[1:]]  # the events that would go, header first
    assert code == 0 and sorted(listed) == sorted(expected) and len(listed) >= 5
    dry = json.loads(invoke(filled, "forget", "--session", session, "--dry-run", "--json")[1])
    assert sorted(e["citation"] for e in dry) == sorted(expected)
    assert len(json.loads(invoke(filled, "history", "--session", session, "--json")[1])) == len(expected)
    code, out = invoke(filled, "forget", "--before", "2000-01-01", "--yes")
    assert "Nothing to forget" in out
    code, out = invoke(filled, "forget", "--project", "--yes")
    assert code == 0
    assert json.loads(invoke(filled, "stats", "--json")[1])["events"] == 0


def test_export_formats(filled: Path, tmp_path: Path) -> None:
    out = invoke(filled, "export", "--format", "jsonl")[1]
    lines = [json.loads(x) for x in out.splitlines()]
    assert len(lines) >= 7 and lines[0]["type"] == "session_start"
    assert len(json.loads(invoke(filled, "export", "--format", "json")[1])) == len(lines)
    target = tmp_path / "out.md"
    code, _ = invoke(filled, "export", "--format", "markdown", "-o", str(target))
    assert code == 0 and "### " in target.read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["history", "--since", "yesterday-ish"], "is not a date"),
        (["history", "--type", "nope"], "Invalid value"),
        (["history", "--limit", "0"], "Invalid value"),
        (["forget"], "exactly one of"),
        (["search", "   "], "empty search query"),
        (["--project-id", "nope-123", "stats"], "unknown project id"),
        (["config", "get", "injection.max_char"], "did you mean 'max_chars'"),
        (["config", "set", "injecton.max_chars", "5"], "did you mean 'injection'"),
        (["config", "set", "injection.max_chars", "lots"], "must be an integer"),
    ],
)
def test_bad_cli_input_is_one_clear_line(proj: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["-C", str(proj), *args])
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_config_set_get_show_unset(proj: Path) -> None:
    assert invoke(proj, "config", "set", "injection.max_chars", "3000")[1].strip() == "injection.max_chars = 3000"
    assert invoke(proj, "config", "get", "injection.max_chars")[1].strip() == "3000"
    text = paths.config_path().read_text()
    assert "max_chars = 3000" in text and "# Character budget" in text and "# marker = " in text
    assert "[retrieval]" in invoke(proj, "config", "show")[1]
    invoke(proj, "config", "set", "capture.skip_tools", '["TodoWrite", "Glob"]')
    assert "Glob" in invoke(proj, "config", "get", "capture.skip_tools")[1]
    invoke(proj, "config", "unset", "injection.max_chars")
    assert invoke(proj, "config", "get", "injection.max_chars")[1].strip() == "4000"
    assert invoke(proj, "config", "path")[1].strip() == str(paths.config_path())


def test_corrupted_config_is_named(proj: Path) -> None:
    paths.config_path().write_text("[injection]\nmax_chars = 'many'\n")
    result = CliRunner().invoke(cli, ["-C", str(proj), "stats"])
    assert result.exit_code == 1 and "injection.max_chars: must be an integer" in result.output


def test_env_override(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_INJECTION_MAX_CHARS", "1234")
    assert invoke(proj, "config", "get", "injection.max_chars")[1].strip() == "1234"


@pytest.mark.parametrize("value", ["[1, 2]", '["a", "b", "c", "d"]', "[1, 2, 3, true]", "0.5"])
def test_retrieval_weights_of_the_wrong_shape_are_one_line_errors(
    proj: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("MEMLANE_RETRIEVAL_HYBRID_WEIGHTS", value)
    result = CliRunner().invoke(cli, ["-C", str(proj), "config", "get", "retrieval.hybrid_weights"])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("Error: environment: retrieval.hybrid_weights: must be a list of 4 numbers, got ")


def test_retrieval_weights_take_negative_numbers(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_RETRIEVAL_HYBRID_WEIGHTS", "[-5, 4.5, 0, 7]")
    assert json.loads(invoke(proj, "config", "get", "retrieval.hybrid_weights")[1].replace(",\n]", "\n]")) == [
        -5.0,
        4.5,
        0.0,
        7.0,
    ]


def test_projects_status_doctor(filled: Path, memlane_home: Path) -> None:
    rows = json.loads(invoke(filled, "projects", "--json")[1])
    assert rows[0]["root"] == str(filled) and rows[0]["id"].startswith("shop-")
    status = json.loads(invoke(filled, "status", "--json")[1])
    assert status["project"]["events"] >= 7 and status["hooks"] == {"user": [], "project": [], "local": []}
    code, out = invoke(filled, "doctor")
    assert code == 1 and "memlane install" in out
    assert oct(memlane_home.stat().st_mode)[-3:] == "700"


def test_doctor_repair_ingests_spool(filled: Path) -> None:
    from memlane import project
    from memlane.capture import spool
    from memlane.store import NewEvent

    p = project.identify(filled)
    spool.write(p.id, str(p.root), [NewEvent("user_prompt", "s9", "spooled words", "t")], "test")
    _, out = invoke(filled, "doctor", "--repair")
    assert "1 new event" in out
    _code, out = invoke(filled, "doctor", "--repair")
    assert "nothing to repair" in out
    assert len(json.loads(invoke(filled, "search", "spooled", "--json")[1])) == 1


def test_doctor_names_the_multilingual_model_for_korean_prompts(
    hook: Callable[..., str], proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mostly Korean prompts with the English default model: a warning naming multilingual-e5-small; none
    for English prompts, with the multilingual model set, or with `retrieval.cjk_vectors` on."""

    def language() -> dict[str, object] | None:
        checks = {c["name"]: c for c in json.loads(invoke(proj, "doctor", "--json")[1])}
        return checks.get("language")

    for i in range(4):
        hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", session_id="s-en", prompt=f"fix the pool {i}"))
    for i in range(4):
        hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", session_id="s-ko", prompt=f"풀 문제 {i} 고쳐줘"))
    assert language() is None  # four Korean prompts: too few to speak of
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", session_id="s-ko", prompt="DB 커넥션 풀 크기는?"))
    check = language()
    assert check is not None and check["warn"] and not check["ok"]
    assert "5 of your latest 9 prompts" in str(check["detail"]) and "multilingual-e5-small" in str(check["fix"])
    assert "not by meaning" in str(check["detail"])  # what the English model lacks; not a claim e5 finds English
    _code, out = invoke(proj, "doctor")
    assert "warn" in out and "language" in out
    monkeypatch.setenv("MEMLANE_RETRIEVAL_CJK_VECTORS", "true")
    assert language() is None
    monkeypatch.delenv("MEMLANE_RETRIEVAL_CJK_VECTORS")
    monkeypatch.setenv("MEMLANE_EMBEDDING_MODEL", "multilingual-e5-small")
    assert language() is None
