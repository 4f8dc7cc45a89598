"""The dashboard: the memory viewer of the original system (``specs/web-viewer-ui``), served by the daemon.

Server-rendered Jinja2 templates with htmx (vendored in ``assets/``, no build step, no CDN) and one small
script for the live stream; every route calls the library (``memlane.memory.Memory``, ``memlane.regions``,
``memlane.workflow``, ``memlane.context``, ``memlane.config_file``), never SQL. ``daemon.server`` mounts
``routes(daemon)`` behind its Guard, which takes the Bearer token or the session cookie of ``auth``.

- ``site.py``      what every route shares (project, library calls off the event loop, page frame, errors)
- ``pages.py``     reading pages · ``edits.py`` pages that change things · ``api.py`` the spec's JSON routes
- ``stream.py``    the live stream (Server-Sent Events) · ``auth.py`` login links, cookie, CSRF, password
- ``templating.py`` the Jinja2 environment and its escaping filters · ``static.py`` the files in ``assets/``
"""

from __future__ import annotations

from typing import Any

from starlette.routing import BaseRoute

from memlane.web.auth import Auth

__all__ = ["Auth", "routes"]


def routes(daemon: Any) -> list[BaseRoute]:
    """The dashboard's routes, bound to ``daemon`` (see ``site.Site``)."""
    from memlane.web import api, edits, pages, static, stream
    from memlane.web.site import Site

    site = Site(daemon)
    return [*api.routes(site), *pages.routes(site), *edits.routes(site), *stream.routes(site), *static.routes()]
