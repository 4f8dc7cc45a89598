"""``memlane regions …`` end to end through click, on a real project folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from regions_support import DO_SECTIONS, MIXED, SECTION, context_files

from memlane.cli.main import cli

PROSE = "# Shop\n\nHouse rules.\n\n"


def run(proj: Path, *args: str, code: int = 0, stdin: str | None = None) -> str:
    result = CliRunner().invoke(cli, ["-C", str(proj), "regions", *args], input=stdin)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result.output


def run_json(proj: Path, *args: str, code: int = 0) -> Any:
    return json.loads(run(proj, *args, "--json", code=code))


@pytest.fixture
def claude(proj: Path) -> Path:
    path = proj / "CLAUDE.md"
    path.write_text(PROSE + SECTION, encoding="utf-8")
    context_files(proj)
    return path


def test_list(proj: Path, claude: Path) -> None:
    out = run(proj, "list")
    assert "references" in out and "section" in out
    data = run_json(proj, "list")
    assert data["regions"] == [{"name": "references", "type": "section", "start_line": 4, "end_line": 9, "items": 3}]
    assert data["file"] == str(claude) and data["issues"] == []


def test_list_reports_marker_problems_on_stderr(proj: Path, claude: Path) -> None:
    claude.write_text(SECTION + "<!-- MEMORY_END: stray -->\n")
    result = CliRunner().invoke(cli, ["-C", str(proj), "regions", "list"])
    assert result.exit_code == 0 and "END 'stray' has no START" in result.output


def test_show_tree_and_json(proj: Path, claude: Path) -> None:
    claude.write_text(DO_SECTIONS)
    out = run(proj, "show", "references")
    assert out.splitlines()[0] == "references  (mixed, lines 0-6, 4 item(s))"
    assert "├─ 📌 ## Core References" in out and "│  └─ 🔗 @context/architecture/overview.md" in out
    assert "└─ 💡 `@context/advanced/optimization.md` - 성능 최적화 시 참조" in out
    data = run_json(proj, "show", "references")
    assert [h["text"] for h in data["items"]] == ["Core References", "Optional Resources"]
    flat = run_json(proj, "show", "references", "--flat")
    assert [i["type"] for i in flat["items"]] == ["heading", "direct-ref", "heading", "indirect-ref"]


def test_add_every_kind(proj: Path, claude: Path) -> None:
    missing = run(proj, "add", "references", "--ref", "context/usage/more.md", code=1)
    assert missing.startswith("Error: context/usage/more.md: no such file") and missing.count("\n") == 1
    for name in ("usage/more.md", "debug.md"):
        (proj / "docs" / "claude-context" / name).parent.mkdir(parents=True, exist_ok=True)
        (proj / "docs" / "claude-context" / name).write_text("x\n")
    run(proj, "add", "references", "--ref", "context/usage/more.md")
    run(proj, "add", "references", "--indirect", "@context/debug.md", "--desc", "when tests fail")
    run(proj, "add", "references", "--heading", "Commands")
    data = run_json(
        proj, "add", "references", "--code", "npm test\nnpm run lint", "--lang", "bash", "--under", "Commands"
    )
    assert data["item"]["type"] == "code-block" and data["written"] and data["item"]["parent"].startswith("heading-")
    run(proj, "add", "references", "--text", "-", "--position", "start", stdin="Read these first.\n")
    run(proj, "add", "references", "--heading", "Sub", "--under", "Commands")
    assert claude.read_text() == PROSE + (
        "<!-- MEMORY_START: references -->\nRead these first.\n\n## References\n\n@context/memory/index.md\n"
        "@context/usage/cli-reference.md\n@context/usage/more.md\n`@context/debug.md` - when tests fail\n\n"
        "## Commands\n```bash\nnpm test\nnpm run lint\n```\n\n### Sub\n<!-- MEMORY_END: references -->\n"
    )


def test_add_output_and_usage_errors(proj: Path, claude: Path) -> None:
    out = run(proj, "add", "references", "--ref", "@context/x.md", "--allow-missing")
    assert out.startswith("Added direct-ref-") and "at line 9" in out
    assert "exactly one of" in run(proj, "add", "references", code=2)
    assert "exactly one of" in run(proj, "add", "references", "--ref", "a/b.md", "--text", "x", code=2)
    assert "--desc goes with --indirect" in run(proj, "add", "references", "--ref", "a/b.md", "--desc", "x", code=2)
    assert "start, end or an item index" in run(proj, "add", "references", "--ref", "a/b.md", "--position", "x", code=2)
    assert "Error: no region 'nope'" in run(proj, "add", "nope", "--ref", "a/b.md", code=1)


def test_add_create_and_dry_run(proj: Path, claude: Path) -> None:
    before = claude.read_bytes()
    out = run(proj, "add", "tools", "--create", "--code", "make", "--dry-run")
    assert out.startswith("--- a/CLAUDE.md\n+++ b/CLAUDE.md\n") and "+<!-- MEMORY_START: tools -->" in out
    assert claude.read_bytes() == before
    run(proj, "add", "tools", "--create", "--code", "make")
    assert run_json(proj, "list")["regions"][1] == {
        "name": "tools",
        "type": "code",
        "start_line": 11,
        "end_line": 15,
        "items": 1,
    }


def test_update(proj: Path, claude: Path) -> None:
    items = run_json(proj, "show", "references", "--flat")["items"]
    heading, ref = items[0], items[1]
    out = run(proj, "update", "references", heading["id"][:14], "--text", "Always load", "--level", "3")
    assert out.startswith(f"Updated {heading['id']}") and "### Always load" in claude.read_text()
    data = run_json(proj, "update", "references", ref["id"], "--path", "context/memory/other.md")
    assert data["item"]["path"] == "@context/memory/other.md" and data["old_id"] == ref["id"]
    assert "takes no --desc" in run(proj, "update", "references", data["item"]["id"], "--desc", "x", code=2)
    assert "nothing to change" in run(proj, "update", "references", data["item"]["id"], code=2)


def test_update_text_and_code_items(proj: Path, claude: Path) -> None:
    claude.write_text(MIXED + "<!-- MEMORY_START: notes -->\nold words\n<!-- MEMORY_END: notes -->\n")
    block = run_json(proj, "show", "setup", "--flat")["items"][2]
    run(proj, "update", "setup", block["id"], "--code", "-", "--lang", "sh", stdin="pnpm i\n")
    assert "```sh\npnpm i\n```" in claude.read_text()
    text = run_json(proj, "show", "notes")["items"][0]
    run(proj, "update", "notes", text["id"], "--text", "new words")
    assert "\nnew words\n" in claude.read_text()


def test_delete_item_and_section(proj: Path, claude: Path) -> None:
    claude.write_text(DO_SECTIONS)
    items = run_json(proj, "show", "references", "--flat")["items"]
    out = run(proj, "delete", "references", items[1]["id"])
    assert out == f"Deleted {items[1]['id']} from region 'references'.\n"
    data = run_json(proj, "delete", "references", "Optional Resources", "--section")
    assert data["section"] and data["item"]["text"] == "Optional Resources"
    assert (
        claude.read_text() == "<!-- MEMORY_START: references -->\n## Core References\n<!-- MEMORY_END: references -->\n"
    )


def test_create_and_remove(proj: Path, claude: Path) -> None:
    out = run(proj, "create", "tools")
    assert out.startswith("Created region 'tools' at lines 11-12")
    assert "Error: region 'tools' already exists" in run(proj, "create", "tools", code=1)
    assert "Error: region name 'bad name'" in run(proj, "create", "bad name", code=1)
    data = run_json(proj, "remove", "tools")
    assert data["written"] and data["region"] == "tools"
    assert claude.read_text() == PROSE + SECTION


def test_validate_exit_status_and_json(proj: Path, claude: Path) -> None:
    assert run(proj, "validate") == "CLAUDE.md: no problems.\n"
    claude.write_text(
        PROSE + SECTION.replace("## References", "## References\n@context/memory/index.md\n`@context/x.md`")
    )
    out = run(proj, "validate", code=1)
    assert "CLAUDE.md line 7: error missing-description [references]" in out
    assert "CLAUDE.md line 9: warning duplicate-ref [references]: @context/memory/index.md is already" in out
    assert "1 error(s), 1 warning(s), 0 note(s) (1 fixable with `memlane regions fix`)." in out
    data = run_json(proj, "validate", code=1)
    assert data["ok"] is False and [f["code"] for f in data["findings"]] == ["missing-description", "duplicate-ref"]
    assert [f["line"] for f in data["findings"]] == [7, 9]


def test_validate_strict_fails_on_warnings(proj: Path, claude: Path) -> None:
    claude.write_text(SECTION.replace("@context/usage/cli-reference.md", "@context/memory/index.md"))
    run(proj, "validate")
    run(proj, "validate", "--strict", code=1)


def test_validate_uses_the_configured_context_root(proj: Path, claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_REGIONS_CONTEXT_ROOT", "elsewhere")
    monkeypatch.setenv("MEMLANE_REGIONS_PROJECT_ROOT_FALLBACK", "false")
    data = run_json(proj, "validate", code=1)
    assert {f["code"] for f in data["findings"]} == {"missing-ref"}
    assert "elsewhere/memory/index.md" in data["findings"][0]["message"]


def test_fix_dry_run_then_fix(proj: Path, claude: Path) -> None:
    claude.write_text(
        SECTION.replace("@context/usage/cli-reference.md", "@context/gone.md\n@context/memory/index.md") + "\nlater\n"
    )
    before = claude.read_bytes()
    diff = run(proj, "fix", "--dry-run")
    assert diff.startswith("--- a/CLAUDE.md\n+++ b/CLAUDE.md\n") and "-@context/gone.md" in diff
    assert claude.read_bytes() == before
    data = run_json(proj, "fix", "--dry-run")
    assert [a["code"] for a in data["actions"]] == ["duplicate-ref", "missing-ref", "region-not-at-end"]
    assert not data["written"] and claude.read_bytes() == before
    out = run(proj, "fix")
    assert "removed duplicate: @context/memory/index.md" in out and out.endswith(f"Fixed {claude}.\n")
    assert claude.read_text() == "later\n\n" + SECTION.replace("@context/usage/cli-reference.md\n", "")
    assert run(proj, "fix") == "Nothing to fix.\n"


def test_file_option_resolves_relative_to_that_file(proj: Path, claude: Path) -> None:
    sub = proj / "pkg"
    sub.mkdir()
    (sub / "notes.md").write_text("x")
    other = sub / "CLAUDE.md"
    other.write_text("<!-- MEMORY_START: local -->\n@notes.md\n<!-- MEMORY_END: local -->\n")
    assert run_json(proj, "list", "--file", str(other))["regions"][0]["name"] == "local"
    assert run_json(proj, "validate", "--file", str(other))["ok"] is True


def test_project_id_selects_the_project(proj: Path, claude: Path, tmp_path: Path) -> None:
    from memlane.memory import Memory

    with Memory.open(proj) as mem:
        project_id = mem.project.id
    result = CliRunner().invoke(cli, ["-C", str(tmp_path), "--project-id", project_id, "regions", "list", "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["file"] == str(claude)
    result = CliRunner().invoke(cli, ["--project-id", "nope-123", "regions", "list"])
    assert result.exit_code == 1 and "Error: unknown project id 'nope-123'" in result.output


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"# x\n\x00", "looks binary"),
        (b"# \xe9t\xe9\n", "not UTF-8 text"),
        (b"x" * (5 * 1024 * 1024 + 10), "over the 5 MB limit"),
    ],
)
def test_bad_input_for_every_command(proj: Path, data: bytes, message: str) -> None:
    path = proj / "CLAUDE.md"
    path.write_bytes(data)
    commands = [
        ["list"],
        ["show", "r"],
        ["add", "r", "--ref", "a/b.md"],
        ["update", "r", "x", "--text", "t"],
        ["delete", "r", "x"],
        ["validate"],
        ["fix"],
        ["create", "r"],
        ["remove", "r"],
        ["sync"],
    ]
    for args in commands:
        out = run(proj, *args, code=1)
        assert out.startswith("Error: ") and message in out and len(out.strip().splitlines()) == 1, args
    assert path.read_bytes() == data


def test_missing_file(proj: Path) -> None:
    out = run(proj, "list", code=1)
    assert out == f"Error: no such file: {proj / 'CLAUDE.md'}\n"
    assert not (proj / "CLAUDE.md").exists()


def test_conflicting_edit_through_the_cli(proj: Path, claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memlane.regions import fileio

    original_check = fileio.RegionFile._check_unchanged_on_disk

    def someone_edits(self: fileio.RegionFile) -> None:
        claude.write_text(PROSE + SECTION + "their edit\n")
        original_check(self)

    monkeypatch.setattr(fileio.RegionFile, "_check_unchanged_on_disk", someone_edits)
    out = run(proj, "add", "references", "--ref", "@context/x.md", "--allow-missing", code=1)
    assert "changed on disk since it was read" in out
    assert claude.read_text() == PROSE + SECTION + "their edit\n"


# ---- sync -------------------------------------------------------------------------------------------


def test_sync_creates_claude_md_at_the_root_only(proj: Path) -> None:
    sub = proj / "pkg"
    sub.mkdir()
    out = CliRunner().invoke(cli, ["-C", str(sub), "regions", "sync"]).output
    assert out == f"Created {proj / 'CLAUDE.md'} (region 'memlane').\n"
    assert not (sub / "CLAUDE.md").exists()
    text = (proj / "CLAUDE.md").read_text()
    assert text == (
        "<!-- MEMORY_START: memlane -->\n## memlane\n\n### What memlane knows\n"
        "- Nothing captured for this project yet.\n"
        '- Search it with `memlane search "<words>"`; cite results as mem:<id>.\n'
        "<!-- MEMORY_END: memlane -->\n"
    )
    assert run(proj, "sync") == f"Region 'memlane' in {proj / 'CLAUDE.md'} is up to date.\n"


def test_sync_only_touches_its_own_region(proj: Path, claude: Path) -> None:
    memory = proj / ".claude" / "docs" / "memory" / "memory.md"
    memory.parent.mkdir(parents=True)
    memory.write_text("# workflow memory\n")
    before = claude.read_text()
    diff = run(proj, "sync", "--dry-run")
    assert "+@.claude/docs/memory/memory.md" in diff and claude.read_text() == before
    data = run_json(proj, "sync")
    assert data["created_region"] and data["written"] and not data["created_file"]
    text = claude.read_text()
    assert text.startswith(before) and "@.claude/docs/memory/memory.md" in text
    claude.write_text(text.replace("### What memlane knows", "### edited by hand") + "\nuser text after\n")
    run(proj, "sync")
    again = claude.read_text()
    assert "### What memlane knows" in again and again.endswith("\nuser text after\n") and again.startswith(before)
    assert run_json(proj, "validate")["ok"] is True


def test_sync_reports_what_memlane_knows(proj: Path, claude: Path) -> None:
    from memlane.regions import sync

    stats = {"events": 12, "sessions": 3, "last_activity": "2026-01-05T10:00:00Z"}
    items = sync.items(proj, stats, "2026-01-04T09:00:00.000Z")
    assert items[-1].raw == "" and "12 event(s) in 3 session(s); last session 2026-01-04." in items[-1].render()[0]
    result = sync.sync(proj, stats, None)
    assert "last session 2026-01-05" in claude.read_text() and result.changed


def test_sync_if_enabled_is_opt_in(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memlane.regions import sync

    assert sync.sync_if_enabled(proj) is None and not (proj / "CLAUDE.md").exists()
    monkeypatch.setenv("MEMLANE_REGIONS_SYNC", "true")
    result = sync.sync_if_enabled(proj)
    assert result is not None and result.created_file and (proj / "CLAUDE.md").exists()


def test_sync_refuses_a_file_with_broken_markers(proj: Path) -> None:
    path = proj / "CLAUDE.md"
    path.write_text("<!-- MEMORY_START: memlane -->\n")
    assert "markers need fixing by hand" in run(proj, "sync", code=1)
    assert path.read_text() == "<!-- MEMORY_START: memlane -->\n"
