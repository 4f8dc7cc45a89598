"""Privacy filter, table-driven: every private-tag form, every secret kind, every false-positive trap."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.config import PrivacyConfig
from memlane.privacy import filter_text, filter_value, is_secret_key

ALL = PrivacyConfig(formats=["xml", "bracket", "comment"])
XML = PrivacyConfig()

PRIVATE = [
    ("basic", "deploy <private>vault 42</private> now", "deploy [PRIVATE] now", 1),
    ("case", "a <PRIVATE>x</Private> b", "a [PRIVATE] b", 1),
    ("multiline", "a <private>\nline1\nline2\n</private> b", "a [PRIVATE] b", 1),
    ("two", "<private>a</private> and <private>b</private>", "[PRIVATE] and [PRIVATE]", 2),
    ("nested-outer-wins", "x <private>a <private>b</private> c</private> y", "x [PRIVATE] y", 1),
    ("empty-vanishes", "a <private></private> b", "a  b", 0),
    ("whitespace-vanishes", "a <private>  \n </private> b", "a  b", 0),
    ("inline-code-literal", "use `<private>x</private>` tags", "use `<private>x</private>` tags", 0),
    ("fence-literal", "```\n<private>in fence</private>\n```\n", "```\n<private>in fence</private>\n```\n", 0),
    ("tilde-fence-literal", "~~~md\n<private>x</private>\n~~~", "~~~md\n<private>x</private>\n~~~", 0),
    ("after-fence", "```\ncode\n```\n<private>p</private>", "```\ncode\n```\n[PRIVATE]", 1),
    ("stray-close-ignored", "a </private> b", "a </private> b", 0),
]


@pytest.mark.parametrize(("name", "text", "expected", "sections"), PRIVATE, ids=[p[0] for p in PRIVATE])
def test_private_tags(name: str, text: str, expected: str, sections: int) -> None:
    result = filter_text(text, XML)
    assert result.text == expected
    assert result.private_sections == sections


def test_unclosed_tag_leaves_text_and_warns() -> None:
    result = filter_text("open <private> never closed", XML)
    assert result.text == "open <private> never closed" and result.private_sections == 0
    assert result.warnings and "unclosed" in result.warnings[0]


@pytest.mark.parametrize(
    "text", ["[private]x[/private]", "<!-- private -->x<!-- /private -->", "<!--private-->x<!--/private-->"]
)
def test_other_forms_only_when_enabled(text: str) -> None:
    assert filter_text(text, XML).text == text
    assert filter_text(text, ALL).text == "[PRIVATE]"


def test_custom_marker_and_disabled() -> None:
    assert filter_text("a <private>x</private>", PrivacyConfig(marker="")).text == "a "
    assert filter_text("a <private>x</private>", PrivacyConfig(marker="<cut>")).text == "a <cut>"
    off = PrivacyConfig(enabled=False)
    assert filter_text("a <private>x</private> password=hunter2", off).text == "a <private>x</private> password=hunter2"


SECRETS = [
    ("kv-equals", "password=hunter2", "hunter2", "password="),
    ("kv-colon", "DB_PASSWORD: s3cr3t-value", "s3cr3t-value", "DB_PASSWORD:"),
    ("json", '{"api_key": "abcd1234efgh"}', "abcd1234efgh", '"api_key":'),
    ("json-camel", '{"apiKey": "abcd1234efgh"}', "abcd1234efgh", '"apiKey":'),
    ("export", "export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdef", "GITHUB_TOKEN="),
    ("yaml-secret", "client_secret: 9f8e7d6c5b4a", "9f8e7d6c5b4a", "client_secret:"),
    ("aws-secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI", "aws_secret"),
    ("bearer", 'curl -H "Authorization: Bearer abcdefghijklmnop1234" x', "abcdefghijklmnop1234", "Authorization"),
    ("basic", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==", "Authorization"),
    ("aws-id", "key AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE", "key "),
    ("github", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnop", ""),
    ("github-pat", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv", "github_pat_11ABC", ""),
    ("gitlab", "glpat-abcdefghij1234567890", "glpat-abcdefghij", ""),
    ("slack", "xoxb-1234567890-abcdefghij", "xoxb-1234567890", ""),
    ("slack-webhook", "https://hooks.slack.com/services/T000/B000/XXXXXXXX", "T000/B000", ""),
    ("openai", "sk-proj-abcdefghijklmnopqrstuvwx", "sk-proj-abcdef", ""),
    ("openai-plain", "OPENAI=sk-abcdefghijklmnopqrstuvwxyz12", "sk-abcdefghij", "OPENAI="),
    ("anthropic", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "sk-ant-api03", ""),
    ("google", "AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA123", ""),
    ("stripe", "sk_live_abcdefghijklmnop1234", "sk_live_abcdef", ""),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghijk", "eyJhbGciOiJIUzI1NiJ9", ""),
    ("pem", "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----", "MIIEabc", ""),
    ("pem-cut", "-----BEGIN PRIVATE KEY-----\nMIIEabcdef", "MIIEabcdef", ""),
    ("url-password", "postgres://shop:hunter2@db/shop", "hunter2", "postgres://shop:"),
    ("url-password-redis", "redis://:topsecret@cache:6379", "topsecret", "redis://:"),
]


@pytest.mark.parametrize(("name", "text", "secret", "kept"), SECRETS, ids=[s[0] for s in SECRETS])
def test_secrets_are_redacted(name: str, text: str, secret: str, kept: str) -> None:
    result = filter_text(text, XML)
    assert secret not in result.text, result.text
    assert "[REDACTED]" in result.text and result.secrets_redacted >= 1
    assert kept in result.text


TRAPS = [
    "max_tokens: 100",
    "token_count = 5",
    "tokens=5",
    "num_tokens = 42",
    "prompt_tokens: 12, completion_tokens: 30",
    "please reset your password here",
    "the token is invalid",
    "password: ",
    "token: null",
    "password=None",
    "secret = true",
    "password=${DB_PASSWORD}",
    "token=$GITHUB_TOKEN",
    "api_key: <your-api-key>",
    "password=os.environ['DB_PASSWORD']",
    "https://user@host/path",
    "https://example.com:8080/path",
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    "id 123e4567-e89b-12d3-a456-426614174000",
    "primary_key=5 keyboard=3 monkey=2",
    "task-sk-list",
    "token_type: bearer",
    "monkeypwd=abc123",
    "max_tokens=4096",
]


@pytest.mark.parametrize("text", TRAPS)
def test_false_positive_traps_are_untouched(text: str) -> None:
    result = filter_text(text, XML)
    assert result.text == text
    assert result.secrets_redacted == 0


def test_secret_inside_private_counts_once_as_private() -> None:
    result = filter_text("<private>password=hunter2</private>", XML)
    assert result.text == "[PRIVATE]" and result.private_sections == 1 and result.secrets_redacted == 0


def test_secrets_in_code_blocks_are_redacted() -> None:
    result = filter_text("```bash\nexport API_KEY=abcdef123456\n```", XML)
    assert "abcdef123456" not in result.text


def test_extra_patterns_and_invalid_regex() -> None:
    cfg = PrivacyConfig(extra_patterns=[r"ACME-\d{6}", "(unclosed"])
    result = filter_text("ticket ACME-123456 done", cfg)
    assert result.text == "ticket [REDACTED] done"
    assert any("invalid regular expression" in w for w in result.warnings)


def test_filter_value_recurses_and_uses_key_names() -> None:
    value = {
        "command": "echo hi",
        "password": "x1234",
        "env": {"GITHUB_TOKEN": "abcdefgh12345"},
        "list": ["token=abcdefgh123", 5, None],
        "note": "<private>p</private>",
    }
    out, result = filter_value(value, XML)
    assert out["command"] == "echo hi" and out["password"] == "[REDACTED]"
    assert out["env"]["GITHUB_TOKEN"] == "[REDACTED]" and out["list"] == ["token=[REDACTED]", 5, None]
    assert out["note"] == "[PRIVATE]"
    assert result.secrets_redacted == 3 and result.private_sections == 1


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("password", True),
        ("DB_PASSWORD", True),
        ("apiKey", True),
        ("client_secret", True),
        ("max_tokens", False),
        ("token_count", False),
        ("primary_key", False),
        ("keyboard", False),
    ],
)
def test_is_secret_key(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


@pytest.mark.parametrize(
    "text",
    [
        "a" * 200_000 + "=",
        "<private>" * 20_000,
        "a_" * 100_000 + "password",
        "x://" + "a" * 200_000,
        "eyJ" + "a" * 200_000,
        "password=" * 30_000,
        "`" * 200_000,
        "```\n" * 50_000,
        "\x00\ud800 surrogate \udfff",
        # the secret rules' own worst cases: bounded lazy scans after a command word, long words
        "mysql " + " -p" * 60_000,
        "docker login " + "x " * 100_000,
        "define('DB_PASSWORD', '" * 20_000,
        "credentials: a / " * 20_000,
        "echo $DB_PASSWORD\n" * 20_000,
        "password is " * 30_000,
        "ghp_" * 50_000,
        ("x" * 25 + " ") * 10_000,
        "a:1:b:c:" * 30_000,
    ],
)
def test_pathological_inputs_finish(text: str) -> None:
    filter_text(text, ALL)  # completes (linear-time patterns); pytest-timeout guards the suite


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_never_raises_and_is_idempotent(text: str) -> None:
    once = filter_text(text, ALL)
    assert filter_text(once.text, ALL).text == once.text or "<private" in text.lower() or "[private" in text.lower()
