"""Reasoning problems over MCP (``openenv-mcp serve reasoning``): one question of a
reasoning-gym dataset per episode, one answer, scored by the dataset's own checker; its
datasets at curriculum levels as train, validation and test tasks."""

from openenv_mcp_envs.reasoning._tasks import ReasoningTasks
from openenv_mcp_envs.reasoning.env import (
    ReasoningConfig,
    ReasoningEnv,
    ReasoningOptions,
    ReasoningSnapshot,
)

__all__ = [
    "ReasoningConfig",
    "ReasoningEnv",
    "ReasoningOptions",
    "ReasoningSnapshot",
    "ReasoningTasks",
]
