"""The privacy filter: private sections and secrets are removed before anything touches disk.

Two passes, in this order, so a secret inside a private section is counted once (as private):

1. **Private tags** — ``<private>…</private>`` (and ``[private]…[/private]`` / ``<!-- private -->…
   <!-- /private -->`` when ``privacy.formats`` enables them), case-insensitive, across lines, replaced
   by ``privacy.marker``. Tags inside fenced code blocks and inline code are literal text. Nested
   tags: the outermost pair wins. An opening tag that is never closed leaves the rest of the text
   unfiltered and adds a warning (guessing where a private section ends could destroy or leak text).
   Empty sections vanish without a marker.
2. **Secrets** (``privacy.redact_secrets``) — replaced by ``privacy.secret_marker``; key names,
   commands and URLs around them stay readable. In order: PEM/PGP/PuTTY private keys; ~50 token
   formats by prefix (AWS, GitHub, GitLab, Slack, OpenAI, Anthropic, Google, Stripe, Hugging Face,
   SendGrid, npm, PyPI, JWT, …); passwords and tokens in URLs; Authorization headers; Azure SAS
   signatures; command-line credentials (``mysql -p…``, ``--password …``, ``docker login -p``,
   ``curl -u user:…``, …); htpasswd/shadow hashes, ``.netrc``, ``.pgpass``, XML/.NET config values;
   a bare AWS secret key or Azure account key where the text is about AWS/Azure; secrets in prose
   ("my password is …"); and values of secret-named keys (``DB_PASSWORD=…``, ``"apiKey": "…"``,
   ``REDIS_PASS: …``) — weak names such as ``*_KEY`` or ``auth`` only when the value looks random
   (character classes + Shannon entropy, detect-secrets' idea). Placeholders (``${DB_PASSWORD}``,
   ``your-api-key-here``, ``$TOKEN``, ``********``), code (``getpass.getpass()``), words about
   secrets ("Password: must be at least 12 characters long"), paths (``PWD=/home/x``) and numbers
   are left alone. ``tests/fixtures/secrets`` holds the corpus this is measured on
   (``benchmarks/secrets_corpus.py``); ``detect`` reports what the rules find, for
   ``memlane privacy scan``.

Stdlib only and linear-time: every hook process imports this, and the patterns are written so no
input can make them backtrack catastrophically (key names are found by their secret word and then
read backwards, not by a nested quantifier).

Why one module (~940 lines): the two passes and ~50 secret rules are one ordered pipeline that shares
``FilterResult``, the protected code spans and the placeholder/entropy tests, and the order of the rules
is part of their meaning (a later rule must not re-match an earlier marker). Every hook process imports
it, so each extra file would be start-up time on the capture path for no reader's gain; the sections
are marked (``# ---- private tags``, ``# ---- secrets``, ``# ---- public API``).
"""

from __future__ import annotations

import math
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from memlane.config import PrivacyConfig


class FilterResult:
    """The filtered text and what was removed from it."""

    __slots__ = (
        "anonymized",
        "chars_filtered",
        "found",
        "private_sections",
        "secrets_redacted",
        "text",
        "unclosed_tags",
        "warnings",
    )

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
        self.unclosed_tags = 0  # opening private tags never closed: the text after one was kept (see _strip_private)
        self.anonymized = 0  # e-mail addresses, phone numbers and listed names replaced (privacy.anonymize)
        # (kind, secret) of each redaction, only when asked for (``detect``): the hooks never keep them.
        self.found: list[tuple[str, str]] | None = None

    def add(self, other: FilterResult) -> None:
        self.private_sections += other.private_sections
        self.secrets_redacted += other.secrets_redacted
        self.chars_filtered += other.chars_filtered
        self.warnings.extend(other.warnings)
        self.unclosed_tags += other.unclosed_tags
        self.anonymized += other.anonymized

    def __repr__(self) -> str:
        return (
            f"FilterResult(private_sections={self.private_sections}, secrets_redacted={self.secrets_redacted}, "
            f"chars_filtered={self.chars_filtered}, unclosed_tags={self.unclosed_tags}, anonymized={self.anonymized}, "
            f"warnings={self.warnings!r})"
        )


# ---- private tags ------------------------------------------------------------------------------

_TAGS = {
    "xml": (r"<private\s*>", r"</private\s*>"),
    "bracket": (r"\[private\]", r"\[/private\]"),
    "comment": (r"<!--\s*private\s*-->", r"<!--\s*/private\s*-->"),
}
_HINTS = {"xml": "<private", "bracket": "[private]", "comment": "private"}
UNCLOSED = "unclosed private tag"  # how a FilterResult warning about one starts


