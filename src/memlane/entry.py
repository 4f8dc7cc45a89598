"""Console entry point. ``memlane hook …`` takes a stdlib-only path; everything else loads the CLI."""

from __future__ import annotations

import sys


def hook(argv: list[str], detach: bool = False) -> None:
    """Run the hook for ``argv`` (``<Event> [--plugin]``) on the payload on stdin, then exit the process.

    With the daemon up, it runs the hook (``daemon.warm``): SessionStart and UserPromptSubmit are answered by
    it, and with ``detach`` (the installed command, ``hook_launcher``) a capture-only event is handed to it.
    Otherwise ``detach`` makes a capture-only event fork once the payload is read, so Claude Code waits only
    for that. ``memlane hook`` by hand or in a script stays in one process, so what it stored is there when
    it returns. Plugin hooks (``--plugin``) run here: they first check whether installed hooks shadow them.
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
    from memlane.daemon import warm

    to_daemon = "--plugin" not in argv[1:]
    if detach and event in warm.CAPTURE_EVENTS:
        if to_daemon and warm.hand_off(event, raw, now):  # the daemon queued it and stores it (daemon.inbox)
            os._exit(0)
        from memlane.capture import detach as detached

        if detached.fork(raw):  # from here on, the child (or this process, where fork is missing)
            delivered = now
    elif to_daemon:
        answered = warm.answer(event, raw)  # None: not an event the daemon answers, or it could not
        if answered is not None:
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
