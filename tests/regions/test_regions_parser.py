"""Parsing: markers, the spec's item priority rules, ids, nesting and region types."""

from __future__ import annotations

import pytest
from regions_support import CODE, DO_SECTIONS, MIXED, SECTION, doc_of, kinds, wrap

from memlane.regions import CodeBlock, DirectRef, Heading, IndirectRef, Text, parse

# ---- the spec's region type examples --------------------------------------------------------------


def test_section_type_example() -> None:
    doc = parse(SECTION)
    region = doc.region("references")
    assert (region.start, region.end) == (0, 5)
    assert kinds(doc, "references") == ["heading", "direct-ref", "direct-ref"]
    assert region.type == "section"
    heading, first, second = region.items
    assert isinstance(heading, Heading) and (heading.level, heading.text, heading.line) == (2, "References", 1)
    assert isinstance(first, DirectRef) and first.path == "@context/memory/index.md" and first.line == 3
    assert isinstance(second, DirectRef) and second.line == second.end_line == 4


def test_code_type_example() -> None:
    doc = parse(CODE)
    region = doc.region("tools")
    assert kinds(doc, "tools") == ["heading", "code-block", "indirect-ref"]
    assert region.type == "code"
    block, ref = region.items[1], region.items[2]
    assert isinstance(block, CodeBlock)
    assert (block.language, block.content, block.line, block.end_line) == ("bash", "npm run dev\nnpm run build", 3, 6)
    assert block.raw == "```bash\nnpm run dev\nnpm run build\n```" and block.terminated
    assert isinstance(ref, IndirectRef)
    assert (ref.path, ref.description) == ("@context/troubleshooting/debug-guide.md", "디버깅 시 참조하세요.")


def test_mixed_type_example() -> None:
    doc = parse(MIXED)
    assert kinds(doc, "setup") == ["heading", "direct-ref", "code-block", "indirect-ref"]
    assert doc.region("setup").type == "mixed"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("@a/b.md\n", "section"),
        ("## h\ntext\n", "section"),
        ("`@a/b.md` - d\n", "section"),
        ("```\nx\n```\n", "code"),
        ("```\nx\n```\n`@a/b.md` - d\n", "code"),
        ("@a/b.md\n```\nx\n```\n", "mixed"),
        ("@a/b.md\n`@a/c.md` - d\n", "mixed"),
        ("", "section"),
    ],
)
def test_region_type_is_inferred_from_content(body: str, expected: str) -> None:
    assert doc_of(body).region("r").type == expected


# ---- item kinds and priority ------------------------------------------------------------------------


@pytest.mark.parametrize("level", range(1, 7))
def test_heading_levels_one_to_six(level: int) -> None:
    item = doc_of(f"{'#' * level} Title\n").region("r").items[0]
    assert isinstance(item, Heading) and item.level == level and item.text == "Title"


@pytest.mark.parametrize("line", ["####### seven", "#hashtag", "# ", "  ## indented"])
def test_not_headings(line: str) -> None:
    assert kinds(doc_of(line + "\n"), "r") == ["text"]


def test_heading_closing_hashes_are_dropped() -> None:
    item = doc_of("## Title ##\n").region("r").items[0]
    assert isinstance(item, Heading) and item.text == "Title"


@pytest.mark.parametrize(
    "path", ["@context/path/to/file.md", "@docs/x.md", "@~/foo.md", "@README.md", "@/abs/file.md", "@./local.md"]
)
def test_direct_references_include_claude_code_imports(path: str) -> None:
    item = doc_of(f"  {path}  \n").region("r").items[0]
    assert isinstance(item, DirectRef) and item.path == path


@pytest.mark.parametrize("line", ["@someone", "see @context/a.md here", "@context/a.md trailing words", "@"])
def test_not_direct_references(line: str) -> None:
    assert kinds(doc_of(line + "\n"), "r") == ["text"]


def test_indirect_reference_with_and_without_description() -> None:
    doc = doc_of("`@context/path/to/file.md` - 설명이 필수입니다\n`@context/file.md`\n`@context/b.md` -   \n")
    items = doc.region("r").items
    assert [(i.path, i.description) for i in items if isinstance(i, IndirectRef)] == [
        ("@context/path/to/file.md", "설명이 필수입니다"),
        ("@context/file.md", ""),
        ("@context/b.md", ""),
    ]