class _Lazy:
    """A regex compiled on first use: most rules sit behind a substring gate that most texts never
    pass, and compiling every rule up front cost each hook process ~6 ms (measured)."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled


_FENCE = _Lazy(
    r"^[ \t]{0,3}(`{3,}|~{3,})[^\n]*\n(?:.*?\n)??[ \t]{0,3}\1[ \t]*$"  # a closed fence
    r"|^[ \t]{0,3}(`{3,}|~{3,})[^\n]*(?:\n.*)?\Z",  # an unterminated fence runs to the end
    re.MULTILINE | re.DOTALL,
)
_INLINE = _Lazy(r"`[^`\n]+`")
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
    spans = [m.span() for m in _FENCE.get().finditer(text)]
    for m in _INLINE.get().finditer(text):
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
        result.warnings.append(f"{UNCLOSED} at offset {start}; left unfiltered")
        result.unclosed_tags += 1
    if not sections:
        return text
    out = []
    last = 0
    lines = bool(getattr(cfg, "preserve_line_count", False))
    for s, i, e, end in sections:
        out.append(text[last:s])
        empty = not text[i:e].strip()
        if not empty:
            out.append(cfg.marker)
            result.private_sections += 1
        if lines:  # the section's line breaks stay: line numbers after it (tracebacks, diffs) still point right
            out.append("\n" * text.count("\n", s, end))
        result.chars_filtered += end - s
        last = end
    out.append(text[last:])
    return "".join(out)


# ---- secrets -----------------------------------------------------------------------------------
#
# Ported from detect-secrets' ideas rather than imported: its import alone costs ~120 ms (measured,
# benchmarks/secrets_corpus.py --timing), more than twice a capture hook's whole 50 ms budget. What
# it does well is kept: known token formats as prefix regexes, keyword assignments (``*_PASSWORD=``)
# with a placeholder filter, and an entropy check where the key name alone is weak evidence (``*_KEY``).
# Every rule is a regex compiled on first use, most behind a cheap substring test, and none has
# nested quantifiers: a hook pays well under a millisecond for a typical event, a few per 100 KB,
# and no input can make a pattern backtrack catastrophically.

_PEM = _Lazy(
    r"-----BEGIN (?:[A-Z0-9 ]*PRIVATE KEY|PGP PRIVATE KEY BLOCK)-----[\s\S]*?"
    r"(?:-----END (?:[A-Z0-9 ]*PRIVATE KEY|PGP PRIVATE KEY BLOCK)-----|\Z)"
    r"|Private-Lines: \d+\r?\n(?:[A-Za-z0-9+/=]+\r?\n)*[A-Za-z0-9+/=]*"  # PuTTY .ppk
)
# Well-known token formats: (literal prefixes, regex, kind). Tokens have no whitespace and are 20+
# characters long, so only such words of a text are searched (``_tokens``), and only with the specs
# whose prefix occurs in them: on 100 KB of log lines or prose that costs ~1-2 ms, against 5-10 ms
# for one pass of the whole alternation over the whole text (measured). A spec that starts with its
# own lookbehind sets its own boundary (Telegram's "bot<token>" in URLs); the others start a word.
_TOKEN_SPECS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("sk-ant-",), r"sk-ant-[A-Za-z0-9_-]{20,}", "Anthropic API key"),
    (("sk-",), r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", "OpenAI API key"),
    (
        ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA", "ABIA", "ACCA"),
        r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|ABIA|ACCA)[A-Z0-9]{16}\b",
        "AWS access key id",
    ),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{30,}", "GitHub token"),
    (("github_pat_",), r"github_pat_[A-Za-z0-9_]{22,}", "GitHub token"),
    (
        ("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glcbt-", "glimt-", "gloas-", "glsoat-"),
        r"gl(?:pat|dt|rt|ptt|ft|cbt|imt|oas|soat)-[A-Za-z0-9_-]{20,}",
        "GitLab token",
    ),
    (("GR1348941",), r"GR1348941[A-Za-z0-9_-]{20,}", "GitLab runner token"),
    (("xox", "xapp-"), r"xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}", "Slack token"),
    (
        ("hooks.slack.com",),
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",
        "Slack webhook",
    ),
    (("discord",), r"https://discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+", "Discord webhook"),
    (("AIza",), r"AIza[0-9A-Za-z_-]{35}", "Google API key"),
    (("GOCSPX-",), r"GOCSPX-[A-Za-z0-9_-]{20,}", "Google OAuth client secret"),
    (("ya29.",), r"ya29\.[A-Za-z0-9_-]{20,}", "Google OAuth token"),
    (("1//0",), r"1//0[A-Za-z0-9_-]{30,}", "Google OAuth refresh token"),
    (("sk_live_", "sk_test_", "rk_live_", "rk_test_"), r"[sr]k_(?:live|test)_[0-9A-Za-z]{16,}", "Stripe key"),
    (("whsec_",), r"whsec_[A-Za-z0-9+/=]{20,}", "Stripe webhook secret"),
    (("hf_", "api_org_"), r"hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,}", "Hugging Face token"),
    (("SG.",), r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}", "SendGrid key"),
    (("npm_",), r"npm_[A-Za-z0-9]{36}", "npm token"),
    (("pypi-",), r"pypi-[A-Za-z0-9_-]{50,}", "PyPI token"),
    (("SK",), r"SK[0-9a-fA-F]{32}\b", "Twilio API key"),
    (("key-",), r"key-[0-9a-f]{32}\b", "Mailgun key"),
    (("-us",), r"[0-9a-f]{32}-us\d{1,2}\b", "Mailchimp key"),
    (("shpat_", "shpss_", "shpca_", "shppa_"), r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}", "Shopify token"),
    (("dop_v1_", "doo_v1_", "dor_v1_"), r"do[opr]_v1_[a-f0-9]{64}", "DigitalOcean token"),
    (("HRKU-",), r"HRKU-[A-Za-z0-9_-]{20,}", "Heroku key"),
    (
        ("xai-", "gsk_", "pplx-", "r8_"),
        r"xai-[A-Za-z0-9]{40,}|gsk_[A-Za-z0-9]{40,}|pplx-[A-Za-z0-9]{40,}|r8_[A-Za-z0-9]{30,}",
        "AI API key",
    ),
    (("lin_api_",), r"lin_api_[A-Za-z0-9]{30,}", "Linear key"),
    (("ntn_", "secret_"), r"ntn_[A-Za-z0-9]{30,}|secret_[A-Za-z0-9]{43}\b", "Notion token"),
    (("hvs.", "hvb."), r"hv[sb]\.[A-Za-z0-9_-]{24,}", "Vault token"),
    (("dp.",), r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,}", "Doppler token"),
    (("pscale_",), r"pscale_(?:pw|tkn|oauth)_[A-Za-z0-9_.-]{30,}", "PlanetScale token"),
    (("PMAK-",), r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", "Postman key"),
    (("AGE-SECRET-KEY-1",), r"AGE-SECRET-KEY-1[0-9A-Z]{58}", "age secret key"),
    (("dapi",), r"dapi[a-f0-9]{32}\b", "Databricks token"),
    (("NRAK-",), r"NRAK-[A-Z0-9]{27}", "New Relic key"),
    (("sbp_",), r"sbp_[a-f0-9]{40}", "Supabase token"),
    (("figd_",), r"figd_[A-Za-z0-9_-]{30,}", "Figma token"),
    (("pul-",), r"pul-[a-f0-9]{40}", "Pulumi token"),
    (("nfp_",), r"nfp_[A-Za-z0-9]{36}", "Netlify token"),
    (("glsa_", "glc_"), r"glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}|glc_[A-Za-z0-9+/=]{32,}", "Grafana token"),
    (("sq0atp-", "sq0csp-", "EAAA"), r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}|EAAA[A-Za-z0-9_-]{60,}", "Square token"),
    (("ATATT3",), r"ATATT3[A-Za-z0-9_=-]{100,}", "Atlassian token"),
    (("sntrys_", "sntryu_"), r"sntry[su]_[A-Za-z0-9+/=_-]{40,}", "Sentry token"),
    (("LTAI",), r"LTAI[A-Za-z0-9]{12,20}\b", "Alibaba key"),
    (("rubygems_",), r"rubygems_[a-f0-9]{48}", "RubyGems key"),
    ((".",), r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}\b", "Discord bot token"),
    (("eyJ",), r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", "JWT"),
    ((":AA",), r"(?<![0-9])\d{8,10}:AA[A-Za-z0-9_-]{33}\b", "Telegram bot token"),
    (("Q~",), r"[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}", "Azure AD client secret"),
    ((".atlasv1.",), r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}", "Terraform Cloud token"),
)


def _tokens_re(indices: tuple[int, ...]) -> re.Pattern[str]:
    """One alternation of the token specs whose literal prefixes occur (re caches the compiled form)."""
    parts = []
    for i in indices:
        rx = _TOKEN_SPECS[i][1]
        parts.append(f"(?P<t{i}>{rx})" if rx.startswith("(?<") else f"(?P<t{i}>(?<![A-Za-z0-9_])(?:{rx}))")
    return re.compile("|".join(parts))


# An AWS secret access key has no prefix: 40 base64 characters. Only looked for when the text talks
# about AWS or secrets, and only mixed-case, digit-bearing, high-entropy runs (not paths, not hex).
_AWS_SECRET = _Lazy(r"(?<![A-Za-z0-9/+=])(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])")
# "Authorization: Bearer xyz", "-H 'Authorization: token xyz'", and a bare "Bearer <long token>".
_AUTH = _Lazy(
    r"(?i)(\b(?:proxy-)?authorization\b[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|digest)\s+)([A-Za-z0-9._~+/=-]{6,})"
    r"|(\bbearer\s+)([A-Za-z0-9._~+/-]{16,}=*)"
)
# scheme://user:PASSWORD@host
_URL_CREDS = _Lazy(r"(\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@'\"]{0,200}:)([^\s@/'\"]{1,300})(@)")
# scheme://TOKEN@host: a user part this long is a key (Sentry DSNs, git remotes with a token).
_URL_TOKEN = _Lazy(r"://(?P<v>[A-Za-z0-9_-]{32,})@")  # (24-digit job ids in ssh:// URLs are not keys)
# More places a secret follows a fixed word: (substring gates, regex with group v, check of the value).
_MORE: tuple[tuple[tuple[str, ...], _Lazy, str], ...] = (
    # PHP: define('DB_PASSWORD', 'value');
    (
        ("define(", "define ("),
        _Lazy(r"define[ \t]*\([ \t]*['\"](?P<k>[\w.-]{1,80})['\"][ \t]*,[ \t]*['\"](?P<v>[^'\"\n]{3,})['\"]"),
        "key",
    ),
    # echo 'pw' | sudo -S …
    (("sudo",), _Lazy(r"echo[ \t]+['\"]?(?P<v>[^\s'\"|]+)['\"]?[ \t]*\|[ \t]*sudo[ \t]+(?:-\w+[ \t]+)?-S\b"), "word"),
    # zip -P pw, 7z -ppw, sqlcmd/bcp -P pw, ssh-keygen -N pw, openssl -passin pass:pw
    (("zip",), _Lazy(r"\b(?:un)?zip(?:cloak)?\b[^\n|;&]{0,300}?[ \t]-P[ \t]+['\"]?(?P<v>[^\s'\"]+)"), "word"),
    (("7z",), _Lazy(r"\b7za?\b[^\n|;&]{0,300}?[ \t]-p(?P<v>[^\s-][^\s]*)"), "word"),
    (
        ("sqlcmd", "bcp", "osql", "isql"),
        _Lazy(r"\b(?:sqlcmd|bcp|osql|isql)\b[^\n|;&]{0,300}?[ \t]-P[ \t]*['\"]?(?P<v>[^\s'\"-][^\s'\"]*)"),
        "word",
    ),
    (("ssh-keygen",), _Lazy(r"\bssh-keygen\b[^\n|;&]{0,300}?[ \t]-[NP][ \t]+['\"]?(?P<v>[^\s'\"]+)"), "word"),
    (("pass:",), _Lazy(r"-pass(?:in|out)?[ \t]+pass:(?P<v>\S+)"), "word"),
    # "credentials: bob / B0bsPass!", "login: admin / password: …" (the second form is a key assignment)
    (
        ("cred", "login"),
        _Lazy(r"(?i)\b(?:credentials?|creds|login)[ \t]*[:=][ \t]*[^\s/]{1,80}[ \t]*/[ \t]*(?P<v>[^\s/]{4,})"),
        "made-up",
    ),
    # $ echo $DB_PASSWORD / printenv DB_PASSWORD, and the value on the next line
    (
        ("echo", "printenv"),
        _Lazy(r"(?:echo[ \t]+\"?\$\{?|printenv[ \t]+)(?P<k>\w{1,80})\}?\"?[ \t]*\r?\n(?P<v>[^\s]{3,})"),
        "key",
    ),
    # docker login --password-stdin <<< 'pw', echo 'pw' | docker login --password-stdin
    (("password-stdin",), _Lazy(r"--password-stdin\b[^\n|]{0,200}?<<<[ \t]*['\"]?(?P<v>[^\s'\"]+)"), "word"),
    (
        ("password-stdin",),
        _Lazy(
            r"(?:echo|printf)[ \t]+(?:-n[ \t]+)?['\"]?(?P<v>[^\s'\"|$]+)['\"]?[ \t]*\|[^\n|]{0,200}?--password-stdin"
        ),
        "word",
    ),
    # Google app passwords: four groups of four letters
    (
        ("app password", "app-password", "App password"),
        _Lazy(r"(?i)app[ -]?password\b[^\n]{0,40}?\b(?P<v>[a-z]{4} [a-z]{4} [a-z]{4} [a-z]{4})\b"),
        "word",
    ),
)
# Command-line forms: (substring gates, regex whose group ``v`` is the secret).
_CLI = (
    # --password VALUE, -storepass VALUE (the --password=VALUE form is a key assignment, below)
    (
        ("pass", "-pwd", "-token", "-api", "-secret"),
        _Lazy(
            r"(?<![\w-])--?(?:password|passwd|pass|pwd|token|api-?key|secret|client-secret|auth-token|access-token|"
            r"storepass|keypass|srcstorepass|deststorepass|key-password|(?:http|proxy|db|admin|root|ftp)-password)"
            r"[ \t]+[\"']?(?P<v>[^\s\"'-][^\s\"']*)"
        ),
    ),
    # docker/podman/az login -p VALUE
    (
        ("login",),
        _Lazy(
            r"\b(?:docker|podman|nerdctl|buildah|skopeo|oras|az|helm registry|crane auth)[ \t]+login\b"
            r"[^\n|;&]{0,300}?[ \t]-p[ \t]+[\"']?(?P<v>[^\s\"']+)"
        ),
    ),
    (("sshpass",), _Lazy(r"\bsshpass[ \t]+-p[ \t]*[\"']?(?P<v>[^\s\"']+)")),
    # mysql -pVALUE (attached; "-p" alone prompts). -P is the port.
    (("mysql",), _Lazy(r"\bmysql\w*\b[^\n|;&]{0,300}?[ \t]-p[\"']?(?P<v>[^\s\"'-][^\s\"']*)")),
    (("mongo",), _Lazy(r"\bmongo\w*\b[^\n|;&]{0,300}?[ \t]-p[ \t]+[\"']?(?P<v>[^\s\"'-][^\s\"']*)")),
    (("redis-cli",), _Lazy(r"\bredis-cli\b[^\n|;&]{0,300}?[ \t]-a[ \t]+[\"']?(?P<v>[^\s\"']+)")),
    (("ldap",), _Lazy(r"\bldap\w+\b[^\n|;&]{0,300}?[ \t]-w[ \t]+[\"']?(?P<v>[^\s\"']+)")),
    # curl -u user:pass, httpie -a user:pass, wget/xh alike
    (
        ("-u", "-a"),  # also --user, --auth
        _Lazy(r"(?:[ \t]-u|[ \t]--user|[ \t]-a|[ \t]--auth)[ \t=]+[\"']?[^\s:\"']{1,100}:(?P<v>[^\s\"']+)"),
    ),
    (("SecureString",), _Lazy(r"ConvertTo-SecureString[ \t]+(?:-String[ \t]+)?[\"'](?P<v>[^\"'\n]+)[\"']")),
    (("http-basic",), _Lazy(r"\bpoetry[ \t]+config[ \t]+http-basic\.\S+[ \t]+\S+[ \t]+[\"']?(?P<v>[^\s\"']+)")),
    (("smbclient",), _Lazy(r"\bsmbclient\b[^\n|;&]{0,300}?[ \t]-U[ \t]+[\"']?[^\s%\"']{1,100}%(?P<v>[^\s\"']+)")),
)
# Password hashes in htpasswd / shadow lines.
_HASH_LINE = _Lazy(
    r"(?m)^[\w.@-]{1,100}:(?P<v>\$(?:apr1|2[abxy]?|1|5|6|7|y|gy|argon2(?:id|i|d))\$[^\s:]{8,}"
    r"|\{S?SHA\}[A-Za-z0-9+/]{20,}={0,2})"
)
# ~/.pgpass: host:port:database:user:password
_PGPASS = _Lazy(r"(?m)^[\w.*-]{1,200}:(?:\d{1,5}|\*):[\w.*-]{1,200}:[^\s:]{1,200}:(?P<v>\S+)$")
# .netrc: "machine host login me password VALUE" (on one line or across lines)
_NETRC = _Lazy(r"(?:\bmachine|\blogin)[ \t]+\S+\s+(?:login[ \t]+\S+\s+)?password[ \t]+(?P<v>\S+)")
# Azure SAS signatures in URLs and connection strings.
_SAS = _Lazy(r"[?&;]sig=(?P<v>[A-Za-z0-9%+/=]{16,})")
# <password>VALUE</password>, and .NET's <add key="ApiKey" value="VALUE" />.
_XML = _Lazy(
    r"(?i)<(?P<k>[\w:.-]{0,40}(?:password|passwd|secret|token|apikey|api_key|accesskey|secretkey)[\w.-]{0,40})>"
    r"(?P<v>[^<\s][^<]{0,500})</"
    r"|(?i:key)=\"[^\"]{0,60}(?:password|passwd|secret|token|apikey|api_key|accesskey|secretkey)[^\"]{0,60}\""
    r"\s+(?i:value)=\"(?P<v2>[^\"]+)\""
)
# Prose: "my password is hunter2", "the token for staging was …", "the AWS secret key is …".
_PROSE = re.compile(  # matched against the lower-cased text; the word start is checked in code (faster)
    r"(?P<k>pass ?word|passphrase|passcode|passwd|pwd|pw|pin|secret(?: access)?(?: key)?|access key|api key|"
    r"api token|token|key)"
    r"(?: (?:for|of|to|on) [^\n]{1,60}?)? (?P<verb>is|was|is now|remains|=(?!=)|:|to)"
    r"[ \t]*[:=]?[ \t]*[\"'`]?(?P<v>[^\s\"'`]+)"
)
_PASSWORDISH = ("pass", "pw", "pin")
# "login with user admin, password Tr0ub4dor&3", "use API key G34u… for": no verb, so the value itself
# must look made-up (a password) or random (a key).
_PW_BARE = _Lazy(  # matched against the lower-cased text; no \b so re can skip to the literal words
    r"(?P<k>password|passwd|pwd|passphrase|api[ _-]?key|token|secret|key)[ \t]+[\"'`]?(?P<v>[^\s\"'`]{6,})"
)
# An Azure storage account key: 64 random bytes in base64, only where the text is about Azure.
_AZURE_KEY = _Lazy(r"(?<![A-Za-z0-9+/-])(?P<v>[A-Za-z0-9+/]{86}==)(?![A-Za-z0-9+/=])")
# A secret word ending a key name, then the separator: the key is read backwards from here.
_KEY_END = re.compile(  # matched against the lower-cased text (IGNORECASE would defeat re's prefix scan)
    # the words as a trie (p…, s…, a…): each start position fails after one or two characters (2x faster)
    r"(p(?:ass(?:word|wd|wort|phrase|code)?|wd|w|at|rivate[_-]?key)"
    r"|s(?:ecret(?:[_-]?key(?:[_-]?base)?)?|ession[_-]?key|hared[_-]?access[_-]?key|igning[_-]?key)"
    r"|a(?:pi[_-]?key|pikey|ccess[_-]?key|ccount[_-]?key|uth[_-]?key|uth)"
    r"|token|key(?:[_-]?data)?|credentials?|encryption[_-]?key|master[_-]?key|sess(?:ion)?id)"
    r"(?P<sep>[\"']?[ \t]*(?::|=>|->|=(?!=))[ \t]*)"
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s\"',;}{)\]`][^\s\"',;}{)\]`]*))?"
)
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_WORD_PLACEHOLDERS = frozenset({"pass", "password", "passwd", "pwd", "secret", "token", "example", "xxx"})
_NULLISH = frozenset({"null", "none", "nil", "true", "false", "undefined", "''", '""', "redacted"})
_STRONG_WORDS = (
    r"password|passwd|passwort|passphrase|passcode|pass|pwd|pw|secret|token|api[_-]?key|apikey|access[_-]?key|"
    r"secret[_-]?key|private[_-]?key|signing[_-]?key|session[_-]?key|auth[_-]?key|encryption[_-]?key|"
    r"master[_-]?key|account[_-]?key|shared[_-]?access[_-]?key|key[_-]?data|credentials?|secret[_-]?key[_-]?base"
)
# Strong key names: any non-placeholder value is a secret. ``PGPASSWORD``/``csrftoken`` end in the
# word without a separator; ``bypass``/``monkeypwd`` do not count (short words need the separator).
_SECRET_KEY = _Lazy(rf"(?i)(?:^|[_.-])(?:{_STRONG_WORDS})$|(?:password|passwd|passphrase|secret|apikey|token|pass)$")
# Words that end in "pass" and are not one (smtppass, dbpass and rootpass are).
_NOT_PASS = ("bypass", "compass", "overpass", "underpass", "trespass", "surpass", "encompass", "askpass", "sspass")
# Weak key names (``ENCRYPTION_KEY`` is strong; ``sort_key``, ``auth`` need a high-entropy value).
_WEAK_KEY = _Lazy(r"(?i)(?:^|[_.-])(?:key|auth|pat)$|(?:^|[_.-])(?:php|j)?sess(?:ion)?id$")
# Values that are words about the secret, not the secret ("password: required", "token is invalid").
_STOP = frozenset(
    " ".join(
        [
            "a an the is are was be been being not no to too of for in on at by and or with without from it",
            "this that these those my your our their his her its same different must should can cannot will",
            "required optional needed mandatory missing empty blank invalid incorrect wrong correct valid",
            "expired revoked reset changed set unset stored saved hidden masked encrypted hashed protected",
            "shown printed leaked exposed rotated sent generated used weak strong long short here there",
            "below above again also only still now just string str int bool boolean text type field value",
            "input hidden secret password token key flag option argument parameter env environment variable",
            "file prompt stdin please ok yes auto default sample example test dummy placeholder changeme xxx",
            "tbd todo fixme unknown await new function lambda yield async read write credentials creds auth",
        ]
    ).split()
)


def is_secret_key(name: str) -> bool:
    """Does a key name denote a secret (``DB_PASSWORD``, ``apiKey``) rather than, say, ``max_tokens``?"""
    return _key_tier(name) == 1


def _key_tier(name: str) -> int:
    """1: the key names a secret; 2: it may (``*_KEY``: the value must look random); 0: not a secret."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name.strip())  # camelCase → snake_case
    if name.lower().endswith(_NOT_PASS):
        return 0
    if _SECRET_KEY.get().search(name):
        return 1
    return 2 if _WEAK_KEY.get().search(name) else 0


