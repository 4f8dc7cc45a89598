"""``Ctx``: what every command is handed (the ``--cwd``/``--project-id`` it was run with) and how it opens
the project's memory.

Its own module so command groups can import it at the top: ``cli/main.py`` imports every group to
register it, so a group importing ``Ctx`` from ``main`` made the two import each other.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from memlane.cli import render
from memlane.memory import Memory, NoMemoryYet


class Ctx:
    def __init__(self, cwd: str | None, project_id: str | None, server: bool = False) -> None:
        self.cwd = cwd
        self.project_id = project_id
        self.server = server  # --server: read the team server's copy (memlane team share)

    def memory(self, create: bool = True) -> Memory:
        if self.server:
            return Memory.on_server(self.cwd, project_id=self.project_id)
        return Memory.open(self.cwd, project_id=self.project_id, create=create)

    @contextmanager
    def reading(self, as_json: bool, empty: Any = None) -> Iterator[Memory | None]:
        """The project's memory for a read, or None (after saying so) when it has none: reads create nothing."""
        try:
            mem = self.memory(create=False)
        except NoMemoryYet as exc:
            if as_json:
                render.emit_json([] if empty is None else empty)
            else:
                render.console.print(f"{str(exc)[0].upper()}{str(exc)[1:]}.", markup=False)
            yield None
            return
        with mem:
            yield mem


pass_ctx = click.make_pass_decorator(Ctx)
