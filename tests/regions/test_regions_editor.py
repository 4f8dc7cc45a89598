"""``memlane regions edit NAME``: a region's raw body in $EDITOR, checked before it is written, atomically."""

from __future__ import annotations

import os
import shlex
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from regions_support import SECTION, context_files

from memlane.cli.main import cli

PROSE = "# Shop\n\nHouse rules.\n\n"
EDITOR = """import sys, pathlib
target = pathlib.Path(sys.argv[-1])
action = pathlib.Path(sys.argv[1]).read_text()
if action.startswith("FAIL"):
    sys.exit(3)
if action.startswith("RACE"):  # someone else writes CLAUDE.md while the editor is open
    claude = pathlib.Path(sys.argv[2])
    claude.write_text(claude.read_text() + "another writer\\n")
    action = action[4:]
target.write_text(action)
"""


@pytest.fixture
def claude(proj: Path) -> Path:
    path = proj / "CLAUDE.md"
    path.write_text(PROSE + SECTION, encoding="utf-8")
    path.chmod(0o640)
    context_files(proj)
    return path


def edit(proj: Path, claude: Path, new_body: str, *args: str) -> tuple[int, str]:
    """Run `regions edit` with an editor that writes ``new_body`` into the file it is given."""
    script = proj.parent / "editor.py"
    script.write_text(EDITOR)
    action = proj.parent / "action.txt"
    action.write_text(new_body)
    editor = " ".join(shlex.quote(p) for p in (sys.executable, str(script), str(action), str(claude)))
    env = {"EDITOR": editor, "VISUAL": editor}
    result = CliRunner(env=env).invoke(cli, ["-C", str(proj), "regions", "edit", *args])
    return result.exit_code, result.output


def test_edit_replaces_the_body_only(proj: Path, claude: Path) -> None:
    body = "## References\n\n@context/memory/index.md\n\nNotes for the team.\n"
    code, out = edit(proj, claude, body, "references")
    assert code == 0 and out.startswith("Updated region 'references' of ")
    assert claude.read_text() == PROSE + (f"<!-- MEMORY_START: references -->\n{body}<!-- MEMORY_END: references -->\n")
    assert stat.S_IMODE(claude.stat().st_mode) == 0o640  # replaced atomically, mode kept
    assert not list(claude.parent.glob("*.tmp*"))


def test_unchanged_and_dry_run(proj: Path, claude: Path) -> None:
    before = claude.read_text()
    body = before.split("<!-- MEMORY_START: references -->\n")[1].split("<!-- MEMORY_END")[0]
    assert edit(proj, claude, body, "references") == (0, "No change.\n")
    code, out = edit(proj, claude, body + "One more line.\n", "references", "--dry-run")
    assert code == 0 and "+One more line." in out and claude.read_text() == before


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("## X\n<!-- MEMORY_END: references -->\nrest\n", "line 2 of the new body is a region marker"),
        ("## X\n<!-- MEMORY_START: other -->\n", "regions do not nest"),
        ("@context/not/there.md\n", "missing-ref: @context/not/there.md: no such file"),
        ("`@context/memory/index.md`\n", "missing-description"),
    ],
)
def test_a_body_that_fails_the_checks_is_not_written(proj: Path, claude: Path, body: str, message: str) -> None:
    before = claude.read_text()
    code, out = edit(proj, claude, body, "references")
    assert code == 1 and message in out and len(out.strip().splitlines()) == 1 and "Traceback" not in out
    assert claude.read_text() == before
    kept = Path(out.rsplit("your text is in ", 1)[1].strip())
    assert kept.read_text() == body  # the work is not lost
    os.remove(kept)


def test_allow_missing_accepts_a_reference_to_come(proj: Path, claude: Path) -> None:
    code, _ = edit(proj, claude, "@context/not/there.md\n", "references", "--allow-missing")
    assert code == 0 and "@context/not/there.md" in claude.read_text()


def test_editor_failure_unknown_region_and_a_concurrent_writer(proj: Path, claude: Path) -> None:
    before = claude.read_text()
    code, out = edit(proj, claude, "FAIL", "references")
    assert code == 1 and "Editing failed" in out and claude.read_text() == before
    code, out = edit(proj, claude, "x\n", "nowhere")
    assert code == 1 and "no region 'nowhere' (regions: references)" in out
    code, out = edit(proj, claude, "RACE## New\n", "references")
    assert code == 1 and "changed on disk since it was read; nothing written, your text is in" in out
    assert claude.read_text() == before + "another writer\n"
    os.remove(out.rsplit("your text is in ", 1)[1].strip())