def _placeholder(value: str, marker: str) -> bool:
    v = value.strip()
    low = v.lower()
    if low.rstrip(".,:;)") in _NULLISH or low in _WORD_PLACEHOLDERS:
        return True  # None, "user:pass@host" in docs
    if len(v) < 3 or low in _NULLISH or v.isdigit() or marker in v or v == marker[:-1]:
        return True
    if v.startswith(("${", "$(", "{{", "<", "%(", "%s", "{}", "[", "!", "process.env", "os.environ", "os.getenv")):
        return True
    if "${" in v or "{{" in v or "***" in v or v.startswith(("{", "(")):
        return True  # a template (`blockers:${taskId}`, '{token}'), a mask (hf_***), code ("(bool, optional)")
    if v.isalpha() and v.isupper() and len(v) <= 12:
        return True  # FOOBAR, SECRET, CHANGEME
    if v.startswith("$") and v[1:].replace("_", "").replace("{", "").replace("}", "").isalnum():
        return True  # $TOKEN: a variable, not the secret
    if low.startswith(("your", "my-", "my_", "insert", "enter", "replace", "put-", "put_", "<")):
        return True  # your-api-key-here, my_secret_here, replace-me
    if low.endswith(("here", "_me", "-me")) or "changeme" in low or "placeholder" in low or "xxxx" in low:
        return True
    if v.endswith(("...", "…")):
        return True  # sk_test_... : an elided example
    if len(set(low)) == 1 or set(low) <= set("*x•.-_#?"):
        return True  # ****, xxxxxxxx, 00000000, ........, x-x-x
    return _code_like(v)


