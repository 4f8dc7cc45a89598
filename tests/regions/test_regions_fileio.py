"""Reading and writing files: bad input is refused with one line and the file stays byte-for-byte the same."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from regions_support import SECTION

from memlane.regions import RegionError, RegionFile, add_item, make_item


def write(path: Path, data: bytes) -> bytes:
    path.write_bytes(data)
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"# ok\n\x00\x01binary", "looks binary (NUL byte at offset 5)"),
        ("# café\n".encode("latin-1"), "not UTF-8 text (byte 0xe9 at offset 5)"),
        (b"\xff\xfe# utf-16?", "not UTF-8 text"),
    ],
)
def test_bad_bytes_are_refused(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "CLAUDE.md"
    write(path, data)
    with pytest.raises(RegionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        RegionFile.open(path)
    assert path.read_bytes() == data


def test_huge_files_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    data = write(path, b"x" * (5 * 1024 * 1024 + 1))
    with pytest.raises(RegionError, match=r"CLAUDE.md is 5242881 bytes, over the 5 MB limit for editing"):
        RegionFile.open(path)
    with pytest.raises(RegionError, match="over the 100 bytes limit"):
        RegionFile.open(path, max_bytes=100)
    assert path.read_bytes() == data


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(RegionError, match="no such file"):
        RegionFile.open(tmp_path / "CLAUDE.md")
    assert not (tmp_path / "CLAUDE.md").exists()
    with pytest.raises(RegionError, match="is a folder"):
        RegionFile.open(tmp_path)


def test_untouched_file_is_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    write(path, SECTION.replace("\n", "\r\n").encode())
    before = path.stat().st_mtime_ns
    rf = RegionFile.open(path)
    assert rf.doc.render().encode() == path.read_bytes()
    assert rf.save() is False and path.stat().st_mtime_ns == before


def test_save_writes_atomically_and_keeps_mode_bom_and_endings(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    original = ("\ufeff# T\r\n" + SECTION.replace("\n", "\r\n")).encode()
    write(path, original)
    path.chmod(0o640)
    rf = RegionFile.open(path)
    add_item(rf.doc, "references", make_item("direct-ref", path="@context/new.md"))
    assert rf.save() is True
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf# T\r\n") and b"@context/new.md\r\n" in data
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir() if p.name != "user-home"] == ["CLAUDE.md"]  # no temp file left


def test_conflicting_edit_is_detected_and_nothing_written(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    write(path, SECTION.encode())
    rf = RegionFile.open(path)
    add_item(rf.doc, "references", make_item("direct-ref", path="@context/new.md"))
    theirs = write(path, SECTION.encode() + b"someone else's line\n")
    with pytest.raises(RegionError, match="changed on disk since it was read; nothing written"):
        rf.save()
    assert path.read_bytes() == theirs


def test_same_size_edit_with_restored_mtime_is_still_a_conflict(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    write(path, SECTION.encode())
    st = path.stat()
    rf = RegionFile.open(path)
    add_item(rf.doc, "references", make_item("direct-ref", path="@context/new.md"))
    theirs = write(path, SECTION.replace("References", "Referencez").encode())
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(RegionError, match="changed on disk"):
        rf.save()
    assert path.read_bytes() == theirs


def test_deleted_or_created_meanwhile_is_a_conflict(tmp_path: Path) -> None:
    path = tmp_path / "CLAUDE.md"
    write(path, SECTION.encode())
    rf = RegionFile.open(path)
    add_item(rf.doc, "references", make_item("direct-ref", path="@context/new.md"))
    path.unlink()
    with pytest.raises(RegionError, match="changed on disk"):
        rf.save()
    assert not path.exists()
    fresh = RegionFile.open(tmp_path / "NEW.md", create=True)
    assert not fresh.exists and fresh.doc.regions == []
    fresh.doc.lines.append("x\n")
    (tmp_path / "NEW.md").write_text("theirs\n")
    with pytest.raises(RegionError, match="changed on disk"):
        fresh.save()
    assert (tmp_path / "NEW.md").read_text() == "theirs\n"


def test_symlinked_file_is_written_through(tmp_path: Path) -> None:
    target = tmp_path / "AGENTS.md"
    write(target, SECTION.encode())
    link = tmp_path / "CLAUDE.md"
    link.symlink_to(target.name)
    rf = RegionFile.open(link)
    add_item(rf.doc, "references", make_item("direct-ref", path="@context/new.md"))
    rf.save()
    assert link.is_symlink() and b"@context/new.md" in target.read_bytes()


def test_read_only_file_or_folder_is_refused(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may write anywhere")
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "CLAUDE.md"
    write(path, SECTION.encode())
    path.chmod(0o444)
    rf = RegionFile.open(path)
    add_item(rf.doc, "references", make_item("direct-ref", path="@context/new.md"))
    with pytest.raises(RegionError, match="is read-only; left untouched"):
        rf.save()
    path.chmod(0o644)
    folder.chmod(0o555)
    try:
        with pytest.raises(RegionError, match=r"cannot write .*left untouched"):
            rf.save()
    finally:
        folder.chmod(0o755)
    assert path.read_bytes() == SECTION.encode()


def test_write_errors_become_region_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "CLAUDE.md"
    write(path, SECTION.encode())
    rf = RegionFile.open(path)
    add_item(rf.doc, "references", make_item("direct-ref", path="@context/new.md"))

    def full(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(RegionError, match=r"cannot write .*No space left on device; left untouched"):
        rf.save()
    assert path.read_bytes() == SECTION.encode()
