"""CRUD on regions and their items. Every edit rewrites only lines inside one region (create/remove
also touch the blank line that separates a region from the text above it), then parses again.

Edits refuse to run while the file's markers are broken: with an unpaired or nested marker there is
no telling where a region really ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NoReturn

from memlane.regions import parser
from memlane.regions.document import Document, Region
from memlane.regions.model import NAME, CodeBlock, Heading, Item, RegionError, Text

REFS = ("direct-ref", "indirect-ref")


def _start_marker(name: str) -> str:
    return f"<!-- MEMORY_START: {name} -->"


def _end_marker(name: str) -> str:
    return f"<!-- MEMORY_END: {name} -->"


def checked_lines(item: Item) -> list[str]:
    """The item's lines, if they read back as exactly this item; else a RegionError saying why."""
    lines = item.render()
    for line in lines:
        if parser.marker(line):
            raise RegionError("an item may not contain a MEMORY_START/MEMORY_END marker line")
        if "\r" in line:
            raise RegionError("an item may not contain carriage returns")
    back = parser.parse_items([line + "\n" for line in lines], 0, len(lines))
    if len(back) != 1 or back[0].kind != item.kind or back[0].key() != item.key():
        got = ", ".join(b.kind for b in back) or "nothing"
        raise RegionError(f"this {item.kind} would be read back as {got}; {_hint(item)}")
    return lines


def _hint(item: Item) -> str:
    hints = {
        "heading": "a heading is one line of text with a level 1-6",
        "direct-ref": "a direct reference is one path with no spaces, e.g. @context/setup/prerequisites.md",
        "indirect-ref": "an indirect reference is a path with no spaces and a one-line description",
        "code-block": "check the language (one word)",
        "text": "text must not look like a heading, reference or code fence, nor hold blank lines",
    }
    return hints[item.kind]


def _gap(above: str | None, below: str | None) -> bool:
    """Whether two adjacent items want a blank line between them.

    References are listed one per line and a heading sits directly on its first item; anything else is
    separated, which also keeps two text items from running together into one paragraph.
    """
    if above is None or below is None:
        return False
    if above in REFS and below in REFS:
        return False
    return not (above == "heading" and below != "heading")


def _covering(region: Region, line: int) -> Item | None:
    return next((i for i in region.items if i.line <= line <= i.end_line), None)


def _section_last(head: Heading) -> int:
    last = head.line
    stack: list[Item] = list(head.children)
    while stack:
        child = stack.pop()
        last = max(last, child.end_line)
        stack.extend(child.children)
    return last


def _insertion_point(region: Region, position: str | int, under: str | None, kind: str) -> int:
    if under is not None:
        return _under_point(region.heading(under), position, kind)
    if position == "start":
        return region.start + 1
    if isinstance(position, int):
        return _index_point(region.items, position, lambda: _insertion_point(region, "end", None, kind))
    return region.items[-1].end_line + 1 if region.items else region.start + 1


def _under_point(head: Heading, position: str | int, kind: str) -> int:
    if position == "start":
        return head.line + 1
    if isinstance(position, int):
        return _index_point(head.children, position, lambda: _under_point(head, "end", kind))
    if kind == "heading":
        return _section_last(head) + 1
    last = head.line  # after the heading's own items, before its first subheading
    for child in head.children:
        if isinstance(child, Heading):
            break
        last = child.end_line
    return last + 1


def _index_point(items: list[Item], index: int, at_end: Callable[[], int]) -> int:
    if index < 0:
        index += len(items)
    if not 0 <= index <= len(items):
        raise RegionError(f"position {index} is out of range (0..{len(items)})")
    return at_end() if index == len(items) else items[index].line


