"""Privacy feedback and options through the real hook code: the unclosed-tag warning (private-tags §7) is
logged, shown to the user once per prompt and counted in stats; ``privacy.anonymize`` and
``privacy.preserve_line_count`` (seed 004 §3.3) act before anything reaches the disk or an embedding."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import payload
from memlane import config, privacy, project
from memlane.cli.main import cli
from memlane.memory import Memory

Hook = Callable[..., str]


def _log(name: str) -> str:
    path = Path(os.environ["MEMLANE_HOME"]) / "logs" / f"{name}.log"
    return path.read_text() if path.exists() else ""


def test_unclosed_tag_is_told_once_per_prompt_logged_and_counted(hook: Hook, proj: Path) -> None:
    out = hook(
        "UserPromptSubmit",
        payload("02-UserPromptSubmit.json"),
        prompt="use the staging db <private>pw hunter2 and <private>again, then restart",
    )
    body = json.loads(out)
    message = body["systemMessage"]
    assert message.count("never closed") == 1  # two unclosed openings, one message for the prompt
    with Memory.open(str(proj), create=False) as mem:
        (stored,) = mem.history(types=["user_prompt"])
        assert f"`memlane forget {stored.cite}`" in message
        assert stored.metadata["privacy"]["unclosed_tags"] == 1  # the outer one; the inner is inside it
        assert "hunter2" in stored.content  # left unfiltered, as the spec decides: hence the warning
    assert "UserPromptSubmit: 1 unclosed private tag(s)" in _log("privacy")
    # A closed tag says nothing.
    out = hook(
        "UserPromptSubmit", payload("02-UserPromptSubmit.json"), prompt="x <private>y</private> z", prompt_id="2"
    )
    assert "systemMessage" not in (json.loads(out) if out else {})
    # Tool output: logged and counted, never a message (nobody is waiting on a PostToolUse answer).
    tool = payload("04-PostToolUse.json")
    tool["tool_response"] = {**tool["tool_response"], "stdout": "log line <private> and the rest"}
    assert hook("PostToolUse", tool) == ""
    assert "PostToolUse: 1 unclosed private tag(s)" in _log("privacy")
    with Memory.open(str(proj), create=False) as mem:
        assert mem.stats()["privacy"]["unclosed_tags"] == 2
    result = CliRunner().invoke(cli, ["-C", str(proj), "stats"])
    assert "2 unclosed private tag(s) left unfiltered" in result.output


def test_anonymize_before_disk_and_embedding(hook: Hook, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLANE_PRIVACY_ANONYMIZE", "true")
    monkeypatch.setenv("MEMLANE_PRIVACY_ANONYMIZE_NAMES", '["Dana Whitfield"]')
    prompt = "ask dana whitfield (dana.w@example.org, +1 415-555-0132) why build 2026-11-27 10:19 failed on 10.0.0.12"
    hook("UserPromptSubmit", payload("02-UserPromptSubmit.json"), prompt=prompt)
    with Memory.open(str(proj), create=False) as mem:
        (stored,) = mem.history(types=["user_prompt"])
        assert stored.content == "ask [NAME] ([EMAIL], [PHONE]) why build 2026-11-27 10:19 failed on 10.0.0.12"
        assert mem.stats()["privacy"]["anonymized"] == 3
        # The embedding worker embeds the stored text (the outbox holds only the event id).
        assert mem.store.outbox_queued_ids() == {stored.id}
    db = project.identify(proj).db_path
    raw = b"".join(Path(f"{db}{s}").read_bytes() for s in ("", "-wal") if Path(f"{db}{s}").exists())
    for piece in (b"example.org", b"555-0132", b"Whitfield", b"whitfield"):
        assert piece not in raw


def test_anonymize_off_by_default_and_leaves_look_alikes() -> None:
    text = "mail a@b.io at 2026-11-27 10:19:28 from 192.168.100.200 (v1.22.333), git@github.com:o/r.git, 415-555-0132"
    assert privacy.filter_text(text, config.PrivacyConfig()).text == text
    on = privacy.filter_text(text, config.PrivacyConfig(anonymize=True))
    assert on.text == (
        "mail [EMAIL] at 2026-11-27 10:19:28 from 192.168.100.200 (v1.22.333), git@github.com:o/r.git, [PHONE]"
    )
    assert on.anonymized == 2
    korean = privacy.filter_text(
        "김철수님 010-1234-5678", config.PrivacyConfig(anonymize=True, anonymize_names=["김철수"])
    )
    assert korean.text == "[NAME]님 [PHONE]"


def test_preserve_line_count(hook: Hook, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "Before\n<private>\nSecret\nData\n</private>\nAfter"
    assert privacy.filter_text(text, config.PrivacyConfig()).text == "Before\n[PRIVATE]\nAfter"
    kept = privacy.filter_text(text, config.PrivacyConfig(preserve_line_count=True)).text
    assert kept == "Before\n[PRIVATE]\n\n\n\nAfter" and kept.count("\n") == text.count("\n")
    empty = privacy.filter_text("a\n<private>\n\n</private>\nb", config.PrivacyConfig(preserve_line_count=True))
    assert empty.text == "a\n\n\n\nb"  # an empty section leaves no marker, only its lines
    monkeypatch.setenv("MEMLANE_PRIVACY_PRESERVE_LINE_COUNT", "true")
    tool = payload("04-PostToolUse.json")
    tool["tool_response"] = {**tool["tool_response"], "stdout": "line 1\n<private>\ntoken\n</private>\nline 5 failed"}
    hook("PostToolUse", tool)
    conn = sqlite3.connect(project.identify(proj).db_path)
    (content,) = conn.execute("SELECT content FROM events WHERE type = 'tool_observation'").fetchone()
    conn.close()
    output = content.split("\n", 1)[1]
    assert output == "line 1\n[PRIVATE]\n\n\nline 5 failed" and "token" not in content
