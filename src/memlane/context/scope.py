"""Where a piece of context lives (scope) and how long it lasts (persistence kind). Stdlib only.

``enum`` costs nothing extra on the hook path: ``re`` already imports it.
"""

from __future__ import annotations

import enum

from memlane.errors import MemlaneError


class ContextScope(enum.Enum):
    """The unit a context belongs to. A new purpose adds a scope and a store, not a rewrite."""

    APP = "app"  # one project, for as long as memlane runs (rules, working directory, editor state)
    SESSION = "session"  # one agent session: the seed's ExecutionTree (session id, files touched)
    LLM_TASK = "llm_task"  # one composed prompt: request-only overrides, assembled at compose time
    LAYER = "layer"  # a node of a larger pipeline (a named agent, stage or tool): its own persistent store


class PersistenceKind(enum.Enum):
    """Within a scope: kept across processes and refreshed on a condition, or overwritten per request."""

    PERSISTENT = "persistent"
    VOLATILE = "volatile"


class RefreshStatus(enum.Enum):
    """What ``refresh_persistent_if_needed`` did."""

    LOADED = "loaded"  # first load for this project
    RELOADED = "reloaded"  # root changed or a rule file's content changed
    UNCHANGED = "unchanged"  # fingerprint identical: nothing read, nothing written


class ContextError(MemlaneError, ValueError):
    """Context input that cannot be used (bad key, path outside the project, unknown task type).

    The message is one line and says what to fix; the HTTP API answers it as a 400.
    """
