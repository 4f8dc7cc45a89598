"""memlane's exceptions: one hierarchy, each with a one-line message a user can act on.

Every problem a user (or a model calling an MCP tool) can fix is a ``MemlaneError``; ``str(exc)`` is
the message to show, as is. Each entry point catches the base class once and formats it its own way:
the CLI prints ``Error: <message>`` and exits 1, an MCP tool returns a tool error, the daemon's HTTP
routes answer 400 with ``{"error": <message>}``, hooks log it and fail open. Anything else is a bug and
keeps its traceback.

Subclasses also derive from the builtin their callers already catch (``ValueError``, ``LookupError``,
``RuntimeError``), so code written before this hierarchy keeps working.

Standard library only: the hook path imports this.
"""

from __future__ import annotations


class MemlaneError(Exception):
    """A problem the user can fix; the message is one line and says what to do."""


class InputError(MemlaneError, ValueError):
    """An argument that cannot be used (empty query, unknown event type, a time that is not a date)."""


class NotFoundError(MemlaneError, LookupError):
    """Something named that does not exist (an event, a project id)."""


class UnknownProjectError(NotFoundError):
    """A ``--project-id`` / ``project_id`` that no registered project has."""
