"""Task sets: the splits and tasks an environment publishes, how a reset starts one,
and how an ended episode is judged (the contract's optional tasks facet; an env
publishes one from :meth:`openenv_mcp.Environment.task_set`), and which task a trainer
plays next (:class:`TaskSampler`)."""

from __future__ import annotations

from openenv_mcp.tasks._ledger import TaskLedger
from openenv_mcp.tasks._model import (
    SPLIT_TYPES,
    Ending,
    LazyTasks,
    SeedTasks,
    Split,
    SplitType,
    Task,
    TaskSet,
    UnknownTask,
)
from openenv_mcp.tasks._sampler import SamplerStrategy, TaskSampler
from openenv_mcp.tasks._start import TASK_OPTIONS, Started, start_task

__all__ = [
    "SPLIT_TYPES",
    "TASK_OPTIONS",
    "Ending",
    "LazyTasks",
    "SamplerStrategy",
    "SeedTasks",
    "Split",
    "SplitType",
    "Started",
    "Task",
    "TaskLedger",
    "TaskSampler",
    "TaskSet",
    "UnknownTask",
    "start_task",
]
