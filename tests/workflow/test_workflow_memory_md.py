"""memory.md: generated sections, preserved decisions, the memory-manager agent."""

from __future__ import annotations

from pathlib import Path

import pytest
from wf_support import init

from memlane.workflow import agent, memory_md, progress, store


def fill(memory_id: str) -> None:
    def change(d: dict) -> None:
        progress.set_workflow(d, "domain-definition", "done")
        progress.set_workflow(d, "task-point", "in_progress")
        progress.add_feature(d, "AUTH-001", "사용자 인증", category="Core", phase="phase1", note="로그인 구현 중")
        progress.add_task(d, "AUTH-001-001", "스키마", featureId="AUTH-001", points=3, status="done")
        progress.add_task(d, "AUTH-001-002", "API", featureId="AUTH-001", points=5, dependencies=["AUTH-001-001"])
        progress.add_task(d, "MISC-1", "README 정리")
        d["domains"]["AUTH"] = {"name": "인증", "status": "pending"}

    progress.mutate(memory_id, change)


def test_generated_sections(proj: Path) -> None:
    memory_id = init(proj)
    fill(memory_id)
    text = Path(memory_md.path(memory_id)).read_text()
    assert "# Workflow memory: shop" in text
    assert "- Features: 0/1 done (0%)" in text and "- Tasks: 1/3 done (33%)" in text and "- Points: 3/8 (38%)" in text
    assert "- [x] domain-definition (done) — completed" in text and "- [~] task-point (in progress) — started" in text
    assert "| phase1 | phase1 | in progress | 3/8 | AUTH-001 |" in text
    assert "| AUTH | 인증 | in progress | 0/1 |" in text
    assert "### [~] AUTH-001 사용자 인증 [Core] — in progress, 1/2 tasks, 3/8 pt" in text
    assert "> 로그인 구현 중" in text
    assert "- [ ] AUTH-001-002 API (medium, 5pt, after AUTH-001-001)" in text
    assert "### Tasks without a feature" in text and "- [ ] MISC-1 README 정리 (medium)" in text
    assert text.index(memory_md.DECISIONS_START) < text.index(memory_md.DECISIONS_END)


def test_decisions_survive_regeneration(proj: Path) -> None:
    memory_id = init(proj)
    first = memory_md.add_decision(memory_id, "Chose PostgreSQL over MongoDB — relational data", when="2024-01-12")
    memory_md.add_decision(memory_id, "  Errors are   returned, not thrown  ", when="2024-01-13")
    assert first == "- 2024-01-12: Chose PostgreSQL over MongoDB — relational data"
    fill(memory_id)
    memory_md.write(memory_id)
    text = Path(memory_md.path(memory_id)).read_text()
    body = memory_md.extract_decisions(text)
    assert body == (
        "- 2024-01-12: Chose PostgreSQL over MongoDB — relational data\n- 2024-01-13: Errors are returned, not thrown"
    )
    assert "No decisions recorded yet" not in text
    with pytest.raises(store.WorkflowError, match="needs some text"):
        memory_md.add_decision(memory_id, "   ")


def test_hand_edits_inside_markers_are_kept_and_lost_markers_tolerated(proj: Path) -> None:
    memory_id = init(proj)
    path = Path(memory_md.path(memory_id))
    text = path.read_text().replace(
        memory_md.DECISIONS_END, "### 2024-03 아키텍처\n- 모놀리스 유지\n" + memory_md.DECISIONS_END
    )
    path.write_text(text)
    memory_md.write(memory_id)
    assert "### 2024-03 아키텍처\n- 모놀리스 유지" in path.read_text()
    path.write_text("# old\n\n## Key decisions\n\n- 2023-12-01: 마커 없는 결정\n\n## Other\nx\n")
    memory_md.write(memory_id)
    assert memory_md.extract_decisions(path.read_text()) == "- 2023-12-01: 마커 없는 결정"


def test_install_agent(proj: Path) -> None:
    path = Path(agent.install(str(proj)))
    assert path == proj / ".claude/agents/memory-manager.md"
    text = path.read_text()
    assert text.startswith("---\nname: memory-manager\n") and 'memlane workflow decide "' in text
    assert "When NOT to record" in text
    with pytest.raises(store.WorkflowError, match="exists; use --force"):
        agent.install(str(proj))
    path.write_text("old")
    agent.install(str(proj), force=True)
    assert path.read_text() == text
