"""The same query through the four ways in — library, CLI, MCP tool, HTTP route — gives the same hits and
the same error. Each entry point parses its own input and makes one ``Memory.search`` call; these tests
fail if one of them filters, converts or validates on its own again.

Full-text search everywhere (no embedding model in tests), on a store filled by the real hooks. The MCP
server is driven through the SDK's in-memory client and the daemon's routes in-process (Starlette's
``TestClient``), both with their real argument handling and error translation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from conftest import PAYLOADS, payload
from mcp import Client
from memlane import config, moments
from memlane.cli.main import cli
from memlane.daemon.server import Daemon
from memlane.errors import InputError, MemlaneError
from memlane.mcp.server import build_server
from memlane.memory import Memory
from memlane.retrieval.engine import Engine

QUERY = "connection pool times out"
PORT = 37999  # never bound: the app runs in-process, but the Host check wants a port
TOKEN = "test-token"


class Refused(Exception):
    """What an entry point answered instead of hits: its error text."""


def library(proj: Path, query: str, **args: Any) -> list[str]:
    try:
        with Memory.open(proj) as mem:
            return [h.event.cite for h in mem.search(query, semantic=False, **args)]
    except MemlaneError as exc:
        raise Refused(str(exc)) from exc


def command_line(proj: Path, query: str, **args: Any) -> list[str]:
    options: list[str] = []
    for name, value in args.items():
        for item in value if isinstance(value, list) else [value]:
            options += ["--type" if name == "types" else f"--{name}", str(item)]
    result = CliRunner().invoke(cli, ["-C", str(proj), "search", "--text-only", "--json", *options, "--", query])
    if result.exit_code != 0:
        raise Refused(result.output)
    return [row["citation"] for row in json.loads(result.output)]


def mcp_tool(proj: Path, query: str, **args: Any) -> list[str]:
    server = build_server(default_project=str(proj), semantic=False)
    out: list[Any] = []

    async def main() -> None:
        async with Client(server) as client:
            out.append(await client.call_tool("mem-search", {"query": query, **args}))

    anyio.run(main)
    text = str(out[0].content[0].text)
    if out[0].is_error:
        raise Refused(text)
    return [f"mem:{c}" for c in re.findall(r"^- \[mem:(\w{6})\]", text, re.MULTILINE)]


def http_route(proj: Path, query: str, **args: Any) -> list[str]:
    daemon = Daemon(config.load())
    daemon.engine = Engine(daemon.cfg, vectors=False)  # no model in tests: full-text, as everywhere here
    client = TestClient(daemon.app(TOKEN, PORT), base_url=f"http://127.0.0.1:{PORT}")
    response = client.post(
        "/api/search",
        json={"cwd": str(proj), "query": query, **args},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    if response.status_code != 200:
        assert response.status_code == 400, response.text
        raise Refused(response.json()["error"])
    return [row["citation"] for row in response.json()["results"]]


ENTRY_POINTS: dict[str, Callable[..., list[str]]] = {
    "library": library,
    "cli": command_line,
    "mcp": mcp_tool,
    "http": http_route,
}


@pytest.fixture
def filled(proj: Path, hook: Callable[..., str]) -> Path:
    """The first captured session (prompt, tool run, answer), delivered through the real hooks."""
    for path in sorted(PAYLOADS.glob("0[1-6]-*.json")):
        data = payload(path.name)
        hook(data["hook_event_name"], data)
    return proj


def _expected(proj: Path, **args: Any) -> list[str]:
    expected = library(proj, QUERY, **args)
    assert expected, "a case with no hits would pass whatever the filters did"
    return expected


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize(
    "args",
    [
        {},
        {"types": ["user_prompt"]},
        {"since": "7d"},  # an age: HTTP used to compare "7d" as a string and return nothing
        {"since": "2000-01-01", "until": "2999-01-01"},
    ],
    ids=["plain", "types", "since-age", "since-until-dates"],
)
def test_same_hits(filled: Path, entry: str, args: dict[str, Any]) -> None:
    assert ENTRY_POINTS[entry](filled, QUERY, **args) == _expected(filled, **args)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_filters_that_exclude_everything_give_nothing(filled: Path, entry: str) -> None:
    assert ENTRY_POINTS[entry](filled, QUERY, until="2000-01-01") == []


def _library_error(call: Callable[[], object]) -> str:
    with pytest.raises(InputError) as caught:
        call()
    return str(caught.value)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_same_error_for_an_unknown_type(filled: Path, entry: str) -> None:
    message = _library_error(lambda: library_raw(filled, QUERY, types=["bogus"]))
    assert message.startswith("unknown event type 'bogus' (one of: ")
    with pytest.raises(Refused) as refused:
        ENTRY_POINTS[entry](filled, QUERY, types=["bogus"])
    assert message in _one_line(str(refused.value))


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_same_error_for_a_time_that_is_not_a_date(filled: Path, entry: str) -> None:
    # The message names the argument in the entry point's own words (``since:`` in the library, MCP and
    # HTTP; ``Invalid value for '--since':`` in the CLI); what follows is the library's, word for word.
    message = _library_error(lambda: moments.parse("last tuesday"))
    assert message == "'last tuesday' is not a date (use 2026-11-01, 2026-11-01T09:30 or an age like 7d, 12h)"
    with pytest.raises(Refused) as refused:
        ENTRY_POINTS[entry](filled, QUERY, since="last tuesday")
    assert message in _one_line(str(refused.value))


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_same_error_for_an_empty_query(filled: Path, entry: str) -> None:
    message = _library_error(lambda: library_raw(filled, "   "))
    with pytest.raises(Refused) as refused:
        ENTRY_POINTS[entry](filled, "   ")
    assert message in _one_line(str(refused.value))


def library_raw(proj: Path, query: str, **args: Any) -> list[Any]:
    with Memory.open(proj) as mem:
        return mem.search(query, semantic=False, **args)


def _one_line(text: str) -> str:
    """Click wraps long error lines in its usage box; the message itself is one line."""
    return " ".join(text.split())
