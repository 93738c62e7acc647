"""How a server is reached: stdio (``_stdio``) and its first second (``_prelude``,
``_answers``, ``_unready``), the episode host (``_host``, ``_harness``), Streamable HTTP
and its guard (``_http``, ``_limits``, ``_token``), and the process's logs and allocator
(``_logs``, ``_malloc``). The transport objects ``serve`` picks from (stdio, http, ray,
each with its settings group) stand above the server, in :mod:`openenv_mcp.serving`.
"""
