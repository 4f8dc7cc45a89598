"""The README's examples, run: every ```console block, in order, as one newcomer's session.

A block holds ``$ command`` lines, each followed by the output it must print (stdout and stderr, as a
terminal shows them). The commands run in ``bash`` from a project folder ``~/shop`` in a fresh home
folder (``HOME`` and so ``~/.memlane`` are temporary), with ``memlane`` being this source tree and its
default settings (only the daemon's port is a free one, so no other daemon is met), and output piped
(so tables are tab-separated rows; whitespace is compared loosely). Nothing in the README starts the
daemon (a search is a read: ``daemon.search_starts`` is off), which the test checks at the end. What
changes run to run is matched by shape:

- ``mem:k3x9q2`` (a citation) and ``shop-1a2b3c4d`` (a project id) match any of their kind; the first
  match binds the name, later output must agree, and later commands get the real value substituted,
  so ``$ memlane show mem:k3x9q2`` shows the event the earlier output called ``mem:k3x9q2``;
- dates and times, sizes (``140.0 KB``), pids, durations and scores (``0.91``) match any value;
- ``...`` on a line of its own matches any number of lines; inside a line, any text.

A command must exit 0 unless its expected output has an ``Error:`` line.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest

from memlane.cli.main import cli

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"

# (pattern, binds): binding tokens must keep meaning one value through the session.
VOLATILE: list[tuple[str, bool]] = [
    (r"mem:[0-9a-z]{6}", True),
    (r"shop-[0-9a-f]{8}", True),
    (r"\d{4}-\d\d-\d\d(?:[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?Z?)?", False),
    (r"\d+(?:\.\d+)? (?:B|KB|MB|GB)\b", False),
    (r"\bpid \d+", False),
    (r"\b\d+(?:\.\d+)? ?(?:ms|s)\b", False),
    (r"\b[01]\.\d\d\b", False),  # search scores: the ranking's weights are tuned often; the order is checked
]
TOKEN = re.compile("|".join(f"({p})" for p, _ in VOLATILE))


@dataclass
class Example:
    line: int  # in README.md, for the failure message
    command: str
    expected: list[str]


@dataclass
class Session:
    bound: dict[str, str] = field(default_factory=dict)

    def substitute(self, command: str) -> str:
        return TOKEN.sub(lambda m: self.bound.get(m.group(0), m.group(0)), command)

    def line_regex(self, expected: str) -> tuple[re.Pattern[str], list[str | None]]:
        parts: list[str] = []
        names: list[str | None] = []
        pos = 0
        for m in TOKEN.finditer(expected):
            parts.append(_literal(expected[pos : m.start()]))
            kind = next(i for i, g in enumerate(m.groups()) if g is not None)
            pattern, binds = VOLATILE[kind]
            parts.append(f"({pattern})")
            names.append(m.group(0) if binds else None)
            pos = m.end()
        parts.append(_literal(expected[pos:]))
        return re.compile("".join(parts)), names

    def match_line(self, expected: str, actual: str) -> dict[str, str] | None:
        regex, names = self.line_regex(norm(expected))
        m = regex.fullmatch(norm(actual))
        if not m:
            return None
        found: dict[str, str] = {}
        for name, value in zip(names, m.groups(), strict=True):
            if name is None:
                continue
            if self.bound.get(name, value) != value or found.get(name, value) != value:
                return None
            found[name] = value
        return found

    def match(self, expected: list[str], actual: list[str]) -> dict[str, str] | None:
        """Whole-output match with ``...`` lines as wildcards (backtracking; outputs are short)."""
        if not expected:
            return {} if not actual else None
        if expected[0].strip() == "...":
            for skip in range(len(actual) + 1):
                rest = self.match(expected[1:], actual[skip:])
                if rest is not None:
                    return rest
            return None
        if not actual:
            return None
        here = self.match_line(expected[0], actual[0])
        if here is None:
            return None
        saved = dict(self.bound)
        self.bound.update(here)
        rest = self.match(expected[1:], actual[1:])
        self.bound = saved
        return None if rest is None else {**here, **rest}


def _literal(text: str) -> str:
    return ".*".join(re.escape(piece) for piece in text.split("..."))


def norm(line: str) -> str:
    return " ".join(line.split())


def examples(text: str) -> list[Example]:
    out: list[Example] = []
    in_block = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() == "```console":
            in_block = True
        elif in_block and line.strip() == "```":
            in_block = False
        elif in_block and line.startswith("$ "):
            out.append(Example(number, line[2:], []))
        elif in_block and out:
            out[-1].expected.append(line)
    return out


def test_readme_has_runnable_examples() -> None:
    found = examples(README.read_text(encoding="utf-8"))
    assert len(found) >= 20
    assert all(e.command.split()[0] in {"memlane", "echo", "cat", "printf", "mkdir"} for e in found)


def test_the_matcher_binds_and_rejects() -> None:
    s = Session()
    assert s.match(["a mem:k3x9q2 b", "...", "end"], ["a mem:abc123 b", "x", "y", "end"]) == {
        "mem:k3x9q2": "mem:abc123"
    }
    assert s.match(["a mem:k3x9q2 mem:k3x9q2"], ["a mem:abc123 mem:zzz999"]) is None
    assert s.match(["took 3.1 s at 2026-11-25 03:31:13"], ["took 12 ms at 2025-01-02 10:00:00"]) == {}
    assert s.match(["exact"], ["exact", "extra"]) is None


@pytest.fixture
def newcomer(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    home = tmp_path / "home"
    project = home / "shop"
    (project / ".git").mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "memlane"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m memlane "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLANE_", "CLAUDE", "NO_COLOR", "FORCE_COLOR"))}
    env.update(
        HOME=str(home),
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(REPO / "src"),
        PYTHONUNBUFFERED="1",  # stdout and stderr interleave as on a terminal
        MEMLANE_DAEMON_PORT=str(_free_port()),  # a newcomer's defaults otherwise: the daemon may autostart
        COLUMNS="100",
    )
    return project, env


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_readme_examples_run_and_print_what_it_says(newcomer: tuple[Path, dict[str, str]]) -> None:
    project, env = newcomer
    home = env["HOME"]
    session = Session()
    for example in examples(README.read_text(encoding="utf-8")):
        command = session.substitute(example.command)
        result = subprocess.run(
            ["bash", "-c", command + " 2>&1"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        actual = result.stdout.replace(home, "~").splitlines()
        expected = [line for line in example.expected]
        for lines in (expected, actual):  # a trailing blank line is invisible in the README
            while lines and not lines[-1].strip():
                lines.pop()
        where = f"README.md:{example.line}: $ {example.command}"
        found = session.match(expected, actual)
        assert found is not None, f"{where}\n--- expected\n" + "\n".join(expected) + "\n--- got\n" + "\n".join(actual)
        session.bound.update(found)
        failed_on_purpose = any(line.startswith("Error:") for line in expected)
        assert result.returncode == 0 or failed_on_purpose, f"{where}: exit {result.returncode}"
    # Reads start nothing: the search → process → search → status sequence ran without a daemon.
    assert not (Path(home) / ".memlane" / "daemon.json").exists(), "a README command started the daemon"


def reference_examples(text: str) -> list[tuple[int, str]]:
    """``memlane …`` lines of ```bash blocks and `memlane …` spans of tables: shown, not run."""
    out: list[tuple[int, str]] = []
    in_bash = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith("```"):
            in_bash = line.strip() == "```bash" and not in_bash
            continue
        if in_bash and line.strip().startswith("memlane "):
            out.append((number, line.strip()))
        elif line.startswith("|"):
            out.extend((number, span) for span in re.findall(r"`(memlane [^`]+)`", line))
    return out


def parse_only(command: str) -> None:
    """Resolve the command and parse its options as click would, without running anything."""
    words = shlex.split(command, comments=True)[1:]
    for stop in ("<", "|", "&&", ">"):
        if stop in words:
            words = words[: words.index(stop)]
    group: click.Command = cli
    ctx = group.make_context("memlane", words)
    while isinstance(group, click.Group):
        rest = [*ctx._protected_args, *ctx.args]
        if not rest:
            break
        name, sub, rest = group.resolve_command(ctx, rest)
        assert sub is not None and name is not None
        ctx = sub.make_context(name, rest, parent=ctx)
        group = sub
    assert not ctx.args or group.name == "hook", f"unexpected arguments {ctx.args}"


def test_readme_reference_examples_parse() -> None:
    found = reference_examples(README.read_text(encoding="utf-8"))
    assert len(found) >= 40
    bad = []
    for number, command in found:
        try:
            parse_only(command)
        except click.BadParameter as exc:
            if "does not exist" not in str(exc):  # example files are the reader's, not here
                bad.append(f"README.md:{number}: {command}: {exc}")
        except (click.UsageError, AssertionError) as exc:
            bad.append(f"README.md:{number}: {command}: {exc}")
    assert bad == []
