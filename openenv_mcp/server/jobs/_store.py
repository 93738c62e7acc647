"""The tasks a server holds: each long call run as an MCP task, from its creation to
the end of its ``ttlMs`` after it finished.

Tasks live in the server's process, not in a connection: a client that reconnects (a
new Streamable HTTP request, a new stdio client of the episode host) reads a task by
its id. An id is 128 random bits, so holding it is what entitles a client to the
task; a task is also bound to the client that made it (its address over HTTP), and
another client is told it does not exist, as an unknown or expired id is.

On a sharded server (``shard``: a Ray Serve replica) an id names its shard, as episode
handles do (``task_...@SHARD``), and a :class:`~openenv_mcp.server.jobs.JobMirror`
plugged in with :func:`~openenv_mcp.server.jobs.attach_mirror` lets a replica answer,
and cancel, another replica's tasks (:mod:`openenv_mcp.server.jobs._mirror`).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import anyio

from openenv_mcp.errors import ServerFull
from openenv_mcp.server.jobs._control import JobControl
from openenv_mcp.sharding import with_shard

__all__ = ["TERMINAL", "Job", "JobStore", "TaskStatus", "UnknownJob"]

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
#: Statuses a task never leaves.
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


class UnknownJob(LookupError):
    """No task of that id for this client (never made, expired, or another client's)."""


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


@dataclass
class Job:
    """One call running (or run) as a task."""

    id: str
    tool: str
    owner: str
    control: JobControl = field(default_factory=JobControl)
    status: TaskStatus = "working"
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    #: The ``CallToolResult`` (as its wire dict) once completed.
    result: dict[str, Any] | None = None
    #: The JSON-RPC error once failed.
    error: dict[str, Any] | None = None
    #: When a finished task is forgotten (``time.monotonic``).
    expires: float | None = None
    #: Cancels the work's await (set while it runs).
    scope: anyio.CancelScope | None = None
    #: Set when the work has ended, whatever the status.
    ended: anyio.Event = field(default_factory=anyio.Event)

    @property
    def live(self) -> bool:
        """Still running (a cancel asked for but not yet taken counts)."""
        return not self.ended.is_set()

    def cancel(self) -> None:
        """Ask the work to stop at its next step, and cancel its awaits now."""
        self.control.cancel()
        if self.scope is not None:
            self.scope.cancel()

    def answer(self, ttl_ms: int, poll_ms: int) -> dict[str, Any]:
        """The ``tasks/get`` result: the task's fields, its result or error once ended."""
        out = {"resultType": "complete", **self.wire(ttl_ms, poll_ms)}
        if self.status == "completed":
            out["result"] = self.result
        elif self.status == "failed":
            out["error"] = self.error
        return out

    def wire(self, ttl_ms: int, poll_ms: int) -> dict[str, Any]:
        """The task's fields as SEP-2663 names them (``taskId``, ``status``...)."""
        out: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": _iso(self.created),
            "lastUpdatedAt": _iso(self.updated),
            "ttlMs": ttl_ms,
            "pollIntervalMs": poll_ms,
        }
        message = self.status_message()
        if message is not None:
            out["statusMessage"] = message
        return out

    def status_message(self) -> str | None:
        """A line saying how far the work is, or how it ended."""
        if self.status == "working":
            c = self.control
            if c.cancelled:
                return "cancelling"
            done = f"{c.progress:g}" + (f"/{c.total:g}" if c.total is not None else "")
            return f"{self.tool}: {done}" + (f" ({c.message})" if c.message else "")
        if self.status == "failed" and self.error is not None:
            return str(self.error.get("message", "failed"))
        return None


class JobStore:
    """Every task of one server: made, looked up by id and client, forgotten after
    their ``ttl_ms``; at most ``per_client`` running for one client at once."""

    def __init__(
        self, *, ttl_ms: int, per_client: int, poll_ms: int, shard: str | None = None
    ) -> None:
        self.ttl_ms = ttl_ms
        self.per_client = per_client
        self.poll_ms = poll_ms
        #: The shard task ids name (``None``: an unsharded server).
        self.shard = shard
        self.jobs: dict[str, Job] = {}

    def create(self, tool: str, owner: str) -> Job:
        """A new working task of ``tool`` for ``owner``.

        Raises:
            ServerFull: ``owner`` already runs ``per_client`` tasks.
        """
        self.sweep()
        live = sum(1 for j in self.jobs.values() if j.owner == owner and j.live)
        if live >= self.per_client:
            raise ServerFull(
                f"this client (address {owner}) runs {live} tasks, its cap "
                f"(--mcp-tasks-per-client={self.per_client}): wait for one to finish, cancel "
                "one (tasks/cancel), or call without the tasks extension"
            )
        task_id = with_shard("task_" + secrets.token_urlsafe(16), self.shard)
        job = Job(id=task_id, tool=tool, owner=owner)
        self.jobs[job.id] = job
        return job

    def get(self, task_id: str, owner: str) -> Job:
        """The task ``task_id`` of ``owner``.

        Raises:
            UnknownJob: no such task for this client (one message for every reason, so
                a client cannot probe another's ids).
        """
        self.sweep()
        job = self.jobs.get(task_id) if isinstance(task_id, str) else None
        if job is None or job.owner != owner:
            raise self._unknown(task_id)
        return job

    def _unknown(self, task_id: Any) -> UnknownJob:
        shown = task_id[:80] if isinstance(task_id, str) else repr(task_id)[:80]
        return UnknownJob(
            f"no task {shown!r} on this server for this client: never made, another "
            f"client's, or forgotten {self.ttl_ms / 1000:g}s after it finished (ttlMs)"
        )

    async def find(self, task_id: str, owner: str) -> tuple[str, dict[str, Any]]:
        """The tool and ``tasks/get`` answer of ``owner``'s task ``task_id`` (a mirrored
        store's may be another replica's).

        Raises:
            UnknownJob: as :meth:`get`.
        """
        job = self.get(task_id, owner)
        return job.tool, job.answer(self.ttl_ms, self.poll_ms)

    async def cancel(self, task_id: str, owner: str) -> None:
        """Stop ``owner``'s task ``task_id`` if it still runs (a mirrored store's may be
        another replica's, which takes the cancel within its next sync).

        Raises:
            UnknownJob: as :meth:`get`.
        """
        job = self.get(task_id, owner)
        if job.live and not job.control.cancelled:
            job.cancel()

    async def published(self, job: Job) -> None:
        """Show ``job`` as it stands to other replicas (a mirrored store; here nothing)."""

    async def aclose(self) -> None:
        """Stop what the store runs beside its tasks (a mirrored store's sync; here
        nothing): the server is shutting down."""

    def finish(
        self,
        job: Job,
        status: TaskStatus,
        *,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> None:
        """End ``job`` with ``status`` (its result or error kept for ``ttl_ms``)."""
        job.status, job.result, job.error = status, result, error
        job.updated = time.time()
        job.expires = time.monotonic() + self.ttl_ms / 1000
        job.scope = None
        job.ended.set()

    def sweep(self) -> None:
        """Forget finished tasks past their ``ttl_ms``."""
        now = time.monotonic()
        for task_id in [
            i for i, j in self.jobs.items() if j.expires is not None and j.expires <= now
        ]:
            del self.jobs[task_id]

    def running(self) -> list[Job]:
        """The tasks still working."""
        return [j for j in self.jobs.values() if j.live]
