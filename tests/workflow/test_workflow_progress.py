"""progress.json: model, validation, migrations, recalculation, atomic locked writes."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest
from wf_support import init, raw_progress

from memlane.workflow import progress, store
from memlane.workflow.progress import DependencyError, ProgressError


def seed_model() -> dict:
    """The seed's example document, verbatim (version 1.0)."""
    return {
        "version": "1.0",
        "lastUpdated": "2024-01-16T15:30:00Z",
        "setup": {
            "workflows": {
                "legacy-profile": {"status": "done", "completedAt": "2024-01-10"},
                "domain-definition": {"status": "done", "completedAt": "2024-01-12"},
                "task-point": {"status": "in_progress", "startedAt": "2024-01-15"},
            },
            "custom": [],
        },
        "phases": {
            "phase1": {
                "name": "기반 구축",
                "status": "in_progress",
                "totalPoints": 88,
                "completedPoints": 25,
                "features": ["AUTH-001"],
            }
        },
        "domains": {"AUTH": {"name": "인증", "status": "in_progress", "totalFeatures": 2, "completedFeatures": 0}},
        "features": {
            "AUTH-001": {
                "name": "사용자 인증",
                "category": "Core",
                "status": "in_progress",
                "createdAt": "2024-01-10T09:00:00Z",
                "updatedAt": "2024-01-16T10:00:00Z",
                "completedAt": None,
                "note": "로그인 구현 중",
            }
        },
        "tasks": {
            "AUTH-001-001": {
                "name": "Users 테이블 스키마 설계",
                "featureId": "AUTH-001",
                "priority": "high",
                "dependencies": [],
                "status": "done",
                "createdAt": "2024-01-10T09:00:00Z",
                "updatedAt": "2024-01-15T14:00:00Z",
                "completedAt": "2024-01-15T14:00:00Z",
                "note": "",
            }
        },
    }


def test_seed_model_reads_and_migrates_to_current_version() -> None:
    data = progress.validate(progress.migrate(seed_model()))
    assert data["version"] == progress.VERSION
    assert data["features"]["AUTH-001"]["domain"] == "AUTH" and data["features"]["AUTH-001"]["points"] is None
    assert data["tasks"]["AUTH-001-001"]["points"] is None
    assert data["setup"]["workflows"]["task-point"] == {"status": "in_progress", "startedAt": "2024-01-15"}


def test_versionless_file_is_migrated() -> None:
    old = {"setup": {"workflows": {"legacy-profile": "done"}}, "features": {"A-1": {"name": "a", "status": "pending"}}}
    old["tasks"] = {"A-1-1": {"name": "t", "status": "pending", "featureId": "A-1", "dependencies": ""}}
    old["tasks"]["A-1-2"] = {"name": "u", "status": "pending", "featureId": "A-1", "dependencies": "A-1-1"}
    data = progress.validate(progress.migrate(old))
    assert data["version"] == "1.1"
    assert data["setup"]["workflows"]["legacy-profile"] == {"status": "done"}
    assert data["tasks"]["A-1-2"]["dependencies"] == ["A-1-1"] and data["tasks"]["A-1-1"]["dependencies"] == []
    assert data["phases"] == {} and data["domains"] == {} and data["setup"]["custom"] == []


