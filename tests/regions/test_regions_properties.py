"""Property-based: any text round-trips byte for byte, and no edit ever changes text outside regions."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane.regions import (
    Document,
    Heading,
    RegionError,
    RegionFile,
    add_item,
    delete_item,
    delete_section,
    fix,
    make_item,
    parse,
    update_item,
)

WORDS = st.from_regex(r"[A-Za-z가-힣][A-Za-z0-9 .,!?가-힣]{0,20}", fullmatch=True)
PATHS = st.from_regex(r"(context/|docs/|~/|\./)?[a-z]{1,6}(/[a-z]{1,6}){0,2}\.md", fullmatch=True)
NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def body_lines(draw: st.DrawFn, allow_open_fence: bool = True) -> list[str]:
    """Lines of a region body, mixing every item kind, odd spacing and blank lines."""
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["heading", "direct", "indirect", "code", "text", "blank"]))
        if kind == "heading":
            lines.append(f"{'#' * draw(st.integers(1, 6))} {draw(WORDS)}")
        elif kind == "direct":
            lines.append(draw(st.sampled_from(["", "  "])) + "@" + draw(PATHS) + draw(st.sampled_from(["", " "])))
        elif kind == "indirect":
            desc = draw(st.one_of(st.just(""), WORDS))
            lines.append(f"`@{draw(PATHS)}`" + (f" - {desc}" if desc else ""))
        elif kind == "code":
            fence = draw(st.sampled_from(["```", "~~~", "````"]))
            lines += [fence + draw(st.sampled_from(["", "bash", "python"]))]
            lines += draw(st.lists(st.one_of(WORDS, st.just("## not a heading"), st.just("@not/a.md")), max_size=3))
            lines += [fence]
        elif kind == "text":
            lines += draw(st.lists(WORDS, min_size=1, max_size=3))
        else:
            lines.append(draw(st.sampled_from(["", "   "])))
    if allow_open_fence and draw(st.booleans()) and draw(st.booleans()):
        lines += ["```sh", "left open"]
    return lines


@st.composite
def documents(draw: st.DrawFn) -> str:
    """A CLAUDE.md: prose, code fences (some showing example markers) and managed regions."""
    names = draw(st.lists(NAMES, min_size=1, max_size=3, unique=True))
    blocks: list[list[str]] = []
    for name in names:
        outside = draw(st.lists(st.one_of(WORDS, st.just(""), st.just("## Prose heading")), max_size=3))
        if draw(st.booleans()):
            outside += ["```markdown", "<!-- MEMORY_START: example -->", "<!-- MEMORY_END: example -->", "```"]
        blocks.append(outside)
        blocks.append([f"<!-- MEMORY_START: {name} -->", *draw(body_lines()), f"<!-- MEMORY_END: {name} -->"])
    blocks.append(draw(st.lists(st.one_of(WORDS, st.just("")), max_size=3)))
    lines = [line for block in blocks for line in block]
    style = draw(st.sampled_from(["\n", "\r\n", "mixed"]))
    ends = [draw(st.sampled_from(["\n", "\r\n"])) if style == "mixed" else style for _ in lines]
    text = "".join(line + end for line, end in zip(lines, ends, strict=True))
    return text if draw(st.booleans()) else text.rstrip("\r\n")


@SETTINGS
@given(st.text())
def test_any_text_round_trips(text: str) -> None:
    assert parse(text).render() == text


@SETTINGS
@given(documents())
def test_generated_documents_round_trip_and_parse_cleanly(text: str) -> None:
    doc = parse(text)
    assert doc.render() == text
    assert not [f for f in doc.issues if f.severity == "error"]
    for region in doc.regions:
        for item in region.items:
            assert region.start < item.line <= item.end_line < region.end


@SETTINGS
@given(documents())
def test_files_round_trip_through_region_file(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    folder = tmp_path_factory.mktemp("rt")
    path = folder / "CLAUDE.md"
    path.write_bytes(text.encode("utf-8"))
    rf = RegionFile.open(path)
    assert rf.doc.render() == text and rf.save() is False
    assert path.read_bytes() == text.encode("utf-8")


def new_items() -> st.SearchStrategy[object]:
    return st.one_of(
        st.builds(lambda t, lv: make_item("heading", text=t, level=lv), WORDS.filter(str.strip), st.integers(1, 6)),
        st.builds(lambda p: make_item("direct-ref", path=p), PATHS),
        st.builds(lambda p, d: make_item("indirect-ref", path=p, description=d), PATHS, WORDS),
        st.builds(
            lambda c, lang: make_item("code-block", content=c, language=lang), WORDS, st.sampled_from(["", "js"])
        ),
        st.builds(lambda t: make_item("text", content=t), WORDS.filter(str.strip)),
    )


def _apply(doc: Document, data: st.DataObject) -> int | None:
    """One random edit; returns the expected change in item count, or None when the edit was refused."""
    region = data.draw(st.sampled_from(doc.regions))
    op = data.draw(st.sampled_from(["add", "update", "delete", "section"]))
    headings = [i for i in region.items if isinstance(i, Heading)]
    try:
        if op == "add" or not region.items:
            item = data.draw(new_items())
            under = data.draw(st.sampled_from([None, *[h.id for h in headings]]))
            position = data.draw(st.one_of(st.sampled_from(["start", "end"]), st.integers(-3, 6)))
            add_item(doc, region.name, item, position, under)  # type: ignore[arg-type]
            return 1
        target = data.draw(st.sampled_from(region.items))
        if op == "update":
            update_item(doc, region.name, target.id, **_changes(target, data))
            return 0
        if op == "section" and headings:
            head = data.draw(st.sampled_from(headings))
            before = len(region.items)
            delete_section(doc, region.name, head.id)
            return len(doc.region(region.name).items) - before
        delete_item(doc, region.name, target.id)
        return -1
    except RegionError:
        return None


def _changes(item: object, data: st.DataObject) -> dict[str, object]:
    kind = getattr(item, "kind", "")
    if kind == "heading":
        return {"text": data.draw(WORDS.filter(str.strip))}
    if kind == "direct-ref":
        return {"path": data.draw(PATHS)}
    if kind == "indirect-ref":
        return {"description": data.draw(WORDS)}
    if kind == "code-block":
        return {"content": data.draw(WORDS), "language": "py"}
    return {"content": data.draw(WORDS.filter(str.strip))}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.data())
def test_edits_never_change_text_outside_regions(text: str, data: st.DataObject) -> None:
    doc = parse(text)
    outside = doc.outside()
    names = doc.names()
    for _ in range(data.draw(st.integers(1, 4))):
        snapshot = doc.render()
        counts = {r.name: len(r.items) for r in doc.regions}
        region_count_before = sum(counts.values())
        delta = _apply(doc, data)
        if delta is None:
            assert doc.render() == snapshot  # a refused edit changes nothing
            continue
        assert doc.outside() == outside
        assert doc.names() == names
        assert not [f for f in doc.issues if f.severity == "error"]
        total = sum(len(r.items) for r in doc.regions)
        assert total == region_count_before + delta
        assert parse(doc.render()).render() == doc.render()


@SETTINGS
@given(documents())
def test_fix_is_idempotent(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    root = tmp_path_factory.mktemp("fix")
    doc = parse(text)
    fix(doc, root)
    once = doc.render()
    assert not fix(doc, root).changed
    assert doc.render() == once
    assert [r.name for r in doc.regions] == [r.name for r in parse(text).regions]
