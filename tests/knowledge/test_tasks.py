"""Tasks: the state machine (every transition, good and bad), the matcher, the blocker resolver, the fold of what
sessions say and of changes made by hand, identity across sessions."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kn_support import Log, open_store

from memlane import config
from memlane.errors import InputError, NotFoundError
from memlane.knowledge import service, tasks
from memlane.knowledge.tasks import TRANSITIONS, TaskError, check_transition, similarity
from memlane.store.db import Store

ALLOWED = {(a, b) for a, targets in TRANSITIONS.items() for b in targets}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    yield from open_store(tmp_path)


@pytest.fixture
def log(store: Store) -> Log:
    return Log(store)


# ---- the state machine --------------------------------------------------------------------------------------


@pytest.mark.parametrize("current,target", sorted(itertools.product(tasks.STATUSES, repeat=2)))
def test_every_transition(current: str, target: str) -> None:
    """Allowed moves pass (with a blocker when the target is blocked); every other one is refused in one line."""
    blockers = 1 if target == "blocked" else 0
    if current == target or (current, target) in ALLOWED:
        check_transition("ship it", current, target, blockers)
        return
    with pytest.raises(TaskError) as err:
        check_transition("ship it", current, target, blockers)
    assert "\n" not in str(err.value) and "ship it" in str(err.value)


def test_no_pending_to_done() -> None:
    with pytest.raises(TaskError, match="is pending: start it first"):
        check_transition("ship it", "pending", "done", 0)
    check_transition("ship it", "pending", "in_progress", 0)
    check_transition("ship it", "in_progress", "done", 0)


def test_blocked_requires_a_blocker_and_done_has_none_open() -> None:
    with pytest.raises(TaskError, match="needs a blocker"):
        check_transition("ship it", "in_progress", "blocked", 0)
    with pytest.raises(TaskError, match="needs a blocker"):
        check_transition("ship it", "blocked", "blocked", 0)
    with pytest.raises(TaskError, match="open blocker"):
        check_transition("ship it", "in_progress", "done", 1)
    with pytest.raises(TaskError, match="is blocked: unblock it first"):
        check_transition("ship it", "blocked", "done", 0)


def test_unknown_status_and_priority_are_refused() -> None:
    with pytest.raises(InputError, match="unknown task status 'finished'"):
        tasks.check_status("finished")
    with pytest.raises(InputError, match="unknown priority 'urgent'"):
        tasks.check_priority("urgent")


# ---- the matcher --------------------------------------------------------------------------------------------


def test_similarity_ignores_word_order_case_and_punctuation() -> None:
    assert similarity("Add the CSV importer", "add the csv importer!") == 1.0
    assert similarity("vector search implementation", "implementation: vector search") == 1.0
    assert 0.75 <= similarity("implement vector search", "implement the vector searches") < 0.92
    assert similarity("implement vector search", "rotate the API keys") < 0.5


def test_matcher_confidence_levels(store: Store, log: Log) -> None:
    log.prompt("- [ ] deploy api v1\n- [ ] deploy api v2\n- [ ] implement vector search")
    log.project()
    m = tasks.TaskMatcher(store)
    exact = m.match("Deploy API v1.")
    assert (exact.confidence, exact.score) == ("high", 1.0), "its canonical key"
    assert m.match("implement vector searches").confidence == "high", "0.96, far ahead of the rest"
    assert m.match("implement the vector searching").confidence == "suggested", "close, but under 0.92"
    tie = m.match("deploy api v3")
    assert tie.confidence == "suggested" and tie.score >= 0.92, "as close to v1 as to v2: no gap, no identity"
    assert m.match("rotate the API keys").confidence == "none"


# ---- what sessions say --------------------------------------------------------------------------------------


def view(store: Store, title: str) -> dict[str, Any]:
    return tasks.task_view(store, tasks.find_task(store, title), full=True)


def test_a_task_named_in_three_sessions_is_one_task(store: Store, log: Log) -> None:
    log.prompt("Plan for today:\n- [ ] add rate limiting to login\n- [ ] rotate the API keys", session="a")
    log.answer("Started add rate limiting to login.", session="b")
    log.answer("Progress:\n- [x] Add rate limiting to login\n- [ ] rotate the API keys", session="c")
    log.project()
    rows = tasks.list_tasks(store)
    assert [(r["title"], r["status"]) for r in rows] == [
        ("rotate the API keys", "pending"),
        ("add rate limiting to login", "done"),
    ] or [(r["title"], r["status"]) for r in rows] == [
        ("add rate limiting to login", "done"),
        ("rotate the API keys", "pending"),
    ]
    task = view(store, "add rate limiting to login")
    assert [h["kind"] for h in task["history"]] == ["created", "status", "status"]
    assert [(h["from_status"], h["to_status"]) for h in task["history"][1:]] == [
        ("pending", "in_progress"),
        ("in_progress", "done"),
    ]
    assert task["sessions"] == ["a", "b", "c"] and len(task["events"]) == 3


def test_done_from_pending_in_a_session_is_recorded_as_rejected_and_taken_to_in_progress(
    store: Store, log: Log
) -> None:
    log.prompt("TODO: migrate the invoices table")
    log.answer("The migrate the invoices table task is done.", session="s2")
    log.project()
    task = view(store, "migrate the invoices table")
    assert task["status"] == "in_progress"
    kinds = [(h["kind"], h["from_status"], h["to_status"]) for h in task["history"]]
    assert kinds == [
        ("created", None, "pending"),
        ("rejected", "pending", "done"),
        ("status", "pending", "in_progress"),
    ]
    assert "start it first" in task["history"][1]["detail"]["reason"]


def test_status_phrases_never_create_a_task(store: Store, log: Log) -> None:
    log.answer("Finished the database migration. Started refactoring the billing module.")
    log.project()
    assert tasks.list_tasks(store) == []


def test_blocked_by_a_task_is_unblocked_when_that_task_is_done(store: Store, log: Log) -> None:
    log.prompt("- [ ] provision the staging database\n- [ ] deploy the api to staging")
    log.answer("Deploy the api to staging is blocked by provision the staging database.")
    log.project()
    deploy = view(store, "deploy the api to staging")
    assert deploy["status"] == "blocked"
    assert [(b["kind"], b["title"], b["open"]) for b in deploy["blockers"]] == [
        ("task", "provision the staging database", True)
    ]
    assert view(store, "provision the staging database")["blocks"][0]["title"] == "deploy the api to staging"
    log.answer("Started provision the staging database.", session="s2")
    log.answer("Provision the staging database is done.", session="s2")
    log.project()
    deploy = view(store, "deploy the api to staging")
    assert deploy["status"] == "in_progress" and deploy["blockers"] == []
    assert deploy["history"][-1]["kind"] == "unblocked"


def test_blocker_resolver_kinds(store: Store, log: Log) -> None:
    log.prompt(
        "- [ ] ship the mobile app (blocked by https://github.com/acme/app/pull/12)\n"
        "- [ ] enable SSO (blocked by PLAT-481)\n"
        "- [ ] launch the beta (blocked by legal sign-off)"
    )
    log.project()
    kinds = {
        t: [(b["kind"], b["title"]) for b in view(store, t)["blockers"]]
        for t in ("ship the mobile app", "enable SSO", "launch the beta")
    }
    assert kinds == {
        "ship the mobile app": [("artifact", "https://github.com/acme/app/pull/12")],
        "enable SSO": [("artifact", "PLAT-481")],
        "launch the beta": [("condition", "legal sign-off")],
    }
    assert all(view(store, t)["status"] == "blocked" for t in kinds)
    assert {e["entity_type"] for e in store.entities("task")} == {"task"} and len(store.entities("task")) == 3, (
        "no stub task"
    )


def test_a_condition_resolves_to_the_task_named_like_it(store: Store, log: Log) -> None:
    log.prompt("- [ ] launch the beta (blocked by legal sign-off)")
    log.prompt("- [ ] legal sign-off", session="s2")
    log.project()
    beta = view(store, "launch the beta")
    assert beta["blockers"][0]["kind"] == "task" and beta["blockers"][0]["resolved_from"].startswith("cond-")
    rows = store.db.execute("SELECT effective_blocker_type FROM v_task_blockers_effective").fetchall()
    assert rows == [("entity",)] or rows[0][0] == "entity"


def test_suggested_blocker_is_linked_not_merged(store: Store, log: Log) -> None:
    log.prompt("- [ ] write the billing export")
    log.prompt("- [ ] send the invoices (blocked by write the billing export docs)", session="s2")
    log.project()
    invoices = view(store, "send the invoices")
    assert invoices["blockers"][0]["kind"] == "condition"
    assert [s["title"] for s in invoices["suggested_blockers"]] == ["write the billing export"]


# ---- changes by hand ----------------------------------------------------------------------------------------


def test_changes_by_hand_are_events_checked_first(store: Store, log: Log) -> None:
    cfg = config.load()
    service.add_task(store, cfg, "Write the release notes", priority="high")
    log.project()
    assert view(store, "write the release notes")["priority"] == "high"
    with pytest.raises(TaskError, match="start it first"):
        service.update_task(store, cfg, "write the release notes", status="done")
    with pytest.raises(TaskError, match="needs a blocker"):
        service.update_task(store, cfg, "write the release notes", status="blocked")
    service.update_task(store, cfg, "write the release notes", blockers=["waiting for the changelog"])
    log.project()
    task = view(store, "write the release notes")
    assert task["status"] == "blocked" and task["blockers"][0]["title"] == "waiting for the changelog"
    with pytest.raises(TaskError, match="unblock it first"):
        service.update_task(store, cfg, task["id"], status="done")
    service.update_task(store, cfg, task["id"][:9], status="in_progress", note="changelog is in")
    log.project()
    service.update_task(store, cfg, task["id"], status="done")
    log.project()
    task = view(store, task["id"])
    assert (task["status"], task["note"], task["blockers"]) == ("done", "changelog is in", [])
    kinds = [h["kind"] for h in task["history"]]
    assert kinds == ["created", "priority", "blockers", "status", "status", "status"]
    updates = [e.content for e in store.history(types=["task_update"], limit=10, oldest_first=True)]
    assert updates[0] == "Task 'Write the release notes', added (pending), priority high"
    assert store.sessions() == [], "task updates belong to no session"


def test_bad_hand_changes_are_one_line_errors(store: Store) -> None:
    cfg = config.load()
    with pytest.raises(InputError, match="empty task title"):
        service.add_task(store, cfg, "   ")
    with pytest.raises(TaskError, match="starts pending or in_progress"):
        service.add_task(store, cfg, "ship it", status="done")
    with pytest.raises(NotFoundError, match="no task 'nothing here'"):
        service.update_task(store, cfg, "nothing here", status="done")
    service.add_task(store, cfg, "ship it")
    from memlane import derived

    derived.catch_up(store)
    with pytest.raises(InputError, match="exists already"):
        service.add_task(store, cfg, "Ship it!")
    with pytest.raises(InputError, match="already pending: nothing to change"):
        service.update_task(store, cfg, "ship it", status="pending")


def test_a_secret_in_a_task_note_is_redacted_before_it_is_stored(store: Store) -> None:
    cfg = config.load()
    service.add_task(store, cfg, "rotate keys", note="old key AKIAIOSFODNN7EXAMPLE must go")
    stored = store.history(types=["task_update"], limit=1)[0]
    assert "AKIAIOSFODNN7EXAMPLE" not in stored.content and "AKIAIOSFODNN7EXAMPLE" not in str(stored.metadata)


def test_a_task_the_workflow_tracks_shows_its_workflow_status(tmp_path: Path) -> None:
    from memlane import project
    from memlane.memory import Memory
    from memlane.workflow import lifecycle, progress

    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    p = project.identify(root)
    lifecycle.init(p.root_str, p.name, p.id, config.WorkflowConfig())
    progress.mutate(p.id, lambda d: progress.add_task(d, "T-3", "Write the CSV importer", status="in_progress"))
    with Memory.open(root) as mem:
        Log(mem.store).prompt("- [ ] write the CSV importer\n- [ ] rotate the keys")
        mem.catch_up()
        rows = {r["title"]: r for r in mem.tasks()}
        assert rows["write the CSV importer"]["workflow"] == {
            "memory": p.id,
            "task": "T-3",
            "name": "Write the CSV importer",
            "status": "in_progress",
        }
        assert "workflow" not in rows["rotate the keys"]
        assert mem.task("write the csv importer")["workflow"]["task"] == "T-3"
