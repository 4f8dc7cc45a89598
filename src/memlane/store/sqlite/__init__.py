"""The SQLite backend: ``Store`` (one file per project; what the hooks write) beside ``store.postgres``.

Its modules stay where they have always been (``store/connection.py``, ``events.py``, ``fulltext.py``,
``forget.py``, ``outbox.py``, ``imports.py``, ``schema.py``): the hook path imports them by those names, and
the numbered SQLite migrations live in ``store/schema.py``. This package is the backend's name in the
interface (``store/backend.py``); vectors for it are ``vectors.index.VectorIndex`` (LanceDB).
"""

from memlane.store.db import Store

SQLiteStore = Store
__all__ = ["SQLiteStore", "Store"]
