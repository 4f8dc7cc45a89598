"""Auto-fix, in the spec's order: drop duplicate direct references (the first stays), drop direct
references to missing files, then move every managed region to the end of the document in order.

Both removals are decided on the file as read, so every action reports a line of the original file;
the result is the same as running the steps one after the other. ``fix`` is idempotent.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path

from memlane.config import RegionsConfig
from memlane.regions import edit, parser
from memlane.regions.document import Document
from memlane.regions.model import Finding
from memlane.regions.validate import _placement, duplicate_refs, missing_refs


@dataclass
class FixResult:
    before: str
    after: str
    actions: list[Finding] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self, name: str = "CLAUDE.md") -> str:
        return unified_diff(self.before, self.after, name)


def unified_diff(before: str, after: str, name: str = "CLAUDE.md") -> str:
    out: list[str] = []
    for line in difflib.unified_diff(
        parser.split_lines(before), parser.split_lines(after), fromfile=f"a/{name}", tofile=f"b/{name}"
    ):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def fix(
    doc: Document,
    root: str | os.PathLike[str],
    cfg: RegionsConfig | None = None,
    base: str | os.PathLike[str] | None = None,
) -> FixResult:
    """Repair ``doc`` in place; the result holds the text before and after and what was done."""
    doc.require_well_formed()
    cfg = cfg or RegionsConfig()
    before = doc.render()
    actions = remove_references(doc, Path(root), cfg, Path(base) if base is not None else None)
    actions += reorganize_managed_regions(doc)
    return FixResult(before, doc.render(), actions)


def remove_references(doc: Document, root: Path, cfg: RegionsConfig, base: Path | None = None) -> list[Finding]:
    """Steps 1 and 2: duplicates first (keeping the first), then references to missing files."""
    duplicates = duplicate_refs(doc)
    dup_lines = {f.line for f in duplicates}
    missing = [f for f in missing_refs(doc, root, cfg, base) if f.line not in dup_lines]
    actions = [_done(f, "removed duplicate") for f in duplicates] + [_done(f, "removed missing") for f in missing]
    for finding in sorted(duplicates + missing, key=lambda f: f.line, reverse=True):
        region = doc.region(finding.region or "")
        item = next(i for i in region.items if i.line == finding.line)
        edit.delete_lines(doc, region, item.line, item.end_line)  # bottom-up: earlier lines keep their numbers
    return actions


def _done(finding: Finding, verb: str) -> Finding:
    return Finding(finding.line, "info", finding.code, f"{verb}: {finding.message}", finding.region, finding.item, True)


def reorganize_managed_regions(doc: Document) -> list[Finding]:
    """Step 3: regions to the end, in their order, one blank line apart; a no-op when already there."""
    placement = _placement(doc)
    if not placement:
        return []
    nl = doc.newline
    final_newline = doc.ends_with_newline
    blocks = [[_terminated(line, nl) for line in doc.lines[r.start : r.end + 1]] for r in doc.regions]
    text = _without_regions(doc)
    while text and parser.is_blank(text[-1]):
        text.pop()
    lines = [_terminated(line, nl) for line in text]
    for block in blocks:
        if lines:
            lines.append(nl)
        lines.extend(block)
    if not final_newline:
        lines[-1] = parser.strip_eol(lines[-1])
    doc.lines[:] = lines
    doc.reparse()
    names = ", ".join(r.name for r in doc.regions)
    message = f"moved {len(blocks)} region(s) to the end of the document: {names}"
    return [Finding(placement[0].line, "info", "region-not-at-end", message, None, None, True)]


def _terminated(line: str, nl: str) -> str:
    return line if line.endswith("\n") else line + nl


def _without_regions(doc: Document) -> list[str]:
    """The outside lines; where a region leaves blank lines on both sides, one of them goes."""
    out: list[str] = []
    skip_blank = False
    starts = {r.start: r for r in doc.regions}
    i = 0
    while i < len(doc.lines):
        region = starts.get(i)
        if region is not None:
            skip_blank = not out or parser.is_blank(out[-1])
            i = region.end + 1
            continue
        line = doc.lines[i]
        if not (skip_blank and parser.is_blank(line)):
            out.append(line)
        skip_blank = False
        i += 1
    return out
