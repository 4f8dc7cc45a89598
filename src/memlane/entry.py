"""Console entry point. ``memlane hook …`` takes a stdlib-only path; everything else loads the CLI."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    # `memlane hook -h` (or no event) goes to the CLI, which prints the hook command's help.
    if argv[:1] == ["hook"] and len(argv) > 1 and argv[1] not in ("-h", "--help"):
        import os

        try:
            raw = sys.stdin.buffer.read()
        except (AttributeError, OSError, ValueError):  # no stdin at all: the hook logs the empty payload
            raw = b""
        if argv[1] == "UserPromptSubmit":
            from memlane.daemon import prepare

            prepare.start(raw)  # the daemon embeds the prompt while the hook loads and stores it

        from memlane import hooks

        code = hooks.main(argv[1:], exiting=True, raw=raw)
        sys.stdout.flush()
        sys.stderr.flush()
        # No interpreter teardown and no SQLite close: the store's checkpoint is left to SQLite's
        # autocheckpoint (see hooks._LEAVE_OPEN), and the hook returns to Claude Code sooner.
        os._exit(code)
    from memlane.cli.main import run

    run()


if __name__ == "__main__":
    main()