def _code_like(v: str) -> bool:
    """``getpass.getpass()``, ``os.getenv(…)``, ``self.password``, ``Optional[str]``: code, not a value."""
    i = 0
    n = len(v)
    while i < n and (v[i].isalnum() or v[i] in "_."):
        i += 1
    ident = v[:i]
    if not ident or ident[0].isdigit():
        return False
    if i < n and v[i] in "([":
        return True  # a call or an index
    parts = ident.split(".")
    return (
        i == n and len(parts) > 1 and all(p and not any(c.isdigit() for c in p) for p in parts) and ident[0].islower()
    )


def _path_like(v: str) -> bool:
    """``/home/x``, ``~/.ssh/id_rsa``: a path (``PWD=``, ``SSL_KEY=``). Random base64 is as upper as lower."""
    if not v.startswith(("/", "~/", "./", "../")) or "+" in v or "=" in v:
        return False
    upper = sum(c.isupper() for c in v)
    lower = sum(c.islower() for c in v)
    return lower >= 3 * upper


def _entropy(v: str) -> float:
    counts: dict[str, int] = {}
    for c in v:
        counts[c] = counts.get(c, 0) + 1
    n = len(v)
    return -sum(k / n * math.log2(k / n) for k in counts.values())


_CAMEL = _Lazy(r"[A-Za-z][a-z]+(?:[A-Z][a-z]+)*")
_SNAKE = _Lazy(r"_*[a-z]+(?:_+[a-z]+)+")
_CONST = _Lazy(r"_*[A-Z]+(?:_[A-Z0-9]+)+")
_HEADER = _Lazy(r"[A-Z][a-z]*(?:-[A-Z][a-z]*)+")
_KEBAB = _Lazy(r"[a-z]+(?:[-_]+[a-z]+)+")
_DOC_WORDS = frozenset(
    {"key", "token", "secret", "password", "api", "example", "some", "my", "your", "test", "sample", "auth"}
)


