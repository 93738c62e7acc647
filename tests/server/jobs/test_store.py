"""The tasks a server holds: made per client under a cap, found only by their client,
forgotten ttlMs after they end."""

from __future__ import annotations

import time

import pytest

from openenv_mcp.errors import ServerFull
from openenv_mcp.server.jobs import JobStore, UnknownJob


def test_a_task_is_found_by_its_client_only_and_forgotten_after_its_ttl() -> None:
    store = JobStore(ttl_ms=50, per_client=4, poll_ms=100)
    job = store.create("evaluate", "10.0.0.1")
    assert store.get(job.id, "10.0.0.1") is job
    with pytest.raises(UnknownJob) as other:
        store.get(job.id, "10.0.0.2")
    assert "another client's" in str(other.value)
    wire = job.wire(store.ttl_ms, store.poll_ms)
    assert wire["status"] == "working" and wire["statusMessage"] == "evaluate: 0"
    store.finish(job, "completed", result={"content": []})
    assert store.get(job.id, "10.0.0.1").result == {"content": []}
    time.sleep(0.1)
    with pytest.raises(UnknownJob):
        store.get(job.id, "10.0.0.1")
    with pytest.raises(UnknownJob):
        store.get(123, "10.0.0.1")  # type: ignore[arg-type]


def test_a_client_runs_at_most_per_client_tasks() -> None:
    store = JobStore(ttl_ms=1000, per_client=1, poll_ms=100)
    first = store.create("collect", "a")
    with pytest.raises(ServerFull) as full:
        store.create("collect", "a")
    assert "--mcp-tasks-per-client=1" in str(full.value)
    store.create("collect", "b")  # another client is not held back
    first.control.cancel()
    assert first.wire(1000, 100)["statusMessage"] == "cancelling"
    store.finish(first, "cancelled")
    store.create("collect", "a")  # an ended task frees its place