def test_inline_code_that_is_not_a_reference_is_text() -> None:
    assert kinds(doc_of("`npm run dev` - starts it\n`@context/a.md` and more\n"), "r") == ["text"]


def test_priority_heading_beats_everything() -> None:
    # '# @context/a.md' matches the heading rule first
    assert kinds(doc_of("# @context/a.md\n"), "r") == ["heading"]


def test_code_fences_backticks_tildes_and_longer_fences() -> None:
    body = "~~~python\nprint(1)\n```\nstill code\n~~~\n\n````md\n```js\nx\n```\n````\n"
    items = doc_of(body).region("r").items
    assert [i.kind for i in items] == ["code-block", "code-block"]
    first, second = items
    assert isinstance(first, CodeBlock) and isinstance(second, CodeBlock)
    assert (first.language, first.content, first.fence) == ("python", "print(1)\n```\nstill code", "~~~")
    assert (second.language, second.content) == ("md", "```js\nx\n```")


def test_code_block_lines_are_not_items() -> None:
    body = "```bash\n## not a heading\n@context/not/a-ref.md\n<!-- comment -->\n```\n"
    assert kinds(doc_of(body), "r") == ["code-block"]


def test_unterminated_fence_runs_to_the_region_end() -> None:
    doc = parse("<!-- MEMORY_START: r -->\n```bash\nnpm test\n<!-- MEMORY_END: r -->\nafter\n")
    block = doc.region("r").items[0]
    assert isinstance(block, CodeBlock) and not block.terminated
    assert (block.line, block.end_line, block.content) == (1, 2, "npm test")
    assert doc.region("r").end == 3


def test_text_paragraphs_group_lines_and_blank_lines_split_them() -> None:
    doc = doc_of("이것은 일반 텍스트입니다.\nsecond line\n\nanother paragraph\n@context/a.md\nafter ref\n")
    items = doc.region("r").items
    assert [i.kind for i in items] == ["text", "text", "direct-ref", "text"]
    first = items[0]
    assert isinstance(first, Text) and first.content == "이것은 일반 텍스트입니다.\nsecond line"
    assert (first.line, first.end_line) == (1, 2)


def test_line_numbers_are_zero_based_file_lines() -> None:
    doc = parse("# Title\n\n" + SECTION)
    region = doc.region("references")
    assert region.start == 2
    assert [i.line for i in region.items] == [3, 5, 6]


# ---- ids ----------------------------------------------------------------------------------------------


def test_ids_survive_edits_elsewhere_in_the_file() -> None:
    before = parse(MIXED).region("setup").items
    edited = parse(
        "# New title\n\nSome intro added above.\n\n"
        + MIXED.replace("## Development Setup\n", "## Development Setup\nnew text\n")
    )
    after = edited.region("setup").items
    assert {i.id for i in before} <= {i.id for i in after}
    assert [i.line for i in after][:2] != [i.line for i in before][:2]


def test_identical_items_get_distinct_ids_and_ids_name_their_kind() -> None:
    items = doc_of("@context/a.md\n@context/a.md\n").region("r").items
    assert items[0].id != items[1].id
    assert all(i.id.startswith("direct-ref-") for i in items)


def test_same_content_in_two_regions_gets_different_ids() -> None:
    doc = parse(wrap("@context/a.md\n", "one") + wrap("@context/a.md\n", "two"))
    assert doc.region("one").items[0].id != doc.region("two").items[0].id


def test_item_lookup_by_id_prefix() -> None:
    region = parse(SECTION).region("references")
    item = region.items[1]
    assert region.item(item.id[:16]) is item


# ---- nesting -------------------------------------------------------------------------------------------


def test_multi_level_nesting_under_headings() -> None:
    body = "intro\n# Top\n@a/x.md\n## Sub\n@a/y.md\n### Deep\n@a/z.md\n## Sub2\n`@a/w.md` - w\n# Other\ntext\n"
    region = doc_of(body).region("r")
    tree = region.tree
    assert [i.kind for i in tree] == ["text", "heading", "heading"]
    top = tree[1]
    assert [c.raw for c in top.children] == ["@a/x.md", "## Sub", "## Sub2"]
    sub = top.children[1]
    assert [c.raw for c in sub.children] == ["@a/y.md", "### Deep"]
    assert [c.raw for c in sub.children[1].children] == ["@a/z.md"]
    assert sub.children[1].children[0].parent == sub.children[1].id
    assert tree[0].parent is None


