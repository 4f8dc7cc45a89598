"""The team key: AES-256-GCM (``cryptography``'s AEAD), kept in a file outside the database.

Each sealed event gets a fresh 96-bit nonce from ``os.urandom`` (random nonces: at most 2**32 seals per key
keep the collision risk under NIST's 2**-32 bound, far beyond one team's memory), stored in front of the
ciphertext. The associated data is ``memlane:<project>:<event id>``, so an administrator can neither read a
row nor move it to another event or project without the open failing. The key file holds the 32 key bytes
in base64 and must be private (mode 0600), like a password file.
"""

from __future__ import annotations

import base64
import os

from memlane.errors import MemlaneError

NONCE_BYTES = 12
KEY_CHECK = b"memlane team key check"


class KeyError_(MemlaneError):
    """A team key that cannot be used (missing, unreadable, readable by others, wrong for the project)."""


class TeamKey:
    def __init__(self, key: bytes) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        if len(key) != 32:
            raise KeyError_("a team key is 32 bytes (AES-256); make one with `memlane team key new FILE`")
        self._aead = AESGCM(key)

    @classmethod
    def new_file(cls, path: str) -> None:
        if os.path.exists(path):
            raise KeyError_(f"{path} exists; a team key is never overwritten")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(base64.b64encode(os.urandom(32)).decode() + "\n")

    @classmethod
    def load(cls, path: str) -> TeamKey:
        if not path:
            raise KeyError_("this project is encrypted: set team.key_file (or MEMLANE_TEAM_KEY_FILE) to the team key")
        try:
            st = os.stat(path)
            with open(path) as f:
                raw = f.read().strip()
        except OSError as exc:
            raise KeyError_(f"cannot read the team key {path}: {exc.strerror}") from exc
        if st.st_mode & 0o077:
            raise KeyError_(
                f"team key {path} is readable by others (mode {st.st_mode & 0o777:o}); run: chmod 600 {path}"
            )
        try:
            key = base64.b64decode(raw, validate=True)
        except ValueError as exc:
            raise KeyError_(f"team key {path} is not base64 text") from exc
        return cls(key)

    def seal(self, plain: bytes, aad: str) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        return nonce + self._aead.encrypt(nonce, plain, aad.encode())

    def open(self, sealed: bytes, aad: str) -> bytes:
        from cryptography.exceptions import InvalidTag

        try:
            return self._aead.decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], aad.encode())
        except InvalidTag as exc:
            raise KeyError_("the team key does not open this project's events (another key?)") from exc

    def check(self, project: str) -> bytes:
        return self.seal(KEY_CHECK, f"memlane:{project}:key-check")

    def verify(self, project: str, check: bytes) -> None:
        if self.open(check, f"memlane:{project}:key-check") != KEY_CHECK:  # pragma: no cover - AEAD fails first
            raise KeyError_("the team key does not match this project")
