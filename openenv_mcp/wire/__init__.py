"""What travels on the wire, in small leaf modules that both sides import:

- ``exactjson``: JSON messages, orjson's speed with Python's exactness for long integers;
- ``schemas``: JSON schemas as values travel (``$ref`` inlined, values checked);
- ``portability``: whether a tool's schema travels to every client;
- ``handles``: episode and snapshot handles as capabilities, and what may be shown of them;
- ``rng``: an environment's random generator state, mirrored across MCP;
- ``sdk``: every place openenv-mcp leans on FastMCP's or the MCP SDK's internals.

Each imports nothing of the rest of the package but :mod:`openenv_mcp.errors`, so any
floor may use them.
"""
