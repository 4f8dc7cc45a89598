"""The dashboard in-process: a real ``Daemon`` app (Guard included) over a real store, driven by Starlette's
TestClient, logged in through a real one-time link. Full-text only (no model load)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from memlane import config
from memlane.memory import Memory
from memlane.store import NewEvent
from memlane.web import auth

TOKEN = "test-token"
BASE = "http://127.0.0.1:37777"
INJECTION = {
    "mode": "hybrid",
    "full": [{"id": "", "cite": "", "score": 0.81, "confidence": "high"}],
    "index": [],
    "left_out": [{"id": "x", "cite": "mem:zzzzzz", "score": 0.05, "reason": "below threshold"}],
}


class Site:
    def __init__(self, daemon: Any, client: TestClient, project_id: str, root: Path) -> None:
        self.daemon = daemon
        self.client = client
        self.project_id = project_id
        self.root = root

    @property
    def csrf(self) -> str:
        sid = self.daemon.web_auth.session_id(self.client.cookies.get(auth.SESSION_COOKIE))
        return self.daemon.web_auth.csrf(sid)

    def post(self, path: str, data: dict[str, Any] | None = None, **kw: Any) -> Any:
        return self.client.post(path, data=data, headers={"X-CSRF-Token": self.csrf}, **kw)

    def patch(self, path: str, body: Any) -> Any:
        return self.client.patch(path, json=body, headers={"X-CSRF-Token": self.csrf})

    def memory(self) -> Memory:
        return Memory.open(project_id=self.project_id, create=False)


def seed(root: Path) -> dict[str, Any]:
    """A small store: two sessions, a hostile prompt, a private section, an injection record."""
    with Memory.open(root) as mem:
        mem.store.append(
            [
                NewEvent("session_start", "s-one", "Session started (startup) in /work", "t0"),
                NewEvent("user_prompt", "s-one", "why does the pool timeout happen under load?", "t1"),
                NewEvent("agent_response", "s-one", "The pool timeout comes from max_connections=5.", "t2"),
                NewEvent(
                    "tool_observation",
                    "s-one",
                    "Edited db/pool.py: max_connections 5 -> 20",
                    "t3",
                    {"tool_name": "Edit", "file_path": "db/pool.py"},
                ),
                NewEvent(
                    "user_prompt",
                    "s-two",
                    "my key is [PRIVATE] and <script>window.pwned=1</script> here",
                    "t4",
                    {"privacy": {"private_sections": 1, "secrets_redacted": 0, "chars_filtered": 12}},
                ),
            ]
        )
        answer = mem.history(types=["agent_response"], limit=1)[0]
        record = {**INJECTION, "full": [{**INJECTION["full"][0], "id": answer.id, "cite": answer.cite}]}
        asked = mem.store.append([NewEvent("user_prompt", "s-two", "what did we do about the pool timeout?", "t5")])
        mem.store.record_injection(asked.inserted[0], "s-two", record)
        return {"project_id": mem.project.id, "answer": answer}


@pytest.fixture
def site(proj: Path) -> Iterator[Site]:
    from memlane.daemon.server import Daemon
    from memlane.retrieval.engine import Engine

    proj.mkdir(parents=True, exist_ok=True)
    seeded = seed(proj)
    cfg = config.load()
    daemon = Daemon(cfg)
    daemon.engine = Engine(cfg, vectors=False)
    app = daemon.app(TOKEN, 37777)
    with TestClient(app, base_url=BASE) as client:
        link = client.post(
            "/api/dashboard/login",
            headers={"Authorization": f"Bearer {TOKEN}"},
            json={"project_id": seeded["project_id"]},
        ).json()["path"]
        assert client.get(link, follow_redirects=False).status_code == 303
        s = Site(daemon, client, seeded["project_id"], proj)
        s.answer = seeded["answer"]  # type: ignore[attr-defined]
        yield s


def csrf_in(html: str) -> str:
    match = re.search(r'X-CSRF-Token": "([^"]+)"', html)
    assert match, "the page carries its CSRF token"
    return match.group(1)
