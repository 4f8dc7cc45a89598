"""Changing ``config.toml``: the one validated set/unset behind ``memlane config set|unset`` and the dashboard's
settings page, so both accept and refuse the same values with the same message; and where each effective
value comes from (default, the file, or a ``MEMLANE_*`` variable).

Not in ``config.py``: that module is on every hook's path, and writing needs ``tomli_w``.
"""

from __future__ import annotations

import os
from typing import Any

import tomli_w

from memlane import atomic, config, paths


def render_toml(values: dict[str, dict[str, Any]], user_set: dict[str, dict[str, Any]] | None) -> str:
    """A documented config file. With ``user_set``, keys the user did not set are commented out."""
    out = ["# memlane configuration — every setting, with its default. Environment: MEMLANE_<SECTION>_<KEY>.", ""]
    current = None
    for section, key, default, doc in config.docs():
        if section != current:
            if current is not None:
                out.append("")
            out.append(f"[{section}]")
            current = section
        out.append(f"# {doc}")
        value = values[section][key]
        line = tomli_w.dumps({key: value}).strip()
        if user_set is not None and key not in user_set.get(section, {}):
            line = "\n".join("# " + part for part in tomli_w.dumps({key: default}).strip().splitlines())
        out.append(line)
    return "\n".join(out) + "\n"


def _write(data: dict[str, dict[str, Any]]) -> None:
    cfg = config.Config()
    config._apply(cfg, data, "config")  # validate the whole file before writing anything
    atomic.write_text(paths.config_path(), render_toml(config.as_dict(cfg), data), atomic.PRIVATE)


def split_key(key: str) -> tuple[str, str]:
    """``section.key`` checked against the schema (a typo is named, with a suggestion)."""
    section, _, name = key.partition(".")
    config.get_value(config.Config(), key if name else f"{key}.")  # names the typo, if any
    if not name:
        raise config.ConfigError("give a key as section.key, e.g. injection.max_chars")
    return section, name


def set_values(values: dict[str, Any], notes: list[str] | None = None) -> None:
    """Set several ``section.key`` values (already typed: TOML or JSON values) in one write, after validating
    the whole file; a bad value raises ``ConfigError`` naming it, and nothing is written. An embedding model
    that cannot be used is a bad value too (``embedding_note``); what could not be checked goes to ``notes``."""
    data = config.read_file(paths.config_path())
    names = []
    for key, value in values.items():
        section, name = split_key(key)
        data.setdefault(section, {})[name] = value
        names.append((section, name))
    embedding = [name for section, name in names if section == "embedding" and name in EMBEDDING_KEYS]
    note = embedding_note(data, embedding) if embedding else ""
    _write(data)
    if note and notes is not None:
        notes.append(note)


def set_value(key: str, value: Any, notes: list[str] | None = None) -> Any:
    """``set_values`` for one key; returns its effective value."""
    set_values({key: value}, notes)
    return config.get_value(config.load(), key)


def set_text(key: str, raw: str, notes: list[str] | None = None) -> Any:
    """``set_value`` for a value typed by a person: TOML when it parses (3000, true, ["a"]), else the text."""
    return set_value(key, config.parse_value(raw), notes)


EMBEDDING_KEYS = ("model", "provider", "runtime", "url", "api_key_env")


def embedding_note(data: dict[str, Any], keys: list[str]) -> str:
    """Refuse a model or runtime that cannot be used (``ConfigError``, nothing written: it used to be taken,
    and every search quietly became full-text only); return what could not be checked.

    Setting the provider, url or key first, before the model, is the usual order (the README's): then the
    model still named is only a note, so the settings can be changed one at a time.
    """
    from memlane.embed.check import check  # the embedding package (numpy) only when embedding settings change

    cfg = config.Config()
    config._apply(cfg, data, "config")
    for key, value in config.env_overrides().get("embedding", {}).items():  # checked as it will run
        setattr(cfg.embedding, key, value)
    verdict = check(cfg.embedding)
    if verdict.problem and ("model" in keys or "runtime" in keys):
        raise config.ConfigError(f"{verdict.problem}; embedding settings left unchanged")
    if verdict.problem:
        return f"{verdict.problem}; set embedding.model to one that works next"
    return verdict.note


def unset(key: str) -> None:
    """Return ``section.key`` to its default (removed from the file)."""
    section, name = key.partition(".")[0], key.partition(".")[2]
    if key not in config.RETIRED:  # a retired setting can still be taken out of the file
        config.get_value(config.Config(), key)
    data = config.read_file(paths.config_path())
    data.get(section, {}).pop(name, None)
    _write({k: v for k, v in data.items() if v})


def show_value(value: Any) -> str:
    """A value as ``config get`` prints it (TOML)."""
    return tomli_w.dumps({"v": value})[4:].strip()


def sources(environ: dict[str, str] | os._Environ[str] | None = None) -> dict[str, str]:
    """``section.key`` → where its effective value comes from: ``environment (MEMLANE_…)``, ``config.toml``
    or ``default``."""
    file_data = config.read_file(paths.config_path())
    env = config.env_overrides(environ)
    out = {}
    for section, key, _default, _doc in config.docs():
        if key in env.get(section, {}):
            out[f"{section}.{key}"] = f"environment (MEMLANE_{section.upper()}_{key.upper()})"
        elif key in (file_data.get(section) or {}):
            out[f"{section}.{key}"] = "config.toml"
        else:
            out[f"{section}.{key}"] = "default"
    return out