def _random_looking(v: str, min_len: int = 12, min_entropy: float = 3.0) -> bool:
    """detect-secrets' entropy idea: a value of mixed character classes with high Shannon entropy."""
    if len(v) < min_len or _path_like(v) or _code_like(v) or v.startswith(("(", "`")):
        return False
    if not (any(c.isdigit() for c in v) and any(c.isalpha() for c in v)):
        # canonical_key, ARROW:extension:name: words, not randomness (16 random base62 characters
        # lack a digit ~6% of the time: the price of not redacting every identifier under *_KEY)
        return False
    return _entropy(v) >= min_entropy


def _plain_word(v: str) -> bool:
    """A word as people write it: "sunshine", "The", "re-exchanging" (not "Tr0ub4dor", not "FOOBAR")."""
    w = v.replace("-", "")
    return bool(w) and w.isalpha() and v[1:].islower()


def _prose_after(text: str, end: int) -> bool:
    """Is the value followed, on its line, by another lower-case word ("Password: must be at least…")?"""
    j = end
    while j < len(text) and text[j] in " \t":
        j += 1
    return j > end and j < len(text) and text[j].isalpha() and text[j].islower()


def _secret_value(text: str, vs: int, ve: int, tier: int, colon: bool, marker: str, pin: bool) -> bool:
    value = text[vs:ve]
    if pin and value.isdigit() and len(value) >= 6:
        return True  # PGPASSWORD=20240117: digits, but under a password key a password all the same
    if _placeholder(value, marker) or _path_like(value):
        return False
    if _SNAKE.get().fullmatch(value) or _CONST.get().fullmatch(value) or _HEADER.get().fullmatch(value):
        return False  # token=refresh_token, token = TOKEN_BLOCK_END, "X-Xet-Access-Token": names, not values
    if tier == 2:
        return _random_looking(value)
    if _KEBAB.get().fullmatch(value) and _DOC_WORDS & set(re.split(r"[-_]+", value)):
        return False  # api_key="fal-ai-api-key", "some-key": documentation placeholders
    if value.count(" ") >= 5:
        return False  # a quoted sentence ("Use a User Access Token. Prefer setting …"), not a passphrase
    if colon and _CAMEL.get().fullmatch(value) and sum(c.isupper() for c in value) >= 2:
        return False  # password: SecretStr: a type in a class body
    if colon and _CAMEL.get().fullmatch(value) and text[ve : ve + 3].lstrip()[:1] in ("=", ",", ")", "|", "]"):
        return False  # token: TokenOpt = None: a type annotation
    if _plain_word(value.rstrip(".,!?")):
        if value.rstrip(".,!?").lower() in _STOP:
            return False
        if colon and _prose_after(text, ve):
            return False  # "invalid token: jwt expired"
    return True


