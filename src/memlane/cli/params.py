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
