"""Endless mode (issue 34; reference specs/endless-mode): work that carries across session boundaries.

- ``marks.py``: what one event did, as endless mode reads it (the file it changed, the command it ran and whether
  it failed, the decision or task it stated, the code names it used), with one line of fact each;
- ``projector.py``: ``EndlessProjector`` writes the marks and each session's span from the event log (the
  daemon's projection job, ``memlane rebuild``), and queues what changed for the next three;
- ``working_set.py``: the working set — the files, decisions, open tasks, errors and prompts of the last
  ``endless.window_hours`` of activity, ranked and small — computed in the background, read at SessionStart;
- ``consolidation.py``: one consolidated memory per long-running topic (key facts, sources, confidence),
  extractive; the daemon's ``EndlessJob`` runs it when due;
- ``continuity.py``: the continuity score of each session with the one before it (spec §4.1) and why;
- ``inject.py``: what SessionStart gives Claude in endless mode;
- ``service.py``: what ``Memory`` and the CLI call (status, enable, disable, consolidate, refresh).

Everything here is derived from ``events``; nothing here runs on a hook's path except ``inject`` reading the
working set inside the daemon (a hook process without the daemon gives the session recap instead).
"""