def add_item(
    doc: Document, region_name: str, item: Item, position: str | int = "end", under: str | None = None
) -> Item:
    """Insert ``item`` at 'start', 'end' or before the n-th item (of the region, or of heading ``under``).

    Returns the item as parsed back, with its id and line.
    """
    doc.require_well_formed()
    if position not in ("start", "end") and not isinstance(position, int):
        raise RegionError(f"position must be 'start', 'end' or an index, not {position!r}")
    region = doc.region(region_name)
    body = checked_lines(item)
    at = _insertion_point(region, position, under, item.kind)
    for block in region.items:
        if isinstance(block, CodeBlock) and not block.terminated and block.line < at:
            raise RegionError(f"the code fence at line {block.line} is never closed; close it before adding after it")
    return _insert(doc, region, at, body, item.kind)


def _insert(doc: Document, region: Region, at: int, body: list[str], kind: str) -> Item:
    above = _covering(region, at - 1) if at - 1 > region.start else None
    below = _covering(region, at) if at < region.end else None
    above_blank = at - 1 > region.start and parser.is_blank(doc.lines[at - 1])
    below_blank = at < region.end and parser.is_blank(doc.lines[at])
    before = [""] if not above_blank and _gap(above.kind if above else None, kind) else []
    after = [""] if not below_blank and _gap(kind, below.kind if below else None) else []
    nl = doc.newline
    doc.lines[at:at] = [line + nl for line in before + body + after]
    doc.reparse()
    return _covering(doc.region(region.name), at + len(before)) or _lost()


def _lost() -> NoReturn:
    raise RegionError("internal error: the edited item could not be read back")  # guarded by checked_lines


def update_item(doc: Document, region_name: str, item_id: str, **changes: Any) -> Item:
    """Merge ``changes`` (e.g. ``text=``, ``path=``, ``description=``) into an item and rewrite its lines."""
    doc.require_well_formed()
    region = doc.region(region_name)
    old = region.item(item_id)
    new = old.merged(changes)
    body = checked_lines(new)
    nl = doc.newline
    doc.lines[old.line : old.end_line + 1] = [line + nl for line in body]
    doc.reparse()
    return _covering(doc.region(region_name), old.line) or _lost()


def delete_item(doc: Document, region_name: str, item_id: str) -> Item:
    """Remove one item's lines (a heading alone: its items move up to the enclosing heading)."""
    doc.require_well_formed()
    region = doc.region(region_name)
    item = region.item(item_id)
    delete_lines(doc, region, item.line, item.end_line)
    return item


def delete_section(doc: Document, region_name: str, heading: str) -> Heading:
    """Remove a heading and everything nested under it (up to the next heading of its level or higher)."""
    doc.require_well_formed()
    region = doc.region(region_name)
    head = region.heading(heading)
    delete_lines(doc, region, head.line, _section_last(head))
    return head


def delete_lines(doc: Document, region: Region, first: int, last: int) -> None:
    """Delete body lines first..last, then tidy the blank lines left at the seam."""
    lines = doc.lines
    above = _covering(region, first - 1)
    below = _covering(region, last + 1)
    del lines[first : last + 1]
    end = region.end - (last - first + 1)
    top, bottom = first - 1 <= region.start, first >= end
    above_blank = not top and parser.is_blank(lines[first - 1])
    below_blank = not bottom and parser.is_blank(lines[first])
    if bottom:
        while first - 1 > region.start and parser.is_blank(lines[first - 1]):
            del lines[first - 1]
            first -= 1
    elif top:
        while first < end and parser.is_blank(lines[first]):
            del lines[first]
            end -= 1
    elif above_blank and below_blank:
        del lines[first]
    elif not above_blank and not below_blank and isinstance(above, Text) and isinstance(below, Text):
        lines.insert(first, doc.newline)  # two paragraphs must not merge into one
    doc.reparse()


