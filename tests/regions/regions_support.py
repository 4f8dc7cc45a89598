"""Shared bits for the regions tests: the spec's examples and small helpers."""

from __future__ import annotations

from pathlib import Path

from memlane.regions import Document, parse

SECTION = """<!-- MEMORY_START: references -->
## References

@context/memory/index.md
@context/usage/cli-reference.md
<!-- MEMORY_END: references -->
"""

CODE = """<!-- MEMORY_START: tools -->
## Development Tools

```bash
npm run dev
npm run build
```

`@context/troubleshooting/debug-guide.md` - 디버깅 시 참조하세요.
<!-- MEMORY_END: tools -->
"""

MIXED = """<!-- MEMORY_START: setup -->
## Development Setup

@context/setup/prerequisites.md

```bash
npm install
npm run dev
```

`@context/troubleshooting/common-issues.md` - 문제 발생 시 참조하세요.
<!-- MEMORY_END: setup -->
"""

DO_SECTIONS = """<!-- MEMORY_START: references -->
## Core References
@context/architecture/overview.md

## Optional Resources
`@context/advanced/optimization.md` - 성능 최적화 시 참조
<!-- MEMORY_END: references -->
"""

SPEC_FILES = (
    "memory/index.md",
    "usage/cli-reference.md",
    "troubleshooting/debug-guide.md",
    "setup/prerequisites.md",
    "troubleshooting/common-issues.md",
    "architecture/overview.md",
    "advanced/optimization.md",
)


def context_files(root: Path, *names: str) -> None:
    """Create files under the default context root (docs/claude-context)."""
    for name in names or SPEC_FILES:
        path = root / "docs" / "claude-context" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# context\n", encoding="utf-8")


def kinds(doc: Document, region: str) -> list[str]:
    return [i.kind for i in doc.region(region).items]


def wrap(body: str, name: str = "r") -> str:
    return f"<!-- MEMORY_START: {name} -->\n{body}<!-- MEMORY_END: {name} -->\n"


def doc_of(body: str, name: str = "r") -> Document:
    return parse(wrap(body, name))
