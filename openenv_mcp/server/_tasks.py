"""The env's task set over MCP: its splits and tasks as resources, a page at a time,
and each task's running success counts (:class:`~openenv_mcp.tasks.TaskLedger`).

* ``openenv://ENV/tasks``: the splits (``name``, ``type``, ``tasks``: its size) and
  how to read them;
* ``openenv://ENV/tasks/{split}/{page}``: a split's tasks, :data:`PAGE_SIZE` a page,
  each as :meth:`Task.to_json <openenv_mcp.tasks.Task.to_json>` writes it, with the
  next page's URI (``null`` on the last);
* ``openenv://ENV/task-stats``: each task's ended episodes and successes on this server.

Listed only where the env publishes tasks.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ResourceError

from openenv_mcp.errors import ArgumentError
from openenv_mcp.tasks import TaskLedger, TaskSet

__all__ = ["PAGE_SIZE", "mount_tasks", "task_page"]

#: Tasks a page of a split holds.
PAGE_SIZE = 100


def task_page(task_set: TaskSet, env: str, split: str, page: int) -> dict[str, Any]:
    """Page ``page`` of split ``split``: ``{"split", "page", "start", "total", "tasks",
    "next"}``.

    Raises:
        UnknownTask: no such split (the message lists them).
        ArgumentError: ``page`` is negative or past the split's last page.
    """
    tasks = task_set.split_tasks(split)
    total = len(tasks)
    pages = max(1, -(-total // PAGE_SIZE))
    if not 0 <= page < pages:
        raise ArgumentError(
            f"split {split!r} has {total} tasks in {pages} page{'s' if pages != 1 else ''} "
            f"of {PAGE_SIZE} (pages 0-{pages - 1}), got page {page}"
        )
    start = page * PAGE_SIZE
    stop = min(total, start + PAGE_SIZE)
    return {
        "split": split,
        "page": page,
        "start": start,
        "total": total,
        "tasks": [task.to_json() for task in tasks[start:stop]],
        "next": f"openenv://{env}/tasks/{split}/{page + 1}" if page + 1 < pages else None,
    }


def mount_tasks(server: FastMCP, env: str, task_set: TaskSet, ledger: TaskLedger) -> None:
    """Add the task resources of ``env`` to ``server``."""
    splits = [
        {**split.to_json(), "tasks": len(task_set.tasks(split.name))} for split in task_set.splits()
    ]
    index = json.dumps(
        {
            "splits": splits,
            "page_size": PAGE_SIZE,
            "pages": f"openenv://{env}/tasks/{{split}}/{{page}}",
            "stats": f"openenv://{env}/task-stats",
            "start": 'reset(options={"split": SPLIT, "index": I}) or reset(options={"task": ID})',
        }
    )

    @server.resource(
        f"openenv://{env}/tasks",
        name=f"{env}-tasks",
        description="The task splits (name, type, size) and how to read and start them.",
        mime_type="application/json",
    )
    def tasks_resource() -> str:
        return index

    @server.resource(
        f"openenv://{env}/tasks/{{split}}/{{page}}",
        name=f"{env}-task-page",
        description=f"A split's tasks, {PAGE_SIZE} a page (page 0 first), with the next "
        "page's URI.",
        mime_type="application/json",
    )
    def task_page_resource(split: str, page: str) -> str:
        try:
            if not page.isdigit() or len(page) > 9:
                raise ArgumentError(f"a page is a number from 0, got {page[:40]!r}")
            return json.dumps(task_page(task_set, env, split, int(page)))
        except ArgumentError as exc:  # its message is the answer (others stay masked)
            # A caller's mistake, not the server's: logged quietly, with no traceback.
            raise ResourceError(str(exc), log_level=logging.DEBUG) from None

    @server.resource(
        f"openenv://{env}/task-stats",
        name=f"{env}-task-stats",
        description="Each task's ended episodes and successes on this server (for "
        "samplers that weigh tasks by the signal they still carry).",
        mime_type="application/json",
    )
    def task_stats_resource() -> str:
        return json.dumps(ledger.to_json())
