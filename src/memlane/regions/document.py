"""A parsed CLAUDE.md: its lines (endings kept) and the regions and items read from them.

The lines are the source of truth and ``render()`` only joins them, so an untouched document is
written back byte for byte (CRLF or LF, trailing newline or not, BOM, blank lines).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memlane.regions import parser
from memlane.regions.model import Finding, Heading, Item, RegionError


@dataclass
class Region:
    name: str
    start: int  # the START marker's line (0-based)
    end: int  # the END marker's line
    items: list[Item] = field(default_factory=list)
    tree: list[Item] = field(default_factory=list)

    @property
    def type(self) -> str:
        return parser.region_type(self.items)

    def item(self, ref: str) -> Item:
        """An item by id or unique id prefix."""
        exact = [i for i in self.items if i.id == ref]
        found = exact or [i for i in self.items if ref and i.id.startswith(ref)]
        if len(found) == 1:
            return found[0]
        if found:
            raise RegionError(f"'{ref}' matches {len(found)} items in region '{self.name}'; give more of the id")
        raise RegionError(f"no item '{ref}' in region '{self.name}' (see `memlane regions show {self.name}`)")

    def heading(self, ref: str) -> Heading:
        """A heading by id (or prefix) or by its exact text."""
        by_text = [i for i in self.items if isinstance(i, Heading) and i.text == ref]
        if len(by_text) == 1:
            return by_text[0]
        if by_text:
            raise RegionError(f"{len(by_text)} headings read '{ref}' in region '{self.name}'; give the id instead")
        found = self.item(ref)
        if not isinstance(found, Heading):
            raise RegionError(f"item '{found.id}' is a {found.kind}, not a heading")
        return found

    def to_dict(self, tree: bool = True) -> dict[str, Any]:
        items = self.tree if tree else self.items
        return {
            "name": self.name,
            "type": self.type,
            "start_line": self.start,
            "end_line": self.end,
            "items": [i.to_dict(tree=tree) for i in items],
        }


class Document:
    def __init__(self, text: str) -> None:
        self.bom = text.startswith("\ufeff")
        self.lines = parser.split_lines(text[1:] if self.bom else text)
        self.reparse()

    def reparse(self) -> None:
        spans, self.issues = parser.scan(self.lines)
        self.regions: list[Region] = []
        for span in spans:
            items = parser.parse_items(self.lines, span.start + 1, span.end)
            parser.assign_ids(span.name, items)
            self.regions.append(Region(span.name, span.start, span.end, items, parser.nest(items)))

    def render(self) -> str:
        return ("\ufeff" if self.bom else "") + "".join(self.lines)

    @property
    def newline(self) -> str:
        """The line ending new lines get: the file's majority, LF for a new file."""
        crlf = sum(1 for line in self.lines if line.endswith("\r\n"))
        lf = sum(1 for line in self.lines if line.endswith("\n")) - crlf
        return "\r\n" if crlf > lf else "\n"

    @property
    def ends_with_newline(self) -> bool:
        return not self.lines or self.lines[-1].endswith("\n")

    def names(self) -> list[str]:
        return [r.name for r in self.regions]

    def region(self, name: str) -> Region:
        for region in self.regions:
            if region.name == name:
                return region
        known = ", ".join(self.names()) or "none"
        raise RegionError(f"no region '{name}' (regions: {known})")

    def find(self, name: str) -> Region | None:
        return next((r for r in self.regions if r.name == name), None)

    def require_well_formed(self) -> None:
        """Edits on a file with broken markers could land in the wrong place: refuse them."""
        errors = [f for f in self.issues if f.severity == "error"]
        if errors:
            first = errors[0]
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            raise RegionError(
                f"the markers need fixing by hand first: line {first.line}: {first.message}{more} "
                "(see `memlane regions validate`)"
            )

    def outside(self) -> list[str]:
        """The lines that belong to no region, in order (what edits must never change)."""
        inside = {i for r in self.regions for i in range(r.start, r.end + 1)}
        return [line for i, line in enumerate(self.lines) if i not in inside]

    def structure(self) -> list[Finding]:
        return list(self.issues)

    def to_dict(self, tree: bool = True) -> dict[str, Any]:
        return {"regions": [r.to_dict(tree) for r in self.regions], "issues": [f.to_dict() for f in self.issues]}


def parse(text: str) -> Document:
    """Parse CLAUDE.md text; ``parse(text).render() == text`` always."""
    return Document(text)
