"""Who gets in: one-time links, the session cookie, CSRF on every mutation, Host/Origin, the password, binding."""

# ruff: noqa: F811  (the `site` fixture is imported from web_support)
from __future__ import annotations

import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from web_support import BASE, TOKEN, Site, csrf_in, site  # noqa: F401

from memlane import config, config_file
from memlane.daemon import server
from memlane.web import auth


def fresh_client(s: Site) -> TestClient:
    return TestClient(s.client.app, base_url=BASE)


def test_refused_without_the_cookie(site: Site) -> None:
    anon = fresh_client(site)
    assert anon.get("/api/sessions").status_code == 401
    page = anon.get("/", headers={"Accept": "text/html"})
    assert page.status_code == 401
    assert "memlane dashboard" in page.text and "pool timeout" not in page.text
    assert anon.get("/assets/app.css").status_code == 200  # the login page's own style


def test_a_login_link_works_once_and_sets_a_strict_httponly_cookie(site: Site) -> None:
    anon = fresh_client(site)
    path = anon.post("/api/dashboard/login", headers={"Authorization": f"Bearer {TOKEN}"}, json={}).json()["path"]
    first = anon.get(path, follow_redirects=False)
    assert first.status_code == 303
    cookie = first.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert TestClient(site.client.app, base_url=BASE).get(path, follow_redirects=False).status_code == 401


def test_an_expired_link_is_refused(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    code = site.daemon.web_auth.issue_code(None)
    later = time.time() + auth.LOGIN_TTL_S + 1
    monkeypatch.setattr(auth.time, "time", lambda: later)
    assert fresh_client(site).get(f"/login?code={code}", follow_redirects=False).status_code == 401


def test_a_forged_or_tampered_cookie_is_refused(site: Site) -> None:
    anon = fresh_client(site)
    good = site.client.cookies.get(auth.SESSION_COOKIE)
    body, sig = good.rsplit(".", 1)
    anon.cookies.set(auth.SESSION_COOKIE, body + "." + sig[::-1])
    assert anon.get("/api/sessions").status_code == 401
    other = auth.Auth("another-token").new_session()  # signed with another daemon's key
    anon.cookies.set(auth.SESSION_COOKIE, other)
    assert anon.get("/api/sessions").status_code == 401


def test_login_links_need_the_daemon_token(site: Site) -> None:
    answer = site.client.post("/api/dashboard/login", json={}, headers={"X-CSRF-Token": site.csrf})
    assert answer.status_code == 403  # a browser session cannot mint links


def test_foreign_origin_and_host_are_refused(site: Site) -> None:
    assert site.client.get("/api/sessions", headers={"Origin": "http://evil.example"}).status_code == 403
    r = site.client.post(
        "/forget",
        data={"kind": "event", "event": "x"},
        headers={"Origin": "http://evil.example", "X-CSRF-Token": site.csrf},
    )
    assert r.status_code == 403
    assert site.client.get("/api/sessions", headers={"Host": "evil.example:37777"}).status_code == 403


def test_every_mutation_needs_the_csrf_token(site: Site) -> None:
    before = site.memory().store.count()
    for method, path in [
        ("POST", "/forget"),
        ("POST", "/settings/set"),
        ("POST", "/regions/add"),
        ("PATCH", "/api/config"),
        ("POST", "/logout"),
    ]:
        for headers in ({}, {"X-CSRF-Token": "wrong"}):
            r = site.client.request(method, path, headers=headers, data={"kind": "range", "since": "3000d"})
            assert r.status_code == 403, (method, path)
            assert r.json() == {"error": "missing or wrong CSRF token"}
    assert site.memory().store.count() == before


def test_the_page_embeds_the_sessions_csrf_token(site: Site) -> None:
    assert csrf_in(site.client.get("/").text) == site.csrf


def test_security_headers_on_pages(site: Site) -> None:
    r = site.client.get("/")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert r.headers["x-frame-options"] == "DENY"


def test_logout_clears_the_cookie(site: Site) -> None:
    r = site.post("/logout", follow_redirects=False)
    assert r.status_code == 303 and 'memlane_session=""' in r.headers["set-cookie"]


def test_password_login(site: Site) -> None:
    site.daemon.web_auth.password_hash = auth.hash_password("correct horse battery")
    anon = fresh_client(site)
    assert "password" in anon.get("/login").text
    assert anon.post("/login", data={"password": "wrong password!"}, follow_redirects=False).status_code == 401
    ok = anon.post("/login", data={"password": "correct horse battery"}, follow_redirects=False)
    assert ok.status_code == 303
    assert anon.get("/api/sessions").status_code == 200


def test_short_passwords_are_refused() -> None:
    with pytest.raises(Exception, match="at least 10 characters"):
        auth.hash_password("short")


def test_binding_beyond_loopback_needs_a_password() -> None:
    with pytest.raises(server.DaemonError, match="set a dashboard password first"):
        server._bind("0.0.0.0", 0, "")
    sock = server._bind("0.0.0.0", 0, auth.hash_password("a long enough password"))
    sock.close()


def test_names_allowed_only_when_bound_elsewhere(memlane_home: Path) -> None:
    cfg = config.Config()
    assert server.allowed_names(cfg) == ()
    cfg.daemon.host = "192.0.2.10"
    cfg.dashboard.hosts = ["memory.lan"]
    assert server.allowed_names(cfg) == ("memory.lan", "192.0.2.10")


def test_set_password_cli_stores_a_hash(memlane_home: Path) -> None:
    from click.testing import CliRunner

    from memlane.cli.main import cli

    result = CliRunner().invoke(cli, ["dashboard", "--set-password"], input="a long secret phrase\n" * 2)
    assert result.exit_code == 0, result.output
    stored = config.load().dashboard.password_hash
    assert stored.startswith("scrypt$") and "a long secret phrase" not in stored
    assert auth.check_password("a long secret phrase", stored)
    config_file.unset("dashboard.password_hash")


def test_logout_from_a_page_navigates_to_the_login_page(site: Site) -> None:
    r = site.client.post("/logout", headers={"X-CSRF-Token": site.csrf, "HX-Request": "true"}, follow_redirects=False)
    assert r.status_code == 200 and r.headers["hx-redirect"] == "/login"
    assert 'memlane_session=""' in r.headers["set-cookie"]
