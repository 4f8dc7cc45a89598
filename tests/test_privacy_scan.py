"""`memlane privacy scan` on a real temp store (SQLite + FTS + LanceDB), redaction down to the vectors,
and the capture path: what gets embedded is the filtered stored text."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from conftest import payload
from memlane import paths
from memlane.cli.main import cli
from memlane.config import EmbeddingConfig
from memlane.memory import Memory
from memlane.store.db import NewEvent
from memlane.vectors import process_outbox
from memlane.vectors.index import vector_counts

# What an older memlane (weaker rules) let through, verbatim, into content and metadata.
PG = "Falcon2291!river"
HF = "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNmQwErTyUi"
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Ld02kRt"
SECRETS = (PG, HF, AWS)


@pytest.fixture(scope="module")
def embedder() -> Any:
    from memlane.embed import get_embedder

    return get_embedder(EmbeddingConfig())


class Recording:
    """The real embedder, remembering every text it was asked to embed."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.texts: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def embed_passages(self, texts: list[str]) -> Any:
        self.texts.extend(texts)
        return self.real.embed_passages(texts)


@pytest.fixture
def leaky(proj: Path, embedder: Any) -> Iterator[Memory]:
    """A store written without today's filter, already embedded."""
    m = Memory.open(proj)
    m.store.append(
        [
            NewEvent("tool_observation", "s1", f"$ env\nPWD=/home/dev/shop\nPGPASSWORD={PG}\nLANG=C", "1"),
            NewEvent("user_prompt", "s1", f"download the gated model with {HF} please", "2"),
            NewEvent(
                "tool_observation",
                "s1",
                "Bash: aws configure get region\neu-west-1",
                "3",
                {"tool_input": {"command": f"aws configure set aws_secret_access_key {AWS}"}},
            ),
            NewEvent("agent_response", "s1", "Fixed the pool timeout: connections were never released", "4"),
        ]
    )
    process_outbox(m, embedder)
    yield m
    m.close()


def run(proj: Path, *args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["-C", str(proj), "privacy", "scan", *args], input=stdin, catch_exceptions=False)


def _fts_finds(m: Memory, word: str) -> int:
    return int(
        m.store.db.execute("SELECT COUNT(*) FROM events_fts WHERE events_fts MATCH ?", (f'"{word}"',)).fetchone()[0]
    )


@pytest.mark.slow  # embeds with the real model
def test_scan_reports_masked_findings_with_index_and_vectors(proj: Path, leaky: Memory) -> None:
    result = run(proj, "--json")
    assert result.exit_code == 1  # findings remain
    for secret in SECRETS:
        assert secret not in result.output
    data = json.loads(result.output)
    assert data["events_scanned"] == 4 and data["events_affected"] == 3
    by_where = {(f["where"], f["kind"]): f for f in data["findings"]}
    assert ("content", "PGPASSWORD assignment") in by_where
    assert ("content", "Hugging Face token") in by_where
    assert ("metadata.tool_input.command", "AWS secret access key") in by_where
    pg = by_where[("content", "PGPASSWORD assignment")]
    assert pg["preview"] == "PGPASSWORD=[REDACTED]" and pg["length"] == len(PG)
    assert pg["fts"] is True and pg["vectors"] >= 1  # the index and the vectors were made from it


@pytest.mark.slow  # embeds with the real model
def test_scan_table_never_prints_a_secret(proj: Path, leaky: Memory) -> None:
    result = run(proj)
    assert result.exit_code == 1
    for event in leaky.store.history(limit=-1):
        assert (event.cite in result.output) is (event.type != "agent_response")
    assert "3 finding(s) in 3 of 4 event(s)" in result.output
    for secret in SECRETS:
        assert secret not in result.output and secret[:8] not in result.output


@pytest.mark.slow  # embeds with the real model
def test_redact_asks_first(proj: Path, leaky: Memory) -> None:
    result = run(proj, "--redact", stdin="n\n")
    assert result.exit_code == 1 and "Aborted" in result.output
    assert PG in leaky.store.get(leaky.store.history(limit=-1, oldest_first=True)[0].id).content  # type: ignore[union-attr]


