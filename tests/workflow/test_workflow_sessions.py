"""Session records: search ranking and retention cleanup."""

from __future__ import annotations

import os
import time
from pathlib import Path

from wf_support import cfg, init, meta

from memlane import project
from memlane.workflow import cleanup, lifecycle, sessions, store


def make_record(memory_id: str, name: str, body: str, age_days: float = 0) -> Path:
    path = Path(sessions.file_path(memory_id, name))
    path.write_text(f"# Workflow session: x\n\n---\n\n### User — 2024-01-01 10:00:00\n\n{body}\n\n")
    stamp = time.time() - age_days * 86400
    os.utime(path, (stamp, stamp))
    return path


def test_search_matches_every_word_casefolded_and_ranks(proj: Path) -> None:
    memory_id = init(proj)
    make_record(memory_id, "2024-01-01_plan_aaaa.md", "JWT 토큰 refresh 로직은 Redis에 둔다. JWT JWT")
    make_record(memory_id, "2024-01-02_plan_bbbb.md", "jwt refresh token rotation")
    make_record(memory_id, "2024-01-03_plan_cccc.md", "unrelated text about carts")
    hits = sessions.search([memory_id], "JWT refresh")  # the exact phrase outranks scattered words
    assert [h["file"] for h in hits] == ["2024-01-02_plan_bbbb.md", "2024-01-01_plan_aaaa.md"]
    assert hits[0]["score"] > hits[1]["score"] and hits[0]["entry"].startswith("User")
    assert "jwt refresh" in hits[0]["snippet"]
    hits = sessions.search([memory_id], "jwt")  # more occurrences rank higher
    assert hits[0]["file"] == "2024-01-01_plan_aaaa.md" and "JWT" in hits[0]["snippet"]
    assert sessions.search([memory_id], "redis 토큰")[0]["workflow"] == "plan"
    assert sessions.search([memory_id], "jwt carts") == []
    assert sessions.search([memory_id], "  ") == []


def test_cleanup_by_age_and_count_keeps_active_records(proj: Path) -> None:
    memory_id = init(proj)
    p = project.identify(proj)
    active = lifecycle.start_workflow(memory_id, "live", "sess-live", p.root_str, p.name)
    old_active = Path(sessions.file_path(memory_id, active))
    os.utime(old_active, (time.time() - 400 * 86400,) * 2)
    make_record(memory_id, "2023-01-01_a_old.md", "old", age_days=120)
    for i in range(5):
        make_record(memory_id, f"2024-06-0{i + 1}_b_{i}.md", "recent", age_days=5 - i)
    limits = cfg(max_sessions_per_project=4, max_session_age_days=90)
    planned = cleanup.plan(memory_id, limits)
    assert {f["name"]: f["reason"] for f in planned} == {
        "2023-01-01_a_old.md": "older than 90 days (120)",
        "2024-06-01_b_0.md": "beyond the newest 4 session record(s)",
        "2024-06-02_b_1.md": "beyond the newest 4 session record(s)",
    }
    assert len(cleanup.run(memory_id, limits, dry_run=True)) == 3 and len(sessions.list_files(memory_id)) == 7
    removed = cleanup.run(memory_id, limits)
    assert len(removed) == 3 and old_active.exists()
    names = {f["name"] for f in sessions.list_files(memory_id)}
    assert names == {active, "2024-06-03_b_2.md", "2024-06-04_b_3.md", "2024-06-05_b_4.md"}
    assert Path(store.file(memory_id, "progress.json")).exists() and meta(memory_id)
    assert cleanup.run(memory_id, cfg(max_sessions_per_project=0, max_session_age_days=0)) == []  # 0: no limit


def test_record_names_are_safe() -> None:
    assert sessions.file_name("../../etc/passwd", "ab/cd:ef-123", "2024-01-16") == "2024-01-16_etc-passwd_ab-cd-ef.md"
    assert sessions.cut("abcdef", 3) == "abc … [cut]" and sessions.cut("abc", 0) == "abc"
