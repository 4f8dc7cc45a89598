"""UserPromptSubmit's first step: tell the daemon which prompt is coming, before anything else is loaded.

The hook then spends ~15–20 ms importing its modules and storing the prompt before it asks for memories; the
daemon embeds the prompt and finds its nearest neighbours meanwhile (most of its answer's cost), so the answer
arrives that much sooner. Only the vector side is done early (``Engine.prepare``): the answer is the same as
without this step.

The payload is forwarded as Claude Code sent it, unparsed: the daemon reads ``prompt`` and ``cwd`` from it and
checks them (``/api/prepare``). Parsing it here would mean importing ``json`` and ``re`` (~7 ms) first.
"""

from __future__ import annotations

from memlane.daemon import wire

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Prompts up to this long are their own query (``capture.inject.query_of`` keeps longer ones' head and tail,
# and the hook sends the filtered, cut query later); the daemon prepares nothing for a longer one.
MAX_CHARS = 4000
# A payload with such a prompt is a few KB; a bigger one (a pasted log) is not sent: nothing would be prepared.
MAX_PAYLOAD_BYTES = 64 * 1024
CONNECT_S = 0.1  # loopback: a daemon that cannot take a connection this fast is no help to this hook
_SENT: list[Any] = []  # sockets kept open until the process exits (closing one at once may drop the request)


def start(raw: bytes) -> bool:
    """Send a UserPromptSubmit payload to the daemon's ``/api/prepare``; True if sent.

    Never raises: whatever goes wrong here, the hook's own path still stores, asks and falls back.
    """
    try:
        if len(raw) > MAX_PAYLOAD_BYTES or b'"prompt"' not in raw:
            return False
        port, secret = wire.port(), wire.token()
        if not port or not secret:
            return False
        sock = wire.send("127.0.0.1", port, secret, "/api/prepare", raw, CONNECT_S)
        if sock is not None:
            _SENT.append(sock)
        return sock is not None
    except Exception:  # noqa: BLE001 - an optimisation only: the hook proper reports real problems
        return False
