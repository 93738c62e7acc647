"""Evals: a policy played on an environment's task split, scored as eval users read it
(unbiased pass@k, success rate with its standard error, per task and per difficulty, a
reproducibility probe), in OpenEnv's RFC 013 shape, with an Inspect AI log beside it
and a comparison of two reports. ``openenv-mcp eval`` on the command line, and
:func:`evaluate` (async) or :func:`evaluate_sync` from Python, e.g. inside a training
loop::

    report = await evaluate(server_or_command_or_url, split="validation", samples=4,
                            k=(1, 4), policy="random", limit=20)
    report.scores()["pass@4"]
"""

from __future__ import annotations

from openenv_mcp.evals._policies import (
    CallablePolicy,
    RandomPolicy,
    play_episode,
    policy_from_spec,
)
from openenv_mcp.evals._policy import EvalPolicy, TaskOutcome, TaskRun
from openenv_mcp.evals._report import EvalReport, RunRecord, compare, pass_at_k
from openenv_mcp.evals._run import evaluate, evaluate_sync, parse_k

__all__ = [
    "CallablePolicy",
    "EvalPolicy",
    "EvalReport",
    "RandomPolicy",
    "RunRecord",
    "TaskOutcome",
    "TaskRun",
    "compare",
    "evaluate",
    "evaluate_sync",
    "parse_k",
    "pass_at_k",
    "play_episode",
    "policy_from_spec",
]
