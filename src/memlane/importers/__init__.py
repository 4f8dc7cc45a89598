"""Importing earlier agent history (Claude Code transcripts, Codex rollouts) into memlane's store.

Library use::

    from memlane import project
    from memlane.importers import Importer, Options, discover

    proj = project.identify(".")
    options = Options(sources=["claude", "codex"])
    with Importer(proj, options) as importer:
        report = importer.run(discover(proj, options))
    print(report.as_dict()["new_events"])
"""

from memlane.importers.run import SOURCES, Candidate, FileResult, Importer, ImportError_, Options, Report, discover

__all__ = ["SOURCES", "Candidate", "FileResult", "ImportError_", "Importer", "Options", "Report", "discover"]
