"""Clients of the MCP Tasks extension that run outside our venv: fastmcp-tasks' (its own
side venv) and a Node requester on ``@modelcontextprotocol/ext-tasks``."""
