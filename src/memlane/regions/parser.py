"""Reading lines into regions and items, following the spec's priority rules.

Marker lines pair up flat (no nesting); inside a region each line is, in order of priority, a
heading, a direct reference, an indirect reference, the start of a fenced code block, or text.
Consecutive text lines form one text item; blank lines separate items and are not items.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass

from memlane.regions.model import (
    NAME,
    CodeBlock,
    DirectRef,
    Finding,
    Heading,
    IndirectRef,
    Item,
    Text,
)

_LINES = re.compile(r"[^\n]*\n|[^\n]+$")
MARKER = re.compile(r"^\s*<!--\s*MEMORY_(START|END)\s*:\s*(.*?)\s*-->\s*$")
HEADING = re.compile(r"^(#{1,6})\s+(.+)$")
DIRECT = re.compile(r"^\s*(@[^\s`]+)\s*$")
INDIRECT = re.compile(r"^\s*`(@[^`\s]+)`\s*(?:[-–—]\s*(.*?))?\s*$")
FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*(.*)$")
FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*$")


def split_lines(text: str) -> list[str]:
    """Lines with their endings kept, so joining them gives back ``text`` exactly."""
    return _LINES.findall(text)


def strip_eol(line: str) -> str:
    if line.endswith("\n"):
        line = line[:-1]
        return line[:-1] if line.endswith("\r") else line
    return line


def is_blank(line: str) -> bool:
    return not line.strip()


def marker(line: str) -> tuple[str, str] | None:
    """('START'|'END', name) for a marker line, whatever the name looks like."""
    m = MARKER.match(strip_eol(line))
    return (m.group(1), m.group(2)) if m else None


def _pathlike(target: str) -> bool:
    # '@someone' on its own line is a mention, not an import: ask for something that looks like a path.
    return target.startswith(("~/", "/", "./", "../")) or "/" in target or "." in target.strip(".")


def _fence_open(text: str) -> tuple[str, str] | None:
    m = FENCE_OPEN.match(text)
    if not m:
        return None
    fence, info = m.group(1), m.group(2).strip()
    if fence[0] == "`" and "`" in info:
        return None  # CommonMark: a backtick fence's info string has no backticks (that is inline code)
    return fence, info.split()[0] if info else ""


def _fence_closes(fence: str, text: str) -> bool:
    m = FENCE_CLOSE.match(text)
    return bool(m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence))


@dataclass
class Span:
    """A paired START/END: the marker lines' indexes."""

    name: str
    start: int
    end: int


def scan(lines: list[str]) -> tuple[list[Span], list[Finding]]:
    """Pair markers into regions and report structure problems.

    Outside regions, markers inside fenced code blocks are examples, not regions, so they are skipped.
    Inside a region the END marker always wins: a fence left open there ends at the region's end.
    """
    spans: list[Span] = []
    issues: list[Finding] = []
    stack: list[tuple[str, int]] = []
    fence: tuple[str, int] | None = None
    for i, line in enumerate(lines):
        text = strip_eol(line)
        if not stack:
            if fence is not None:
                if _fence_closes(fence[0], text):
                    fence = None
                continue
            opened = _fence_open(text)
            if opened:
                fence = (opened[0], i)
                continue
        found = marker(line)
        if found is None:
            continue
        which, name = found
        if not NAME.fullmatch(name):
            issues.append(_structure(i, "bad-name", f"region name '{name}' may only use letters, digits and '-'"))
        if which == "START":
            if stack:
                outer, at = stack[-1]
                issues.append(
                    _structure(i, "nested-region", f"START '{name}' inside region '{outer}' (line {at}); no nesting")
                )
            stack.append((name, i))
        else:
            _close(stack, name, i, spans, issues)
    for name, at in stack:
        issues.append(_structure(at, "unclosed-region", f"START '{name}' has no matching END"))
    if fence is not None:
        issues.append(
            Finding(
                fence[1], "warning", "unterminated-fence", "code fence is never closed; markers after it are ignored"
            )
        )
    seen: dict[str, int] = {}
    for span in spans:
        if span.name in seen:
            issues.append(
                _structure(
                    span.start, "duplicate-region", f"region '{span.name}' already exists (line {seen[span.name]})"
                )
            )
        seen.setdefault(span.name, span.start)
    return spans, sorted(issues, key=lambda f: f.line)


