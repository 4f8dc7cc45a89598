"""Console entry point. ``memlane hook …`` takes a stdlib-only path; everything else loads the CLI."""

from __future__ import annotations

import sys

# Events whose hook only stores: with ``detach`` their work goes to a child (capture.detach). SessionStart
# and UserPromptSubmit hand Claude Code the context they compute, so they run in the process it waits for.
CAPTURE_ONLY = ("PostToolUse", "PostToolUseFailure", "Stop", "SubagentStop", "SessionEnd", "PreCompact")
# Events the daemon answers when it is up (daemon.warm); in the hook's own process otherwise.
WARM = ("SessionStart", "UserPromptSubmit")


def hook(argv: list[str], detach: bool = False) -> None:
    """Run the hook for ``argv`` (``<Event> [--plugin]``) on the payload on stdin, then exit the process.

    ``detach`` (the installed command, ``hook_launcher``): a capture-only event forks once the payload is
    read and Claude Code waits only for that. ``memlane hook`` by hand or in a script stays in one process,
    so what it stored is there when it returns.
    """
    import os
    import time

    now = time.time()
    try:
        raw = sys.stdin.buffer.read()
    except (AttributeError, OSError, ValueError):  # no stdin at all: the hook logs the empty payload
        raw = b""
    event = argv[0] if argv else ""
    delivered = None  # set when a detached child stores the events: they keep the hook's time, not the child's
    if detach and event in CAPTURE_ONLY and "--plugin" not in argv[1:]:
        from memlane.daemon import warm

        if warm.hand_off(event, raw, now):  # the daemon saved it and stores it (daemon.inbox)
            os._exit(0)
    if detach and event in CAPTURE_ONLY:
        from memlane.capture import detach as detached

        if detached.fork(raw):  # from here on, the child (or this process, where fork is missing)
            delivered = now
    if event in WARM and "--plugin" not in argv[1:]:
        from memlane.daemon import warm

        answered = warm.answer(event, raw)
        if answered is not None:  # the daemon ran the hook (daemon.warm)
            if answered:
                sys.stdout.buffer.write(answered + b"\n")
            sys.stdout.flush()
            os._exit(0)
    if event == "UserPromptSubmit":
        from memlane.daemon import prepare

        prepare.start(raw)  # the daemon embeds the prompt while the hook loads and stores it

    from memlane import hooks

    code = hooks.main(argv, exiting=True, raw=raw, delivered=delivered)
    sys.stdout.flush()
    sys.stderr.flush()
    # No interpreter teardown and no SQLite close: the store's checkpoint is left to SQLite's
    # autocheckpoint (see hooks._LEAVE_OPEN), and the hook returns to Claude Code sooner.
    os._exit(code)


def main() -> None:
    argv = sys.argv[1:]
    # `memlane hook -h` (or no event) goes to the CLI, which prints the hook command's help.
    if argv[:1] == ["hook"] and len(argv) > 1 and argv[1] not in ("-h", "--help"):
        hook(argv[1:])
    from memlane.cli.main import run

    run()


if __name__ == "__main__":
    main()