def test_do_example_clear_sections() -> None:
    region = parse(DO_SECTIONS).region("references")
    assert [(h.raw, [c.kind for c in h.children]) for h in region.tree] == [
        ("## Core References", ["direct-ref"]),
        ("## Optional Resources", ["indirect-ref"]),
    ]


def test_tree_json_has_children() -> None:
    data = parse(DO_SECTIONS).region("references").to_dict()
    assert data["type"] == "mixed"
    assert data["items"][0]["children"][0]["path"] == "@context/architecture/overview.md"


# ---- markers and structure ----------------------------------------------------------------------------


def codes(text: str) -> list[str]:
    return [f.code for f in parse(text).issues]


def test_region_names_letters_digits_hyphens() -> None:
    doc = parse(wrap("", "Setup-2") + wrap("", "a"))
    assert doc.names() == ["Setup-2", "a"] and not doc.issues


@pytest.mark.parametrize("name", ["my_region", "bad name", "dot.name", "ü"])
def test_bad_names(name: str) -> None:
    assert "bad-name" in codes(wrap("", name))


def test_empty_name_is_bad() -> None:
    assert "bad-name" in codes("<!-- MEMORY_START: -->\n<!-- MEMORY_END: -->\n")


def test_unpaired_and_unclosed_markers() -> None:
    assert codes("<!-- MEMORY_END: x -->\n") == ["unpaired-end"]
    assert codes("<!-- MEMORY_START: x -->\ntext\n") == ["unclosed-region"]


def test_mismatched_end() -> None:
    doc = parse("<!-- MEMORY_START: foo -->\n@a/b.md\n<!-- MEMORY_END: fo -->\n")
    assert [f.code for f in doc.issues] == ["mismatched-end"] and doc.regions == []
    assert doc.issues[0].line == 2


def test_dont_nest_regions() -> None:
    text = wrap(wrap("", "inner"), "outer")
    doc = parse(text)
    assert [(f.code, f.line) for f in doc.issues] == [("nested-region", 1)]
    # the spec's own DON'T snippet: two STARTs and nothing else
    assert sorted(codes("<!-- MEMORY_START: outer -->\n<!-- MEMORY_START: inner -->  \n")) == [
        "nested-region",
        "unclosed-region",
        "unclosed-region",
    ]


def test_duplicate_region_names() -> None:
    assert codes(wrap("", "a") + wrap("", "a")) == ["duplicate-region"]


def test_markers_inside_code_fences_outside_regions_are_examples() -> None:
    text = "# Docs\n\n```markdown\n<!-- MEMORY_START: example -->\n<!-- MEMORY_END: example -->\n```\n" + SECTION
    doc = parse(text)
    assert doc.names() == ["references"] and not doc.issues


def test_marker_spacing_variants() -> None:
    doc = parse("  <!--MEMORY_START:a-->\n@x/y.md\n<!--   MEMORY_END:   a   -->  \n")
    assert doc.names() == ["a"] and not doc.issues


def test_marker_with_other_text_on_the_line_is_not_a_marker() -> None:
    assert parse("see <!-- MEMORY_START: a --> here\n").regions == []


# ---- round trip ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n",
        "no newline",
        SECTION.replace("\n", "\r\n"),
        SECTION.rstrip("\n"),
        "\ufeff" + MIXED,
        "a\r\nb\nc\r\n\r\n\n",
        "\n\n\n" + CODE + "\n\n",
        "x\x0by\u2028z\n",
    ],
)
def test_untouched_documents_render_byte_identical(text: str) -> None:
    assert parse(text).render() == text


def test_crlf_items_have_no_carriage_returns() -> None:
    doc = parse(MIXED.replace("\n", "\r\n"))
    block = doc.region("setup").items[2]
    assert isinstance(block, CodeBlock) and block.content == "npm install\nnpm run dev"
    assert doc.newline == "\r\n"
