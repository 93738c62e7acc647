"""Long calls as MCP tasks (the ``io.modelcontextprotocol/tasks`` extension, SEP-2663):
a client that opts in gets a long tool call answered with a task it polls, cancels and
reads after reconnecting; one that does not gets the same call answered as today. Behind
a router of replicas, a :class:`JobMirror` lets any replica answer and cancel a task."""

from openenv_mcp.server.jobs._control import (
    JobCancelled,
    JobControl,
    current_job,
    job_check,
    job_progress,
    running,
)
from openenv_mcp.server.jobs._extension import POLL_MS, TASKS_EXTENSION_ID, McpTasksExtension
from openenv_mcp.server.jobs._mirror import JobMirror, MirroredJobStore, attach_mirror
from openenv_mcp.server.jobs._store import Job, JobStore, UnknownJob

__all__ = [
    "POLL_MS",
    "TASKS_EXTENSION_ID",
    "Job",
    "JobCancelled",
    "JobControl",
    "JobMirror",
    "JobStore",
    "McpTasksExtension",
    "MirroredJobStore",
    "UnknownJob",
    "attach_mirror",
    "current_job",
    "job_check",
    "job_progress",
    "running",
]