def _key_values(text: str, marker: str, result: FilterResult) -> str:
    out: list[str] = []
    last = 0
    lowered = _lower(text)
    for m in _KEY_END.finditer(lowered):
        start = m.start()
        word = m.group(1)
        # The secret word as the tail of a longer word ("monkeypwd", "bypass") is not a key; camelCase
        # apiKey is, and so is anything ending in "password" (PGPASSWORD, keystorepassword).
        if (
            start > 0
            and text[start - 1].isalnum()
            and not text[start].isupper()
            and not word.startswith(("password", "passwd", "passphrase", "token", "secret", "sess"))
            and not (word == "pass" and not lowered[max(0, start - 6) : start + 4].endswith(_NOT_PASS))
        ):
            continue
        key_start = start
        while key_start > 0 and text[key_start - 1] in _KEY_CHARS and start - key_start < 100:
            key_start -= 1
        key = text[key_start : m.end(1)].lstrip("-.")
        tier = _key_tier(key)
        if not tier:
            continue
        if key in ("PWD", "OLDPWD") and text[m.end() : m.end() + 1] in ("/", "~"):
            continue  # the shell's working directory in `env` output
        if key == "PASS" and ":" in m.group("sep"):
            continue  # "--- PASS: TestParse (0.00s)": a test runner, not REDIS_PASS
        group = "dq" if m.group("dq") is not None else "sq" if m.group("sq") is not None else "bare"
        if m.group(group) is None:
            continue
        vs, ve = m.span(group)
        if group == "bare":
            amp = text.find("&", vs, ve)  # a query string: ?user=x&password=y&sslmode=…
            if amp > 0 and "=" in text[amp:ve]:
                ve = amp
        colon = ":" in m.group("sep") and group == "bare"
        if not _secret_value(text, vs, ve, tier, colon, marker, word.startswith(_PASSWORDISH)):
            continue
        out.append(text[last:vs])
        out.append(marker)
        _count(result, f"{key} assignment", text[vs:ve])
        last = ve
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def _tokens(text: str, marker: str, result: FilterResult) -> str:
    """Known token formats, searched only in the words long enough to be one.

    Compiling all ~50 formats costs more than a hook can spare (~6 ms a process), so only the specs
    whose literal prefix occurs in those words are compiled — usually none.
    """
    words = {w for w in text.split() if len(w) >= 20}
    if not words:
        return text
    blob = "\n".join(words)
    wanted = tuple(i for i, (gates, _, _) in enumerate(_TOKEN_SPECS) if any(g in blob for g in gates))
    if not wanted:
        return text
    pattern = _tokens_re(wanted)
    for word in words:
        if pattern.search(word) is None:
            continue
        found: list[tuple[str, str]] = []

        def repl(m: re.Match[str], found: list[tuple[str, str]] = found) -> str:
            if len(set(m.group(0)[-12:].lower())) <= 2:
                return m.group(0)  # sk-proj-xxxxxxxxxxxx: a documented placeholder, not a key
            found.append((_TOKEN_SPECS[int((m.lastgroup or "t0")[1:])][2], m.group(0)))
            return marker

        new = pattern.sub(repl, word)
        times = text.count(word)
        text = text.replace(word, new)
        for kind, secret in found * times:
            _count(result, kind, secret)
    return text


