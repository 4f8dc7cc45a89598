"""Workflow memory driven end to end through memlane's hooks (``memlane.hooks.handle``)."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from wf_support import FIXTURES, cfg, init, meta, raw_progress

from conftest import TRANSCRIPTS, payload
from memlane import project
from memlane.workflow import hooks as wf
from memlane.workflow import sessions, store

Hook = Callable[..., str]
TRANSCRIPT = str(next(TRANSCRIPTS.glob("*.jsonl")))
SID = "6f8a962b-e546-4507-8ff4-23e5a2f295f8"


def prompt(hook: Hook, text: str, session: str = SID) -> str:
    return hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"), prompt=text, session_id=session)


def stop(hook: Hook, answer: str | None = None, session: str = SID) -> str:
    extra = {"last_assistant_message": answer} if answer is not None else {}
    return hook("Stop", payload("05-Stop.json"), transcript_path=TRANSCRIPT, session_id=session, **extra)


def record(memory_id: str) -> str:
    (info,) = sessions.list_files(memory_id)
    return Path(info["path"]).read_text()


def additional_context(out: str) -> str:
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""


def test_full_workflow_cycle(hook: Hook, proj: Path) -> None:
    memory_id = project.identify(proj).id
    # no memory yet: nothing happens for ordinary prompts
    prompt(hook, "just a question")
    assert not store.exists(memory_id)
    # a /workflow- prompt creates and links the memory, opens the session record, marks the workflow started
    prompt(hook, "/workflow-task-point AUTH 도메인 포인트 산정해줘")
    assert store.exists(memory_id) and store.read_ref(str(proj)) == memory_id
    (info,) = sessions.list_files(memory_id)
    assert info["name"] == f"{time.strftime('%Y-%m-%d')}_task-point_{SID[:8]}.md"
    m = meta(memory_id)
    assert m["currentWorkflow"] == "task-point" and m["activeSessions"][SID]["file"] == info["name"]
    assert raw_progress(memory_id)["setup"]["workflows"]["task-point"]["status"] == "in_progress"
    # Stop: the answer and the tools of the last turn (from the real transcript)
    stop(hook)
    prompt(hook, "ORDER 도메인도 해줘")
    stop(hook, "긴 답변 " + "가" * 5000)
    text = record(memory_id)
    assert "/workflow-task-point AUTH 도메인 포인트 산정해줘" in text and "ORDER 도메인도 해줘" in text
    assert "quokka" in text and "_Tools: Bash_" in text
    assert "가" * 1990 in text and "가" * 2001 not in text and sessions.CUT in text
    # PreCompact → the next SessionStart gets a resume note, once
    hook("PreCompact", payload("06-SessionEnd.json"), hook_event_name="PreCompact", trigger="auto")
    assert meta(memory_id)["pendingResume"]["workflow"] == "task-point"
    note = additional_context(hook("SessionStart", payload("01-SessionStart.json"), source="compact"))
    assert "resuming after context compaction" in note and "Workflow in progress: task-point" in note
    assert info["name"] in note
    assert meta(memory_id)["pendingResume"] is None
    assert "resuming after" not in additional_context(hook("SessionStart", payload("01-SessionStart.json")))
    # SessionEnd: the workflow completes, the record is closed, cleanup runs
    hook("SessionEnd", payload("06-SessionEnd.json"))
    m = meta(memory_id)
    assert m["activeSessions"] == {} and m["currentWorkflow"] is None and m["totalSessions"] == 1
    flow = raw_progress(memory_id)["setup"]["workflows"]["task-point"]
    assert flow["status"] == "done" and flow["completedAt"]
    assert "### Completed" in record(memory_id) and "(session end)" in record(memory_id)
    memory = (proj / ".claude/docs/memory/memory.md").read_text()
    assert "- [x] task-point (done)" in memory
    # after completion, prompts are no longer recorded
    prompt(hook, "unrelated follow-up")
    assert "unrelated follow-up" not in record(memory_id)


def test_session_end_imports_changed_docs(hook: Hook, proj: Path) -> None:
    docs_dir = proj / ".claude" / "docs"
    docs_dir.mkdir(parents=True)
    shutil.copy(FIXTURES / "feature-list.md", docs_dir / "feature-list.md")
    shutil.copy(FIXTURES / "domain-definition.md", docs_dir / "domain-definition.md")
    prompt(hook, "/workflow-domain-definition")
    hook("SessionEnd", payload("06-SessionEnd.json"))
    memory_id = project.identify(proj).id
    data = raw_progress(memory_id)
    assert data["domains"]["AUTH"]["name"] == "인증" and data["features"]["AUTH-001"]["domain"] == "AUTH"
    assert data["phases"]["phase1"]["totalPoints"] == 13
    assert "사용자 인증" in (proj / ".claude/docs/memory/memory.md").read_text()
    # unchanged documents are not imported again (a CLI status change is not undone)
    from memlane.workflow import progress

    progress.mutate(memory_id, lambda d: progress.set_task_status(d, "AUTH-001-003", "blocked"))
    prompt(hook, "/workflow-task-point", session="second-session")
    hook("SessionEnd", payload("06-SessionEnd.json"), session_id="second-session")
    assert raw_progress(memory_id)["tasks"]["AUTH-001-003"]["status"] == "blocked"


def test_next_workflow_in_same_session_completes_the_previous(hook: Hook, proj: Path) -> None:
    memory_id = init(proj)
    prompt(hook, "/workflow-legacy-profile")
    prompt(hook, "/workflow-domain-definition 시작")
    flows = raw_progress(memory_id)["setup"]["workflows"]
    assert flows["legacy-profile"]["status"] == "done" and flows["domain-definition"]["status"] == "in_progress"
    assert len(sessions.list_files(memory_id)) == 2 and meta(memory_id)["currentWorkflow"] == "domain-definition"
    prompt(hook, "/workflow-domain-definition again")  # same workflow: same record
    assert len(sessions.list_files(memory_id)) == 2


def test_workflow_memory_prompt_is_not_a_workflow(hook: Hook, proj: Path) -> None:
    assert wf.workflow_name("/workflow-memory status") is None
    assert wf.workflow_name("  /workflow-task-point: go") == "task-point"
    assert wf.workflow_name("please /workflow-x") is None
    prompt(hook, "/workflow-memory status")  # a command to memlane (test_workflow_command.py), not a workflow
    assert not store.exists(project.identify(proj).id)
    prompt(hook, "/workflow-memory init")
    memory_id = project.identify(proj).id
    assert store.exists(memory_id) and raw_progress(memory_id)["setup"]["workflows"] == {}
    assert meta(memory_id)["activeSessions"] == {} and not sessions.list_files(memory_id)


def test_broken_progress_does_not_stop_recording(hook: Hook, proj: Path) -> None:
    memory_id = init(proj)
    path = Path(store.file(memory_id, "progress.json"))
    path.write_text('{"version": "1.1", "tasks": ')
    prompt(hook, "/workflow-task-point")
    stop(hook, "answer kept")
    hook("SessionEnd", payload("06-SessionEnd.json"))
    assert path.read_text() == '{"version": "1.1", "tasks": '  # never overwritten
    text = record(memory_id)
    assert "answer kept" in text and "### Completed" in text
    assert meta(memory_id)["activeSessions"] == {}
    log = (Path(os.environ["MEMLANE_HOME"]) / "logs" / "workflow.log").read_text()
    assert "progress.json: invalid JSON" in log


def test_disabled_by_config(hook: Hook, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_WORKFLOW_ENABLED", "false")
    prompt(hook, "/workflow-task-point")
    assert not store.exists(project.identify(proj).id)


def test_stop_falls_back_to_the_transcript(proj: Path) -> None:
    memory_id = init(proj)
    p = project.identify(proj)
    wf.on_user_prompt({"session_id": SID, "prompt": "/workflow-x"}, p, cfg())
    wf.on_stop({"session_id": SID, "transcript_path": TRANSCRIPT}, p, cfg(max_response_length=30), "")
    text = record(memory_id)
    assert "_Tools: Bash_" in text and sessions.CUT in text


def test_summarization_on_completion(proj: Path) -> None:
    memory_id = init(proj)
    p = project.identify(proj)
    on = cfg(summarization=True)
    wf.on_user_prompt({"session_id": "s1", "prompt": "/workflow-task-point 포인트 산정. 자세히"}, p, on)
    wf.on_stop({"session_id": "s1", "transcript_path": TRANSCRIPT}, p, on, "AUTH 10pt로 산정했습니다. 다음은 ORDER.")
    wf.on_session_end({"session_id": "s1"}, p, on)
    text = record(memory_id)
    summary = text.split("## Summary", 1)[1]
    assert "- 1 prompt(s), 1 response(s)" in summary and "- Asked: /workflow-task-point 포인트 산정." in summary
    assert "- Tools: Bash" in summary and "- Outcome: AUTH 10pt로 산정했습니다." in summary


def test_hook_path_imports_only_the_stdlib(proj: Path) -> None:
    """A whole workflow cycle in a fresh process pulls in no CLI framework, rich or memlane.cli."""
    import subprocess
    import sys

    code = f"""
import json, sys
from memlane import hooks
base = {{"session_id": "s1", "cwd": {str(proj)!r}, "transcript_path": {TRANSCRIPT!r}}}
for event, extra in [("UserPromptSubmit", {{"prompt": "/workflow-plan"}}), ("Stop", {{}}),
                     ("PreCompact", {{}}), ("SessionStart", {{}}), ("SessionEnd", {{}})]:
    hooks.handle(event, json.dumps({{**base, **extra, "hook_event_name": event}}).encode())
bad = [m for m in sys.modules if m.split(".")[0] in ("click", "rich", "pydantic") or m.startswith("memlane.cli")]
print(bad, "memlane.workflow.hooks" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.strip() == "[] True"


def test_session_records_respect_privacy(hook: Hook, proj: Path) -> None:
    memory_id = project.identify(proj).id
    prompt(hook, "/workflow-plan <private>내 주민번호 900101-1234567</private> 계획 세워줘")
    prompt(hook, "use password=hunter2-very-secret please")
    stop(hook, "done <private>secret answer</private> ok")
    text = record(memory_id)
    assert "900101" not in text and "[PRIVATE]" in text and "계획 세워줘" in text
    assert "hunter2" not in text and "secret answer" not in text
