"""memlane.atomic: the one way memlane replaces a file someone else reads."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memlane import atomic


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != "user-home")  # conftest's HOME


def test_write_replaces_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_text("old and longer than the new content")
    atomic.write_text(path, "new\n")
    assert path.read_text() == "new\n"
    assert _names(tmp_path) == ["f.json"]


def test_an_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("{}")
    path.chmod(0o640)
    atomic.write_bytes(path, b'{"a": 1}')
    assert _mode(path) == 0o640


def test_a_private_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "token"
    atomic.write_text(path, "secret", atomic.PRIVATE)
    assert _mode(path) == 0o600


def test_a_new_file_gets_the_umask_default(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic.write_text(tmp_path / "new.md", "x")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "new.md") == 0o644


def test_a_failed_rename_leaves_the_old_file_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.md"
    path.write_bytes(b"old")

    def boom(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic.write_bytes(path, b"new")
    assert path.read_bytes() == b"old"
    assert _names(tmp_path) == ["f.md"]


def test_an_error_while_streaming_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "export.jsonl"
    path.write_text("old\n")
    with pytest.raises(RuntimeError), atomic.replacing(path) as fh:
        fh.write("half of the new")
        raise RuntimeError("interrupted")
    assert path.read_text() == "old\n"
    assert _names(tmp_path) == ["export.jsonl"]
