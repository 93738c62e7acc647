"""A server's running count of each task's ended episodes and successes: what the
``openenv://ENV/task-stats`` resource serves, so several trainers sampling tasks
(:class:`~openenv_mcp.tasks.TaskSampler`) share one view of which still carry signal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["TaskLedger"]


class TaskLedger:
    """Ended episodes and successes per task id, since the server started.

    Args:
        limit: the most task ids kept; past it, a new id is not counted (a stranger
            cannot grow a server's memory by starting every task of a huge set).
    """

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self._counts: dict[str, list[int]] = {}
        #: Ended episodes not counted because the ledger was full.
        self.dropped = 0

    def note(self, task: Mapping[str, Any] | None) -> None:
        """Count one ended episode from what an answer says of its task (its
        ``structuredContent.task``, with ``success``); anything else is ignored."""
        if not isinstance(task, Mapping):
            return
        success, task_id = task.get("success"), task.get("id")
        if not isinstance(success, bool) or not isinstance(task_id, str):
            return
        counts = self._counts.get(task_id)
        if counts is None:
            if len(self._counts) >= self.limit:
                self.dropped += 1
                return
            counts = self._counts[task_id] = [0, 0]
        counts[0] += 1
        counts[1] += success

    def get(self, task_id: str) -> tuple[int, int]:
        """``(episodes, successes)`` of one task (``(0, 0)`` where none ended)."""
        n, successes = self._counts.get(task_id, (0, 0))
        return n, successes

    def to_json(self) -> dict[str, Any]:
        """``{"tasks": {id: {"n", "successes"}}, "episodes": N}``: the resource's JSON."""
        return {
            "tasks": {
                task_id: {"n": n, "successes": successes}
                for task_id, (n, successes) in self._counts.items()
            },
            "episodes": sum(n for n, _ in self._counts.values()),
            "dropped": self.dropped,
        }
