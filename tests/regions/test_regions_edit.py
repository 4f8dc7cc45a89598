"""CRUD: add (start/end/index/under), read, update (merge), delete item or section, create/remove regions."""

from __future__ import annotations

import pytest
from regions_support import DO_SECTIONS, MIXED, SECTION, doc_of, kinds, wrap

from memlane.regions import (
    Heading,
    RegionError,
    add_item,
    create_region,
    delete_item,
    delete_section,
    make_item,
    parse,
    remove_region,
    update_item,
)

PROSE = "# Project\n\nIntro text.\n\n"
TAIL = "\n## After\nclosing words, no newline"


def ref(path: str) -> object:
    return make_item("direct-ref", path=path)


def test_add_at_end_start_and_index() -> None:
    doc = parse(SECTION)
    add_item(doc, "references", make_item("direct-ref", path="context/c.md"))
    add_item(doc, "references", make_item("text", content="Read first."), position="start")
    added = add_item(doc, "references", make_item("direct-ref", path="@context/b.md"), position=2)
    assert added.path == "@context/b.md"  # type: ignore[attr-defined]
    assert [i.raw for i in doc.region("references").items] == [
        "Read first.",
        "## References",
        "@context/b.md",
        "@context/memory/index.md",
        "@context/usage/cli-reference.md",
        "@context/c.md",
    ]
    assert doc.render() == (
        "<!-- MEMORY_START: references -->\nRead first.\n\n## References\n\n@context/b.md\n@context/memory/index.md\n"
        "@context/usage/cli-reference.md\n@context/c.md\n<!-- MEMORY_END: references -->\n"
    )


def test_add_returns_item_with_id_and_line() -> None:
    doc = parse(PROSE + SECTION)
    item = add_item(doc, "references", ref("@context/x.md"))
    assert item.line == 9 and doc.region("references").item(item.id) is not None


def test_negative_and_out_of_range_index() -> None:
    doc = parse(SECTION)
    add_item(doc, "references", ref("@context/z.md"), position=-1)
    assert doc.region("references").items[-2].raw == "@context/z.md"
    with pytest.raises(RegionError, match="out of range"):
        add_item(doc, "references", ref("@context/q.md"), position=9)


def test_add_into_empty_region() -> None:
    doc = parse("x\n" + wrap("", "empty"))
    add_item(doc, "empty", make_item("heading", text="First", level=2))
    assert doc.render() == "x\n<!-- MEMORY_START: empty -->\n## First\n<!-- MEMORY_END: empty -->\n"


def test_add_under_heading_goes_before_its_subheadings() -> None:
    doc = parse(wrap("## A\n@a/1.md\n### A1\n@a/2.md\n## B\n@b/1.md\n"))
    add_item(doc, "r", ref("@a/new.md"), under="A")
    add_item(doc, "r", make_item("heading", text="A2", level=3), under="A")
    add_item(doc, "r", ref("@b/new.md"), under="B")
    region = doc.region("r")
    a, b = region.tree
    assert [c.raw for c in a.children] == ["@a/1.md", "@a/new.md", "### A1", "### A2"]
    assert [c.raw for c in b.children] == ["@b/1.md", "@b/new.md"]


def test_add_under_heading_by_id_and_start_position() -> None:
    doc = parse(DO_SECTIONS)
    optional = doc.region("references").heading("Optional Resources")
    add_item(doc, "references", ref("@context/first.md"), under=optional.id, position="start")
    children = doc.region("references").heading("Optional Resources").children
    assert children[0].raw == "@context/first.md"


def test_add_under_unknown_or_non_heading() -> None:
    doc = parse(SECTION)
    with pytest.raises(RegionError, match="no item 'Nope'"):
        add_item(doc, "references", ref("@a/b.md"), under="Nope")
    item_id = doc.region("references").items[1].id
    with pytest.raises(RegionError, match="not a heading"):
        add_item(doc, "references", ref("@a/b.md"), under=item_id)


def test_text_next_to_text_gets_a_blank_line_so_paragraphs_stay_apart() -> None:
    doc = doc_of("first paragraph\n")
    add_item(doc, "r", make_item("text", content="second paragraph"))
    assert kinds(doc, "r") == ["text", "text"]


