"""Every ``memlane workflow`` command, its output and its errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from wf_support import FIXTURES, cli, meta, raw_progress

from memlane import project
from memlane.workflow import lifecycle, sessions, store


@pytest.fixture
def linked(proj: Path) -> str:
    code, out = cli(proj, "init")
    assert code == 0, out
    return project.identify(proj).id


def test_init_list_status(proj: Path) -> None:
    code, out = cli(proj, "init")
    memory_id = project.identify(proj).id
    assert code == 0 and f"Created workflow memory {memory_id}" in out and "(symlink)" in out
    code, out = cli(proj, "init")
    assert code == 0 and "Linked existing workflow memory" in out
    code, out = cli(proj, "init", "team-memory", "--link-mode", "copy")
    assert code == 0 and "(copy)" in out and store.read_ref(str(proj)) == "team-memory"
    rows = json.loads(cli(proj, "list", "--json")[1])
    assert {r["id"]: r["linked"] for r in rows} == {memory_id: False, "team-memory": True}
    assert rows[0]["progress"] == "0/0 features, 0/0 tasks"
    assert "* team-memory" in cli(proj, "list")[1]
    status = json.loads(cli(proj, "status", "--json")[1])
    assert status["id"] == "team-memory" and status["link"] == "copy" and status["version"] == "1.1"
    code, out = cli(proj, "status")
    assert code == 0 and "team-memory" in out and "0/0 done" in out
    code, out = cli(proj, "--memory", memory_id, "status", "--json")
    assert json.loads(out)["link"] == "not linked"


def test_init_rejects_bad_ids(proj: Path) -> None:
    code, out = cli(proj, "init", "../escape")
    assert code == 1 and "invalid workflow memory id '../escape'" in out


def test_no_memory_is_a_clear_error(proj: Path) -> None:
    for args in (["status"], ["update"], ["show"], ["decide", "x"], ["search", "x"], ["cleanup"], ["recalculate"]):
        code, out = cli(proj, *args)
        assert code == 1 and "has no workflow memory: run `memlane workflow init`" in out, args
    code, out = cli(proj, "--memory", "nope", "status")
    assert code == 1 and "no workflow memory 'nope'" in out


def test_switch_and_remove(proj: Path, linked: str) -> None:
    cli(proj, "init", "other")
    code, out = cli(proj, "switch", linked)
    assert code == 0 and f"now uses workflow memory {linked}" in out and "was other" in out
    code, out = cli(proj, "switch", "missing")
    assert code == 1 and "no workflow memory 'missing'" in out
    code, out = cli(proj, "remove", linked, input="n\n")
    assert code == 1 and "Aborted" in out and store.exists(linked)
    code, out = cli(proj, "remove", linked, input="y\n")
    assert code == 0 and f"Removed workflow memory {linked}" in out and f"unlinked {proj}" in out
    assert not store.exists(linked) and store.read_ref(str(proj)) is None
    code, out = cli(proj, "remove", "other", "--yes")
    assert code == 0 and store.all_ids() == []
    code, out = cli(proj, "remove", "other", "--yes")
    assert code == 1 and "no workflow memory 'other'" in out


def test_features_tasks_recalculate_show(proj: Path, linked: str) -> None:
    ok = [
        ("feature", "add", "AUTH-001", "사용자 인증", "--category", "Core", "--phase", "phase1"),
        ("feature", "add", "PAY-001", "결제", "--phase", "phase1", "--points", "13"),
        ("task", "add", "AUTH-001-001", "스키마", "--feature", "AUTH-001", "--points", "3", "--priority", "high"),
        (
            "task",
            "add",
            "AUTH-001-002",
            "API",
            "--feature",
            "AUTH-001",
            "--points",
            "5",
            "--depends-on",
            "AUTH-001-001",
        ),
        ("task", "status", "AUTH-001-001", "done"),
        ("feature", "update", "PAY-001", "--note", "PG 계약 대기", "--status", "blocked"),
        ("task", "update", "AUTH-001-002", "--note", "리뷰 중", "--status", "in_progress"),
    ]
    for args in ok:
        code, out = cli(proj, *args)
        assert code == 0, (args, out)
    code, out = cli(proj, "task", "status", "AUTH-001-002", "done", "--note", "x")
    assert code == 0  # its dependency is done now
    data = raw_progress(linked)
    assert data["phases"]["phase1"]["totalPoints"] == 21 and data["phases"]["phase1"]["completedPoints"] == 8
    assert data["features"]["AUTH-001"]["status"] == "done" and data["features"]["PAY-001"]["note"] == "PG 계약 대기"
    assert data["tasks"]["AUTH-001-001"]["priority"] == "high"
    code, out = cli(proj, "recalculate")
    assert code == 0 and "1/2 features, 2/2 tasks, 8/21 points; 2 domain(s), 1 phase(s)" in out
    shown = json.loads(cli(proj, "show", "--json")[1])
    assert shown["tasks"]["AUTH-001-002"]["dependencies"] == ["AUTH-001-001"]
    code, out = cli(proj, "show")
    assert code == 0 and "사용자 인증" in out and "Phases" in out


def test_progress_errors(proj: Path, linked: str) -> None:
    cli(proj, "feature", "add", "A-001", "a")
    cli(proj, "task", "add", "A-001-1", "one", "--feature", "A-001")
    cli(proj, "task", "add", "A-001-2", "two", "--feature", "A-001", "--depends-on", "A-001-1")
    before = Path(store.file(linked, "progress.json")).read_bytes()
    cases = [
        (["task", "status", "A-001-2", "done"], "task A-001-2 depends on A-001-1 (pending), not done yet; use --force"),
        (["task", "status", "NOPE", "done"], "unknown task 'NOPE'"),
        (["feature", "status", "NOPE", "done"], "unknown feature 'NOPE'"),
        (["feature", "update", "NOPE", "--note", "x"], "unknown feature 'NOPE'"),
        (["task", "update", "NOPE", "--note", "x"], "unknown task 'NOPE'"),
        (["task", "add", "B-1", "b", "--feature", "GHOST"], "tasks.B-1.featureId: unknown feature 'GHOST'"),
        (["task", "add", "B-1", "b", "--depends-on", "GHOST-1"], "tasks.B-1.dependencies: unknown task 'GHOST-1'"),
    ]
    for args, message in cases:
        code, out = cli(proj, *args)
        assert code == 1 and message in out, (args, out)
    code, out = cli(proj, "task", "status", "A-001-2", "finished")
    assert code == 2 and "'finished' is not one of" in out
    assert Path(store.file(linked, "progress.json")).read_bytes() == before
    code, out = cli(proj, "task", "status", "A-001-2", "done", "--force")
    assert code == 0 and raw_progress(linked)["tasks"]["A-001-2"]["status"] == "done"


def test_hand_edited_progress_with_an_error(proj: Path, linked: str) -> None:
    cli(proj, "task", "add", "T-3", "세 번째")
    path = Path(store.file(linked, "progress.json"))
    data = json.loads(path.read_text())
    data["tasks"]["T-3"]["status"] = "finished"
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2))
    before = path.read_bytes()
    for args in (["status"], ["task", "status", "T-3", "done"], ["update"], ["recalculate"], ["complete", "x"]):
        code, out = cli(proj, *args)
        assert code == 1, args
        assert "progress.json: tasks.T-3.status: 'finished' is not one of pending, in_progress, done, blocked" in out
    assert path.read_bytes() == before
    path.write_text("[1, 2")
    code, out = cli(proj, "show")
    assert code == 1 and "progress.json: invalid JSON" in out


def test_import_doc(proj: Path, linked: str) -> None:
    code, out = cli(proj, "import-doc")
    assert code == 1 and "no feature-list.md or domain-definition.md" in out
    docs_dir = proj / "docs" / "planning"
    docs_dir.mkdir(parents=True)
    shutil.copy(FIXTURES / "feature-list.md", docs_dir / "feature-list.md")
    shutil.copy(FIXTURES / "domain-definition.md", docs_dir / "domain-definition.md")
    code, out = cli(proj, "import-doc", "--dry-run")
    assert code == 0 and "would give" in out and raw_progress(linked)["features"] == {}
    code, out = cli(proj, "import-doc")
    assert code == 0 and "domain-definition.md (domain-definition): 10 added" in out
    assert "line 29: text not understood (ignored): 2단계 끝에 성능 테스트를 한다." in out
    assert raw_progress(linked)["domains"]["AUTH"]["totalFeatures"] == 2
    table = FIXTURES / "feature-list-table.md"
    code, out = cli(proj, "import-doc", str(table), "--kind", "feature-list")
    assert code == 0 and "feature-list-table.md (feature-list)" in out
    assert "line 21: points 'three' is not a number" in out
    assert raw_progress(linked)["features"]["CART-001"]["status"] == "done"
    code, out = cli(proj, "import-doc", str(proj / "missing.md"))
    assert code == 2 and "does not exist" in out


def test_update_decide_install_agent(proj: Path, linked: str) -> None:
    code, out = cli(proj, "decide", "Chose", "FastAPI", "—", "async, typed")
    assert code == 0 and "Recorded:" in out and "Chose FastAPI — async, typed" in out
    local = proj / ".claude/docs/memory/memory.md"
    local.unlink()
    local.write_text("stale")  # a user replaced the link by hand: update regenerates the central copy
    code, out = cli(proj, "update")
    assert code == 0 and "memory.md regenerated" in out
    assert "Chose FastAPI" in Path(store.file(linked, "memory.md")).read_text()
    code, out = cli(proj, "install-agent")
    assert code == 0 and (proj / ".claude/agents/memory-manager.md").exists()
    code, out = cli(proj, "install-agent")
    assert code == 1 and "use --force" in out
    assert cli(proj, "install-agent", "--force")[0] == 0


def test_sessions_search_complete_cleanup(proj: Path, linked: str) -> None:
    p = project.identify(proj)
    name = lifecycle.start_workflow(linked, "task-point", "sess-1", p.root_str, p.name)
    sessions.add_prompt(linked, name, "로그인 API 포인트 산정")
    sessions.add_response(linked, name, "AUTH 로그인 API는 5pt", ["Read", "Edit"], 2000)
    code, out = cli(proj, "search", "로그인", "api", "--json")
    hits = json.loads(out)
    assert code == 0 and hits and hits[0]["file"] == name
    code, out = cli(proj, "search", "--all", "로그인")
    assert code == 0 and linked in out
    assert "Nothing found" in cli(proj, "search", "zzz")[1]
    code, out = cli(proj, "complete")
    assert code == 0 and "Workflow task-point completed." in out and f"closed session record {name}" in out
    assert meta(linked)["activeSessions"] == {}
    code, out = cli(proj, "complete")
    assert code == 1 and "no workflow in progress" in out
    code, out = cli(proj, "complete", "never-ran")
    assert code == 1 and "unknown workflow 'never-ran' (workflows in this memory: task-point)" in out
    for i in range(3):
        Path(sessions.file_path(linked, f"2020-01-0{i + 1}_old_{i}.md")).write_text("x")
    code, out = cli(proj, "cleanup", "--dry-run")
    assert code == 0 and "Would remove 0 session record(s)" in out  # mtimes are fresh; 4 < 50
    import os
    import time

    for i in range(3):
        path = sessions.file_path(linked, f"2020-01-0{i + 1}_old_{i}.md")
        os.utime(path, (time.time() - 200 * 86400,) * 2)
    code, out = cli(proj, "cleanup", "--dry-run")
    assert code == 0 and "would remove 2020-01-01_old_0.md — older than 90 days" in out
    assert len(sessions.list_files(linked)) == 4
    code, out = cli(proj, "cleanup", "--all")
    assert code == 0 and "Removed 3 session record(s)" in out and len(sessions.list_files(linked)) == 1
