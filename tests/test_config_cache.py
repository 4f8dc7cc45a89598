"""``config.load_cached``: the hooks' config — same answers as ``load``, the file parsed only when it changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memlane import config, paths


def write_config(text: str) -> Path:
    path = Path(paths.join("config.toml"))
    path.write_text(text, encoding="utf-8")
    return path


def test_no_file_gives_what_load_gives() -> None:
    assert config.as_dict(config.load_cached()) == config.as_dict(config.load())


def test_same_answer_as_load_and_cached_after_first_read(monkeypatch: pytest.MonkeyPatch) -> None:
    write_config("[injection]\nmax_results = 7\n[daemon]\nhook_deadline_ms = 90\n")
    first = config.load_cached()
    assert config.as_dict(first) == config.as_dict(config.load())
    assert first.injection.max_results == 7
    calls = []
    monkeypatch.setattr(config, "read_file", lambda path: calls.append(path) or {})
    assert config.load_cached().daemon.hook_deadline_ms == 90  # from the cache: the file was not parsed
    assert calls == []


def test_an_edit_is_seen_at_once() -> None:
    path = write_config("[injection]\nmax_results = 7\n")
    assert config.load_cached().injection.max_results == 7
    stat = path.stat()
    path.write_text("[injection]\nmax_results = 3\n", encoding="utf-8")  # same size: mtime tells them apart
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert config.load_cached().injection.max_results == 3


def test_environment_overrides_still_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    write_config("[injection]\nmax_results = 7\n")
    config.load_cached()
    monkeypatch.setenv("MEMLANE_INJECTION_MAX_RESULTS", "2")
    monkeypatch.setenv("MEMLANE_DAEMON_AUTOSTART", "false")
    cfg = config.load_cached()
    assert cfg.injection.max_results == 2
    assert cfg.daemon.autostart is False


def test_a_bad_file_is_still_an_error() -> None:
    write_config("[injection\n")
    with pytest.raises(config.ConfigError, match="invalid TOML"):
        config.load_cached()


def test_env_values_parse_as_toml_does() -> None:
    for raw in ("true", "false", "42", "007", "1_000", "-3", "2.5", "[1, 2]", '"quoted"', "plain words"):
        fast = config.parse_value(raw)
        import tomllib

        try:
            slow = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            slow = raw
        assert (fast, type(fast)) == (slow, type(slow)), raw


def test_a_damaged_cache_is_ignored() -> None:
    write_config("[injection]\nmax_results = 7\n")
    config.load_cached()
    Path(paths.join("cache", "config.json")).write_text('{"key": [1, 2], "data": [', encoding="utf-8")
    assert config.load_cached().injection.max_results == 7
    Path(paths.join("cache", "config.json")).write_text("[1, 2]", encoding="utf-8")
    assert config.load_cached().injection.max_results == 7
