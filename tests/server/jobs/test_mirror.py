"""Tasks seen by every replica through a mirror (the hook the Ray deployment plugs its
task ledger into), in memory: two stores, as two replicas, sharing one mirror."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from openenv_mcp.server.jobs import (
    JobMirror,
    JobStore,
    MirroredJobStore,
    UnknownJob,
    attach_mirror,
)
from openenv_mcp.server.jobs import _mirror as mirror_module
from openenv_mcp.sharding import shard_of

pytestmark = pytest.mark.anyio


class Mirror:
    """A mirror held in a dict, as a deployment would hold it (no TTL, no staleness:
    those are the task ledger's, tested in tests/cluster/test_tasks.py)."""

    def __init__(self) -> None:
        self.generation = "g1"
        self.tasks: dict[str, dict[str, Any]] = {}
        self.asked: set[str] = set()
        self.calls: list[str] = []
        #: Set to make every call fail (a ledger gone) or hang (one that never answers).
        self.fail: BaseException | None = None
        self.hang = False

    async def _call(self, name: str) -> None:
        self.calls.append(name)
        if self.hang:
            await asyncio.sleep(3600)
        if self.fail is not None:
            raise self.fail

    async def publish(
        self, task_id: str, owner: str, tool: str, answer: dict[str, Any], ttl_ms: int, ended: bool
    ) -> str:
        await self._call("publish")
        self.tasks[task_id] = {"owner": owner, "tool": tool, "answer": answer, "ended": ended}
        return self.generation

    async def lookup(self, task_id: str, owner: str) -> tuple[str, dict[str, Any]] | None:
        await self._call("lookup")
        entry = self.tasks.get(task_id)
        if entry is None or entry["owner"] != owner:
            return None
        return entry["tool"], entry["answer"]

    async def cancel(self, task_id: str, owner: str) -> tuple[str, dict[str, Any]] | None:
        found = await self.lookup(task_id, owner)
        if found is not None and not self.tasks[task_id]["ended"]:
            self.asked.add(task_id)
        return found

    async def cancels(self, task_ids: Sequence[str]) -> tuple[str, list[str]]:
        await self._call("cancels")
        return self.generation, [t for t in task_ids if t in self.asked]


def replicas(mirror: JobMirror, ttl_ms: int = 60_000) -> tuple[MirroredJobStore, MirroredJobStore]:
    a, b = (
        attach_mirror(JobStore(ttl_ms=ttl_ms, per_client=4, poll_ms=500), mirror, shard)
        for shard in ("replica-a", "replica-b")
    )
    return a, b


async def test_a_task_made_on_one_replica_is_read_on_another() -> None:
    mirror = Mirror()
    a, b = replicas(mirror)
    job = a.create("evaluate", "10.0.0.1")
    assert shard_of(job.id) == "replica-a" and job.id.startswith("task_")
    await a.published(job)  # what the extension does before answering the call
    tool, answer = await b.find(job.id, "10.0.0.1")
    assert tool == "evaluate" and answer["status"] == "working"
    assert answer == job.answer(a.ttl_ms, a.poll_ms)
    # The owner answers from its store, never asking the mirror.
    calls = len(mirror.calls)
    assert (await a.find(job.id, "10.0.0.1"))[1] == answer
    assert len(mirror.calls) == calls
    # Another client, an unknown id, and an id naming the asked replica itself (which
    # does not hold it: not asked of the mirror) are all one answer.
    for task_id, owner in (
        (job.id, "10.0.0.2"),
        ("task_nope@replica-a", "10.0.0.1"),
        ("task_nope", "10.0.0.1"),
    ):
        with pytest.raises(UnknownJob, match="no task"):
            await b.find(task_id, owner)
    calls = len(mirror.calls)
    with pytest.raises(UnknownJob):
        await b.find(job.id.replace("replica-a", "replica-b"), "10.0.0.1")
    assert len(mirror.calls) == calls
    await a.aclose()


async def test_progress_is_published_at_most_once_a_period_and_the_end_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mirror = Mirror()
    a, b = replicas(mirror)
    job = a.create("collect", "c")
    await a.published(job)
    job.control.report(1, 4, "episodes")
    await a.tick()  # within the period: not yet
    assert (await b.find(job.id, "c"))[1]["statusMessage"] == "collect: 0"
    monkeypatch.setattr(mirror_module, "PUBLISH_PERIOD", 0.0)
    await a.tick()
    assert (await b.find(job.id, "c"))[1]["statusMessage"] == "collect: 1/4 (episodes)"
    publishes = mirror.calls.count("publish")
    await a.tick()  # unchanged: not sent again
    assert mirror.calls.count("publish") == publishes
    a.finish(job, "completed", result={"content": [{"type": "text", "text": "4 episodes"}]})
    await a.published(job)
    tool, done = await b.find(job.id, "c")
    assert tool == "collect"
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "4 episodes"
    failed = a.create("collect", "c")
    a.finish(failed, "failed", error={"code": -32603, "message": "internal error in collect"})
    await a.published(failed)
    assert (await b.find(failed.id, "c"))[1]["error"]["message"] == "internal error in collect"
    await a.aclose()


async def test_a_cancel_at_another_replica_reaches_the_owner_at_its_next_sync() -> None:
    mirror = Mirror()
    a, b = replicas(mirror)
    job = a.create("evaluate", "c")
    await a.published(job)
    with anyio.CancelScope() as scope:
        job.scope = scope
        await b.cancel(job.id, "c")
        assert not job.control.cancelled  # recorded at the mirror, not yet taken
        await a.tick()
        assert job.control.cancelled and scope.cancel_called
    with pytest.raises(UnknownJob):
        await b.cancel(job.id, "someone else")
    # A cancel at the owner is taken at once.
    other = a.create("evaluate", "c")
    await a.cancel(other.id, "c")
    assert other.control.cancelled
    await a.aclose()


async def test_the_owners_loop_takes_cancels_within_a_sync_and_ends_with_its_tasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(mirror_module, "IDLE_PERIOD", 0.2)
    mirror = Mirror()
    a, b = replicas(mirror, ttl_ms=200)
    job = a.create("evaluate", "c")
    await a.published(job)  # starts the loop
    await b.cancel(job.id, "c")
    asked = time.monotonic()
    with anyio.fail_after(10):
        while not job.control.cancelled:
            await anyio.sleep(0.02)
    took = time.monotonic() - asked
    assert took < 5  # one SYNC_PERIOD (0.5 s) on an idle machine
    a.finish(job, "cancelled")
    await a.published(job)
    assert (await b.find(job.id, "c"))[1]["status"] == "cancelled"
    # Nothing held after the ttl: the loop ends by itself.
    loop = a._loop
    assert loop is not None
    with anyio.fail_after(20):
        while not loop.done():
            await anyio.sleep(0.05)
    assert a.jobs == {} and a.sent == {}


@pytest.mark.parametrize("trouble", ["fails", "hangs"])
async def test_a_mirror_in_trouble_costs_the_owner_nothing_and_is_refilled_after(
    trouble: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mirror_module, "MIRROR_TIMEOUT", 0.2)
    monkeypatch.setattr(mirror_module, "DOWN_FOR", 0.3)
    mirror = Mirror()
    a, b = replicas(mirror)
    if trouble == "fails":
        mirror.fail = ConnectionError("the ledger's actor died")
    else:
        mirror.hang = True
    job = a.create("evaluate", "c")
    with anyio.fail_after(5):
        await a.published(job)  # neither raises nor waits past the timeout
    assert (await a.find(job.id, "c"))[1]["status"] == "working"  # the owner answers
    with anyio.fail_after(5), pytest.raises(UnknownJob):
        await b.find(job.id, "c")  # the other replica cannot see it: unknown, at once
    calls = len(mirror.calls)
    await a.published(job)  # resting: not even asked
    assert len(mirror.calls) == calls
    mirror.fail, mirror.hang = None, False
    await anyio.sleep(0.35)
    await a.tick()  # the next sync after the outage publishes everything anew
    assert (await b.find(job.id, "c"))[1]["status"] == "working"
    await a.aclose()


async def test_a_new_mirror_generation_has_every_task_published_anew() -> None:
    mirror = Mirror()
    a, b = replicas(mirror)
    live, done = a.create("evaluate", "c"), a.create("evaluate", "c")
    a.finish(done, "completed", result={"content": []})
    for job in (live, done):
        await a.published(job)
    mirror.tasks.clear()  # Serve restarted the mirror: it lost what it held
    mirror.generation = "g2"
    await a.tick()
    assert (await b.find(live.id, "c"))[1]["status"] == "working"
    assert (await b.find(done.id, "c"))[1]["result"] == {"content": []}
    await a.aclose()


def test_without_a_mirror_a_store_is_as_before() -> None:
    store = JobStore(ttl_ms=1000, per_client=2, poll_ms=500)
    job = store.create("evaluate", "c")
    assert "@" not in job.id and type(store) is JobStore

    async def read() -> tuple[str, dict[str, Any]]:
        await store.published(job)  # nothing to publish to
        return await store.find(job.id, "c")

    assert asyncio.run(read())[1]["taskId"] == job.id
