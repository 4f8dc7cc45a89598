"""Validation (the spec's duplicate, existence and structure rules, and the DON'T cases) and auto-fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from regions_support import CODE, DO_SECTIONS, MIXED, SECTION, context_files, wrap

from memlane.config import RegionsConfig
from memlane.regions import RegionError, fix, parse, validate


def found(text: str, root: Path, cfg: RegionsConfig | None = None) -> list[tuple[int, str, str]]:
    return [(f.line, f.severity, f.code) for f in validate(parse(text), root, cfg)]


@pytest.mark.parametrize("text", [SECTION, CODE, MIXED, DO_SECTIONS])
def test_spec_examples_are_valid_when_their_files_exist(proj: Path, text: str) -> None:
    context_files(proj)
    assert found(text, proj) == []


def test_every_finding_has_line_severity_code_message(proj: Path) -> None:
    findings = validate(parse(SECTION), proj)
    assert findings and all(f.message and f.severity in ("error", "warning", "info") for f in findings)
    data = findings[0].to_dict()
    assert set(data) == {"line", "severity", "code", "message", "region", "item", "fixable"}


# ---- rule 1: duplicate direct references ---------------------------------------------------------------


def test_duplicate_direct_references_across_regions(proj: Path) -> None:
    context_files(proj, "a.md")
    text = wrap("@context/a.md\n@context/./a.md\n", "one") + wrap("@context/a.md\n", "two")
    findings = validate(parse(text), proj)
    assert [(f.line, f.code, f.region) for f in findings] == [(2, "duplicate-ref", "one"), (5, "duplicate-ref", "two")]
    assert "already referenced at line 1" in findings[0].message and findings[0].fixable


def test_duplicate_indirect_references_are_allowed(proj: Path) -> None:
    context_files(proj, "a.md")
    text = wrap("@context/a.md\n`@context/a.md` - also here\n`@context/a.md` - and here\n")
    assert found(text, proj) == []


# ---- rule 2: referenced files exist ------------------------------------------------------------------


def test_missing_direct_reference(proj: Path) -> None:
    findings = validate(parse(wrap("@context/nope.md\n")), proj)
    assert [(f.line, f.severity, f.code) for f in findings] == [(1, "error", "missing-ref")]
    assert "docs/claude-context/nope.md" in findings[0].message


def test_indirect_references_are_not_checked_for_existence(proj: Path) -> None:
    assert found(wrap("`@context/nope.md` - later\n"), proj) == []


def test_reference_resolution_context_root_fallback_and_config(proj: Path, tmp_path: Path) -> None:
    (proj / "context").mkdir()
    (proj / "context" / "only-at-root.md").write_text("x")
    (proj / "docs").mkdir()
    (proj / "docs" / "x.md").write_text("x")
    home = Path.home()
    (home / "foo.md").write_text("x")
    text = wrap("@context/only-at-root.md\n@docs/x.md\n@~/foo.md\n")
    assert found(text, proj) == []
    no_fallback = RegionsConfig(project_root_fallback=False)
    assert found(text, proj, no_fallback) == [(1, "error", "missing-ref")]
    elsewhere = tmp_path / "ctx"
    (elsewhere / "memory").mkdir(parents=True)
    (elsewhere / "memory" / "index.md").write_text("x")
    assert found(wrap("@context/memory/index.md\n"), proj, RegionsConfig(context_root=str(elsewhere))) == []
    assert found(wrap("@context/memory/index.md\n"), proj) == [(1, "error", "missing-ref")]


def test_relative_imports_resolve_from_the_files_folder(proj: Path) -> None:
    sub = proj / "pkg"
    sub.mkdir()
    (sub / "notes.md").write_text("x")
    doc = parse(wrap("@notes.md\n"))
    assert validate(doc, proj, base=sub) == []
    assert [f.code for f in validate(doc, proj)] == ["missing-ref"]


def test_a_folder_is_not_a_referenced_file(proj: Path) -> None:
    (proj / "docs" / "claude-context" / "dir.md").mkdir(parents=True)
    assert found(wrap("@context/dir.md\n"), proj) == [(1, "error", "missing-ref")]


# ---- rule 3: structure -----------------------------------------------------------------------------------


def test_structure_findings_are_errors(proj: Path) -> None:
    text = "<!-- MEMORY_END: a -->\n<!-- MEMORY_START: bad_name -->\n<!-- MEMORY_START: inner -->\n"
    assert found(text, proj) == [
        (0, "error", "unpaired-end"),
        (1, "error", "bad-name"),
        (1, "error", "unclosed-region"),
        (2, "error", "nested-region"),
        (2, "error", "unclosed-region"),
    ]


# ---- the spec's DON'T cases ----------------------------------------------------------------------------


def test_dont_describe_a_direct_reference(proj: Path) -> None:
    context_files(proj, "file.md")
    assert found(wrap("@context/file.md\n이것은 설명입니다.\n"), proj) == [(2, "warning", "ref-with-description")]
    assert found(wrap("@context/file.md\n\nA paragraph of its own.\n"), proj) == []


def test_dont_leave_out_an_indirect_description(proj: Path) -> None:
    text = wrap("`@context/file.md`\n`@context/file.md` - 설명 추가\n")
    assert found(text, proj) == [(1, "error", "missing-description")]


def test_unterminated_fences_are_reported(proj: Path) -> None:
    assert found(wrap("```bash\nnpm test\n"), proj) == [(1, "warning", "unterminated-fence")]
    assert found("```\n" + SECTION, proj) == [(0, "warning", "unterminated-fence")]


def test_text_after_a_region_is_noted(proj: Path) -> None:
    context_files(proj)
    assert found(SECTION + "\n## Later\n", proj) == [(0, "info", "region-not-at-end")]
    assert found("# Top\n\n" + SECTION + "\n\n" + CODE + "\n", proj) == []


# ---- auto-fix -----------------------------------------------------------------------------------------


def test_fix_order_duplicates_then_missing_then_move(proj: Path) -> None:
    context_files(proj, "memory/index.md")
    text = (
        "# Project\n\n"
        + wrap("## Refs\n@context/memory/index.md\n@context/gone.md\n@context/memory/index.md\n", "one")
        + "\n## Notes\nkept\n\n"
        + wrap("@context/memory/index.md\n`@context/memory/index.md` - fine\n", "two")
        + "\nfooter\n"
    )
    doc = parse(text)
    result = fix(doc, proj)
    assert [(a.code, a.line) for a in result.actions] == [
        ("duplicate-ref", 6),
        ("duplicate-ref", 13),
        ("missing-ref", 5),
        ("region-not-at-end", 2),
    ]
    assert result.after == (
        "# Project\n\n## Notes\nkept\n\nfooter\n\n"
        "<!-- MEMORY_START: one -->\n## Refs\n@context/memory/index.md\n<!-- MEMORY_END: one -->\n\n"
        "<!-- MEMORY_START: two -->\n`@context/memory/index.md` - fine\n<!-- MEMORY_END: two -->\n"
    )
    assert doc.render() == result.after and result.changed
    assert validate(doc, proj) == []


def test_fix_keeps_the_first_duplicate_even_when_later_ones_are_elsewhere(proj: Path) -> None:
    context_files(proj, "a.md")
    doc = parse(wrap("@context/a.md\n", "one") + wrap("@context/a.md\n@context/b.md\n", "two"))
    fix(doc, proj)
    assert [i.raw for r in doc.regions for i in r.items] == ["@context/a.md"]


def test_fix_is_idempotent_and_a_no_op_on_clean_files(proj: Path) -> None:
    context_files(proj)
    text = "# P\nintro\n" + MIXED + "outro\r\n" + SECTION.rstrip("\n")
    doc = parse(text)
    first = fix(doc, proj)
    assert first.changed
    again = fix(doc, proj)
    assert not again.changed and again.actions == [] and again.diff() == ""
    assert first.after.endswith("<!-- MEMORY_END: references -->")  # no trailing newline, as before


def test_fix_diff_is_a_unified_diff(proj: Path) -> None:
    doc = parse(wrap("@context/nope.md\n"))
    result = fix(doc, proj)
    diff = result.diff("CLAUDE.md")
    assert diff.startswith("--- a/CLAUDE.md\n+++ b/CLAUDE.md\n@@")
    assert "-@context/nope.md\n" in diff


def test_fix_marks_a_missing_final_newline_in_the_diff(proj: Path) -> None:
    doc = parse("x\n" + wrap("@context/nope.md\n").rstrip("\n"))
    assert "\\ No newline at end of file" in fix(doc, proj).diff()


def test_fix_refuses_broken_markers(proj: Path) -> None:
    text = SECTION + "<!-- MEMORY_END: stray -->\n"
    doc = parse(text)
    with pytest.raises(RegionError, match="markers need fixing"):
        fix(doc, proj)
    assert doc.render() == text


def test_fix_moves_regions_without_piling_up_blank_lines(proj: Path) -> None:
    context_files(proj)
    doc = parse("a\n\n" + SECTION + "\nb\n\n" + CODE + "\nc")
    result = fix(doc, proj)
    assert result.after == "a\n\nb\n\nc\n\n" + SECTION + "\n" + CODE.rstrip("\n")


def test_do_name_regions_in_lowercase(proj: Path) -> None:
    assert found(wrap("", "dev-tools") + wrap("", "setup2"), proj) == []
    assert found(wrap("", "DevTools"), proj) == [(0, "info", "name-style")]
