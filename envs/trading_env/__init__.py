"""The old import path of :mod:`openenv_mcp_envs.trading`, kept (its names, not its modules).

The bundled environments live under ``openenv_mcp_envs``, whose old top-level names
were OpenEnv's env packages' too; ``trading_env`` is not, so it still imports.
"""

from openenv_mcp_envs.trading import TradingConfig, TradingEnv

__all__ = ["TradingConfig", "TradingEnv"]
