"""Parameter types shared by commands: click wrappers over the library's own parsing, so the CLI
accepts and refuses exactly what ``Memory`` does."""

from __future__ import annotations

from typing import Any

import click

from memlane import moments
from memlane.errors import InputError


class When(click.ParamType):
    """A point in time: ISO date/datetime (``2026-11-01``, ``2026-11-01T09:30``) or an age (``7d``, ``12h``)."""

    name = "when"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return moments.parse(value)
        except InputError as exc:
            self.fail(str(exc), param, ctx)


class EventType(click.Choice):
    """An event type; listed in ``--help`` like a choice, refused with the library's message."""

    def __init__(self) -> None:
        from memlane.store.db import EVENT_TYPES

        super().__init__(EVENT_TYPES)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from memlane.memory import check_types

        try:
            check_types([value])
        except InputError as exc:
            self.fail(str(exc), param, ctx)
        return str(value)


WHEN = When()
EVENT_TYPE = EventType()


class OutputFile(click.ParamType):
    """A file a command will write (``-o``): its folder must exist and be a writable folder, and the path
    must not be a folder itself. Refused with one line before any work is done, never a traceback."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        import os

        path = os.path.expanduser(str(value))
        if os.path.isdir(path):
            self.fail(f"{value} is a folder; give a file name in it", param, ctx)
        folder = os.path.dirname(os.path.abspath(path))
        problem = _folder_problem(folder)
        if problem:
            self.fail(f"cannot write {value}: {problem}", param, ctx)
        return path


class OutputFolder(click.ParamType):
    """A folder a command will create or fill (``plugin build DEST``): not a file, under a folder that exists."""

    name = "folder"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import os
        from pathlib import Path

        path = os.path.abspath(os.path.expanduser(str(value)))
        if os.path.exists(path) and not os.path.isdir(path):
            self.fail(f"{value} is a file, not a folder", param, ctx)
        existing = path
        while not os.path.exists(existing):  # the nearest part that exists must be a writable folder
            existing = os.path.dirname(existing)
        problem = _folder_problem(existing)
        if problem:
            self.fail(f"cannot create {value}: {problem}", param, ctx)
        return Path(path)


def _folder_problem(folder: str) -> str:
    """Why nothing can be written in ``folder`` ('' when something can)."""
    import os

    if not os.path.exists(folder):
        missing = folder
        while not os.path.exists(os.path.dirname(missing)):
            missing = os.path.dirname(missing)
        parent = os.path.dirname(missing)
        if not os.path.isdir(parent):
            return f"{parent} is a file, not a folder"
        return f"no such folder {folder}"
    if not os.path.isdir(folder):
        return f"{folder} is a file, not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"no permission to write in {folder}"
    return ""


OUTPUT_FILE = OutputFile()
OUTPUT_FOLDER = OutputFolder()
