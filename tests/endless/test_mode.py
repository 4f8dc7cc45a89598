"""Switching modes both ways from the command line, on a project with history; what SessionStart gives in each mode
through the hook path; and one-line errors for bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from conftest import payload
from memlane import hooks, paths
from memlane.cli.main import cli
from memlane.memory import Memory

PROMPT = "The checkout pool times out under load, fix app/db.py"
ANSWER = "app/db.py now sets pool_size=25; the checkout pool no longer times out."


def run(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["-C", str(root), *args])
    return result.exit_code, result.stdout, result.stderr


def history(hook: Callable[..., str], proj: Path, session: str) -> None:
    """One exchange captured through the hooks: the prompt, an edit of app/db.py, the answer."""
    hook("SessionStart", payload("01-SessionStart.json", session_id=session))
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", session_id=session, prompt_id=f"{session}-p",
                                     prompt=PROMPT))  # fmt: skip
    edit = payload("04-PostToolUse.json", session_id=session, prompt_id=f"{session}-p", tool_name="Edit",
                   tool_use_id=f"{session}-edit", tool_response={"filePath": str(proj / "app" / "db.py")})  # fmt: skip
    edit["tool_input"] = {"file_path": str(proj / "app" / "db.py"), "old_string": "pool_size=10",
                          "new_string": "pool_size=25"}  # fmt: skip
    hook("PostToolUse", edit)
    hook("Stop", payload("05-Stop.json", session_id=session, prompt_id=f"{session}-p", last_assistant_message=ANSWER))


def test_switching_to_endless_and_back_keeps_everything_and_changes_what_session_start_says(
    hook: Callable[..., str], proj: Path
) -> None:
    history(hook, proj, "one")
    history(hook, proj, "two")
    code, out, _ = run(proj, "endless", "status", "--json")
    status = json.loads(out)
    assert code == 0 and (status["mode"], status["mode_from"], status["consolidated"]) == ("session", "config", 0)
    assert [i["title"] for i in status["working_set"] if i["kind"] == "file"] == ["app/db.py"]

    code, out, _ = run(proj, "endless", "enable")
    assert code == 0 and out.startswith("Endless mode on for this project: a working set of ")
    code, out, _ = run(proj, "endless", "status", "--json")
    on = json.loads(out)
    assert (on["mode"], on["mode_from"]) == ("endless", "project") and on["consolidated"] >= 1
    assert on["topics_queued"] == 0 and on["events_not_projected"] == 0

    # SessionStart through the hook path: the daemon answers it in its own process (``warm``); without a daemon
    # the hook gives the session recap and says so in the log.
    start = json.dumps({**payload("01-SessionStart.json", session_id="three"), "cwd": str(proj)}).encode()
    recap = hooks.handle("SessionStart", start)
    assert "memlane: where this project left off" in json.loads(recap)["hookSpecificOutput"]["additionalContext"]
    assert "endless mode: the daemon is not up" in Path(paths.join("logs", "hooks.log")).read_text()
    warm = hooks.Warm(str(proj), lambda *a: {})
    endless = json.loads(hooks.handle("SessionStart", start, warm=warm))["hookSpecificOutput"]["additionalContext"]
    assert endless.startswith("memlane (endless mode): where the work stands")
    assert "Active files:\n- [mem:" in endless and "app/db.py (changed 2× in 2 sessions" in endless

    code, out, _ = run(proj, "endless", "disable")
    assert code == 0 and out.startswith("Session mode for this project")
    off = json.loads(run(proj, "endless", "status", "--json")[1])
    assert off["mode"] == "session" and off["consolidated"] == on["consolidated"]  # kept
    again = json.loads(hooks.handle("SessionStart", start, warm=warm))["hookSpecificOutput"]["additionalContext"]
    assert again.startswith("memlane: where this project left off")

    assert run(proj, "endless", "enable")[0] == 0
    assert json.loads(run(proj, "endless", "status", "--json")[1])["consolidated"] == on["consolidated"]


def test_the_config_sets_the_mode_of_projects_without_their_own(hook: Callable[..., str], proj: Path) -> None:
    history(hook, proj, "one")
    assert run(proj, "config", "set", "endless.mode", "endless")[0] == 0
    with Memory.open(proj) as mem:
        assert mem.endless_mode() == ("endless", "config")
        mem.set_endless_mode("session")
        assert mem.endless_mode() == ("session", "project")


def test_status_consolidate_and_memories_as_text(hook: Callable[..., str], proj: Path) -> None:
    history(hook, proj, "one")
    history(hook, proj, "two")
    code, out, _ = run(proj, "endless", "consolidate")
    assert code == 0 and out.endswith("consolidated memories in all.\n") and "topic(s) consolidated" in out
    code, out, _ = run(proj, "endless", "status")
    lines = out.splitlines()
    assert lines[0] == "mode\tsession (config endless.mode)"
    assert lines[1].startswith("working set\t") and "last 24 h of activity" in lines[1]
    assert lines[2].startswith("continuity\t") and "(seamless), session two" in lines[2]
    assert lines[3].startswith("\t+0.30 time: started ")
    code, out, _ = run(proj, "endless", "memories", "pool", "--sources")
    assert code == 0 and out.startswith("cm-") and "  app/db.py  (2 session(s), " in out.splitlines()[0]
    assert "  sources: " in out
    assert run(proj, "endless", "memories", "kubernetes") == (0, "No consolidated memory matches 'kubernetes'.\n", "")
    code, out, _ = run(proj, "stats")
    assert "\nmode\tsession\ncontinuity\t" in out


def test_bad_input_is_one_line(proj: Path) -> None:
    assert run(proj, "endless", "status") == (0, f"No memory for this project yet ({proj}).\n", "")
    assert run(proj, "endless", "memories", "pool") == (0, f"No memory for this project yet ({proj}).\n", "")
    code, _, err = run(proj, "endless", "consolidate")
    assert code == 0 and err == ""
    code, _, err = run(proj, "endless", "memories", "-n", "0")
    assert code == 2 and "Invalid value for '--limit'" in err and "Traceback" not in err
    code, out, err = run(proj, "config", "set", "endless.mode", "forever")
    assert code != 0 and "endless.mode: must be one of 'session', 'endless', got 'forever'" in (out + err)
    code, out, err = run(proj, "config", "set", "--", "endless.window_hours", "-1")
    assert code != 0 and "must not be negative" in (out + err) and len((out + err).strip().splitlines()) == 1
    code, _, err = run(proj, "endless", "enable", "--bogus")
    assert code == 2 and "No such option '--bogus'" in err
