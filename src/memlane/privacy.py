"""The privacy filter: private sections and secrets are removed before anything touches disk.

Two passes, in this order, so a secret inside a private section is counted once (as private):

1. **Private tags** — ``<private>…</private>`` (and ``[private]…[/private]`` / ``<!-- private -->…
   <!-- /private -->`` when ``privacy.formats`` enables them), case-insensitive, across lines, replaced
   by ``privacy.marker``. Tags inside fenced code blocks and inline code are literal text. Nested
   tags: the outermost pair wins. An opening tag that is never closed leaves the rest of the text
   unfiltered and adds a warning (guessing where a private section ends could destroy or leak text).
   Empty sections vanish without a marker.
2. **Secrets** (``privacy.redact_secrets``) — values of secret-named keys (``password=…``,
   ``"api_key": "…"``, ``export GITHUB_TOKEN=…``), Authorization headers, well-known token formats
   (AWS, GitHub, GitLab, Slack, OpenAI, Anthropic, Google, Stripe, JWT), PEM private keys and
   passwords in connection URLs are replaced by ``privacy.secret_marker``; key names stay readable.
   Secrets inside code blocks are redacted too. Placeholders (``${DB_PASSWORD}``, ``<your-token>``,
   ``$TOKEN``), numbers (``max_tokens: 100``) and null-ish values are left alone.

Stdlib only and linear-time: every hook process imports this, and the patterns are written so no
input can make them backtrack catastrophically (key names are found by their secret word and then
read backwards, not by a nested quantifier).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memlane.config import PrivacyConfig


class FilterResult:
    """The filtered text and what was removed from it."""

    __slots__ = ("chars_filtered", "private_sections", "secrets_redacted", "text", "warnings")

    def __init__(
        self,
        text: str = "",
        private_sections: int = 0,
        secrets_redacted: int = 0,
        chars_filtered: int = 0,
        warnings: list[str] | None = None,
    ) -> None:
        self.text = text
        self.private_sections = private_sections
        self.secrets_redacted = secrets_redacted
        self.chars_filtered = chars_filtered
        self.warnings = warnings if warnings is not None else []

    def add(self, other: FilterResult) -> None:
        self.private_sections += other.private_sections
        self.secrets_redacted += other.secrets_redacted
        self.chars_filtered += other.chars_filtered
        self.warnings.extend(other.warnings)

    def __repr__(self) -> str:
        return (
            f"FilterResult(private_sections={self.private_sections}, secrets_redacted={self.secrets_redacted}, "
            f"chars_filtered={self.chars_filtered}, warnings={self.warnings!r})"
        )


# ---- private tags ------------------------------------------------------------------------------

_TAGS = {
    "xml": (r"<private\s*>", r"</private\s*>"),
    "bracket": (r"\[private\]", r"\[/private\]"),
    "comment": (r"<!--\s*private\s*-->", r"<!--\s*/private\s*-->"),
}
_HINTS = {"xml": "<private", "bracket": "[private]", "comment": "private"}
_FENCE = re.compile(
    r"^[ \t]{0,3}(`{3,}|~{3,})[^\n]*\n(?:.*?\n)??[ \t]{0,3}\1[ \t]*$"  # a closed fence
    r"|^[ \t]{0,3}(`{3,}|~{3,})[^\n]*(?:\n.*)?\Z",  # an unterminated fence runs to the end
    re.MULTILINE | re.DOTALL,
)
_INLINE = re.compile(r"`[^`\n]+`")
_token_res: dict[tuple[str, ...], re.Pattern[str]] = {}


def _token_re(formats: tuple[str, ...]) -> re.Pattern[str]:
    if formats not in _token_res:
        parts = []
        for name in formats:
            opener, closer = _TAGS[name]
            parts.append(f"(?P<o_{name}>{opener})|(?P<c_{name}>{closer})")
        _token_res[formats] = re.compile("|".join(parts), re.IGNORECASE)
    return _token_res[formats]


def _protected(text: str) -> list[tuple[int, int]]:
    """Spans of fenced code blocks and inline code, where tags are literal."""
    spans = [m.span() for m in _FENCE.finditer(text)]
    for m in _INLINE.finditer(text):
        if not any(s <= m.start() < e for s, e in spans):
            spans.append(m.span())
    return spans


def has_private(text: str, cfg: PrivacyConfig) -> bool:
    lowered = text.lower()
    return any(_HINTS[f] in lowered for f in cfg.formats if f in _HINTS)


def _strip_private(text: str, cfg: PrivacyConfig, result: FilterResult) -> str:
    formats = tuple(f for f in cfg.formats if f in _TAGS)
    if not formats or not has_private(text, cfg):
        return text
    spans = _protected(text) if ("`" in text or "~~~" in text) else []
    sections: list[tuple[int, int, int, int]] = []  # (start, inner_start, inner_end, end)
    depth = 0
    kind = ""
    start = inner = 0
    for match in _token_re(formats).finditer(text):
        pos = match.start()
        if any(s <= pos < e for s, e in spans):
            continue
        group = match.lastgroup or ""
        is_open, name = group.startswith("o_"), group[2:]
        if depth == 0:
            if is_open:
                depth, kind, start, inner = 1, name, pos, match.end()
            continue
        if name != kind:
            continue
        if is_open:
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                sections.append((start, inner, pos, match.end()))
    if depth:
        result.warnings.append(f"unclosed private tag at offset {start}; left unfiltered")
    if not sections:
        return text
    out = []
    last = 0
    for s, i, e, end in sections:
        out.append(text[last:s])
        empty = not text[i:e].strip()
        if not empty:
            out.append(cfg.marker)
            result.private_sections += 1
        result.chars_filtered += end - s
        last = end
    out.append(text[last:])
    return "".join(out)


# ---- secrets -----------------------------------------------------------------------------------

_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)")
# Well-known token formats, as one alternation so the text is scanned once.
_TOKENS = re.compile(
    r"\b(?:"
    r"sk-ant-[A-Za-z0-9_-]{20,}"  # Anthropic (before OpenAI's sk-)
    r"|sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"  # OpenAI
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"  # AWS access key ids
    r"|(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}"  # GitHub
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}"  # Slack tokens
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API keys
    r"|(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"  # Stripe secret / restricted keys
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWTs
    r")|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"  # Slack webhooks
)
# "Authorization: Bearer xyz", "-H 'Authorization: token xyz'", and a bare "Bearer <long token>".
_AUTH = re.compile(
    r"(?i)(\bauthorization\b[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|digest)\s+)([A-Za-z0-9._~+/=-]{6,})"
    r"|(\bbearer\s+)([A-Za-z0-9._~+/-]{16,}=*)"
)
# scheme://user:PASSWORD@host
_URL_CREDS = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@'\"]{0,200}:)([^\s@/'\"]{1,300})(@)")
# A secret word ending a key name, then the separator: the key is read backwards from here.
_KEY_END = re.compile(  # matched against the lower-cased text (IGNORECASE would defeat re's prefix scan)
    r"(password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|"
    r"private[_-]?key|signing[_-]?key|session[_-]?key|auth[_-]?key|credentials?)"
    r"(?P<sep>[\"']?[ \t]*(?::|=>|=)[ \t]*)"
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s\"',;}{)\]]+))?"
)
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_NULLISH = frozenset({"null", "none", "nil", "true", "false", "undefined", "''", '""', "redacted"})
_SECRET_KEY = re.compile(
    r"(?i)(?:^|[_.-])(password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|"
    r"secret[_-]?key|private[_-]?key|signing[_-]?key|session[_-]?key|auth[_-]?key|credentials?)$"
)


def is_secret_key(name: str) -> bool:
    """Does a key name denote a secret (``DB_PASSWORD``, ``apiKey``) rather than, say, ``max_tokens``?"""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name.strip())  # camelCase → snake_case
    return _SECRET_KEY.search(name) is not None


def _placeholder(value: str, marker: str) -> bool:
    v = value.strip()
    if len(v) < 3 or v.lower() in _NULLISH or v.isdigit() or marker in v or v == marker[:-1]:
        return True
    if v.startswith(("${", "$(", "{{", "<", "%(", "process.env", "os.environ", "os.getenv", "getenv(", "env(")):
        return True
    if v.startswith("$") and v[1:].replace("_", "").isalnum():
        return True  # $TOKEN: a variable, not the secret
    return set(v) <= {"*", "x", "X", "•", "."}  # already masked


def _key_values(text: str, marker: str, result: FilterResult) -> str:
    out: list[str] = []
    last = 0
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters change length when lower-cased; keep offsets right
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    for m in _KEY_END.finditer(lowered):
        start = m.start()
        # The secret word as the tail of a longer word ("monkeypwd") is not a key; camelCase apiKey is.
        if start > 0 and text[start - 1].isalnum() and not text[start].isupper():
            continue
        key_start = start
        while key_start > 0 and text[key_start - 1] in _KEY_CHARS and start - key_start < 100:
            key_start -= 1
        key = text[key_start : m.end(1)].lstrip("-.")
        if not is_secret_key(key):
            continue
        group = "dq" if m.group("dq") is not None else "sq" if m.group("sq") is not None else "bare"
        if m.group(group) is None:
            continue
        vs, ve = m.span(group)
        value = text[vs:ve]  # from the original text: the match ran on its lower-cased copy
        if _placeholder(value, marker):
            continue
        out.append(text[last:vs])
        out.append(marker)
        result.secrets_redacted += 1
        result.chars_filtered += ve - vs
        last = ve
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def _sub(pattern: re.Pattern[str], text: str, marker: str, result: FilterResult, keep: tuple[int, ...] = ()) -> str:
    def repl(m: re.Match[str]) -> str:
        if keep:  # keep the named prefix/suffix groups, replace the secret group
            groups = [g for g in range(1, (m.lastindex or 0) + 1) if m.group(g) is not None]
            prefix, secret = m.group(groups[0]), m.group(groups[1])
            suffix = m.group(groups[2]) if len(groups) > 2 else ""
            if _placeholder(secret, marker):
                return m.group(0)
            result.secrets_redacted += 1
            result.chars_filtered += len(secret)
            return f"{prefix}{marker}{suffix}"
        result.secrets_redacted += 1
        result.chars_filtered += len(m.group(0))
        return marker

    return pattern.sub(repl, text)


_extra_cache: dict[tuple[str, ...], tuple[list[re.Pattern[str]], list[str]]] = {}


def _extra(patterns: list[str]) -> tuple[list[re.Pattern[str]], list[str]]:
    key = tuple(patterns)
    if key not in _extra_cache:
        compiled, warnings = [], []
        for raw in patterns:
            try:
                compiled.append(re.compile(raw))
            except re.error as exc:
                warnings.append(f"privacy.extra_patterns: invalid regular expression {raw!r} skipped ({exc})")
        _extra_cache[key] = (compiled, warnings)
    return _extra_cache[key]


def _redact(text: str, cfg: PrivacyConfig, result: FilterResult) -> str:
    marker = cfg.secret_marker
    if "PRIVATE KEY" in text:
        text = _sub(_PEM, text, marker, result)
    text = _sub(_TOKENS, text, marker, result)
    if "://" in text:
        text = _sub(_URL_CREDS, text, marker, result, keep=(1, 3))
    lowered = text.lower()
    if "bearer" in lowered or "authorization" in lowered:
        text = _sub(_AUTH, text, marker, result, keep=(1,))
    text = _key_values(text, marker, result)
    compiled, warnings = _extra(cfg.extra_patterns)
    result.warnings.extend(warnings)
    for pattern in compiled:
        text = _sub(pattern, text, marker, result)
    return text


# ---- public API --------------------------------------------------------------------------------


def filter_text(text: str, cfg: PrivacyConfig) -> FilterResult:
    """Remove private sections, then redact secrets."""
    result = FilterResult(text)
    if not cfg.enabled or not text:
        return result
    out = _strip_private(text, cfg, result)
    if cfg.redact_secrets:
        out = _redact(out, cfg, result)
    result.text = out
    return result


def filter_value(value: Any, cfg: PrivacyConfig) -> tuple[Any, FilterResult]:
    """Filter every string inside JSON-like data; a string under a secret-named key is redacted whole."""
    total = FilterResult("")
    return _walk(value, cfg, total, secret=False), total


def _walk(value: Any, cfg: PrivacyConfig, total: FilterResult, secret: bool) -> Any:
    """Filter a JSON-like value without recursion: a tool_input nested 900 deep must not cost the event."""
    root: list[Any] = [None]
    # (value, under a secret-named key, container to fill, index or key in it)
    stack: list[tuple[Any, bool, Any, Any]] = [(value, secret, root, 0)]
    while stack:
        item, item_secret, parent, slot = stack.pop()
        if isinstance(item, dict):
            out: dict[Any, Any] = dict.fromkeys(item)  # keeps the key order
            parent[slot] = out
            stack.extend((v, isinstance(k, str) and is_secret_key(k), out, k) for k, v in item.items())
        elif isinstance(item, list | tuple):
            seq: list[Any] = [None] * len(item)
            parent[slot] = seq
            stack.extend((v, item_secret, seq, i) for i, v in enumerate(item))
        else:
            parent[slot] = _leaf(item, cfg, total, item_secret)
    return root[0]


def _leaf(value: Any, cfg: PrivacyConfig, total: FilterResult, secret: bool) -> Any:
    if isinstance(value, str):
        if secret and cfg.enabled and cfg.redact_secrets and not _placeholder(value, cfg.secret_marker):
            total.secrets_redacted += 1
            total.chars_filtered += len(value)
            return cfg.secret_marker
        result = filter_text(value, cfg)
        total.add(result)
        return result.text
    return value