def _close(stack: list[tuple[str, int]], name: str, i: int, spans: list[Span], issues: list[Finding]) -> None:
    if not stack:
        issues.append(_structure(i, "unpaired-end", f"END '{name}' has no START"))
        return
    names = [n for n, _ in stack]
    if name not in names:
        top, at = stack.pop()
        issues.append(_structure(i, "mismatched-end", f"END '{name}' does not match START '{top}' (line {at})"))
        return
    while stack[-1][0] != name:
        inner, at = stack.pop()
        issues.append(_structure(at, "unclosed-region", f"START '{inner}' has no matching END"))
    _, start = stack.pop()
    if not stack:
        spans.append(Span(name, start, i))


def _structure(line: int, code: str, message: str) -> Finding:
    return Finding(line, "error", code, message)


def parse_items(lines: list[str], first: int, stop: int) -> list[Item]:
    """Items of the body ``lines[first:stop]``; their line numbers are file lines."""
    items: list[Item] = []
    i = first
    while i < stop:
        text = strip_eol(lines[i])
        if is_blank(text):
            i += 1
            continue
        item = _line_item(text, i)
        if item is None:
            item, i = _code_or_text(lines, i, stop)
        else:
            i += 1
        items.append(item)
    return items


def _line_item(text: str, i: int) -> Item | None:
    m = HEADING.match(text)
    if m:
        title = re.sub(r"\s+#+\s*$", "", m.group(2)).strip()  # '## Title ##' closes with hashes
        if title and title.strip("#"):
            return Heading(line=i, end_line=i, raw=text, level=len(m.group(1)), text=title)
    m = DIRECT.match(text)
    if m and _pathlike(m.group(1)[1:]):
        return DirectRef(line=i, end_line=i, raw=text, path=m.group(1))
    m = INDIRECT.match(text)
    if m and _pathlike(m.group(1)[1:]):
        return IndirectRef(line=i, end_line=i, raw=text, path=m.group(1), description=(m.group(2) or "").strip())
    return None


def _code_or_text(lines: list[str], i: int, stop: int) -> tuple[Item, int]:
    first = strip_eol(lines[i])
    opened = _fence_open(first)
    if opened:
        fence, language = opened
        j = i + 1
        while j < stop and not _fence_closes(fence, strip_eol(lines[j])):
            j += 1
        closed = j < stop
        end = j if closed else stop - 1
        body = [strip_eol(x) for x in lines[i + 1 : j]]
        raw = "\n".join(strip_eol(x) for x in lines[i : end + 1])
        block = CodeBlock(
            line=i, end_line=end, raw=raw, language=language, content="\n".join(body), fence=fence, terminated=closed
        )
        return block, end + 1
    j = i + 1
    while j < stop:
        nxt = strip_eol(lines[j])
        if is_blank(nxt) or _line_item(nxt, j) is not None or _fence_open(nxt):
            break
        j += 1
    chunk = [strip_eol(x) for x in lines[i:j]]
    return Text(line=i, end_line=j - 1, raw="\n".join(chunk), content="\n".join(chunk)), j


def assign_ids(region: str, items: list[Item]) -> None:
    """Ids from content, not position, so edits elsewhere in the file keep them.

    hash(region, kind, normalised content, n-th equal item): two identical lines in one region still
    get distinct ids, and an item keeps its id until its own content (or an identical twin before it) changes.
    """
    seen: Counter[tuple[str, str]] = Counter()
    for item in items:
        key = (item.kind, item.key())
        digest = hashlib.sha1(f"{region}\0{key[0]}\0{key[1]}\0{seen[key]}".encode()).hexdigest()[:8]
        seen[key] += 1
        item.id = f"{item.kind}-{digest}"


def nest(items: list[Item]) -> list[Item]:
    """Hang items under headings by level (h3 under the h2 before it); returns the top level."""
    top: list[Item] = []
    stack: list[Heading] = []
    for item in items:
        item.children = []
        if isinstance(item, Heading):
            while stack and stack[-1].level >= item.level:
                stack.pop()
        owner = stack[-1] if stack else None
        item.parent = owner.id if owner else None
        (owner.children if owner else top).append(item)
        if isinstance(item, Heading):
            stack.append(item)
    return top


def region_type(items: list[Item]) -> str:
    """section (references), code (commands + optional indirect refs) or mixed (direct refs + code/indirect)."""
    kinds = {item.kind for item in items}
    direct, code, indirect = "direct-ref" in kinds, "code-block" in kinds, "indirect-ref" in kinds
    if direct and (code or indirect):
        return "mixed"
    if code:
        return "code"
    return "section"
