"""Console entry point. ``memlane hook …`` takes a stdlib-only path; everything else loads the CLI."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    # `memlane hook -h` (or no event) goes to the CLI, which prints the hook command's help.
    if argv[:1] == ["hook"] and len(argv) > 1 and argv[1] not in ("-h", "--help"):
        import os

        from memlane import hooks

        code = hooks.main(argv[1:], exiting=True)
        sys.stdout.flush()
        sys.stderr.flush()
        # No interpreter teardown and no SQLite close: the store's checkpoint is left to SQLite's
        # autocheckpoint (see hooks._LEAVE_OPEN), and the hook returns to Claude Code sooner.
        os._exit(code)
    from memlane.cli.main import run

    run()


if __name__ == "__main__":
    main()
