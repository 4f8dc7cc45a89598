"""Managed regions of CLAUDE.md: ``<!-- MEMORY_START: name -->`` … ``<!-- MEMORY_END: name -->``.

from memlane.regions import RegionFile, add_item, make_item, validate, fix

rf = RegionFile.open("CLAUDE.md")
add_item(rf.doc, "references", make_item("direct-ref", path="@context/memory/index.md"))
for finding in validate(rf.doc, root="."):
    print(finding.line, finding.code, finding.message)
rf.save()  # atomic; refuses if the file changed on disk since it was opened
"""

from __future__ import annotations

from memlane.regions.document import Document, Region, parse
from memlane.regions.edit import (
    add_item,
    create_region,
    delete_item,
    delete_section,
    remove_region,
    set_body,
    update_item,
)
from memlane.regions.fileio import MAX_BYTES, RegionFile
from memlane.regions.fix import FixResult, fix, unified_diff
from memlane.regions.model import (
    KINDS,
    CodeBlock,
    DirectRef,
    Finding,
    Heading,
    IndirectRef,
    Item,
    RegionError,
    Text,
    make_item,
)
from memlane.regions.validate import validate

__all__ = [
    "KINDS",
    "MAX_BYTES",
    "CodeBlock",
    "DirectRef",
    "Document",
    "Finding",
    "FixResult",
    "Heading",
    "IndirectRef",
    "Item",
    "Region",
    "RegionError",
    "RegionFile",
    "Text",
    "add_item",
    "create_region",
    "delete_item",
    "delete_section",
    "fix",
    "make_item",
    "parse",
    "remove_region",
    "set_body",
    "unified_diff",
    "update_item",
    "validate",
]
