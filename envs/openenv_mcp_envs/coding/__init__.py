"""Coding tasks over MCP (``openenv-mcp serve coding``): write a Python function, run code
and hidden tests in a bubblewrap sandbox with resource limits; reward is the fraction of
tests passed."""

from openenv_mcp_envs.coding._problems import Task, TestCase, builtin_tasks, load_task_file
from openenv_mcp_envs.coding._sandbox import Limits, RunResult, Sandbox
from openenv_mcp_envs.coding.env import CodingConfig, CodingEnv, CodingSnapshot

__all__ = [
    "CodingConfig",
    "CodingEnv",
    "CodingSnapshot",
    "Limits",
    "RunResult",
    "Sandbox",
    "Task",
    "TestCase",
    "builtin_tasks",
    "load_task_file",
]