def test_newer_version_is_refused() -> None:
    with pytest.raises(ProgressError, match=r"progress.json: version: '9.0' is not supported"):
        progress.migrate({**seed_model(), "version": "9.0"})


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["tasks"]["AUTH-001-001"].update(status="finished"),
            "progress.json: tasks.AUTH-001-001.status: 'finished' is not one of pending, in_progress, done, blocked",
        ),
        (lambda d: d["tasks"]["AUTH-001-001"].pop("name"), "progress.json: tasks.AUTH-001-001.name: is missing"),
        (
            lambda d: d["tasks"]["AUTH-001-001"].update(featureId="NOPE-1"),
            "progress.json: tasks.AUTH-001-001.featureId: unknown feature 'NOPE-1'",
        ),
        (
            lambda d: d["tasks"]["AUTH-001-001"].update(dependencies=["X-1"]),
            "progress.json: tasks.AUTH-001-001.dependencies: unknown task 'X-1'",
        ),
        (
            lambda d: d["tasks"]["AUTH-001-001"].update(priority="urgent"),
            "progress.json: tasks.AUTH-001-001.priority: 'urgent' is not one of critical, high, medium, low",
        ),
        (
            lambda d: d["phases"]["phase1"].update(totalPoints="many"),
            'progress.json: phases.phase1.totalPoints: must be a number, got "many"',
        ),
        (lambda d: d["features"]["AUTH-001"].update(points=-3), "features.AUTH-001.points: must not be negative"),
        (lambda d: d["setup"].update(workflows=[]), "progress.json: setup.workflows: must be an object"),
        (
            lambda d: d["phases"]["phase1"]["features"].append("GONE-1"),
            "progress.json: phases.phase1.features: unknown feature 'GONE-1'",
        ),
        (lambda d: d.pop("tasks"), "progress.json: tasks: must be an object"),
    ],
)
def test_validation_names_the_field(edit, message: str) -> None:
    data = progress.migrate(seed_model())
    edit(data)
    with pytest.raises(ProgressError) as err:
        progress.validate(data)
    assert message in str(err.value)


def test_round_trip_through_the_file(proj: Path) -> None:
    memory_id = init(proj)
    Path(progress.path(memory_id)).write_text(json.dumps(seed_model(), ensure_ascii=False))
    data = progress.load(memory_id)
    progress.save(memory_id, data)
    again = progress.load(memory_id)
    assert again == data and again["features"]["AUTH-001"]["name"] == "사용자 인증"
    assert raw_progress(memory_id)["version"] == "1.1"


def test_invalid_file_is_never_overwritten(proj: Path) -> None:
    memory_id = init(proj)
    path = Path(progress.path(memory_id))
    bad = seed_model()
    bad["tasks"]["AUTH-001-001"]["status"] = "finished"
    path.write_text(json.dumps(bad))
    before = path.read_bytes()
    with pytest.raises(ProgressError, match=r"tasks\.AUTH-001-001\.status: 'finished'"):
        progress.mutate(memory_id, lambda d: progress.add_feature(d, "B-1", "b"))
    assert path.read_bytes() == before
    path.write_text("{ not json")
    with pytest.raises(store.WorkflowError, match=r"progress\.json: invalid JSON"):
        progress.load(memory_id)
    assert path.read_text() == "{ not json"


def test_failed_change_writes_nothing(proj: Path) -> None:
    memory_id = init(proj)
    progress.mutate(memory_id, lambda d: progress.add_feature(d, "A-1", "a"))
    before = Path(progress.path(memory_id)).read_bytes()
    with pytest.raises(ProgressError, match="unknown feature 'ZZ-9'"):
        progress.mutate(memory_id, lambda d: progress.add_task(d, "A-1-1", "t", featureId="ZZ-9"))
    assert Path(progress.path(memory_id)).read_bytes() == before


def test_default_progress_is_merged() -> None:
    data = progress.new(
        '{"setup": {"custom": [{"name": "ci", "status": "done"}]}, "domains": {"AUTH": '
        '{"name": "인증", "status": "pending"}}}'
    )
    assert data["setup"]["custom"] == [{"name": "ci", "status": "done"}] and data["setup"]["workflows"] == {}
    assert data["domains"]["AUTH"]["name"] == "인증"
    with pytest.raises(ProgressError, match=r"workflow\.default_progress: invalid JSON"):
        progress.new("{nope")


def build() -> dict:
    d = progress.new()
    progress.add_feature(d, "AUTH-001", "로그인", phase="phase1")
    progress.add_feature(d, "AUTH-002", "소셜 로그인", phase="phase1", points=8)
    progress.add_feature(d, "PAY-001", "결제", phase="phase2", points=13)
    progress.add_task(d, "AUTH-001-001", "스키마", featureId="AUTH-001", points=3)
    progress.add_task(d, "AUTH-001-002", "API", featureId="AUTH-001", points=5, dependencies=["AUTH-001-001"])
    progress.add_task(d, "AUTH-001-003", "문서", featureId="AUTH-001")  # no points: counts 0
    return progress.recalculate(d)


