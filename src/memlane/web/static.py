"""Static files of the dashboard, shipped in the package (``web/assets``): the stylesheet, the page script and
htmx 2.0.11 (vendored, minified, its 0BSD licence beside it). Only the files listed here are served."""

from __future__ import annotations

from importlib import resources

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

FILES = {
    "htmx.min.js": "text/javascript",
    "htmx.LICENSE.txt": "text/plain",
    "app.js": "text/javascript",
    "app.css": "text/css",
}
_cache: dict[str, bytes] = {}


def read(name: str) -> bytes:
    if name not in _cache:
        _cache[name] = resources.files("memlane.web").joinpath("assets", name).read_bytes()
    return _cache[name]


def routes() -> list[Route]:
    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in FILES:
            return PlainTextResponse("not found", status_code=404)
        return Response(read(name), media_type=FILES[name], headers={"Cache-Control": "max-age=3600"})

    return [Route("/assets/{name}", asset, methods=["GET"])]
