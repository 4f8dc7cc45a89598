"""The command ``memlane install`` registers with Claude Code: ``<python> -I -S <this file> <Event>``.

Started as a file, with ``-S``: no ``site`` (its ``.pth`` files, the distutils hack, an editable
install's finder) and no console-script wrapper, ~4.5 ms less per hook process, five to eight
processes a turn; ``-I`` (isolated: no ``PYTHON*`` variables, no user site) ~0.7 ms more. The hook path
needs only the standard library and memlane itself, so the folder that holds the ``memlane`` package
(site-packages, or ``src/`` of an editable install) is all this puts on ``sys.path``. With the daemon up
the daemon runs the hook (``daemon.warm``); otherwise capture-only events finish in a detached child
(``capture.detach``): Claude Code waits only for this process to read the payload.
"""

import os  # already loaded by the interpreter's start-up: free
import sys

# Under ``-I`` nothing is put first on sys.path (without it, this file's folder would be: the package
# itself, whose modules must not shadow the standard library's); memlane is imported from the folder above.
_here = os.path.dirname(os.path.abspath(__file__))
if sys.path and sys.path[0] == _here:
    sys.path[0] = os.path.dirname(_here)
else:
    sys.path.insert(0, os.path.dirname(_here))

from memlane.entry import hook  # noqa: E402 - after the path is set

if __name__ == "__main__":
    hook(sys.argv[1:], detach=True)
