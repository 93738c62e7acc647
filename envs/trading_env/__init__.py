"""Trading: a multi-asset portfolio rebalanced daily to target weights (FinRL-like)."""

from trading_env.env import TradingConfig, TradingEnv

__all__ = ["TradingConfig", "TradingEnv"]
