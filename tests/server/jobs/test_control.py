"""A task's control: progress and cancellation reach the work, in its thread too."""

from __future__ import annotations

import anyio
import pytest

from openenv_mcp.server.jobs import (
    JobCancelled,
    JobControl,
    current_job,
    job_check,
    job_progress,
    running,
)


def test_outside_a_task_nothing_happens() -> None:
    assert current_job() is None
    job_check()
    job_progress(1, 2, "half")


def test_progress_and_cancel_reach_a_worker_thread() -> None:
    job = JobControl()

    def work() -> None:
        job_progress(3, 10, "three of ten")
        job_check()
        job.cancel()
        job_check()

    async def main() -> None:
        with running(job):
            await anyio.to_thread.run_sync(work)

    with pytest.raises(JobCancelled):
        anyio.run(main)
    assert (job.progress, job.total, job.message) == (3.0, 10.0, "three of ten")
    assert job.cancelled and current_job() is None
