"""``openenv-mcp bench``: speed as ratios against the raw environment, in one run.

* :mod:`._run`: an environment in this process against the same over MCP (in memory,
  stdio, Streamable HTTP; batches, workers), the scale check (``--live``) and the
  start-up figures (``--startup``);
* :mod:`._versus`: ``--vs``, against the library a user would pick instead
  (Gymnasium's vector envs, EnvPool, SB3's PPO);
* :mod:`._openenv`: ``--vs openenv``, the bridge and ``--openenv`` against OpenEnv's
  own client and servers (part of the OpenEnv bridge: :mod:`openenv_mcp.openenv`).
"""

from openenv_mcp.bench._run import (
    DEFAULT_REPEATS,
    DEFAULT_STEPS,
    DEFAULT_WARMUP,
    BenchConfig,
    BenchFrames,
    BenchResult,
    BenchTransport,
    LiveResult,
    Progress,
    StartupResult,
    run_bench,
    run_live,
    run_startup,
)

__all__ = [
    "DEFAULT_REPEATS",
    "DEFAULT_STEPS",
    "DEFAULT_WARMUP",
    "BenchConfig",
    "BenchFrames",
    "BenchResult",
    "BenchTransport",
    "LiveResult",
    "Progress",
    "StartupResult",
    "run_bench",
    "run_live",
    "run_startup",
]