def test_added_items_follow_the_file_line_endings() -> None:
    text = SECTION.replace("\n", "\r\n")
    doc = parse(text)
    add_item(doc, "references", make_item("code-block", language="bash", content="npm test\nnpm run lint"))
    out = doc.render()
    assert "\n" not in out.replace("\r\n", "")
    assert out.startswith(text.split("<!-- MEMORY_END")[0])


def test_code_block_content_with_fences_gets_a_longer_fence() -> None:
    doc = doc_of("")
    block = add_item(doc, "r", make_item("code-block", language="md", content="```js\nx\n```"))
    assert block.raw.startswith("````md") and block.content == "```js\nx\n```"  # type: ignore[attr-defined]


def test_items_that_would_not_read_back_are_refused() -> None:
    doc = parse(SECTION)
    before = doc.render()
    cases = [
        make_item("text", content="## looks like a heading"),
        make_item("text", content="one\n\ntwo"),
        make_item("text", content="<!-- MEMORY_END: references -->"),
        make_item("direct-ref", path="@has space.md"),
        make_item("indirect-ref", path="@a/b.md", description="line\nbreak"),
        make_item("heading", text="", level=2),
    ]
    for item in cases:
        with pytest.raises(RegionError):
            add_item(doc, "references", item)
    assert doc.render() == before


def test_make_item_rejects_unknown_kinds_and_fields() -> None:
    with pytest.raises(RegionError, match="unknown item type"):
        make_item("link", path="x")
    with pytest.raises(RegionError, match="has no field colour"):
        make_item("heading", text="x", colour="red")


def test_adding_after_an_unclosed_fence_is_refused() -> None:
    doc = parse("<!-- MEMORY_START: r -->\n@a/b.md\n```bash\nnpm test\n<!-- MEMORY_END: r -->\n")
    with pytest.raises(RegionError, match="never closed"):
        add_item(doc, "r", ref("@a/c.md"))
    add_item(doc, "r", ref("@a/c.md"), position="start")
    assert kinds(doc, "r")[0] == "direct-ref"


def test_update_merges_fields() -> None:
    doc = parse(MIXED)
    region = doc.region("setup")
    old = region.items[3]
    new = update_item(doc, "setup", old.id, description="when the build breaks")
    assert new.raw == "`@context/troubleshooting/common-issues.md` - when the build breaks"
    assert new.id != old.id and new.line == old.line
    block = doc.region("setup").items[2]
    updated = update_item(doc, "setup", block.id, language="sh")
    assert updated.raw == "```sh\nnpm install\nnpm run dev\n```"
    heading = doc.region("setup").items[0]
    assert update_item(doc, "setup", heading.id, level=3).raw == "### Development Setup"


def test_update_changes_line_count_and_keeps_the_rest() -> None:
    doc = parse(PROSE + MIXED + TAIL)
    block = doc.region("setup").items[2]
    update_item(doc, "setup", block.id, content="one")
    out = doc.render()
    assert out.startswith(PROSE) and out.endswith(TAIL)
    assert "```bash\none\n```" in out


def test_update_rejects_fields_of_other_kinds() -> None:
    doc = parse(SECTION)
    item = doc.region("references").items[1]
    with pytest.raises(RegionError, match="has no field description"):
        update_item(doc, "references", item.id, description="x")


def test_delete_item_and_blank_line_tidying() -> None:
    doc = parse(PROSE + MIXED + TAIL)
    block = doc.region("setup").items[2]
    gone = delete_item(doc, "setup", block.id)
    assert gone.kind == "code-block"
    out = doc.render()
    assert "@context/setup/prerequisites.md\n\n`@context/troubleshooting" in out
    assert out.startswith(PROSE) and out.endswith(TAIL)


def test_delete_last_item_drops_the_blank_lines_above_it() -> None:
    doc = parse(MIXED)
    delete_item(doc, "setup", doc.region("setup").items[-1].id)
    assert doc.render().endswith("```\n<!-- MEMORY_END: setup -->\n")