def _count(result: FilterResult, kind: str, secret: str) -> None:
    result.secrets_redacted += 1
    result.chars_filtered += len(secret)
    if result.found is not None:
        result.found.append((kind, secret))


def _lower(text: str) -> str:
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters change length when lower-cased; keep offsets right
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    return lowered


def _sub(
    pattern: re.Pattern[str] | _Lazy,
    text: str,
    marker: str,
    result: FilterResult,
    keep: tuple[int, ...] = (),
    kind: str = "secret",
    word_start: bool = False,
) -> str:
    def repl(m: re.Match[str]) -> str:
        if word_start and m.start() > 0 and (m.string[m.start() - 1].isalnum() or m.string[m.start() - 1] == "_"):
            return m.group(0)  # inside a longer word: not a token (the \b the pattern leaves out)
        if keep:  # keep the named prefix/suffix groups, replace the secret group
            groups = [g for g in range(1, (m.lastindex or 0) + 1) if m.group(g) is not None]
            prefix, secret = m.group(groups[0]), m.group(groups[1])
            suffix = m.group(groups[2]) if len(groups) > 2 else ""
            if _placeholder(secret, marker):
                return m.group(0)
            _count(result, kind, secret)
            return f"{prefix}{marker}{suffix}"
        _count(result, kind, m.group(0))
        return marker

    return (pattern.get() if isinstance(pattern, _Lazy) else pattern).sub(repl, text)


def _sub_group(
    pattern: re.Pattern[str] | _Lazy,
    text: str,
    marker: str,
    result: FilterResult,
    check: Callable[[str, re.Match[str]], bool] | None = None,
    source: str | None = None,
    kind: str = "secret",
    word_start: bool = False,
) -> str:
    """Replace the ``v`` (or ``v2``) group of each match whose value passes ``check``.

    ``source`` is the text the pattern ran on when it is not ``text`` itself (the lower-cased copy):
    offsets are the same, values are read from ``text``.
    """
    out: list[str] = []
    last = 0
    scanned = source if source is not None else text
    compiled = pattern.get() if isinstance(pattern, _Lazy) else pattern
    for m in compiled.finditer(scanned):
        if word_start and m.start() > 0 and (scanned[m.start() - 1].isalnum() or scanned[m.start() - 1] == "_"):
            continue  # the pattern has no leading \b, which would defeat re's literal-prefix search
        name = "v" if m.group("v") is not None else "v2"
        vs, ve = m.span(name)
        if vs < last:
            continue
        value = text[vs:ve]
        if _placeholder(value, marker) or (check is not None and not check(value, m)):
            continue
        out.append(text[last:vs])
        out.append(marker)
        _count(result, kind, value)
        last = ve
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def _not_a_word(value: str, m: re.Match[str]) -> bool:
    """A flag's value that is a plain English word ("--token flag") is prose, not a secret; a
    ``--secret``/``--token``/``--api-key`` value must look made up ("--secret newsecret" is docs)."""
    v = value.rstrip(".,!?")
    if v in _STOP:
        return False
    flag = m.group(0)[:12].lower()
    return not (("-token" in flag or "-secret" in flag or "-api" in flag) and _plain_word(v))


def _prose_secret(text: str) -> Callable[[str, re.Match[str]], bool]:
    def check(value: str, m: re.Match[str]) -> bool:
        v = value.rstrip(".,!?;:)")
        if m.group("k").startswith(_PASSWORDISH):
            if _plain_word(v):  # "my password is sunshine." yes; "the password is required" no
                if m.group("verb") == "to":
                    return False  # "the password to authenticate with"
                return v not in _STOP and not v.endswith(("ed", "ing", "ly")) and not _prose_after(text, m.end("v"))
            return len(v) >= 4
        return _random_looking(v, min_len=16, min_entropy=3.2)

    return check


def _made_up(value: str, m: re.Match[str]) -> bool:
    """A password-looking value: letters with digits or symbols, not a word, path, number or code."""
    v = value.rstrip(".,!?;:)")
    if v.startswith("-"):
        return False  # pg_dump --password --host db: the next flag, not a value
    word = m.group("k").lower()
    if not word.startswith(("pass", "pwd")):
        # a bare "key" needs more: "gpg: key 3AA5C34371567BD2 marked …" is a 16-digit key id, not a secret
        return _random_looking(v, min_len=20 if word == "key" else 16, min_entropy=3.2)
    has_alpha = any(c.isalpha() for c in v)
    has_other = any(not c.isalpha() for c in v)
    return len(v) >= 6 and has_alpha and has_other and not _path_like(v) and "://" not in v and "=" not in v


def _secret_named(value: str, m: re.Match[str]) -> bool:
    """The value belongs to a strongly secret-named key (``define('DB_PASSWORD', …)``)."""
    key = m.group("k")
    return _key_tier(key) == 1 and key not in ("PWD", "OLDPWD") and not _code_like(value) and not _path_like(value)


def _made_up_value(value: str, m: re.Match[str]) -> bool:
    v = value.rstrip(".,!?;:)")
    return len(v) >= 6 and any(c.isalpha() for c in v) and any(not c.isalpha() for c in v) and not _path_like(v)


def _aws_secret(value: str, m: re.Match[str]) -> bool:
    words = [p for p in value.split("/") if len(p) >= 3 and p.isalpha() and p.islower()]
    if len(words) >= 2:
        return False  # s3 paths (bucket/reports/File2024…): lower-case words between slashes
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
        and _entropy(value) >= 4.0
    )


def detect(text: str, cfg: PrivacyConfig) -> list[tuple[str, str]]:
    """(kind, secret) of every secret the current rules find in ``text`` — for ``memlane privacy scan``."""
    result = FilterResult(text)
    result.found = []
    if cfg.enabled and cfg.redact_secrets and text:
        _redact(text, cfg, result)
    return result.found


