"""Who may use the dashboard: one-time login links, the session cookie, CSRF tokens and the optional password.

- ``memlane dashboard`` asks the daemon (with its Bearer token) for a one-time code and opens
  ``/login?code=…``; the code works once, for ``LOGIN_TTL_S``, and is exchanged for a session cookie.
- The session cookie is ``HttpOnly; SameSite=Strict; Path=/`` and signed with a key derived from the daemon's
  token (HMAC-SHA256), so it survives a daemon restart and dies with the token. It carries a random session id
  and an expiry, nothing else.
- Every mutation made with the cookie (POST, PUT, PATCH, DELETE) must carry ``X-CSRF-Token``: an HMAC of the
  session id that only pages served to that session contain. Bearer-token clients need none (a browser never
  sends that header on its own).
- A password (``dashboard.password_hash``, scrypt) lets a person log in at ``/login`` without a link; it is
  required before the daemon binds anything but loopback (``daemon.server._bind``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from http.cookies import SimpleCookie
from typing import Any

from memlane.errors import InputError

SESSION_COOKIE = "memlane_session"
PROJECT_COOKIE = "memlane_project"
CSRF_HEADER = "x-csrf-token"
LOGIN_TTL_S = 600  # a login link works for ten minutes, once
SESSION_TTL_S = 7 * 24 * 3600
UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
PUBLIC_PREFIXES = ("/login", "/assets/")
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
MIN_PASSWORD = 10


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hash_password(password: str) -> str:
    """``scrypt$n$r$p$salt$hash`` for ``dashboard.password_hash`` (never the password itself)."""
    if len(password) < MIN_PASSWORD:
        raise InputError(f"a dashboard password needs at least {MIN_PASSWORD} characters")
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(salt)}${_b64(digest)}"


def check_password(password: str, stored: str) -> bool:
    try:
        kind, n, r, p, salt, digest = stored.split("$")
        if kind != "scrypt":
            return False
        got = hashlib.scrypt(password.encode(), salt=_unb64(salt), n=int(n), r=int(r), p=int(p))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, _unb64(digest))


def cookies(headers: dict[bytes, bytes]) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get(b"cookie", b"").decode("latin-1"))
    except Exception:  # noqa: BLE001 - a malformed Cookie header is no cookie
        return {}
    return {k: m.value for k, m in jar.items()}


class Auth:
    """Login codes (in memory, one use each), signed session cookies and CSRF tokens."""

    def __init__(self, token: str, password_hash: str = "") -> None:
        self.key = hmac.new(token.encode(), b"memlane-dashboard-session", hashlib.sha256).digest()
        self.password_hash = password_hash
        self._codes: dict[str, tuple[float, str | None]] = {}
        self._lock = threading.Lock()

    # ---- one-time login links ------------------------------------------------------------------

    def issue_code(self, project_id: str | None = None) -> str:
        code = secrets.token_urlsafe(24)
        now = time.time()
        with self._lock:
            self._codes = {c: v for c, v in self._codes.items() if v[0] > now}
            self._codes[code] = (now + LOGIN_TTL_S, project_id)
        return code

    def use_code(self, code: str) -> tuple[bool, str | None]:
        """(valid, the project the link was made for); a code is gone once used."""
        with self._lock:
            entry = self._codes.pop(code, None)
        if entry is None or entry[0] < time.time():
            return False, None
        return True, entry[1]

    # ---- the session cookie --------------------------------------------------------------------

    def new_session(self) -> str:
        body = _b64(json.dumps({"sid": secrets.token_urlsafe(16), "exp": int(time.time()) + SESSION_TTL_S}).encode())
        return f"{body}.{self._sign(body)}"

    def _sign(self, body: str) -> str:
        return _b64(hmac.new(self.key, body.encode(), hashlib.sha256).digest())

    def session_id(self, cookie: str | None) -> str | None:
        """The session id of a valid, unexpired cookie; None otherwise."""
        if not cookie or "." not in cookie:
            return None
        body, sig = cookie.rsplit(".", 1)
        if not hmac.compare_digest(sig, self._sign(body)):
            return None
        try:
            data: Any = json.loads(_unb64(body))
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("exp"), int) or data["exp"] < time.time():
            return None
        sid = data.get("sid")
        return sid if isinstance(sid, str) else None

    def csrf(self, sid: str) -> str:
        return _b64(hmac.new(self.key, f"csrf:{sid}".encode(), hashlib.sha256).digest())

    # ---- the check the daemon's Guard makes ----------------------------------------------------

    def check(self, method: str, path: str, headers: dict[bytes, bytes]) -> tuple[int, str] | None:
        """None when a request without a Bearer token may go on; else (status, reason).

        A valid session cookie lets any route run; a mutation also needs the session's CSRF token.
        """
        if path.startswith(PUBLIC_PREFIXES):
            return None
        sid = self.session_id(cookies(headers).get(SESSION_COOKIE))
        if sid is None:
            return 401, "missing or wrong token"
        if method in UNSAFE:
            sent = headers.get(CSRF_HEADER.encode(), b"").decode("latin-1")
            if not sent or not hmac.compare_digest(sent, self.csrf(sid)):
                return 403, "missing or wrong CSRF token"
        return None

    def request_csrf(self, headers: dict[bytes, bytes]) -> str:
        """The CSRF token to embed in a page served to this request's session ('' without one)."""
        sid = self.session_id(cookies(headers).get(SESSION_COOKIE))
        return self.csrf(sid) if sid else ""
