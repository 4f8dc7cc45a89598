"""What one event marks: files, commands and their failures, decisions, tasks, code names, prompts; and the links an
answer makes to what its exchange changed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from en_support import Log

from memlane import derived
from memlane.endless.marks import command_key, error_line, event_marks
from memlane.store.db import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "memory.db", "proj-e")
    yield s
    s.close()


def test_an_edit_marks_its_file_with_what_it_took_out_and_put_in(store: Store) -> None:
    log = Log(store)
    marks = event_marks(log.edit("app/db.py", "pool_size=10", "pool_size=25", "s1"))
    assert marks == [("file", "app/db.py", "change", "Edit app/db.py: − pool_size=10 + pool_size=25")]
    assert event_marks(log.read("app/db.py", "pool_size=25", "s1")) == [("file", "app/db.py", "read", "")]


def test_a_failed_command_is_marked_with_its_error_line_and_the_files_it_names(store: Store) -> None:
    out = "..F\nE   sqlalchemy.exc.TimeoutError: QueuePool limit of size 10 reached\n1 failed in 0.4s"
    marks = event_marks(Log(store).bash("cd app && pytest -q tests/test_db.py::test_pool", out, "s1", code=1))
    assert ("file", "tests/test_db.py", "run", "") in marks
    failed = [m for m in marks if m[0] == "command"]
    assert failed == [
        (
            "command",
            "pytest",
            "fail",
            "`cd app && pytest -q tests/test_db.py::test_pool` failed: "
            "E sqlalchemy.exc.TimeoutError: QueuePool limit of size 10 reached",
        )
    ]


def test_commands_that_only_look_around_are_no_topic_but_their_files_count_as_named(store: Store) -> None:
    marks = event_marks(Log(store).bash("grep -n REPORT app/settings.py", "3:REPORT = 1", "s1"))
    assert marks == [("file", "app/settings.py", "run", "")]


@pytest.mark.parametrize(
    ("command", "key"),
    [
        ("alembic upgrade head", "alembic upgrade"),
        ("DATABASE_URL=x sudo alembic -c a.ini upgrade head", "alembic upgrade"),
        ("python -m pytest -q", "python -m pytest"),
        ("npm run build -- --mode prod", "npm run build"),
        ("docker compose up -d db", "docker compose up"),
        ("cd web && npx playwright test", "npx playwright"),
        ("/usr/bin/make", "make"),
        ("", ""),
    ],
)
def test_command_keys_name_what_a_command_runs(command: str, key: str) -> None:
    from memlane.endless.marks import _argv

    assert command_key(_argv(command)) == key


def test_the_error_line_is_the_last_named_error_else_the_first_flagged_line() -> None:
    assert error_line("Bash: x\nTraceback (most recent call last):\n  ...\nValueError: bad id 'EV1'") == (
        "ValueError: bad id 'EV1'"
    )
    assert error_line("Bash: x\nExit code 1\nfatal: not a git repository") == "fatal: not a git repository"
    assert error_line("Bash: x\nExit code 2") == "Exit code 2"


def test_prompts_and_answers_mark_decisions_tasks_files_and_code_names(store: Store) -> None:
    log = Log(store)
    prompt = log.prompt("Switch the task queue from Celery to RQ.\nTODO: remove celery from app/worker.py", "s1")
    marks = event_marks(prompt)
    assert ("prompt", prompt.id, "prompt", " ".join(prompt.content.split())) in marks
    assert ("decision", "subject:task queue", "decision", "Switch the task queue from Celery to RQ.") in marks
    assert ("task", "task:remove celery from appworkerpy", "pending", "remove celery from app/worker.py") in marks
    assert ("file", "app/worker.py", "mention", "") in marks
    answer = log.answer("The engine now uses pool_size=25 and QueuePool; see https://docs.x.io/a/b.html.", "s1")
    names = [m[1] for m in event_marks(answer) if m[0] == "entity"]
    assert names == ["QueuePool", "pool_size"]
    assert not [m for m in event_marks(answer) if m[0] == "file"]  # a URL is no file of the project


def test_an_answer_links_to_the_files_its_exchange_changed_and_the_prompt_that_asked(store: Store) -> None:
    log = Log(store)
    prompt = log.prompt("The load test throws 500s after a minute.", "s1")
    log.bash("locust -f load.py", "Exit code 1\nTimeoutError: QueuePool limit", "s1", code=1)
    log.edit("app/db.py", "pool_size=10", "pool_size=25", "s1")
    answer = log.answer("QueuePool exhaustion. app/db.py now uses pool_size=25. The test passes.", "s1")
    derived.catch_up(store)
    linked = store.db.execute(
        "SELECT event_id, kind, key, role, fact FROM endless_marks WHERE role IN ('answer', 'asked')"
        " ORDER BY kind, role"
    ).fetchall()
    assert linked == [
        (answer.id, "command", "locust", "answer", "QueuePool exhaustion. app/db.py now uses pool_size=25."),
        (prompt.id, "command", "locust", "asked", prompt.content),
        (answer.id, "file", "app/db.py", "answer", "app/db.py now uses pool_size=25."),
        (prompt.id, "file", "app/db.py", "asked", prompt.content),
    ]
