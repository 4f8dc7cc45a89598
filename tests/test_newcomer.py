"""What a new user tripped on when trying memlane from its README (issue 36), one test per habit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import payload
from memlane.cli.main import cli
from memlane.memory import Memory
from memlane.store.db import NewEvent

SRC = Path(__file__).resolve().parents[1] / "src"


def run(*args: str, cwd: Path | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False) if cwd is None else _in(cwd, args)
    return result.exit_code, result.output


def _in(cwd: Path, args: tuple[str, ...]) -> Any:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


@pytest.fixture
def stored(proj: Path) -> Path:
    with Memory.open(proj) as mem:
        mem.store.append(
            NewEvent("user_prompt", "s1", f"why does checkout time out under load? take {i}", f"t{i}") for i in range(3)
        )
    return proj


# ---- -C / --project-id after the subcommand ------------------------------------------------------


@pytest.mark.parametrize("where", ["before", "after"])
def test_project_options_work_before_and_after_the_subcommand(stored: Path, tmp_path: Path, where: str) -> None:
    pid = Memory.open(stored, create=False).project.id
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for option in (["--project-id", pid], ["-C", str(stored)]):
        args = [*option, "history", "--json"] if where == "before" else ["history", *option, "--json"]
        code, out = run(*args, cwd=elsewhere)
        assert code == 0 and len(json.loads(out)) == 3, (args, out)
    code, out = run("workflow", "list", "-C", str(stored), cwd=elsewhere)  # a group's subcommand too
    assert code == 0
    code, out = run("vectors", "status", "--project-id", pid, "--json", cwd=elsewhere)
    assert code == 0 and json.loads(out)["outbox"]


def test_c_to_a_file_says_not_a_folder(stored: Path) -> None:
    (stored / "app.py").write_text("print(1)\n")
    for args in (["-C", str(stored / "app.py"), "history"], ["history", "-C", str(stored / "app.py")]):
        code, out = run(*args)
        assert (
            code == 1
            and out
            == f"Error: -C {stored / 'app.py'}: not a folder (give the folder of the project, not a file in it)\n"
        )
    code, out = run("history", "-C", str(stored / "nowhere"))
    assert code == 1 and out == f"Error: -C {stored / 'nowhere'}: no such folder\n"


# ---- since later than until ----------------------------------------------------------------------


@pytest.mark.parametrize("command", [["history"], ["search", "checkout", "--text-only"]])
def test_since_later_than_until_is_an_error_that_says_so(stored: Path, command: list[str]) -> None:
    code, out = run("-C", str(stored), *command, "--since", "1d", "--until", "7d")
    assert code == 1 and out.count("\n") == 1
    assert out.startswith("Error: since (") and "is later than until (" in out and "swap them" in out
    code, _ = run("-C", str(stored), *command, "--since", "7d", "--until", "1d")
    assert code == 0


def test_the_library_refuses_an_empty_window_too(stored: Path) -> None:
    from memlane.errors import InputError

    with Memory.open(stored, create=False) as mem, pytest.raises(InputError, match="later than until"):
        mem.history(since="2026-11-20", until="2026-11-01")


# ---- workflow import-doc -------------------------------------------------------------------------


def test_import_doc_refuses_a_file_that_is_not_a_document(proj: Path) -> None:
    (proj / "app.py").write_text("def main():\n    return 1\n")
    code, out = run("-C", str(proj), "workflow", "import-doc", str(proj / "app.py"))
    assert code == 1 and out.count("\n") == 1
    assert f"Error: {proj / 'app.py'} is not a markdown document" in out
    assert not list(Path(os.environ["MEMLANE_HOME"]).glob("workflows/*/progress.json"))


# ---- key/value outputs, colour, JSON times -------------------------------------------------------


def test_key_value_outputs_are_tab_separated_in_a_pipe(stored: Path) -> None:
    cite = Memory.open(stored, create=False).store.history(limit=1)[0].cite
    for args, key in ((["show", cite], "citation"), (["stats"], "project"), (["status"], "memlane"),
                      (["vectors", "status"], "model")):  # fmt: skip
        code, out = run("-C", str(stored), *args)
        assert code == 0
        head = out.splitlines()[0]
        assert head.split("\t")[0] == key and len(head.split("\t")) == 2, (args, head)
    code, out = run("-C", str(stored), "stats")
    assert "events\t3" in out.splitlines()


def _styled(env: dict[str, str]) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    done = subprocess.run(
        [sys.executable, "-m", "memlane", "doctor"],
        env={**base, "PYTHONPATH": str(SRC), "COLUMNS": "120", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout


def test_no_color_turns_off_bold_too() -> None:
    assert "\x1b[" in _styled({"FORCE_COLOR": "1"})  # a terminal gets styles
    plain = _styled({"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "ok" in plain and "\x1b[" not in plain  # no colour, no bold, no dim


def test_regions_list_has_json(proj: Path) -> None:
    (proj / "CLAUDE.md").write_text("# Shop\n\n<!-- MEMORY_START: setup -->\n## Setup\n<!-- MEMORY_END: setup -->\n")
    code, out = run("-C", str(proj), "regions", "list", "--json")
    data = json.loads(out)
    assert code == 0 and data["regions"][0]["name"] == "setup" and data["regions"][0]["start_line"] == 2


_TIME_WORDS = ("time", "_at", "At", "started", "mtime", "ts", "since", "until")


def _epoch_times(data: Any, path: str = "") -> Iterator[str]:
    """Numbers under a time-like key that look like seconds since the epoch."""
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}"
            timeish = isinstance(key, str) and any(w in key for w in _TIME_WORDS)
            if timeish and isinstance(value, (int, float)) and not isinstance(value, bool) and value > 1e9:
                yield where
            yield from _epoch_times(value, where)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _epoch_times(value, f"{path}[{i}]")


def test_every_json_output_uses_iso_times(stored: Path, hook: Callable[..., str]) -> None:
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    run("-C", str(stored), "workflow", "init")
    commands = [
        ["projects"], ["status"], ["doctor"], ["history"], ["sessions"], ["stats"], ["search", "pool", "--text-only"],
        ["workflow", "list"], ["workflow", "status"], ["workflow", "show"], ["context", "show"], ["vectors", "status"],
        ["daemon", "status"], ["import", "validate"], ["config", "path"],
    ]  # fmt: skip
    for args in commands:
        _code, out = run("-C", str(stored), *args, "--json")
        data = json.loads(out)
        assert list(_epoch_times(data)) == [], args
    projects = json.loads(run("projects", "--json")[1])
    assert projects[0]["created_at"].endswith("Z") and projects[0]["created_at"][:2] == "20"


def test_iso_times_turns_epoch_seconds_under_time_keys_only() -> None:
    from memlane.cli.render import iso_times

    data = {"created_at": 1764042751.781, "started": 1764042751, "count": 1764042751, "nested": [{"lastAccess": 1.8e9}]}
    assert iso_times(data) == {
        "created_at": "2025-11-25T03:52:31.781Z",
        "started": "2025-11-25T03:52:31.000Z",
        "count": 1764042751,
        "nested": [{"lastAccess": "2027-01-15T08:00:00.000Z"}],
    }


# ---- every path a command writes: one line, never a traceback ------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["export", "-o", "/missing/dir/x.md"], "no such folder /missing/dir"),
        (["export", "-o", "/etc/passwd/x"], "/etc/passwd is a file, not a folder"),
        (["export", "-o", "/etc/passwd/deeper/x.md"], "/etc/passwd is a file, not a folder"),
        (["export", "-o", "/tmp"], "/tmp is a folder"),
        (["plugin", "build", "/etc/passwd/x"], "/etc/passwd is a file, not a folder"),
        (["plugin", "build", "/etc/passwd"], "/etc/passwd is a file, not a folder"),
        (["workflow", "import-doc", "/missing/feature-list.md"], "does not exist"),
        (["import", "--session", "/missing/s.jsonl"], "does not exist"),
        (["regions", "list", "--file", "/missing/dir/CLAUDE.md"], "no such file"),
        (["regions", "create", "x", "--file", "/etc/passwd/CLAUDE.md"], "/etc/passwd"),
    ],
)
def test_bad_paths_are_one_line_errors(stored: Path, args: list[str], says: str) -> None:
    result = CliRunner().invoke(cli, ["-C", str(stored), *args])
    assert result.exit_code in (1, 2), result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, OSError)
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and says in error[0], result.output


def test_export_to_a_good_path_still_works(stored: Path, tmp_path: Path) -> None:
    code, _out = run("-C", str(stored), "export", "-o", str(tmp_path / "memory.jsonl"))
    assert code == 0 and len((tmp_path / "memory.jsonl").read_text().splitlines()) == 3


# ---- context compose: --prompt retrieves, --body is the caller's text ----------------------------


def test_compose_body_is_never_shown_as_a_memory(stored: Path) -> None:
    code, out = run("-C", str(stored), "context", "compose", "--task", "prompt_injection", "--body", "my own notes")
    assert code == 0 and "## Body\nmy own notes" in out and "Relevant memories" not in out
    code, out = run(
        "-C", str(stored), "context", "compose", "--task", "prompt_injection", "--prompt", "checkout time out"
    )
    assert code == 0 and "## Relevant memories" in out and "checkout time out under load" in out
    code, out = run(
        "-C", str(stored), "context", "compose", "--task", "prompt_injection", "--prompt", "a", "--body", "b"
    )
    assert code == 2 and "not both" in out


# ---- model names -----------------------------------------------------------------------------------


def _config_text() -> str:
    path = Path(os.environ["MEMLANE_HOME"]) / "config.toml"
    return path.read_text() if path.exists() else ""


@pytest.mark.parametrize(
    ("model", "says"),
    [
        ("nonexistent-model", "unknown embedding model 'nonexistent-model'"),
        ("/no/such/model", "no model folder /no/such/model"),
        ("intfloat/multilingual-e5-small", "install memlane[torch]"),
    ],
)
def test_config_set_refuses_a_model_that_cannot_work(model: str, says: str) -> None:
    before = _config_text()
    code, out = run("config", "set", "embedding.model", model)
    assert code == 1 and out.count("\n") == 1 and says in out and "left unchanged" in out
    assert _config_text() == before


def test_config_set_takes_the_models_that_are_installed(tmp_path: Path) -> None:
    for model in ("multilingual-e5-small", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-int8"):
        code, out = run("config", "set", "embedding.model", model)
        assert code == 0 and out.startswith(f'embedding.model = "{model}"'), out
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    code, out = run("config", "set", "embedding.model", str(folder))
    assert code == 1 and "not a model (no config.json in it)" in out


class _Models(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"data": [{"id": "nomic-embed-text:latest"}, {"id": "mxbai-embed-large"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_endpoint_models_are_checked_against_what_the_endpoint_lists(endpoint: str) -> None:
    assert run("config", "set", "embedding.provider", "openai")[0] == 0
    assert run("config", "set", "embedding.url", endpoint)[0] == 0
    code, out = run("config", "set", "embedding.model", "nomic-embed-text")
    assert code == 0, out
    code, out = run("config", "set", "embedding.model", "nonexistent-model")
    assert (
        code == 1 and "has no model 'nonexistent-model' (it lists: nomic-embed-text:latest, mxbai-embed-large)" in out
    )
    assert run("config", "set", "embedding.url", "http://127.0.0.1:9/v1")[0] == 0  # nothing listens there
    code, out = run("config", "set", "embedding.model", "anything")
    assert code == 0 and "Note: could not ask http://127.0.0.1:9/v1 which models it has" in out


def test_doctor_says_when_the_model_cannot_be_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMLANE_EMBEDDING_MODEL", '"nonexistent-model"')
    code, out = run("doctor")
    assert code == 1 and "FAIL embedding model: unknown embedding model 'nonexistent-model'" in out
    folder = tmp_path / "broken-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")  # looks like a model; will not load
    monkeypatch.setenv("MEMLANE_EMBEDDING_MODEL", json.dumps(str(folder)))
    code, out = run("doctor")
    assert code == 1 and f"FAIL embedding model: {folder} cannot be loaded" in out
    monkeypatch.delenv("MEMLANE_EMBEDDING_MODEL")
    code, out = run("doctor")
    assert "ok embedding model: all-MiniLM-L6-v2-int8@" in out


def test_search_says_when_it_fell_back_to_full_text(stored: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_EMBEDDING_MODEL", '"nonexistent-model"')
    result = CliRunner().invoke(cli, ["-C", str(stored), "search", "checkout"])
    assert result.exit_code == 0 and "mem:" in result.stdout
    assert "embedding model 'nonexistent-model' cannot be used" in result.stderr
    assert "full-text results only" in result.stderr


# ---- a settings file Claude Code cannot read -----------------------------------------------------


def test_broken_settings_json_is_named_by_status_doctor_and_install(proj: Path) -> None:
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{\n  "hooks": {\n    "x": 1,\n  }\n}\n')
    said = f"{settings}: bad JSON at line 4, column 3 (Expecting property name enclosed in double quotes)"
    code, out = run("-C", str(proj), "status")
    assert f"hooks (user)\tsettings file unreadable: {said}" in out and "not installed" not in out
    code, out = run("-C", str(proj), "doctor")
    assert code == 1 and f"FAIL hooks (user): Claude Code cannot read its settings: {said}" in out
    assert "memlane hooks are not registered" not in out
    code, out = run("-C", str(proj), "install")
    assert code == 1 and out.startswith(f"Error: {said}")
    data = json.loads(run("-C", str(proj), "status", "--json")[1])
    assert data["hook_files"]["user"]["error"].startswith(said)


# ---- import counts -------------------------------------------------------------------------------


def test_dry_run_import_and_history_count_the_same(
    proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hook: Callable[..., str]
) -> None:
    sys.path.insert(0, str(Path(__file__).parent / "importers"))
    from history_fixtures import real_transcript, rich_claude_session

    claude_dir = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_dir))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex"))
    rich_claude_session("s-count", proj).write(claude_dir)  # never seen by the hooks
    for name in ("01-SessionStart.json", "02-UserPromptSubmit.json", "04-PostToolUse.json", "05-Stop.json"):
        hook(payload(name)["hook_event_name"], payload(name))  # half of the real session, live
    real_transcript(claude_dir, proj)

    def events() -> int:
        return len(json.loads(run("-C", str(proj), "history", "--json", "-n", "1000")[1]))

    dry = json.loads(run("-C", str(proj), "import", "--dry-run", "--json")[1])
    before = events()
    done = json.loads(run("-C", str(proj), "import", "--no-embed", "--json")[1])
    assert dry["new_events"] == done["new_events"] == events() - before
    assert [(f["path"], f["new"]) for f in dry["details"]] == [(f["path"], f["new"]) for f in done["details"]]
    again = json.loads(run("-C", str(proj), "import", "--dry-run", "--json")[1])
    assert again["new_events"] == 0
