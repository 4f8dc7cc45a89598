"""``memlane privacy scan``: find secrets that an existing store kept, and redact them in place.

Rules improve; stores captured under older rules keep what those let through. ``scan`` runs the
current rules (``memlane.privacy.detect``) over every event's content and metadata and reports each
finding with a masked preview — never the secret — plus whether the full-text index still holds it
and how many vectors were made from it. ``redact`` rewrites those events with the current filter
(events + FTS in one transaction, via the store), drops their vectors and re-queues them, so the
embedding worker re-embeds from the redacted text.
"""

from __future__ import annotations

import re
from typing import Any

from memlane import privacy
from memlane.config import PrivacyConfig
from memlane.memory import Memory
from memlane.store.db import Event

_WORD = re.compile(r"[^\W_]{3,}")  # the unicode61 tokenizer's words (tokens shorter than 3 prove little)
PREVIEW = 100


class Finding:
    __slots__ = ("cite", "event_id", "fts", "kind", "length", "preview", "type", "vectors", "where")

    def __init__(self, event: Event, where: str, kind: str, length: int, preview: str) -> None:
        self.event_id = event.id
        self.cite = event.cite
        self.type = event.type
        self.where = where
        self.kind = kind
        self.length = length
        self.preview = preview
        self.fts = False
        self.vectors = 0

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


class ScanReport:
    def __init__(self) -> None:
        self.events_scanned = 0
        self.findings: list[Finding] = []

    @property
    def event_ids(self) -> list[str]:
        return list(dict.fromkeys(f.event_id for f in self.findings))

    def as_dict(self) -> dict[str, Any]:
        return {
            "events_scanned": self.events_scanned,
            "events_affected": len(self.event_ids),
            "findings": [f.as_dict() for f in self.findings],
        }


def _mask(text: str, secrets: list[str], marker: str) -> str:
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, marker)
    return text


def _preview(content: str, secret: str, all_secrets: list[str], cfg: PrivacyConfig) -> str:
    """The secret's line with every secret of the event masked, cut to ``PREVIEW`` characters around it."""
    at = max(content.find(secret), 0)
    start = content.rfind("\n", 0, max(at, 0)) + 1
    end = content.find("\n", at + len(secret))
    line = content[start : end if end >= 0 else len(content)]
    masked = _mask(line, all_secrets, cfg.secret_marker)
    masked = privacy.filter_text(masked, cfg).text  # belt and braces: the preview is printed
    pos = max(0, masked.find(cfg.secret_marker) - PREVIEW // 2)
    cut = masked[pos : pos + PREVIEW]
    return ("…" if pos else "") + cut + ("…" if pos + PREVIEW < len(masked) else "")


def _strings(value: Any, path: str = "") -> list[tuple[str, str, str]]:
    """(path, key, string) of every string inside JSON-like metadata."""
    out: list[tuple[str, str, str]] = []
    if isinstance(value, str):
        out.append((path, path.rsplit(".", 1)[-1], value))
    elif isinstance(value, dict):
        for k, v in value.items():
            out.extend(_strings(v, f"{path}.{k}" if path else str(k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_strings(v, f"{path}[{i}]"))
    return out


def _event_findings(event: Event, cfg: PrivacyConfig) -> list[tuple[Finding, str]]:
    """Findings of one event, each with the secret (kept in memory only, to check the index)."""
    found: list[tuple[Finding, str]] = []
    hits = privacy.detect(event.content, cfg)
    secrets = [s for _, s in hits]
    for kind, secret in hits:
        preview = _preview(event.content, secret, secrets, cfg)
        found.append((Finding(event, "content", kind, len(secret), preview), secret))
    for path, key, value in _strings({k: v for k, v in event.metadata.items() if k != "privacy"}):
        if privacy.is_secret_key(key) and privacy.filter_value({key: value}, cfg)[0][key] != value:
            found.append((Finding(event, f"metadata.{path}", f"{key} field", len(value), cfg.secret_marker), value))
            continue
        for kind, secret in privacy.detect(value, cfg):
            preview = _preview(value, secret, [secret], cfg)
            found.append((Finding(event, f"metadata.{path}", kind, len(secret), preview), secret))
    return found


def scan(mem: Memory) -> ScanReport:
    """Every event checked against the current rules; the FTS index and vectors checked for the hits."""
    cfg = mem.config.privacy
    report = ScanReport()
    for event in mem.store.iter_events():
        report.events_scanned += 1
        for finding, secret in _event_findings(event, cfg):
            if finding.where == "content":
                finding.fts = mem.store.fts_holds(event.seq, _WORD.findall(secret))
            report.findings.append(finding)
    counts = _vector_counts(mem, report.event_ids)
    for finding in report.findings:
        finding.vectors = counts.get(finding.event_id, 0)
    return report


def _vector_counts(mem: Memory, event_ids: list[str]) -> dict[str, int]:
    if not event_ids:
        return {}
    try:
        from memlane.vectors.index import vector_counts
    except ImportError:  # the vectors extra is not installed: there are no vectors to check
        return {}
    return vector_counts(mem.project.id, event_ids)


def redact(mem: Memory, report: ScanReport) -> int:
    """Rewrite the affected events with the current filter; drop and re-queue their vectors."""
    cfg = mem.config.privacy
    ids = report.event_ids
    updates = []
    events = [e for start in range(0, len(ids), 500) for e in mem.store.by_ids(ids[start : start + 500])]
    for event in events:
        content = privacy.filter_text(event.content, cfg).text
        meta, _ = privacy.filter_value({k: v for k, v in event.metadata.items() if k != "privacy"}, cfg)
        stamp = dict(event.metadata.get("privacy") or {})
        stamp["secrets_redacted"] = int(stamp.get("secrets_redacted", 0)) + sum(
            1 for f in report.findings if f.event_id == event.id
        )
        stamp["rescanned"] = True
        meta["privacy"] = stamp
        updates.append((event.id, content, meta))
    kinds: dict[str, int] = {}
    for f in report.findings:
        kinds[f.kind] = kinds.get(f.kind, 0) + 1
    count = mem.store.redact(updates, {"findings": len(report.findings), "kinds": kinds})
    if count:
        mem.reset_derived()  # what was derived from the redacted text goes too; it is projected again
    _drop_vectors(mem, ids)
    return count


def _drop_vectors(mem: Memory, event_ids: list[str]) -> None:
    """The old vectors were embedded from the secret; the re-queued jobs embed the redacted text."""
    try:
        from memlane.vectors import forget_vectors
    except ImportError:
        return
    forget_vectors(mem.project.id, event_ids)