@pytest.mark.slow  # embeds with the real model
def test_redact_reaches_events_index_and_vectors(proj: Path, leaky: Memory, embedder: Any) -> None:
    clean = leaky.store.history(types=["agent_response"])[0]
    affected = [e.id for e in leaky.store.history(limit=-1) if e.type != "agent_response"]
    before = vector_counts(leaky.project.id, [clean.id])
    result = run(proj, "--redact", "--yes")
    assert result.exit_code == 0 and "Redacted 3 event(s)" in result.output

    everything = json.dumps([e.as_dict() for e in leaky.store.history(limit=-1)])
    for secret in SECRETS:
        assert secret not in everything
    assert "PWD=/home/dev/shop" in everything  # what was not secret is kept
    assert _fts_finds(leaky, "Falcon2291") == 0 and _fts_finds(leaky, HF) == 0
    assert _fts_finds(leaky, "gated") == 1 and _fts_finds(leaky, "PGPASSWORD") == 1  # the rest is still indexed
    assert leaky.store.get(clean.id).content == clean.content  # type: ignore[union-attr]
    assert vector_counts(leaky.project.id, [clean.id]) == before  # untouched events keep their vectors
    assert vector_counts(leaky.project.id, affected) == {}  # the leaky vectors are gone…
    status = dict(leaky.store.db.execute("SELECT event_id, status FROM outbox").fetchall())
    assert all(status[i] == "pending" for i in affected)  # …and queued again

    recorder = Recording(embedder)
    assert process_outbox(leaky, recorder).processed == 3
    assert recorder.texts and not any(s in t for s in SECRETS for t in recorder.texts)
    assert set(vector_counts(leaky.project.id, affected)) == set(affected)

    tomb = leaky.store.tombstones()[0]
    assert tomb["scope"] == "redact" and tomb["event_count"] == 3 and PG not in json.dumps(tomb)
    assert run(proj).exit_code == 0  # nothing left to find


def test_scan_of_a_clean_store(proj: Path) -> None:
    Memory.open(proj).close()
    result = run(proj)
    assert result.exit_code == 0 and "No secrets found in 0 event(s)" in result.output


def test_extra_patterns_are_scanned_and_a_bad_one_is_one_line(proj: Path) -> None:
    m = Memory.open(proj)
    m.store.append([NewEvent("user_prompt", "s1", "ticket ACME-884213 holds the vendor login", "1")])
    m.close()
    assert run(proj).exit_code == 0  # not a secret by the built-in rules
    paths.config_path().parent.mkdir(parents=True, exist_ok=True)
    paths.config_path().write_text('[privacy]\nextra_patterns = ["ACME-\\\\d{6}"]\n')
    data = json.loads(run(proj, "--json").output)
    assert [f["kind"] for f in data["findings"]] == ["privacy.extra_patterns"]

    paths.config_path().write_text('[privacy]\nextra_patterns = ["(unclosed"]\n')
    result = CliRunner().invoke(cli, ["-C", str(proj), "privacy", "scan"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert "privacy.extra_patterns: invalid regular expression '(unclosed'" in result.output

    paths.config_path().write_text('[privacy]\nextra_patterns = ["x*"]\n')
    result = CliRunner().invoke(cli, ["-C", str(proj), "stats"])
    assert result.exit_code == 1 and "matches the empty string" in result.output


@pytest.mark.slow  # embeds with the real model
def test_captured_secrets_never_reach_the_embedder(hook: Callable[..., str], proj: Path, embedder: Any) -> None:
    """Hooks filter before storing, and the worker embeds the stored text: no secret is ever embedded."""
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json", prompt=f"use {HF} and PGPASSWORD={PG}"))
    hook(
        "PostToolUse",
        payload("04-PostToolUse.json"),
        tool_input={"command": f"aws configure set aws_secret_access_key {AWS}"},
        tool_response={"stdout": f"PGPASSWORD={PG}\n", "stderr": ""},
    )
    m = Memory.open(proj)
    try:
        recorder = Recording(embedder)
        assert process_outbox(m, recorder).processed >= 2
        assert recorder.texts
        stored = {e.content for e in m.store.history(limit=-1)}
        assert set(recorder.texts) <= {p for e in m.store.history(limit=-1) for p in _passages(e, embedder)}
        for secret in SECRETS:
            assert not any(secret in t for t in recorder.texts)
            assert not any(secret in s for s in stored)
    finally:
        m.close()


def _passages(event: Any, embedder: Any) -> list[str]:
    from memlane.embed.passages import passages

    return passages(event.type, event.content, embedder)
