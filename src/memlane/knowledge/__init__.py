"""The knowledge model: what memlane *knows* from its events, not only what it recalls (issue 32).

- **entries**: records taken from one event — a file change, a snapshot of a file, a decision, a commit or
  revert, a task note — with a stage (raw → … → verified) and a status (active | superseded);
- **entities** with canonical keys and aliases — tasks, conditions, artifacts, and what memories name: files,
  libraries, code fragments — and **edges** between them (``changes``, ``introduces``, ``removes``,
  ``blocked_by``, ``resolves_to``, ``supersedes``, ``mentions`` …);
- **memory resolutions**: memory A was replaced by memory B, from structure — a later edit of the same file
  region, a revert, a decision that removed what an earlier exchange introduced, an edit that took out what a
  memory quotes (``resolutions.py``); ``Store.replacements`` is the effective view;
- **tasks** as event-sourced entities with an enforced state machine (``tasks.py``);
- the **evidence aligner** (``aligner.py``): a quoted span found in its source event, exact → normalised →
  fuzzy; an unaligned claim is never verified.

Everything here is derived from ``events`` by ``KnowledgeProjector`` (``projector.py``), which the daemon runs
in the background (``daemon/jobs.py``) and ``memlane rebuild`` reruns from scratch (``memlane/derived.py``).
The SQL is in ``store/knowledge.py``. Imports go downward only: store, workflow, and retrieval's code
fragments (``select.fragments``, one definition for both); nothing in ``capture/``,
``store/`` or ``retrieval/``'s hook path imports this package.
"""
