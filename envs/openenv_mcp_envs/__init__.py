"""The environments openenv-mcp ships, one package each, registered by entry point
(``openenv-mcp serve NAME``; ``pyproject.toml``'s ``openenv_mcp.envs`` group):

* :mod:`~openenv_mcp_envs.echo`: echoes its text action (the framework's test env);
* :mod:`~openenv_mcp_envs.atari`: every Atari 2600 game, through ale-py;
* :mod:`~openenv_mcp_envs.gymnasium`: any registered Gymnasium environment;
* :mod:`~openenv_mcp_envs.chess`: chess against an engine;
* :mod:`~openenv_mcp_envs.openspiel`: OpenSpiel's games against its bots;
* :mod:`~openenv_mcp_envs.coding`: sandboxed Python tasks with hidden tests;
* :mod:`~openenv_mcp_envs.trading`: a portfolio rebalanced daily;
* :mod:`~openenv_mcp_envs.reasoning`: reasoning-gym's problems, one answer each;
* :mod:`~openenv_mcp_envs.openenv`: an OpenEnv environment (a running server or a class).

They live under this name, not at the top level, so that OpenEnv's own env packages
(``atari_env``, ``chess_env``, ``coding_env``, ``echo_env``, ``openspiel_env``: what its typed
clients import) install beside them.
"""
