"""memlane as a Claude Code plugin: this folder is the plugin (shipped as package data).

- ``.claude-plugin/plugin.json`` — the manifest;
- ``hooks/hooks.json`` — the same hooks as ``memlane install`` (``install.HOOKS``), each command
  ending in ``--plugin`` so it can step aside when ``memlane install`` hooks are also registered
  (``guard``);
- ``.mcp.json`` — the memlane MCP server (``memlane mcp``);
- ``commands/*.md`` — /memory-search, /memory-history, /memory-stats, /memory-import, /memory-forget.

``build`` writes a local marketplace holding a copy bound to this installation's executable.
Stdlib only: ``guard`` is imported by hook processes.
"""

from __future__ import annotations

import os

MARKER = "--plugin"


def plugin_dir() -> str:
    """The plugin's root folder inside the installed package."""
    return os.path.dirname(os.path.abspath(__file__))
