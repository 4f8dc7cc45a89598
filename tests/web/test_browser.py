"""The dashboard end to end in a real headless Chromium (Debian's package, installed by `make setup`), driven by
Playwright pointed at that binary, against a real daemon started by `memlane dashboard --no-open`.

Each test is one thing a person does: open with the login link; watch an event captured by a real hook process
appear live; search and open a citation; see what a prompt was told; edit a region item and see CLAUDE.md change
on disk; change a setting (and get refused for a bad one); forget an event and see it gone; be refused without
the cookie, with a foreign Origin, and on a mutation without the CSRF token; see a stored <script> stay inert.
The tests take a screenshot of each page; with DASHBOARD_SCREENSHOTS=docs/screenshots they land there (README).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conftest import PAYLOADS

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> stored hostile text'

pytestmark = [
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM),
        reason=f"Debian's chromium is not installed ({CHROMIUM}); `make setup` installs it where it runs as root "
        "with apt-get",
    ),
    pytest.mark.timeout(300),
]


@contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def seed(root: Path) -> dict[str, Any]:
    """A project with history: a session about a pool timeout, a prompt whose injection was recorded, a
    captured <script>, and a CLAUDE.md with one managed region."""
    from memlane.memory import Memory
    from memlane.store import NewEvent

    (root / ".git").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "docs" / "pool.md").write_text("# pool\n")
    (root / "docs" / "retry.md").write_text("# retry\n")
    (root / "CLAUDE.md").write_text(
        "# Shop\n\nHand-written notes.\n\n<!-- MEMORY_START: references -->\n## Core\n@docs/pool.md\n"
        "<!-- MEMORY_END: references -->\n"
    )
    with Memory.open(root) as mem:
        mem.store.append(
            [
                NewEvent("session_start", "sess-pool", f"Session started (startup) in {root}", "a0"),
                NewEvent("user_prompt", "sess-pool", "why does the connection pool timeout under load?", "a1"),
                NewEvent(
                    "agent_response", "sess-pool", "The pool timeout comes from max_connections=5; raise it.", "a2"
                ),
                NewEvent(
                    "tool_observation",
                    "sess-pool",
                    "Edited db/pool.py: max_connections 5 -> 20",
                    "a3",
                    {"tool_name": "Edit", "file_path": "db/pool.py"},
                ),
                NewEvent("user_prompt", "sess-xss", HOSTILE, "b1"),
                NewEvent("user_prompt", "sess-forget", "a throwaway prompt to forget later", "c1"),
            ]
        )
        answer = mem.history(types=["agent_response"], limit=1)[0]
        told = {
            "mode": "hybrid",
            "full": [{"id": answer.id, "cite": answer.cite, "score": 0.83, "confidence": "high"}],
            "index": [],
            "left_out": [{"id": "x", "cite": "mem:aaaaaa", "score": 0.04, "reason": "below threshold"}],
        }
        asked = mem.store.append([NewEvent("user_prompt", "sess-told", "what did we do about the pool timeout?", "d1")])
        mem.store.record_injection(asked.inserted[0], "sess-told", told)
        hostile = mem.history(session="sess-xss", limit=1)[0]
        throwaway = mem.history(session="sess-forget", limit=1)[0]
        return {"project_id": mem.project.id, "answer": answer.cite, "hostile": hostile.id, "throwaway": throwaway.id}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    pytest.importorskip("playwright.sync_api", reason="playwright (the dev extra: pip install -e '.[dev]')")
    from playwright.sync_api import sync_playwright

    base = tmp_path_factory.mktemp("dash")
    root = base / "work" / "shop"
    env = {
        "MEMLANE_HOME": str(base / "home"),
        "HOME": str(base / "user"),
        "MEMLANE_DAEMON_AUTOSTART": "false",
        "MEMLANE_EMBEDDING_PROVIDER": "openai",  # full text only: no model load in the daemon
        "MEMLANE_DASHBOARD_LIVE_POLL_MS": "150",
    }
    (base / "user").mkdir()
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")} | env
    with environment(env):
        seeded = seed(root)
    out = subprocess.run(
        [sys.executable, "-m", "memlane", "-C", str(root), "dashboard", "--no-open"],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    link = out.stdout.strip().split()[-1]
    origin = link.split("/login")[0]
    shots = Path(os.environ.get("DASHBOARD_SCREENSHOTS") or base / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    profile = tempfile.mkdtemp(prefix="memlane-chromium-")
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": 1180, "height": 760},
            )
            page = context.pages[0] if context.pages else context.new_page()
            page.on("dialog", lambda dialog: dialog.accept())  # confirmations are answered "yes"
            yield {
                **seeded,
                "root": root,
                "env": full_env,
                "link": link,
                "origin": origin,
                "page": page,
                "context": context,
                "pw": pw,
                "shots": shots,
            }
            context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
        subprocess.run(
            [sys.executable, "-m", "memlane", "daemon", "stop"],
            env=full_env,
            timeout=60,
            capture_output=True,
            check=False,
        )


def shot(app: dict[str, Any], name: str) -> None:
    app["page"].screenshot(path=str(app["shots"] / f"{name}.png"))


def test_open_with_the_login_link(app: dict[str, Any]) -> None:
    page = app["page"]
    page.goto(app["link"])
    assert page.url == app["origin"] + "/"
    page.wait_for_selector("[data-live-state].on")  # the live stream is connected
    assert "why does the connection pool timeout" in page.inner_text("[data-live-list]")
    cookie = next(c for c in app["context"].cookies() if c["name"] == "memlane_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"


def test_an_event_captured_by_a_real_hook_appears_live(app: dict[str, Any]) -> None:
    page = app["page"]
    page.goto(app["origin"] + "/")
    page.wait_for_selector("[data-live-state].on")
    hook = json.loads((PAYLOADS / "02-UserPromptSubmit.json").read_text())
    hook.update(cwd=str(app["root"]), prompt="live from a real hook: retry the payment webhook", prompt_id="live-1")
    done = subprocess.run(
        [sys.executable, "-m", "memlane", "hook", "UserPromptSubmit"],
        input=json.dumps(hook).encode(),
        env=app["env"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    row = page.wait_for_selector("li.event:has-text('live from a real hook')", timeout=15_000)
    assert row.get_attribute("data-type") == "user_prompt"
    assert page.locator("[data-live-list] > li.event").first.inner_text().count("live from a real hook") == 1
    shot(app, "live")


def test_search_and_open_a_citation(app: dict[str, Any]) -> None:
    page = app["page"]
    page.goto(app["origin"] + "/search")
    page.fill("input[name=q]", "pool timeout")
    page.click("form.search button")
    page.wait_for_selector("[data-search-meta]")
    assert "mode fts" in page.inner_text("[data-search-meta]")
    assert page.locator("mark", has_text=re.compile("pool", re.I)).count() > 0
    shot(app, "search")
    page.click(f"a.cite:has-text('{app['answer']}')")
    page.wait_for_url(re.compile(r"/sessions/sess-pool\?at="))
    focus = page.locator("li.event.focus")
    assert "max_connections=5" in focus.inner_text()
    shot(app, "session")


def test_see_what_a_prompt_was_told(app: dict[str, Any]) -> None:
    page = app["page"]
    page.goto(app["origin"] + "/told")
    article = page.locator("article.prompt", has_text="what did we do about the pool timeout")
    text = article.inner_text()
    assert app["answer"] in text and "0.830" in text and "high" in text and "below threshold" in text
    assert page.locator(".nothing", has_text="Nothing recorded").count() >= 1
    shot(app, "told")


def test_edit_a_region_item_and_see_claude_md_change(app: dict[str, Any]) -> None:
    page = app["page"]
    claude_md = app["root"] / "CLAUDE.md"
    page.goto(app["origin"] + "/regions")
    card = page.locator("#region-references")
    card.locator("select[name=kind]").select_option("direct-ref")
    card.locator("input[name=path]").fill("@docs/retry.md")
    card.locator("form.add button").click()
    page.wait_for_selector("#regions .ok:has-text('Added')")
    assert "@docs/pool.md\n@docs/retry.md\n" in claude_md.read_text()
    assert claude_md.read_text().startswith("# Shop\n\nHand-written notes.")
    shot(app, "regions")
    page.locator("li.kind-direct-ref", has_text="@docs/retry.md").locator("> button").click()
    page.wait_for_selector("#regions .ok:has-text('Deleted')")
    assert "@docs/retry.md" not in claude_md.read_text()


def test_change_a_setting_and_get_refused_for_a_bad_one(app: dict[str, Any]) -> None:
    page = app["page"]
    config_toml = Path(app["env"]["MEMLANE_HOME"]) / "config.toml"
    page.goto(app["origin"] + "/settings")
    row = page.locator("#set-injection-max_results")
    row.locator("input[name=value]").fill("3")
    row.locator("form button").click()
    page.wait_for_selector("#set-injection-max_results .source:has-text('config.toml')")
    assert "max_results = 3" in config_toml.read_text()
    row = page.locator("#set-injection-max_results")
    row.locator("input[name=value]").fill("many")
    row.locator("form button").click()
    alert = page.wait_for_selector("#set-injection-max_results .error")
    cli = subprocess.run(
        [sys.executable, "-m", "memlane", "config", "set", "injection.max_results", "many"],
        env=app["env"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert cli.returncode == 1
    assert alert.inner_text() == cli.stderr.strip().removeprefix("Error: ")
    assert "max_results = 3" in config_toml.read_text()
    shot(app, "settings")


def test_forget_an_event_and_see_it_gone(app: dict[str, Any]) -> None:
    page = app["page"]
    page.goto(app["origin"] + f"/events/{app['throwaway']}")
    page.click("a:has-text('Forget this event')")
    page.wait_for_selector("#forget-result .confirm")
    assert "1 event(s) would be forgotten" in page.inner_text("#forget-result")
    shot(app, "forget")
    page.click("#forget-result button.danger")  # the confirmation dialog is accepted
    page.wait_for_selector("[data-forgot='1']")
    response = page.goto(app["origin"] + f"/events/{app['throwaway']}")
    assert response is not None and response.status == 404
    page.goto(app["origin"] + "/")
    assert "a throwaway prompt to forget later" not in page.inner_text("[data-live-list]")


def test_refused_without_cookie_with_foreign_origin_and_without_csrf(app: dict[str, Any]) -> None:
    page = app["page"]
    stranger = app["pw"].chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    try:
        other = stranger.new_page()
        response = other.goto(app["origin"] + "/")
        assert response is not None and response.status == 401
        assert "Not logged in" in other.inner_text("body") and "pool" not in other.inner_text("body")
    finally:
        stranger.close()
    foreign = app["context"].request.get(app["origin"] + "/api/sessions", headers={"Origin": "http://evil.example"})
    assert foreign.status == 403
    page.goto(app["origin"] + "/")
    status = page.evaluate(
        "async () => (await fetch('/forget', {method: 'POST',"
        " body: new URLSearchParams({kind: 'range', since: '3000d'})})).status"
    )
    assert status == 403
    token = json.loads(page.get_attribute("body", "hx-headers") or "{}")["X-CSRF-Token"]
    with_token = page.evaluate(
        "async (t) => (await fetch('/forget', {method: 'POST', headers: {'X-CSRF-Token': t},"
        " body: new URLSearchParams({kind: 'range', until: '2000-01-01'})})).status",
        token,
    )
    assert with_token == 200  # the same session, with its token, is let through


def test_a_stored_script_renders_inert(app: dict[str, Any]) -> None:
    page = app["page"]
    page.goto(app["origin"] + f"/events/{app['hostile']}")
    assert "<script>window.pwned = 1</script>" in page.inner_text("pre.full-content")
    page.goto(app["origin"] + "/")
    page.wait_for_timeout(300)
    assert page.evaluate("window.pwned") is None
    assert page.locator("[data-live-list] script").count() == 0
    assert "stored hostile text" in page.inner_text("[data-live-list]")


@pytest.mark.parametrize("name", ["sessions", "stats", "workflow", "context", "export"])
def test_screenshots_of_the_other_pages(app: dict[str, Any], name: str) -> None:
    page = app["page"]
    response = page.goto(app["origin"] + f"/{name}")
    assert response is not None and response.status == 200
    time.sleep(0.1)
    shot(app, name)
