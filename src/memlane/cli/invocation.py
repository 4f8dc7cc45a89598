"""``Ctx``: what every command is handed (the ``--cwd``/``--project-id`` it was run with) and how it opens
the project's memory.

Its own module so command groups can import it at the top: ``cli/main.py`` imports every group to
register it, so a group importing ``Ctx`` from ``main`` made the two import each other.

``-C``/``--project-id`` are accepted before the subcommand (``memlane -C ~/shop history``) and after it
(``memlane history -C ~/shop``): ``project_options`` adds them to every command once all are registered,
and both forms set the one ``Ctx``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from memlane.cli import render
from memlane.memory import Memory, NoMemoryYet

CWD_HELP = "Act on the project containing this folder (default: the current one)."
PROJECT_ID_HELP = "Act on a registered project by id (see `memlane projects`)."
EMPTY_LIST: Any = object()  # ``reading``'s default --json answer for no memory: []


def no_memory_line(exc: NoMemoryYet) -> str:
    """The one line every command prints for a project without memory (exit status 0: a state, not an error)."""
    text = str(exc)
    return f"{text[0].upper()}{text[1:]}."


class Ctx:
    def __init__(self, cwd: str | None, project_id: str | None, server: bool = False) -> None:
        self.cwd = cwd
        self.project_id = project_id
        self.server = server  # --server: read the team server's copy (memlane team share)

    def memory(self, create: bool = True) -> Memory:
        if self.server:
            return Memory.on_server(self.cwd, project_id=self.project_id)
        return Memory.open(self.cwd, project_id=self.project_id, create=create, verify=True)

    @contextmanager
    def reading(self, as_json: bool, empty: Any = EMPTY_LIST) -> Iterator[Memory | None]:
        """The project's memory for a read, or None (after saying so) when it has none: reads create nothing.

        "No memory yet" is the same for every command: one line on stdout (``--json``: ``empty``, an empty
        list by default; ``None`` prints ``null``) and exit status 0.
        """
        try:
            mem = self.memory(create=False)
        except NoMemoryYet as exc:
            if as_json:
                render.emit_json([] if empty is EMPTY_LIST else empty)
            else:
                render.console.print(no_memory_line(exc), markup=False)
            yield None
            return
        with mem:
            yield mem


def check_cwd(value: str) -> str:
    """``-C PATH`` must be an existing folder; one line saying which way it is not."""
    if os.path.isdir(value):
        return value
    if os.path.exists(value):
        raise click.ClickException(f"-C {value}: not a folder (give the folder of the project, not a file in it)")
    raise click.ClickException(f"-C {value}: no such folder")


def _root_ctx(ctx: click.Context) -> Ctx:
    found = ctx.find_object(Ctx)
    if found is None:  # a group invoked on its own (tests): the root never made one
        root = ctx.find_root()
        found = Ctx(None, None)
        if root.obj is None:
            root.obj = found
    return found


def _set_cwd(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        _root_ctx(ctx).cwd = check_cwd(value)


def _set_project_id(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        _root_ctx(ctx).project_id = value


def project_options(command: click.Command) -> None:
    """Give every subcommand (not ``hook``, whose extra arguments are Claude Code's) ``-C`` and ``--project-id``."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            project_options(sub)
        if not command.invoke_without_command:  # a group that is also a command (``insights``) takes them too
            return
    if command.name == "hook":
        return
    taken = {opt for p in command.params for opt in getattr(p, "opts", ())}
    if "-C" not in taken and "--cwd" not in taken:
        command.params.append(
            click.Option(["-C", "--cwd", "_cwd"], metavar="PATH", expose_value=False, callback=_set_cwd, help=CWD_HELP)
        )
    if "--project-id" not in taken:
        command.params.append(
            click.Option(
                ["--project-id", "_project_id"], expose_value=False, callback=_set_project_id, help=PROJECT_ID_HELP
            )
        )


pass_ctx = click.make_pass_decorator(Ctx)
