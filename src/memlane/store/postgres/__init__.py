"""The PostgreSQL backend (``memlane[postgres]``: psycopg 3): ``PgStore`` and ``PgVectorIndex`` (pgvector).

Nothing here is imported on the hook path: hooks always write the local SQLite store first.
"""

from memlane.store.postgres.connection import DatabaseError, connect, redact
from memlane.store.postgres.store import PgStore

__all__ = ["DatabaseError", "PgStore", "connect", "redact"]
