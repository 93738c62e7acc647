"""Trading: a multi-asset portfolio rebalanced daily to target weights (FinRL-like)."""

from openenv_mcp_envs.trading.env import TradingConfig, TradingEnv

__all__ = ["TradingConfig", "TradingEnv"]
