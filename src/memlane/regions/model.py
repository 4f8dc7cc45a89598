"""What a managed region holds: the item kinds of the spec, findings, and the one error type.

Items are views over a document's lines, never the source of truth: every edit rewrites lines and
parses again, so what the library reports is always what Claude Code will read. Line numbers are
0-based over the whole file, as in the spec's data model.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from memlane.errors import MemlaneError

NAME = re.compile(r"[A-Za-z0-9-]+")
KINDS = ("heading", "direct-ref", "indirect-ref", "code-block", "text")


class RegionError(MemlaneError, ValueError):
    """A user-facing failure (bad input, unknown region or item, conflicting edit); one line."""


@dataclass
class Item:
    """One entry of a region. ``line``/``end_line`` are inclusive 0-based file lines."""

    kind: ClassVar[str] = ""
    EDITABLE: ClassVar[tuple[str, ...]] = ()

    id: str = ""
    line: int = -1
    end_line: int = -1
    raw: str = ""
    parent: str | None = None
    children: list[Item] = field(default_factory=list, repr=False, compare=False)

    def render(self) -> list[str]:
        """The item's lines, without line endings."""
        raise NotImplementedError

    def key(self) -> str:
        """Normalised content: equal keys mean the same item, whatever its position or spacing."""
        raise NotImplementedError

    def fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.EDITABLE}

    def to_dict(self, tree: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "type": self.kind, "line": self.line, "end_line": self.end_line}
        out.update(self.fields())
        out["raw"] = self.raw
        out["parent"] = self.parent
        if tree and isinstance(self, Heading):
            out["children"] = [c.to_dict(tree=True) for c in self.children]
        return out

    def merged(self, changes: dict[str, Any]) -> Item:
        """A copy with ``changes`` applied; unknown fields are a RegionError naming them."""
        unknown = sorted(set(changes) - set(self.EDITABLE))
        if unknown:
            raise RegionError(f"a {self.kind} has no field {', '.join(unknown)} (fields: {', '.join(self.EDITABLE)})")
        return normalised(dataclasses.replace(self, **changes))


def _squash(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Heading(Item):
    kind: ClassVar[str] = "heading"
    EDITABLE: ClassVar[tuple[str, ...]] = ("level", "text")

    level: int = 2
    text: str = ""

    def render(self) -> list[str]:
        return [f"{'#' * self.level} {self.text}"]

    def key(self) -> str:
        return f"{self.level}:{_squash(self.text)}"


@dataclass
class DirectRef(Item):
    kind: ClassVar[str] = "direct-ref"
    EDITABLE: ClassVar[tuple[str, ...]] = ("path",)

    path: str = ""  # with its '@', as written: '@context/setup/prerequisites.md'

    def render(self) -> list[str]:
        return [self.path]

    def key(self) -> str:
        return ref_key(self.path)


@dataclass
class IndirectRef(Item):
    kind: ClassVar[str] = "indirect-ref"
    EDITABLE: ClassVar[tuple[str, ...]] = ("path", "description")

    path: str = ""
    description: str = ""

    def render(self) -> list[str]:
        return [f"`{self.path}` - {self.description}" if self.description else f"`{self.path}`"]

    def key(self) -> str:
        return f"{ref_key(self.path)}:{_squash(self.description)}"


@dataclass
class CodeBlock(Item):
    kind: ClassVar[str] = "code-block"
    EDITABLE: ClassVar[tuple[str, ...]] = ("language", "content")

    language: str = ""
    content: str = ""
    fence: str = "```"
    terminated: bool = True

    def render(self) -> list[str]:
        body = self.content.split("\n") if self.content else []
        fence = self.fence
        # A fence must be longer than any run of its character inside the block, or the block ends early.
        longest = max((len(m.group()) for m in re.finditer(re.escape(fence[0]) + "{3,}", self.content)), default=0)
        if longest >= len(fence):
            fence = fence[0] * (longest + 1)
        return [f"{fence}{self.language}", *body, fence]

    def key(self) -> str:
        return f"{self.language}:{self.content}"

    def to_dict(self, tree: bool = False) -> dict[str, Any]:
        out = super().to_dict(tree)
        out["terminated"] = self.terminated
        return out


@dataclass
class Text(Item):
    kind: ClassVar[str] = "text"
    EDITABLE: ClassVar[tuple[str, ...]] = ("content",)

    content: str = ""

    def render(self) -> list[str]:
        return self.content.split("\n")

    def key(self) -> str:
        return _squash(self.content)


ITEM_TYPES: dict[str, type[Item]] = {cls.kind: cls for cls in (Heading, DirectRef, IndirectRef, CodeBlock, Text)}


def ref_key(path: str) -> str:
    """References that name the same file compare equal: '@context/./a.md' is '@context/a.md'."""
    import posixpath

    bare = path.lstrip("@")
    return posixpath.normpath(bare) if bare else bare


def normalised(item: Item) -> Item:
    """Tidy user input: '@' on paths, no stray whitespace or newlines where one line is expected."""
    if isinstance(item, DirectRef | IndirectRef):
        path = item.path.strip()
        item.path = path if path.startswith("@") or not path else f"@{path}"
    if isinstance(item, IndirectRef):
        item.description = item.description.strip()
    if isinstance(item, Heading):
        item.text = item.text.strip()
    if isinstance(item, CodeBlock):
        item.language = item.language.strip()
        item.content = item.content.replace("\r\n", "\n").removesuffix("\n")
    if isinstance(item, Text):
        item.content = item.content.replace("\r\n", "\n").strip("\n")
    return item


def make_item(kind: str, **fields: Any) -> Item:
    """A new item from its type name and fields, e.g. ``make_item('direct-ref', path='@context/a.md')``."""
    cls = ITEM_TYPES.get(kind)
    if cls is None:
        raise RegionError(f"unknown item type '{kind}' (one of: {', '.join(KINDS)})")
    unknown = sorted(set(fields) - set(cls.EDITABLE))
    if unknown:
        raise RegionError(f"a {kind} has no field {', '.join(unknown)} (fields: {', '.join(cls.EDITABLE)})")
    return normalised(cls(**fields))


SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One validation result. ``line`` is 0-based; ``fixable`` means ``fix`` repairs it."""

    line: int
    severity: str
    code: str
    message: str
    region: str | None = None
    item: str | None = None
    fixable: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
