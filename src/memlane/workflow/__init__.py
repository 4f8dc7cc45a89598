"""Workflow memory: progress tracking, memory.md, workflow session records and cleanup.

Kept free of imports: ``memlane.workflow.hooks`` runs inside hook processes (~50 ms budget), so
every module of this package except the CLI (``memlane.cli.workflow``) uses the stdlib only.
"""