def test_delete_between_paragraphs_keeps_them_apart() -> None:
    doc = doc_of("first\n@a/b.md\nsecond\n")
    delete_item(doc, "r", doc.region("r").items[1].id)
    assert kinds(doc, "r") == ["text", "text"]


def test_delete_heading_alone_keeps_its_items() -> None:
    doc = parse(DO_SECTIONS)
    delete_item(doc, "references", doc.region("references").heading("Optional Resources").id)
    assert kinds(doc, "references") == ["heading", "direct-ref", "indirect-ref"]


def test_delete_section_removes_heading_and_everything_nested() -> None:
    doc = parse(wrap("## A\n@a/1.md\n### A1\n@a/2.md\n\n## B\n@b/1.md\n"))
    head = delete_section(doc, "r", "A")
    assert isinstance(head, Heading) and head.text == "A"
    assert doc.render() == wrap("## B\n@b/1.md\n")


def test_delete_unknown_item_or_region() -> None:
    doc = parse(SECTION)
    with pytest.raises(RegionError, match="no item 'heading-0000'"):
        delete_item(doc, "references", "heading-0000")
    with pytest.raises(RegionError, match=r"no region 'nope' \(regions: references\)"):
        delete_item(doc, "nope", "x")


def test_create_region_at_the_end_and_remove_it_again() -> None:
    for text in ("# Project\n\nIntro.\n", "# Title\nno newline at end", "", "x\r\ny\r\n"):
        doc = parse(text)
        region = create_region(
            doc, "tools", [make_item("heading", text="Tools"), make_item("code-block", content="make")]
        )
        assert region.type == "code" and kinds(doc, "tools") == ["heading", "code-block"]
        assert doc.render().rstrip("\r\n").endswith("<!-- MEMORY_END: tools -->")
        remove_region(doc, "tools")
        assert doc.render() == text


def test_create_region_refuses_bad_or_taken_names() -> None:
    doc = parse(SECTION)
    with pytest.raises(RegionError, match="letters, digits"):
        create_region(doc, "bad name")
    with pytest.raises(RegionError, match="already exists"):
        create_region(doc, "references")


def test_remove_region_at_the_end_takes_one_blank_line_before_it() -> None:
    doc = parse(PROSE + SECTION)
    remove_region(doc, "references")
    assert doc.render() == PROSE.removesuffix("\n")


def test_remove_region_in_the_middle_keeps_the_text_around_it() -> None:
    doc = parse("top\n" + SECTION + "bottom\n")
    remove_region(doc, "references")
    assert doc.render() == "top\nbottom\n"


def test_edits_are_refused_while_markers_are_broken() -> None:
    text = SECTION + "<!-- MEMORY_START: open -->\n"
    doc = parse(text)
    for action in (
        lambda: add_item(doc, "references", ref("@a/b.md")),
        lambda: create_region(doc, "new"),
        lambda: remove_region(doc, "references"),
        lambda: delete_item(doc, "references", doc.region("references").items[0].id),
    ):
        with pytest.raises(RegionError, match="markers need fixing by hand"):
            action()
    assert doc.render() == text


def test_edits_never_touch_text_outside_regions() -> None:
    text = PROSE + SECTION + "\nmiddle\n\n" + MIXED + TAIL
    doc = parse(text)
    outside = doc.outside()
    add_item(doc, "setup", ref("@context/new.md"), position=1)
    update_item(doc, "references", doc.region("references").items[0].id, text="Refs")
    delete_section(doc, "setup", "Development Setup")
    assert doc.outside() == outside


def test_ambiguous_heading_text_asks_for_the_id() -> None:
    doc = doc_of("## Same\n@a/1.md\n## Same\n@a/2.md\n")
    with pytest.raises(RegionError, match="2 headings read 'Same'"):
        add_item(doc, "r", ref("@a/3.md"), under="Same")
    second = [i for i in doc.region("r").items if isinstance(i, Heading)][1]
    add_item(doc, "r", ref("@a/3.md"), under=second.id)
    assert doc.region("r").items[-1].raw == "@a/3.md"
