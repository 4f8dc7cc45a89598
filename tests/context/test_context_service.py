"""The app context service: refresh triggers, volatile updates from requests, paths, session values."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memlane import config, project
from memlane.context import AppContextService, ContextError, ContextRegistry, RefreshStatus, RefreshTrigger, rules
from memlane.context.gather import files_touched, git_branch
from memlane.store.db import NewEvent, Store


@pytest.fixture
def svc(proj: Path) -> AppContextService:
    (proj / "AGENTS.md").write_text("Use uv, never pip.\n")
    return AppContextService.for_path(str(proj), config.Config())


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    real = rules.read_text

    def spy(path: str) -> str:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(rules, "read_text", spy)
    return reads


def test_first_load_then_unchanged_reads_nothing(svc: AppContextService, monkeypatch: pytest.MonkeyPatch) -> None:
    assert svc.refresh_persistent_if_needed(RefreshTrigger()) is RefreshStatus.LOADED
    assert svc.persistent.snapshot() == {"rules/AGENTS.md": "Use uv, never pip."}
    loaded_at = svc.persistent.meta()["loadedAt"]
    reads = count_reads(monkeypatch)
    for _ in range(3):
        assert svc.refresh_persistent_if_needed() is RefreshStatus.UNCHANGED
    assert reads == [] and svc.persistent.meta()["loadedAt"] == loaded_at


def test_rule_file_edited_reloads(svc: AppContextService, proj: Path) -> None:
    svc.refresh_persistent_if_needed()
    (proj / "AGENTS.md").write_text("Use uv, never pip. Run ruff before committing.\n")
    assert svc.refresh_persistent_if_needed() is RefreshStatus.RELOADED
    assert "ruff" in svc.persistent.snapshot()["rules/AGENTS.md"]
    assert svc.refresh_persistent_if_needed() is RefreshStatus.UNCHANGED


def test_touched_but_unchanged_file_does_not_reload(
    svc: AppContextService, proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    svc.refresh_persistent_if_needed()
    loaded_at = svc.persistent.meta()["loadedAt"]
    st = os.stat(proj / "AGENTS.md")
    os.utime(proj / "AGENTS.md", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert svc.refresh_persistent_if_needed() is RefreshStatus.UNCHANGED  # hash equal: no reload
    assert svc.persistent.meta()["loadedAt"] == loaded_at
    reads = count_reads(monkeypatch)
    assert svc.refresh_persistent_if_needed() is RefreshStatus.UNCHANGED
    assert reads == []  # the new stat was remembered


def test_rule_folder_files_added_and_removed(svc: AppContextService, proj: Path) -> None:
    svc.refresh_persistent_if_needed()
    rules_dir = proj / ".cursor" / "rules"
    rules_dir.mkdir(parents=True)
    (rules_dir / "style.mdc").write_text("Prefer small functions.")
    (rules_dir / "ignored.png").write_bytes(b"\x89PNG")
    assert svc.refresh_persistent_if_needed() is RefreshStatus.RELOADED
    assert svc.persistent.snapshot()["rules/.cursor/rules/style.mdc"] == "Prefer small functions."
    (proj / "AGENTS.md").unlink()
    assert svc.refresh_persistent_if_needed() is RefreshStatus.RELOADED
    assert set(svc.persistent.snapshot()) == {"rules/.cursor/rules/style.mdc"}


def test_project_root_change_reloads_that_projects_rules(svc: AppContextService, tmp_path: Path) -> None:
    svc.refresh_persistent_if_needed()
    svc.update_volatile_from_request({"currentFile": "src/a.py"})
    other = tmp_path / "work" / "other"
    (other / ".git").mkdir(parents=True)
    (other / "AGENTS.md").write_text("Other project's rules.")
    assert svc.refresh_persistent_if_needed(RefreshTrigger(str(other))) is RefreshStatus.RELOADED
    assert svc.root == str(other.resolve())
    assert svc.persistent.snapshot() == {"rules/AGENTS.md": "Other project's rules."}
    assert "currentFile" not in svc.volatile.snapshot()  # a path of the old project means nothing here
    assert svc.refresh_persistent_if_needed(RefreshTrigger(str(other))) is RefreshStatus.UNCHANGED
    # each project keeps its own persistent file
    back = AppContextService.for_path(str(tmp_path / "work" / "shop"), config.Config())
    assert back.persistent.snapshot() == {"rules/AGENTS.md": "Use uv, never pip."}


def test_force_reloads_and_user_keys_survive(svc: AppContextService, proj: Path) -> None:
    svc.refresh_persistent_if_needed()
    svc.persistent.put("preferences", "Answer briefly.")
    assert svc.refresh_persistent_if_needed(RefreshTrigger(force=True)) is RefreshStatus.RELOADED
    (proj / "AGENTS.md").write_text("changed")
    svc.refresh_persistent_if_needed()
    assert svc.persistent.snapshot() == {"preferences": "Answer briefly.", "rules/AGENTS.md": "changed"}


def test_config_change_reloads(svc: AppContextService, proj: Path) -> None:
    svc.refresh_persistent_if_needed()
    (proj / "NOTES.md").write_text("team notes")
    svc.cfg.context.rule_files = ["NOTES.md"]
    assert svc.refresh_persistent_if_needed() is RefreshStatus.RELOADED
    assert svc.persistent.snapshot() == {"rules/NOTES.md": "team notes"}


def test_workflow_progress_symlinks_and_privacy(proj: Path) -> None:
    memory = proj / ".claude" / "docs" / "memory"
    memory.mkdir(parents=True)
    (memory / "memory.md").write_text("# Progress\n- step 2 of 5 done\n")
    (proj / "AGENTS.md").write_text("Deploy with TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789AB\n")
    (proj / "CLAUDE.md").symlink_to(proj / "AGENTS.md")
    svc = AppContextService.for_path(str(proj), config.Config())
    svc.refresh_persistent_if_needed()
    snap = svc.persistent.snapshot()
    assert snap["workflowProgress"].startswith("# Progress")
    assert "ghp_abc" not in snap["rules/AGENTS.md"] and "[REDACTED]" in snap["rules/AGENTS.md"]
    assert "rules/CLAUDE.md" not in snap  # the same text twice is kept once


def test_volatile_paths_resolve_against_the_project_root(svc: AppContextService, proj: Path, tmp_path: Path) -> None:
    root = svc.root
    applied = svc.update_volatile_from_request(
        {"currentFile": "src/app.py", "openFiles": ["a.py", f"{root}/b/c.py"], "selection": "x = 1", "line": 4}
    )
    assert applied == {"currentFile": "src/app.py", "openFiles": ["a.py", "b/c.py"], "selection": "x = 1", "line": 4}
    svc.update_volatile_from_request({"workingDirectory": "src"})
    assert svc.volatile.snapshot()["workingDirectory"] == os.path.join(root, "src")
    for bad in ({"currentFile": "../secrets.txt"}, {"currentFile": "/etc/passwd"}, {"openFiles": ["ok.py", "/tmp"]}):
        with pytest.raises(ContextError, match="outside the project"):
            svc.update_volatile_from_request(bad)
    (proj / "escape").symlink_to(tmp_path)
    with pytest.raises(ContextError, match="outside the project"):
        svc.update_volatile_from_request({"currentFile": "escape/x.py"})
    svc.update_volatile_from_request({"selection": None})
    assert "selection" not in svc.volatile.snapshot()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"bad key": "x"}, "bad context key"),
        ({"1st": "x"}, "bad context key"),
        ({"projectRoot": "/x"}, None),  # handled: switches project (must exist)
        ({"selection": object()}, "must be JSON"),
        ({"selection": "x" * 70_000}, "over the 65536-character limit"),
        ({"currentFile": ""}, "non-empty path"),
        ({"openFiles": "a.py"}, "list of paths"),
    ],
)
def test_request_validation(svc: AppContextService, values: dict, message: str | None) -> None:  # type: ignore[type-arg]
    with pytest.raises(ContextError, match=message or "not an existing directory"):
        svc.update_volatile_from_request(values)


def test_request_projectroot_switches_and_relative_paths_follow(svc: AppContextService, tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    svc.update_volatile_from_request({"projectRoot": str(other), "currentFile": "main.py"})
    assert svc.root == str(other.resolve()) and svc.volatile.snapshot()["currentFile"] == "main.py"


def test_ensure_working_directory_and_branch(svc: AppContextService, proj: Path) -> None:
    (proj / ".git" / "HEAD").write_text("ref: refs/heads/feature/pool\n")
    (proj / "src").mkdir()
    svc.ensure_volatile_working_directory(str(proj / "src"))
    snap = svc.volatile.snapshot()
    assert snap["workingDirectory"] == str((proj / "src").resolve())
    assert snap["projectRoot"] == svc.root and snap["gitBranch"] == "feature/pool"
    svc.ensure_volatile_working_directory("/")  # outside the project: what was set stays
    assert svc.volatile.snapshot()["workingDirectory"] == str((proj / "src").resolve())
    (proj / ".git" / "HEAD").write_text("0123456789abcdef0123456789abcdef01234567\n")
    assert git_branch(str(proj / "src")) == "0123456789ab (detached)"
    assert git_branch("/") == ""


def test_git_branch_in_a_worktree(tmp_path: Path) -> None:
    gitdir = tmp_path / "main" / ".git" / "worktrees" / "wt"
    gitdir.mkdir(parents=True)
    (gitdir / "HEAD").write_text("ref: refs/heads/wt-branch\n")
    wt = tmp_path / "wt"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {gitdir}\n")
    assert git_branch(str(wt)) == "wt-branch"


def test_context_for_prompt_layers_and_the_volatile_file(proj: Path) -> None:
    cfg = config.Config()
    first = AppContextService.for_path(str(proj), cfg)
    first.volatile_file().put("currentTask", "migrating to v2")  # what `memlane context set` writes
    svc = AppContextService.for_path(str(proj), cfg)
    ctx = svc.context_for_prompt({"sessionId": "s1"}, {"selection": "only this time"})
    assert ctx.volatile["currentTask"] == "migrating to v2" and ctx.volatile["projectRoot"] == svc.root
    assert ctx.session == {"sessionId": "s1"} and ctx.request == {"selection": "only this time"}
    assert "selection" not in svc.volatile.snapshot()  # request-only values are not kept


def test_files_touched_come_from_the_store(proj: Path) -> None:
    proj_ = project.identify(proj)
    root = proj_.root_str
    with Store(proj_.db_path, proj_.id) as store:
        meta = [
            {"tool_name": "Read", "file_path": f"{root}/a.py"},
            {"tool_name": "Bash"},
            {"tool_name": "Edit", "file_path": f"{root}/b.py"},
            {"tool_name": "Edit", "file_path": f"{root}/a.py"},
        ]
        store.append([NewEvent("tool_observation", "s1", f"tool {i}", f"t{i}", m) for i, m in enumerate(meta)])
        store.append([NewEvent("tool_observation", "s2", "Other", "t9", {"file_path": "/elsewhere/c.py"})])
        assert files_touched(store, "s1", root, 8) == ["a.py", "b.py"]
        assert files_touched(store, "s1", root, 1) == ["a.py"]
        assert files_touched(store, "s2", root, 8) == ["/elsewhere/c.py"]


def test_registry_keeps_one_service_per_project_and_bounded_sessions(proj: Path, tmp_path: Path) -> None:
    reg = ContextRegistry(config.Config(), max_sessions=2)
    root = project.find_root_str(proj)
    assert reg.app(root) is reg.app(root)
    other = tmp_path / "o"
    other.mkdir()
    assert reg.app(str(other)) is not reg.app(root)
    a = reg.session("a")
    a.put("filesTouched", ["x.py"])
    assert reg.session("a").snapshot() == {"sessionId": "a", "filesTouched": ["x.py"]}
    reg.session("b")
    reg.session("c")
    assert reg.session("a").snapshot() == {"sessionId": "a"}  # evicted, recreated empty
