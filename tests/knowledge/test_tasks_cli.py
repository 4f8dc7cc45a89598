"""``memlane tasks`` and ``memlane rebuild`` from the command line: whole outputs, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from memlane.cli.main import cli


def run(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["-C", str(root), *args])
    return result.exit_code, result.stdout, result.stderr


def test_tasks_add_update_list_show(proj: Path) -> None:
    assert run(proj, "tasks", "list") == (0, f"No memory for this project yet ({proj}).\n", "")
    code, out, _ = run(proj, "tasks", "add", "Write", "the", "CSV", "importer", "--priority", "high")
    assert code == 0 and out.startswith("Added task-") and out.endswith(": Write the CSV importer (pending)\n")
    csv = out.split()[1].rstrip(":")
    code, out, _ = run(proj, "tasks", "add", "Ship the beta", "--blocker", "write the csv importer")
    assert code == 0 and out.endswith(": Ship the beta (blocked)\n")
    code, out, _ = run(proj, "tasks", "list", "--json")
    rows = json.loads(out)
    assert [(r["title"], r["status"], [b["title"] for b in r["blockers"]]) for r in rows] == [
        ("Ship the beta", "blocked", ["Write the CSV importer"]),
        ("Write the CSV importer", "pending", []),
    ]
    assert run(proj, "tasks", "update", csv, "--status", "in_progress")[:2] == (
        0,
        f"{csv}: Write the CSV importer is in_progress\n",
    )
    assert run(proj, "tasks", "update", csv, "--status", "done", "--note", "merged in #41")[1].endswith("is done\n")
    code, out, _ = run(proj, "tasks", "list")
    lines = out.splitlines()
    assert lines[0] == "id\tstatus\tpriority\tupdated\tblockers\ttitle"
    assert len(lines) == 2 and "\tin_progress\tmedium\t" in lines[1] and lines[1].endswith("\t-\tShip the beta")
    code, out, _ = run(proj, "tasks", "show", "ship the beta")
    assert code == 0
    history = out.split("History:\n")[1].split("\n\n")[0].splitlines()
    assert [line.split()[1] for line in history] == ["created", "blockers", "status", "unblocked"]
    assert history[-1].endswith("unblocked blocked → in_progress")
    code, out, _ = run(proj, "tasks", "show", csv, "--json")
    task = json.loads(out)
    assert (task["status"], task["note"], len(task["events"])) == ("done", "merged in #41", 3)


def test_tasks_errors_are_one_line(proj: Path) -> None:
    run(proj, "tasks", "add", "Write the CSV importer")
    for args, message in [
        (("tasks", "update", "write the csv importer", "--status", "done"), "is pending: start it first"),
        (("tasks", "update", "write the csv importer", "--status", "blocked"), "needs a blocker"),
        (("tasks", "update", "no such task", "--status", "done"), "no task 'no such task'"),
        (("tasks", "add", "write the CSV importer!"), "exists already"),
        (("tasks", "show", "nothing"), "no task 'nothing'"),
        (("tasks", "update", "write the csv importer", "--status", "pending"), "nothing to change"),
    ]:
        code, out, err = run(proj, *args)
        assert code == 1 and out == "" and err.startswith("Error: ") and message in err, (args, err)
        assert err.count("\n") == 1
    code, _, err = run(proj, "tasks", "update", "write the csv importer")
    assert code == 2 and "say what to change" in err
    code, _, err = run(proj, "tasks", "update", "x", "--status", "finished")
    assert code == 2 and "'finished' is not one of" in err


def test_rebuild_says_what_it_recreated(proj: Path) -> None:
    run(proj, "tasks", "add", "Write the CSV importer")
    code, out, _ = run(proj, "rebuild")
    assert code == 0
    assert out.splitlines() == [
        "rebuilt fulltext from 1 event(s)",
        "rebuilt sessions from 1 event(s)",
        "rebuilt knowledge from 1 event(s)",
        "rebuilt endless from 1 event(s)",
        "rebuilt learning from 1 event(s)",
        "knowledge: 0 entries, 1 entities, 1 edges, 0 memories superseded",
        "endless: a working set of 1 item(s), 0 consolidated memories, the continuity of 0 session(s)",
        "learning: 0 memories used (0 at L1 or above), 0 insights",
    ]
    code, out, _ = run(proj, "rebuild", "--only", "knowledge", "--json")
    assert json.loads(out)["rebuilt"] == {"knowledge": 1}
    code, _, err = run(proj, "rebuild", "--only", "vectors")
    assert code == 1
    assert err == "Error: unknown derived state 'vectors' (one of: fulltext, sessions, knowledge, endless, learning)\n"