_extra_cache: dict[tuple[str, ...], tuple[list[re.Pattern[str]], list[str]]] = {}


def compile_extra(patterns: list[str]) -> tuple[list[re.Pattern[str]], list[str]]:
    """The user's ``privacy.extra_patterns``, compiled; invalid ones are skipped with a warning each."""
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
    original = text.lower()  # gates that look at what earlier rules have already replaced
    if "PRIVATE KEY" in text or "Private-Lines" in text:
        text = _sub(_PEM, text, marker, result, kind="private key")
    text = _tokens(text, marker, result)
    lowered = _lower(text)
    if "://" in text:
        text = _sub(_URL_CREDS, text, marker, result, keep=(1, 3), kind="password in URL")
        text = _sub_group(_URL_TOKEN, text, marker, result, kind="token in URL")
    if "bearer" in lowered or "authorization" in lowered:
        text = _sub(_AUTH, text, marker, result, keep=(1,), kind="authorization header")
    if "sig=" in text:
        text = _sub_group(_SAS, text, marker, result, kind="azure SAS signature")
    for gates, pattern in _CLI:
        if any(gate in text for gate in gates):
            text = _sub_group(pattern, text, marker, result, _not_a_word, kind="command-line credential")
    for more_gates, more, how in _MORE:
        if any(gate in text for gate in more_gates):
            check = _secret_named if how == "key" else _made_up_value if how == "made-up" else _not_a_word
            text = _sub_group(more, text, marker, result, check, kind="credential")
    if ":$" in text or ":{S" in text:
        text = _sub_group(_HASH_LINE, text, marker, result, kind="password hash")
    if "password" in lowered:
        text = _sub_group(_NETRC, text, marker, result, _not_a_word, kind="netrc password")
    if "</" in text or 'value="' in text:
        text = _sub_group(_XML, text, marker, result, kind="XML/config secret")
    if text.count(":") >= 4:
        text = _sub_group(_PGPASS, text, marker, result, kind="pgpass password")
    if "aws" in lowered or "secret" in lowered or "akia" in original or "s3" in lowered or "boto" in lowered:
        text = _sub_group(_AWS_SECRET, text, marker, result, _aws_secret, kind="AWS secret access key")
    if "azure" in lowered or "windows.net" in lowered or "az " in lowered:
        text = _sub_group(_AZURE_KEY, text, marker, result, kind="azure account key")
    if "pass" in lowered or "pwd" in lowered or "key" in lowered or "token" in lowered or "secret" in lowered:
        text = _sub_group(
            _PW_BARE, text, marker, result, _made_up, _lower(text), kind="password/key in prose", word_start=True
        )
    lowered = _lower(text)
    text = _sub_group(
        _PROSE, text, marker, result, _prose_secret(text), source=lowered, kind="secret in prose", word_start=True
    )
    text = _key_values(text, marker, result)
    compiled, warnings = compile_extra(cfg.extra_patterns)
    result.warnings.extend(warnings)
    for extra in compiled:
        text = _sub(extra, text, marker, result, kind="privacy.extra_patterns")
    return text


# ---- anonymization -------------------------------------------------------------------------------
#
# Off by default (privacy.anonymize): people's contact details and the names a user lists are replaced
# before anything is stored or embedded. Conservative on purpose: an e-mail needs a dotted domain with an
# alphabetic top level; a phone number 9-15 digits in at least two separated groups whose last group has
# four digits, or 3-4 after a +country code (so dates, times, versions and IP addresses are left alone).

EMAIL_MARKER, PHONE_MARKER, NAME_MARKER = "[EMAIL]", "[PHONE]", "[NAME]"
_EMAIL = _Lazy(r"(?<![\w.%+-])([A-Za-z0-9][A-Za-z0-9._%+-]*)@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}\b")
_PHONE = _Lazy(r"(?<![\w+.-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]\d{2,4}){1,4}(?![\w]|[.:-]\d)")
_names_cache: dict[tuple[str, ...], re.Pattern[str] | None] = {}


def _names_re(names: list[str]) -> re.Pattern[str] | None:
    key = tuple(names)
    if key not in _names_cache:
        parts = []
        for name in sorted({n.strip() for n in names if n.strip()}, key=len, reverse=True):
            escaped = re.escape(name)
            # Whole words for Latin names; CJK names are followed by particles ("김철수님"), so anywhere.
            parts.append(rf"\b{escaped}\b" if name.isascii() else escaped)
        _names_cache[key] = re.compile("|".join(parts), re.IGNORECASE) if parts else None
    return _names_cache[key]


def _phone_like(match: re.Match[str]) -> bool:
    value = match.group(0)
    digits = sum(c.isdigit() for c in value)
    groups = re.split(r"[ .()-]+", value.lstrip("+"))
    groups = [g for g in groups if g]
    if not 9 <= digits <= 15 or len(groups[-1]) < 3:
        return False
    if not value.startswith("+") and len(groups[-1]) != 4:
        return False  # without a country code, the local forms this knows end in four digits
    seps = {c for c in value if c in " .-"}
    # Dots alone: only the 3.3.4 form (an IP address or a version is not a phone number).
    return seps != {"."} or [len(g) for g in groups[-3:]] == [3, 3, 4]


def _anonymize(text: str, cfg: PrivacyConfig, result: FilterResult) -> str:
    def count(marker: str) -> Callable[[re.Match[str]], str]:
        def repl(m: re.Match[str]) -> str:
            if marker is EMAIL_MARKER and m.group(1).lower() == "git":
                return m.group(0)  # git@github.com:org/repo is a remote, not a person
            if marker is PHONE_MARKER and not _phone_like(m):
                return m.group(0)
            result.anonymized += 1
            result.chars_filtered += len(m.group(0))
            return marker

        return repl

    if "@" in text:
        text = _EMAIL.get().sub(count(EMAIL_MARKER), text)
    if any(c.isdigit() for c in text):
        text = _PHONE.get().sub(count(PHONE_MARKER), text)
    names = _names_re(list(getattr(cfg, "anonymize_names", []) or []))
    if names is not None:
        text = names.sub(count(NAME_MARKER), text)
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
    if getattr(cfg, "anonymize", False):
        out = _anonymize(out, cfg, result)
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
