"""Context composition: final prompt = persistent context + volatile context + task body.

Library API for programs that build their own prompts (docs/context.md)::

    from memlane.context import AppContextService, PromptComposer, RefreshTrigger

    svc = AppContextService.for_path("/abs/project")           # the project's persistent + volatile stores
    svc.refresh_persistent_if_needed(RefreshTrigger())          # rules reloaded only if they changed
    svc.ensure_volatile_working_directory()                     # workingDirectory, projectRoot, gitBranch
    svc.update_volatile_from_request({"currentFile": "src/app.py", "selection": "def main(): ..."})
    prompt = PromptComposer(svc.cfg).compose("llm_task", svc, "Explain the selection.")

Stdlib only and light: the Claude Code hooks compose their injections with it.
"""

from __future__ import annotations

from memlane.context.compose import (
    CLAUDE_CODE_LIMIT,
    TASKS,
    Composition,
    PromptComposer,
    TaskSpec,
    register_task,
    serialize,
)
from memlane.context.scope import ContextError, ContextScope, PersistenceKind, RefreshStatus
from memlane.context.service import AppContextService, ContextRegistry, PromptContext, RefreshTrigger
from memlane.context.store import ContextStore, FileContextStore, MemoryContextStore

__all__ = [
    "CLAUDE_CODE_LIMIT",
    "TASKS",
    "AppContextService",
    "Composition",
    "ContextError",
    "ContextRegistry",
    "ContextScope",
    "ContextStore",
    "FileContextStore",
    "MemoryContextStore",
    "PersistenceKind",
    "PromptComposer",
    "PromptContext",
    "RefreshStatus",
    "RefreshTrigger",
    "TaskSpec",
    "register_task",
    "serialize",
]
