"""The command ``memlane install`` registers with Claude Code: ``<python> -S <this file> <Event>``.

Started as a file, with ``-S``: no ``site`` (its ``.pth`` files, the distutils hack, an editable
install's finder) and no console-script wrapper, ~4.5 ms less per hook process, five to eight
processes a turn. The hook path needs only the standard library and memlane itself, so the folder that
holds the ``memlane`` package (site-packages, or ``src/`` of an editable install) is all this puts on
``sys.path``; ``-S`` still reads ``PYTHONPATH``. Capture-only events finish in a detached child
(``capture.detach``): Claude Code waits only for this process to read the payload.
"""

import os  # already loaded by the interpreter's start-up: free
import sys

# sys.path[0] is this file's folder (the package itself, whose modules must not shadow the standard
# library's); memlane is imported from the folder above it.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from memlane.entry import hook  # noqa: E402 - after the path is set

if __name__ == "__main__":
    hook(sys.argv[1:], detach=True)