def test_recalculate_arithmetic() -> None:
    d = build()
    assert d["phases"]["phase1"]["totalPoints"] == 16 and d["phases"]["phase1"]["completedPoints"] == 0
    assert d["phases"]["phase2"]["totalPoints"] == 13
    assert d["domains"]["AUTH"] == {"name": "AUTH", "status": "pending", "totalFeatures": 2, "completedFeatures": 0}
    progress.set_task_status(d, "AUTH-001-001", "done")
    progress.recalculate(d)
    assert d["phases"]["phase1"]["completedPoints"] == 3 and d["phases"]["phase1"]["status"] == "in_progress"
    assert d["features"]["AUTH-001"]["status"] == "in_progress" and d["domains"]["AUTH"]["status"] == "in_progress"
    progress.set_task_status(d, "AUTH-001-002", "done")
    progress.set_task_status(d, "AUTH-001-003", "done")
    progress.set_feature_status(d, "AUTH-002", "done")
    progress.recalculate(d)
    assert d["features"]["AUTH-001"]["status"] == "done" and d["features"]["AUTH-001"]["completedAt"]
    phase1 = d["phases"]["phase1"]
    assert (phase1["totalPoints"], phase1["completedPoints"], phase1["status"]) == (16, 16, "done")
    assert d["domains"]["AUTH"]["completedFeatures"] == 2 and d["domains"]["AUTH"]["status"] == "done"
    assert d["domains"]["PAY"]["status"] == "pending"
    assert progress.counts(d) == {
        "features": 3, "featuresDone": 2, "tasks": 3, "tasksDone": 3, "points": 29, "pointsDone": 16,
    }  # fmt: skip
    assert progress.recalculate(json.loads(json.dumps(d))) == d  # idempotent


def test_fractional_points_and_reopened_task() -> None:
    d = build()
    progress.add_task(d, "PAY-001-001", "PG 연동", featureId="PAY-001", points=0.5)
    progress.set_task_status(d, "PAY-001-001", "done")
    progress.recalculate(d)
    assert d["phases"]["phase2"]["totalPoints"] == 0.5 and d["features"]["PAY-001"]["status"] == "done"
    progress.set_task_status(d, "PAY-001-001", "in_progress")
    progress.recalculate(d)
    assert d["features"]["PAY-001"]["status"] == "in_progress" and d["features"]["PAY-001"]["completedAt"] is None


def test_dependencies_block_done_unless_forced() -> None:
    d = build()
    with pytest.raises(DependencyError, match=r"AUTH-001-002 depends on AUTH-001-001 \(pending\).*--force"):
        progress.set_task_status(d, "AUTH-001-002", "done")
    assert d["tasks"]["AUTH-001-002"]["status"] == "pending"
    progress.set_task_status(d, "AUTH-001-002", "done", force=True)
    assert d["tasks"]["AUTH-001-002"]["status"] == "done"
    progress.set_task_status(d, "AUTH-001-002", "in_progress")  # other statuses never need dependencies
    with pytest.raises(ProgressError, match="unknown task 'NOPE'"):
        progress.set_task_status(d, "NOPE", "done")
    with pytest.raises(ProgressError, match="dependencies: unknown task 'AUTH-001-002'"):
        progress.add_task(d, "AUTH-001-002", None, dependencies=["AUTH-001-002"])


def test_workflow_status_timestamps() -> None:
    d = progress.new()
    wf = progress.set_workflow(d, "task-point", "in_progress")
    assert wf["status"] == "in_progress" and wf["startedAt"] and "completedAt" not in wf
    wf = progress.set_workflow(d, "task-point", "done")
    assert wf["completedAt"] and progress.validate(d)


def _writer(memory_id: str, worker: int) -> None:
    for i in range(25):
        progress.mutate(memory_id, lambda d, i=i: progress.add_task(d, f"T-{worker}-{i}", f"task {worker}/{i}"))


def test_concurrent_writers_lose_nothing(proj: Path) -> None:
    memory_id = init(proj)
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=_writer, args=(memory_id, w)) for w in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert [w.exitcode for w in workers] == [0] * 8
    data = progress.load(memory_id)
    assert len(data["tasks"]) == 200
    assert not [p for p in Path(store.mem_dir(memory_id)).iterdir() if p.name.endswith(".tmp")]
    assert "T-7-24" in Path(store.file(memory_id, "memory.md")).read_text()
