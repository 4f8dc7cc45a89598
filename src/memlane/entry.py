"""Console entry point. ``memlane hook …`` takes a stdlib-only path; everything else loads the CLI."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        from memlane import hooks

        sys.exit(hooks.main(argv[1:]))
    from memlane.cli.main import run

    run()


if __name__ == "__main__":
    main()
