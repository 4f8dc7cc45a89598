"""``memlane privacy scan``: secrets an existing store kept, found with the current rules."""

from __future__ import annotations

import click

from memlane.cli import render

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memlane.cli.invocation import Ctx


@click.group("privacy")
def privacy_group() -> None:
    """Check the store for secrets that older rules let through."""


@privacy_group.command("scan")
@click.option("--redact", is_flag=True, help="Redact what is found, in place (events, search index, vectors).")
@click.option("--yes", "-y", is_flag=True, help="With --redact: do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
@click.pass_obj
def scan(obj: Ctx, redact: bool, yes: bool, as_json: bool) -> None:
    """Scan every event (content and metadata) with the current secret rules.

    Prints each finding with a masked preview (never the secret), whether the full-text index holds
    it and how many vectors were made from it. Exits 1 when findings remain unredacted, so scripts
    can check a store. With --redact, the events are rewritten with the current filter, the index
    follows, and their vectors are dropped and re-embedded from the redacted text.
    """
    from memlane import privacy_scan

    with obj.reading(as_json, empty={"events_scanned": 0, "events_affected": 0, "findings": []}) as mem:
        if mem is None:
            return
        report = privacy_scan.scan(mem)
        affected = len(report.event_ids)
        if as_json and not redact:
            render.emit_json(report.as_dict())
        elif not as_json:
            _print(report, mem.project.id, hint=not redact)
        if not report.findings:
            return
        if not redact:
            raise SystemExit(1)
        what = f"{len(report.findings)} secret(s) in {affected} event(s)"
        if not yes and not click.confirm(f"Redact {what}? The original text cannot be recovered", default=False):
            raise click.Abort()
        count = privacy_scan.redact(mem, report)
    if as_json:
        render.emit_json({**report.as_dict(), "redacted_events": count})
    else:
        render.console.print(f"Redacted {count} event(s); their vectors were dropped and re-queued for embedding.")


def _print(report: privacy_scan.ScanReport, project_id: str, hint: bool) -> None:
    from rich.markup import escape

    if not report.findings:
        render.console.print(f"No secrets found in {report.events_scanned} event(s) of project {project_id}.")
        return
    rows = [
        {
            "event": f.cite,
            "type": f.type,
            "where": f.where,
            "kind": f.kind,
            "preview": escape(f.preview),  # "[REDACTED]" is not rich markup
            "fts": "yes" if f.fts else "no",
            "vectors": f.vectors,
        }
        for f in report.findings
    ]
    render.dict_table(rows, ["event", "type", "where", "kind", "preview", "fts", "vectors"])
    summary = f"{len(report.findings)} finding(s) in {len(report.event_ids)} of {report.events_scanned} event(s)."
    render.console.print(summary + (" Run `memlane privacy scan --redact` to redact them." if hint else ""))


if TYPE_CHECKING:
    from memlane import privacy_scan