def create_region(doc: Document, name: str, items: Iterable[Item] = ()) -> Region:
    """Append a new region at the end of the document (the place ``fix`` moves regions to)."""
    doc.require_well_formed()
    if not NAME.fullmatch(name):
        raise RegionError(f"region name '{name}' may only use letters, digits and '-'")
    if doc.find(name):
        raise RegionError(f"region '{name}' already exists (line {doc.region(name).start})")
    body = _body_lines(list(items))
    nl = doc.newline
    final_newline = doc.ends_with_newline
    lines = doc.lines
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += nl
    if lines and not parser.is_blank(lines[-1]):
        lines.append(nl)
    block = [_start_marker(name), *body, _end_marker(name)]
    lines.extend(line + nl for line in block)
    if not final_newline:
        lines[-1] = parser.strip_eol(lines[-1])
    doc.reparse()
    return doc.region(name)


def _body_lines(items: list[Item]) -> list[str]:
    body: list[str] = []
    previous: str | None = None
    for item in items:
        if _gap(previous, item.kind):
            body.append("")
        body.extend(checked_lines(item))
        previous = item.kind
    return body


def set_body(doc: Document, name: str, items: Iterable[Item]) -> Region:
    """Replace a region's whole content with ``items`` (what ``sync`` does to its own region)."""
    doc.require_well_formed()
    region = doc.region(name)
    nl = doc.newline
    doc.lines[region.start + 1 : region.end] = [line + nl for line in _body_lines(list(items))]
    doc.reparse()
    return doc.region(name)


def body_text(doc: Document, name: str) -> str:
    """A region's body as it stands in the file: the lines between its markers, line endings as "\n"."""
    region = doc.region(name)
    return "".join(parser.strip_eol(line) + "\n" for line in doc.lines[region.start + 1 : region.end])


def replace_body_text(doc: Document, name: str, text: str) -> Region:
    """Replace a region's body with raw ``text`` (``memlane regions edit``: what an editor returned).

    Refused, with the document untouched, when the text holds a region marker (regions do not nest, and a
    marker there would end this region early or start another) or when the result is not well formed.
    """
    doc.require_well_formed()
    region = doc.region(name)
    lines = parser.split_lines(text)
    for number, line in enumerate(lines, 1):
        if parser.marker(line):
            raise RegionError(
                f"line {number} of the new body is a region marker ({parser.strip_eol(line).strip()}): "
                "regions do not nest; edit the markers with `regions create`/`remove`"
            )
    nl = doc.newline
    before = list(doc.lines)
    doc.lines[region.start + 1 : region.end] = [parser.strip_eol(line) + nl for line in lines]
    doc.reparse()
    try:
        doc.require_well_formed()
    except RegionError:
        doc.lines[:] = before
        doc.reparse()
        raise
    return doc.region(name)


def remove_region(doc: Document, name: str) -> Region:
    """Delete a region with its markers; at the end of the file, the blank line before it goes too."""
    doc.require_well_formed()
    region = doc.region(name)
    lines = doc.lines
    final_newline = doc.ends_with_newline
    first = region.start
    at_end = region.end == len(lines) - 1
    if at_end and first > 0 and parser.is_blank(lines[first - 1]):
        first -= 1
    del lines[first : region.end + 1]
    if at_end and lines and not final_newline:
        lines[-1] = parser.strip_eol(lines[-1])
    doc.reparse()
    return region


def set_raw(doc: Document, name: str, text: str) -> Region:
    """Replace a region's content with ``text`` as written (the dashboard's raw editor). Text holding a region
    marker is refused: it would open or close a region inside this one."""
    doc.require_well_formed()
    region = doc.region(name)
    body = text.replace("\r\n", "\n").replace("\r", "\n").removesuffix("\n")
    lines = body.split("\n") if body else []
    for n, line in enumerate(lines):
        if parser.marker(line):
            raise RegionError(f"line {n + 1} of the new content is a region marker; edit markers in the file itself")
    nl = doc.newline
    doc.lines[region.start + 1 : region.end] = [line + nl for line in lines]
    doc.reparse()
    return doc.region(name)


def raw_body(doc: Document, name: str) -> str:
    """A region's content as written, without its markers (what the raw editor shows)."""
    region = doc.region(name)
    return "".join(doc.lines[region.start + 1 : region.end])
