"""The task ledger (what every replica of a Ray deployment reads another's MCP tasks
from), in memory: its answers per client, out-of-order publications, cancels recorded
for the owner, lost owners, expiry; and replicas' stores reading each other's tasks
through it. On a real cluster: tests/cluster/test_ray_serve.py."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("ray", reason="the [ray] extra is not installed (./dev test installs it)")

from openenv_mcp.cluster import _tasks
from openenv_mcp.cluster._tasks import TaskLedger, attach_task_ledger
from openenv_mcp.server.jobs import JobStore, UnknownJob

pytestmark = pytest.mark.anyio

WORKING = {"resultType": "complete", "taskId": "task_x@r1", "status": "working"}
DONE = {**WORKING, "status": "completed", "result": {"content": []}}


async def test_a_task_is_answered_to_its_client_only_and_counted_per_asker() -> None:
    ledger = TaskLedger()
    generation = await ledger.publish("task_x@r1", "10.0.0.1", "evaluate", WORKING, 60_000, False)
    assert generation == ledger.generation and len(generation) == 16
    assert await ledger.lookup("task_x@r1", "10.0.0.1", "r2") == ("evaluate", WORKING)
    assert await ledger.lookup("task_x@r1", "10.0.0.2", "r2") is None
    assert await ledger.lookup("task_nope", "10.0.0.1", "r2") is None
    assert await ledger.cancel("task_x@r1", "10.0.0.2", "r2") is None  # not another's
    assert await ledger.answers() == {"r2": 1}
    assert TaskLedger().generation != generation  # a restarted ledger: owners publish anew


async def test_an_ended_task_is_never_shown_working_again() -> None:
    ledger = TaskLedger()
    await ledger.publish("task_x@r1", "c", "evaluate", DONE, 60_000, True)
    await ledger.publish("task_x@r1", "c", "evaluate", WORKING, 60_000, False)  # arrived late
    assert await ledger.lookup("task_x@r1", "c") == ("evaluate", DONE)


async def test_a_cancel_is_recorded_for_the_owner_and_shown_as_cancelling() -> None:
    ledger = TaskLedger()
    await ledger.publish("task_x@r1", "c", "collect", WORKING, 60_000, False)
    assert await ledger.cancels(["task_x@r1"]) == (ledger.generation, [])
    tool, answer = await ledger.cancel("task_x@r1", "c", "r2") or ("", {})
    assert tool == "collect" and answer["statusMessage"] == "cancelling"
    assert await ledger.cancels(["task_x@r1", "task_other@r1"]) == (
        ledger.generation,
        ["task_x@r1"],
    )
    # The owner's next progress keeps the cancel asked; its end clears it.
    await ledger.publish("task_x@r1", "c", "collect", WORKING, 60_000, False)
    assert await ledger.cancels(["task_x@r1"]) == (ledger.generation, ["task_x@r1"])
    cancelled = {**WORKING, "status": "cancelled"}
    await ledger.publish("task_x@r1", "c", "collect", cancelled, 60_000, True)
    assert await ledger.lookup("task_x@r1", "c") == ("collect", cancelled)
    assert await ledger.cancels(["task_x@r1"]) == (ledger.generation, [])
    assert await ledger.cancel("task_x@r1", "c") == ("collect", cancelled)  # stays as it ended


async def test_a_working_task_whose_owner_stops_asking_reads_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_tasks, "STALE", 0.2)
    monkeypatch.setattr(_tasks, "SWEEP_PERIOD", 0.0)
    ledger = TaskLedger()
    await ledger.publish("task_x@r1", "c", "evaluate", WORKING, 60_000, False)
    await ledger.publish("task_y@r1", "c", "evaluate", WORKING, 60_000, False)
    for _ in range(4):  # the owner of y keeps asking; x's is gone
        time.sleep(0.1)
        await ledger.cancels(["task_y@r1"])
    _, lost = await ledger.lookup("task_x@r1", "c") or ("", {})
    assert lost["status"] == "failed" and lost["error"]["code"] == -32603
    assert "shard r1" in lost["error"]["message"] and "call evaluate again" in lost["statusMessage"]
    assert (await ledger.lookup("task_y@r1", "c") or ("", {}))[1]["status"] == "working"


async def test_an_ended_task_is_forgotten_after_its_ttl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tasks, "SWEEP_PERIOD", 0.0)
    ledger = TaskLedger()
    await ledger.publish("task_x@r1", "c", "evaluate", DONE, 100, True)
    await ledger.publish("task_y@r1", "c", "evaluate", WORKING, 100, False)
    time.sleep(0.2)
    await ledger.cancels(["task_y@r1"])
    assert await ledger.lookup("task_x@r1", "c") is None
    assert await ledger.lookup("task_y@r1", "c") is not None  # working: kept while heard


class Handle:
    """A deployment handle's shape (``handle.method.remote(...)`` awaited) over a ledger
    in this process; the real handle is in tests/cluster/test_ray_serve.py."""

    def __init__(self, ledger: TaskLedger) -> None:
        self.ledger = ledger

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.ledger, name)

        class Remote:
            @staticmethod
            def remote(*args: Any) -> Any:
                return method(*args)

        return Remote


async def test_replicas_read_and_cancel_each_others_tasks_through_it() -> None:
    ledger = TaskLedger()
    a = attach_task_ledger(
        JobStore(ttl_ms=60_000, per_client=2, poll_ms=500), ledger=Handle(ledger), shard="r1"
    )
    b = attach_task_ledger(
        JobStore(ttl_ms=60_000, per_client=2, poll_ms=500), ledger=Handle(ledger), shard="r2"
    )
    job = a.create("evaluate", "c")
    assert job.id.endswith("@r1")
    await a.published(job)
    assert (await b.find(job.id, "c"))[1]["taskId"] == job.id
    with pytest.raises(UnknownJob):
        await b.find(job.id, "d")
    await b.cancel(job.id, "c")
    await a.tick()
    assert job.control.cancelled
    a.finish(job, "cancelled")
    await a.published(job)
    assert (await b.find(job.id, "c"))[1]["status"] == "cancelled"
    assert await ledger.answers() == {"r2": 3}
    await a.aclose()
