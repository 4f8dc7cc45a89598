"""Team mode: a project's memory shared through a PostgreSQL server (issue 37).

Hooks keep writing the local SQLite store and never touch the network. The daemon's ``SyncJob`` pushes each
shared project's new events to the server (privacy filter applied again, sealed with the team key when the
project is encrypted) and pulls the teammates' into the local store, idempotent by event id and resumable
from cursors kept in both stores; ``forget`` travels as a tombstone. ``team.py`` has the operations the CLI
offers (share, status, grant, …), ``crypto.py`` the team key.
"""
