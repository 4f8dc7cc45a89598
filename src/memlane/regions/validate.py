"""Checks on a document: the spec's three rule sets (duplicates, existence, structure) and lints.

Codes and severities:

=========================  ========  ===================================================
unclosed-region            error     START without END
unpaired-end               error     END without START
mismatched-end             error     END whose name is not the open region's
nested-region              error     START inside another region
bad-name                   error     name other than letters, digits and '-'
duplicate-region           error     two regions with one name
duplicate-ref              warning   direct reference already listed (any region); fixable
missing-ref                error     direct reference to a file that does not exist; fixable
missing-description        error     indirect reference without '- description'
ref-with-description       warning   text right under a direct reference (they need none)
unterminated-fence         warning   code fence that is never closed
region-not-at-end          info      text after a managed region; fixable (moved to the end)
name-style                 info      region name with capitals (the convention is lowercase-with-hyphens)
=========================  ========  ===================================================
"""

from __future__ import annotations

import os
from pathlib import Path

from memlane.config import RegionsConfig
from memlane.regions.document import Document
from memlane.regions.model import CodeBlock, DirectRef, Finding, IndirectRef, Text, ref_key

CONTEXT_PREFIX = "context/"


def candidates(path: str, root: Path, cfg: RegionsConfig, base: Path | None = None) -> list[Path]:
    """Where a reference may point, in order.

    '@context/x' is the spec's alias for the context root (docs/claude-context/x); other paths are
    relative to the file that imports them, as Claude Code reads them; '~/' is the home folder. With
    ``project_root_fallback`` the path as written is also tried against the project root.
    """
    bare = path.lstrip("@")
    if bare.startswith("~/"):
        return [Path(os.path.expanduser(bare))]
    if os.path.isabs(bare):
        return [Path(bare)]
    out: list[Path] = []
    if bare.startswith(CONTEXT_PREFIX):
        context_root = Path(os.path.expanduser(cfg.context_root))
        if not context_root.is_absolute():
            context_root = root / context_root
        out.append(context_root / bare[len(CONTEXT_PREFIX) :])
    else:
        out.append((base or root) / bare)
    if cfg.project_root_fallback:
        out.append(root / bare)
    return list(dict.fromkeys(out))


def exists(path: str, root: Path, cfg: RegionsConfig, base: Path | None = None) -> bool:
    return any(p.is_file() for p in candidates(path, root, cfg, base))


def validate(
    doc: Document,
    root: str | os.PathLike[str],
    cfg: RegionsConfig | None = None,
    base: str | os.PathLike[str] | None = None,
) -> list[Finding]:
    """Every finding for ``doc``, sorted by line. ``root`` is the project root; ``base`` the file's folder."""
    cfg = cfg or RegionsConfig()
    root_p = Path(root)
    base_p = Path(base) if base is not None else root_p
    findings = doc.structure()
    findings += duplicate_refs(doc)
    findings += missing_refs(doc, root_p, cfg, base_p)
    findings += _item_lints(doc)
    findings += _placement(doc)
    findings += _name_style(doc)
    return sorted(findings, key=lambda f: (f.line, f.code))


def duplicate_refs(doc: Document) -> list[Finding]:
    """Direct references seen before, in any region (indirect ones may repeat)."""
    first: dict[str, int] = {}
    out: list[Finding] = []
    for region in doc.regions:
        for item in region.items:
            if not isinstance(item, DirectRef):
                continue
            key = ref_key(item.path)
            if key in first:
                message = f"{item.path} is already referenced at line {first[key]}"
                out.append(Finding(item.line, "warning", "duplicate-ref", message, region.name, item.id, True))
            else:
                first[key] = item.line
    return out


def missing_refs(doc: Document, root: Path, cfg: RegionsConfig, base: Path | None = None) -> list[Finding]:
    out: list[Finding] = []
    for region in doc.regions:
        for item in region.items:
            if isinstance(item, DirectRef) and not exists(item.path, root, cfg, base):
                tried = ", ".join(_shown(p, root) for p in candidates(item.path, root, cfg, base))
                message = f"{item.path}: no such file (looked for {tried})"
                out.append(Finding(item.line, "error", "missing-ref", message, region.name, item.id, True))
    return out


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _item_lints(doc: Document) -> list[Finding]:
    out: list[Finding] = []
    for region in doc.regions:
        previous = None
        for item in region.items:
            if isinstance(item, IndirectRef) and not item.description:
                message = f"`{item.path}` needs a description: `{item.path}` - when to read it"
                out.append(Finding(item.line, "error", "missing-description", message, region.name, item.id))
            if isinstance(item, CodeBlock) and not item.terminated:
                message = f"code fence {item.fence} is never closed; it runs to the end of region '{region.name}'"
                out.append(Finding(item.line, "warning", "unterminated-fence", message, region.name, item.id))
            if isinstance(item, Text) and isinstance(previous, DirectRef) and previous.end_line + 1 == item.line:
                message = (
                    f"text right under {previous.path}: direct references take no description "
                    "(use an indirect reference `@path` - description)"
                )
                out.append(Finding(item.line, "warning", "ref-with-description", message, region.name, item.id))
            previous = item
    return out


def _placement(doc: Document) -> list[Finding]:
    """The spec keeps managed regions at the end of the document; say so when text follows one."""
    if not doc.regions or any(f.severity == "error" for f in doc.issues):
        return []
    first = doc.regions[0]
    inside = {i for r in doc.regions for i in range(r.start, r.end + 1)}
    for i in range(first.start, len(doc.lines)):
        if i not in inside and doc.lines[i].strip():
            message = f"line {i} is outside any region, after region '{first.name}': `fix` moves regions to the end"
            return [Finding(first.start, "info", "region-not-at-end", message, first.name, None, True)]
    return []


def _name_style(doc: Document) -> list[Finding]:
    """The spec's naming advice: lowercase words joined by hyphens (``references``, ``dev-tools``)."""
    return [
        Finding(
            r.start, "info", "name-style", f"region '{r.name}': prefer lowercase names like '{r.name.lower()}'", r.name
        )
        for r in doc.regions
        if r.name != r.name.lower()
    ]
