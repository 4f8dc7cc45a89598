"""UserPromptSubmit's first step: tell the daemon which prompt is coming, before anything else is loaded.

The hook then spends ~10–20 ms importing its modules and storing the prompt before it asks for memories; the
daemon embeds the prompt and finds its nearest neighbours meanwhile (most of its answer's cost), so the answer
arrives that much sooner. Only the vector side is done early (``Engine.prepare``): the answer is the same as
without this step.

Stdlib, config and the socket client only: the point is to run before the hook's heavier imports.
"""

from __future__ import annotations

import json
import os

from memlane import config
from memlane.daemon import client, state

# Prompts up to this long are their own query (``capture.inject.query_of`` keeps longer ones' head and tail,
# and the hook sends the filtered, cut query later); a longer one is not worth sending twice.
MAX_CHARS = 4000
# A payload with such a prompt is a few KB; a bigger one (a pasted log) is not parsed here only to be
# skipped: the hook parses it once, after this.
MAX_PAYLOAD_BYTES = 64 * 1024
_SENT: list[client.Pending] = []


def start(raw: bytes) -> bool:
    """Send the prompt in ``raw`` (a UserPromptSubmit payload) to the daemon on a thread; True if sent.

    Never raises: whatever goes wrong here, the hook's own path still stores, asks and falls back.
    """
    if len(raw) > MAX_PAYLOAD_BYTES:
        return False
    try:
        payload = json.loads(raw)
        if not isinstance(payload, dict):
            return False
        prompt, cwd = payload.get("prompt"), payload.get("cwd")
        if not isinstance(prompt, str) or not prompt.strip() or len(prompt) > MAX_CHARS:
            return False
        if prompt.lstrip().startswith("<task-notification>"):  # a subagent's report: the hook asks nothing
            return False
        if not isinstance(cwd, str) or "\0" in cwd or not os.path.isabs(cwd):
            return False
        cfg = config.load_cached()
        if not cfg.injection.enabled or not state.read_info():
            return False
        # Sent now, its short answer never read: the socket stays open until the process exits (closing it at
        # once could make the server drop the request). No thread: it would compete with the hook's imports.
        sent = client.send("/api/prepare", {"cwd": cwd, "prompt": prompt}, cfg.daemon.hook_deadline_ms)
        if sent is not None:
            _SENT.append(sent)
        return sent is not None
    except Exception:  # noqa: BLE001 - an optimisation only: the hook proper reports real problems
        return False
