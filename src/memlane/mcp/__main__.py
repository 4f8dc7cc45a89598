"""``python -m memlane.mcp``: the ``memlane mcp`` command on its own (works before it is registered in the CLI)."""

from memlane.cli.mcp_cmd import mcp_group

mcp_group(prog_name="memlane mcp")
