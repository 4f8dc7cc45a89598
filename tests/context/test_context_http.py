"""The daemon's context routes as a real process: auth, Host, validation, volatile state, compose, inject."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import payload
from memlane.daemon import state
from test_daemon import start_daemon


@pytest.fixture
def text_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """No embedding model: the daemon answers injections with the full-text rule (no vectors in tests)."""
    monkeypatch.setenv("MEMLANE_EMBEDDING_PROVIDER", "openai")


@pytest.fixture
def daemon(memlane_home: Path, text_only: None) -> Iterator[dict[str, Any]]:
    proc = start_daemon(0, "--no-worker")
    for _ in range(200):
        info = state.read_info()
        if info:
            break
        time.sleep(0.05)
    else:
        proc.kill()
        raise AssertionError(proc.stderr.read().decode() if proc.stderr else "daemon did not start")
    yield {**info, "proc": proc, "token": state.read_token()}
    proc.terminate()
    proc.wait(timeout=20)


def call(
    daemon: dict[str, Any],
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None = "",
    host: str | None = None,
    raw: bytes | None = None,
) -> tuple[int, dict[str, Any]]:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(f"http://127.0.0.1:{daemon['port']}{path}", method=method, data=data)
    token = daemon["token"] if token == "" else token
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if host:
        req.add_header("Host", host)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def q(root: Path, **more: str) -> str:
    return "?" + urllib.parse.urlencode({"projectRoot": str(root), **more})


@pytest.fixture
def root(proj: Path) -> Path:
    (proj / "AGENTS.md").write_text("Always run `make check` (rule marker heron).\n")
    return proj.resolve()


def test_routes_need_token_and_own_host(daemon: dict[str, Any], root: Path) -> None:
    routes: list[tuple[str, str, Any]] = [
        ("GET", f"/api/context{q(root)}", None),
        ("PUT", "/api/context/volatile", {"projectRoot": str(root), "currentFile": "a.py"}),
        ("POST", "/api/context/compose", {"projectRoot": str(root), "task": "llm_task"}),
    ]
    for method, path, body in routes:
        assert call(daemon, method, path, body, token=None)[0] == 401
        assert call(daemon, method, path, body, token="wrong")[0] == 401
        assert call(daemon, method, path, body, host="evil.example:80")[0] == 403
        assert call(daemon, method, path, body)[0] == 200


def test_get_put_and_compose(daemon: dict[str, Any], root: Path) -> None:
    status, body = call(daemon, "GET", f"/api/context{q(root)}")
    assert status == 200 and body["projectRoot"] == str(root)
    assert body["persistent"] == {"rules/AGENTS.md": "Always run `make check` (rule marker heron)."}
    assert body["volatile"]["workingDirectory"] == str(root) and body["persistentStatus"] == "loaded"
    status, body = call(
        daemon,
        "PUT",
        "/api/context/volatile",
        {"projectRoot": str(root), "currentFile": "src/app.py", "selection": {"startLine": 3, "text": "x = 1"}},
    )
    assert status == 200 and body["applied"]["currentFile"] == "src/app.py"
    assert call(daemon, "GET", f"/api/context{q(root)}")[1]["volatile"]["selection"] == {
        "startLine": 3,
        "text": "x = 1",
    }
    status, body = call(
        daemon,
        "POST",
        "/api/context/compose",
        {"projectRoot": str(root), "task": "llm_task", "body": "Explain it.", "context": {"selection": "only now"}},
    )
    assert status == 200 and body["task"] == "llm_task"
    prompt = body["prompt"]
    assert "heron" in prompt and "currentFile: src/app.py" in prompt and "selection: only now" in prompt
    assert prompt.endswith("## Task\nExplain it.") and [b["name"] for b in body["blocks"]] == [
        "persistent",
        "volatile",
        "body",
    ]
    status, body = call(daemon, "POST", "/api/context/compose", {"projectRoot": str(root), "task": "llm_task"})
    assert "selection: only now" not in body["prompt"]  # request-only values were not kept
    call(daemon, "PUT", "/api/context/volatile", {"projectRoot": str(root), "selection": None})
    assert "selection" not in call(daemon, "GET", f"/api/context{q(root)}")[1]["volatile"]
    status, body = call(
        daemon, "POST", "/api/context/compose", {"projectRoot": str(root), "task": "llm_task", "maxChars": 120}
    )
    assert status == 200 and len(body["prompt"]) <= 120


@pytest.mark.parametrize(
    ("method", "path", "body", "message"),
    [
        ("GET", "/api/context", None, "projectRoot is required"),
        ("GET", "/api/context?projectRoot=relative/dir", None, "must be an absolute path"),
        ("GET", "/api/context?projectRoot=/no/such/dir", None, "not an existing directory"),
        ("PUT", "/api/context/volatile", {"currentFile": "a.py"}, "projectRoot is required"),
        ("PUT", "/api/context/volatile", {"projectRoot": "{root}"}, "nothing to set"),
        ("PUT", "/api/context/volatile", {"projectRoot": "{root}", "currentFile": "../x.py"}, "outside the project"),
        (
            "PUT",
            "/api/context/volatile",
            {"projectRoot": "{root}", "currentFile": "/etc/passwd"},
            "outside the project",
        ),
        ("PUT", "/api/context/volatile", {"projectRoot": "{root}", "bad key!": 1}, "bad context key"),
        ("PUT", "/api/context/volatile", [1, 2], "body must be a JSON object"),
        ("POST", "/api/context/compose", {"projectRoot": "{root}"}, "task is required"),
        ("POST", "/api/context/compose", {"projectRoot": "{root}", "task": "nope"}, "unknown task type 'nope'"),
        ("POST", "/api/context/compose", {"projectRoot": "{root}", "task": "llm_task", "maxChars": 0}, "maxChars"),
        ("POST", "/api/context/compose", {"projectRoot": "{root}", "task": "llm_task", "body": 3}, "must be strings"),
        ("POST", "/api/context/compose", {"projectRoot": "{root}", "task": "llm_task", "context": []}, "JSON object"),
        ("POST", "/api/context/compose", {"projectRoot": "{root}", "task": "llm_task", "sessionId": 5}, "sessionId"),
    ],
)
def test_validation_errors_are_400_with_one_line(
    daemon: dict[str, Any], root: Path, method: str, path: str, body: Any, message: str
) -> None:
    if isinstance(body, dict):
        body = {k: (str(root) if v == "{root}" else v) for k, v in body.items()}
    status, answer = call(daemon, method, path, body)
    assert status == 400 and message in answer["error"] and "\n" not in answer["error"]


def test_body_that_is_not_json_is_400(daemon: dict[str, Any]) -> None:
    status, answer = call(daemon, "PUT", "/api/context/volatile", raw=b"{nope")
    assert status == 400 and answer["error"] == "body must be JSON"


def test_prompt_injection_through_the_daemon_carries_editor_state(
    daemon: dict[str, Any], hook: Callable[..., str], root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLANE_DAEMON_HOOK_DEADLINE_MS", "20000")  # a loaded test machine must not fall back
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"))
    call(daemon, "PUT", "/api/context/volatile", {"projectRoot": str(root), "currentFile": "db/pool.py"})
    out = hook(
        "UserPromptSubmit",
        payload("02-UserPromptSubmit.json", prompt_id="n2", prompt="connection pool times out again"),
    )
    text = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "[mem:" in text and "currentFile: db/pool.py" in text  # only the daemon knew the current file
    # (The daemon and the full-text fallback now format memories alike; the current file says which.)
    assert "## Project context" not in text  # rules unchanged since they were loaded
    status, body = call(
        daemon, "GET", f"/api/context{q(root, sessionId=payload('02-UserPromptSubmit.json')['session_id'])}"
    )
    assert status == 200 and body["session"]["sessionId"]


def test_compose_with_a_layer(daemon: dict[str, Any], root: Path) -> None:
    """Seed 002's Layer scope over HTTP: the named layer's store joins the persistent block."""
    from memlane import project
    from memlane.context.store import layer_store

    layer_store(project.identify(root).id, "reviewer").put("checklist", "look for races (layer marker ibex)")
    request = {"projectRoot": str(root), "task": "llm_task", "body": "Review it.", "layer": "reviewer"}
    status, body = call(daemon, "POST", "/api/context/compose", request)
    assert status == 200 and "layer/reviewer/checklist: look for races (layer marker ibex)" in body["prompt"]
    status, body = call(daemon, "POST", "/api/context/compose", {**request, "layer": None})
    assert status == 200 and "ibex" not in body["prompt"]
    status, body = call(daemon, "POST", "/api/context/compose", {**request, "layer": "../etc"})
    assert status == 400 and body["error"].startswith("layer name '../etc'")
