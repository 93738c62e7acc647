"""What a long call running as an MCP task sees of its task: progress to report, and
whether it was cancelled.

A tool's handler never knows whether it runs as a task: it calls :func:`job_progress`
as its work advances and :func:`job_check` between steps (both do nothing outside a
task). Cancelling the task makes the next :func:`job_check` raise :class:`JobCancelled`,
so work stops within one step and the handler's own ``finally`` closes what it opened.
The control travels in a context variable, so it reaches threads started with
``anyio.to_thread.run_sync`` (which copy the context) too.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from openenv_mcp.pipeline.repeat import between_steps
from openenv_mcp.seats._table import give_up

__all__ = ["JobCancelled", "JobControl", "current_job", "job_check", "job_progress", "running"]


class JobCancelled(Exception):
    """The task running this call was cancelled (``tasks/cancel``)."""


@dataclass
class JobControl:
    """One running task's progress and cancellation, shared by its worker and the store."""

    progress: float = 0.0
    total: float | None = None
    message: str | None = None
    _cancel: threading.Event = field(default_factory=threading.Event)

    def report(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Record how far the work is (``progress`` of ``total``), with a line saying what."""
        self.progress, self.total = float(progress), None if total is None else float(total)
        if message is not None:
            self.message = message

    def cancel(self) -> None:
        """Ask the work to stop at its next :meth:`check`."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancel.is_set()

    def check(self) -> None:
        """Raise :class:`JobCancelled` if the task was cancelled."""
        if self._cancel.is_set():
            raise JobCancelled("the task was cancelled")


_current: ContextVar[JobControl | None] = ContextVar("openenv_mcp_job", default=None)


def current_job() -> JobControl | None:
    """The control of the task this code runs in, or ``None`` outside a task."""
    return _current.get()


def job_check() -> None:
    """Raise :class:`JobCancelled` if this code runs in a cancelled task; else nothing."""
    job = _current.get()
    if job is not None:
        job.check()


def job_progress(progress: float, total: float | None = None, message: str | None = None) -> None:
    """Report progress of the task this code runs in; outside a task, nothing."""
    job = _current.get()
    if job is not None:
        job.report(progress, total, message)


@contextmanager
def running(job: JobControl) -> Iterator[JobControl]:
    """Run the block as ``job``'s work: :func:`job_check` and :func:`job_progress` reach it,
    and so do the steps of a held action (``step``'s ``repeat``), which then may be many,
    and a seat's wait for its turn, which a cancel gives up."""

    def between(taken: int, asked: int) -> bool:
        job.report(taken, asked, "steps")
        return job.cancelled  # the hold stops; the task ends cancelled

    token, held = _current.set(job), between_steps.set(between)
    waiting = give_up.set(lambda: job.cancelled)  # a seat's wait for its turn, too
    try:
        yield job
    finally:
        give_up.reset(waiting)
        between_steps.reset(held)
        _current.reset(token)
