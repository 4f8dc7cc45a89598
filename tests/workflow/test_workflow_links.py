"""Project links: symlink, then hard link, then a copy kept in sync; switching and removing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from wf_support import init, meta

from memlane import project
from memlane.workflow import lifecycle, links, memory_md, progress, store


def local(proj: Path) -> Path:
    return proj / ".claude" / "docs" / "memory" / "memory.md"


def central(memory_id: str) -> Path:
    return Path(store.file(memory_id, "memory.md"))


def no_symlinks(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(1, "A required privilege is not held by the client")  # Windows without developer mode

    monkeypatch.setattr(os, "symlink", refuse)


def no_hardlinks(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", refuse)


def test_init_creates_central_files_and_a_symlink(proj: Path) -> None:
    memory_id = init(proj)
    assert memory_id == project.identify(proj).id
    base = Path(store.mem_dir(memory_id))
    assert sorted(p.name for p in base.iterdir() if not p.name.startswith(".")) == [
        "memory.md", "meta.json", "progress.json", "sessions",
    ]  # fmt: skip
    assert (proj / ".claude/docs/memory/.memory-ref").read_text().strip() == memory_id
    assert local(proj).is_symlink() and local(proj).resolve() == central(memory_id).resolve()
    assert meta(memory_id)["links"] == {str(proj): {"mode": "symlink"}}
    assert links.state(str(proj), memory_id) == "symlink"


def test_hardlink_when_symlinks_are_not_allowed(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_symlinks(monkeypatch)
    memory_id = init(proj)
    assert not local(proj).is_symlink() and os.path.samefile(local(proj), central(memory_id))
    assert links.state(str(proj), memory_id) == "hardlink"
    # the central file is replaced atomically (new inode): the hard link is made again after every write
    progress.mutate(memory_id, lambda d: progress.add_feature(d, "HL-001", "하드링크 기능"))
    assert os.path.samefile(local(proj), central(memory_id)) and "하드링크 기능" in local(proj).read_text()


def test_copy_when_neither_link_works(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_symlinks(monkeypatch)
    no_hardlinks(monkeypatch)
    memory_id = init(proj)
    assert links.state(str(proj), memory_id) == "copy" and meta(memory_id)["links"][str(proj)]["mode"] == "copy"
    progress.mutate(memory_id, lambda d: progress.add_feature(d, "CP-001", "복사 기능"))
    assert local(proj).read_text() == central(memory_id).read_text() and "복사 기능" in local(proj).read_text()
    memory_md.add_decision(memory_id, "Chose copies on Windows")
    assert "Chose copies on Windows" in local(proj).read_text()


def test_copy_edited_in_the_project_is_pulled_back(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_symlinks(monkeypatch)
    no_hardlinks(monkeypatch)
    memory_id = init(proj)
    text = (
        local(proj)
        .read_text()
        .replace(memory_md.DECISIONS_END, f"- 2024-02-01: 손으로 쓴 결정\n{memory_md.DECISIONS_END}")
    )
    local(proj).write_text(text)
    st = central(memory_id).stat()
    os.utime(local(proj), ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    memory_md.write(memory_id)  # any regeneration keeps the decision written in the copy
    assert "손으로 쓴 결정" in central(memory_id).read_text() and "손으로 쓴 결정" in local(proj).read_text()


def test_forced_modes_and_bad_mode(proj: Path) -> None:
    memory_id = init(proj, mode="copy")
    assert links.state(str(proj), memory_id) == "copy"
    assert lifecycle.link(str(proj), memory_id, "hardlink") == "hardlink"
    assert links.state(str(proj), memory_id) == "hardlink"
    with pytest.raises(store.WorkflowError, match="link mode must be one of"):
        lifecycle.link(str(proj), memory_id, "teleport")


def test_all_fallbacks_failing_is_an_error(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memory_id = init(proj)
    no_symlinks(monkeypatch)
    no_hardlinks(monkeypatch)
    monkeypatch.setattr(links, "_copy", lambda src, dst: (_ for _ in ()).throw(OSError(28, "No space left")))
    with pytest.raises(store.WorkflowError, match=r"cannot link .*memory\.md"):
        lifecycle.link(str(proj), memory_id, "auto")


def test_switch_moves_the_link(proj: Path) -> None:
    first = init(proj)
    second = init(proj, "shared-memory")
    assert store.read_ref(str(proj)) == second and local(proj).resolve() == central(second).resolve()
    assert str(proj) not in meta(first)["links"] and str(proj) in meta(second)["links"]
    lifecycle.link(str(proj), first)
    assert store.read_ref(str(proj)) == first


def test_remove_deletes_memory_and_links(proj: Path) -> None:
    memory_id = init(proj)
    assert lifecycle.remove(memory_id) == [str(proj)]
    assert not Path(store.mem_dir(memory_id)).exists()
    assert not local(proj).exists() and not local(proj).is_symlink()
    assert not (proj / ".claude/docs/memory/.memory-ref").exists()
    with pytest.raises(store.WorkflowError, match="no workflow memory"):
        lifecycle.remove(memory_id)


def test_stale_reference_falls_back_to_the_project_memory(proj: Path) -> None:
    p = project.identify(proj)
    init(proj)
    (proj / ".claude/docs/memory/.memory-ref").write_text("gone-elsewhere\n")
    assert store.resolve(p.root_str, p.id) == p.id
    (proj / ".claude/docs/memory/.memory-ref").write_text("../../etc\n")
    assert store.read_ref(p.root_str) is None
    with pytest.raises(store.WorkflowError, match="invalid workflow memory id"):
        store.check_id("../x")


def test_an_existing_project_memory_md_is_kept(proj: Path) -> None:
    local(proj).parent.mkdir(parents=True)
    local(proj).write_text("내가 쓴 메모")
    memory_id = init(proj)
    assert local(proj).is_symlink() and links.state(str(proj), memory_id) == "symlink"
    assert (local(proj).parent / "memory.md.orig").read_text() == "내가 쓴 메모"
