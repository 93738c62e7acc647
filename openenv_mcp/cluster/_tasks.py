"""MCP tasks readable and cancellable from every replica.

A task runs on the replica its ``tools/call`` reached, but a client's ``tasks/get`` and
``tasks/cancel`` carry no routing header (the task id is in the body), so the router
sends them to any replica. :class:`TaskLedger`, one more deployment of the application
(one replica, no CPU reserved, beside the client ledger), holds each task's answer as
its owner published it; every replica's :class:`~openenv_mcp.server.jobs.JobStore` gets
a :class:`LedgerMirror` of it (:func:`attach_task_ledger`), so a replica that does not
hold a task answers it from here, and records a cancel here, which the owner takes
within its next sync (:mod:`openenv_mcp.server.jobs._mirror`).

An owner asks for its live tasks' cancels every half second; a working task not asked
about for ``STALE`` seconds lost its replica and reads ``failed``. A finished task is
kept ``ttlMs`` after it ended. A ledger Serve restarted (its tasks lost) has a new
generation: every owner publishes its tasks anew at its next sync.
"""

from __future__ import annotations

import secrets
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openenv_mcp.sharding import shard_of

if TYPE_CHECKING:  # the ledger's process never loads the server
    from openenv_mcp.server.jobs import JobStore, MirroredJobStore

__all__ = ["STALE", "TASK_LEDGER_NAME", "LedgerMirror", "TaskLedger", "attach_task_ledger"]

TASK_LEDGER_NAME = "TaskLedger"
#: Seconds after its owner last asked about it that a working task is taken for lost.
STALE = 15.0
#: Seconds at least between two sweeps of expired tasks.
SWEEP_PERIOD = 1.0
#: JSON-RPC's internal error (``mcp_types.INTERNAL_ERROR``), as a lost task's error.
INTERNAL_ERROR = -32603


@dataclass
class _Entry:
    owner: str
    tool: str
    answer: dict[str, Any]
    ttl_ms: int
    ended: bool
    #: When its owner last published or asked about it (``time.monotonic``).
    heard: float
    #: When it is forgotten (set once it ended, or was found lost).
    expires: float | None = None
    cancel_asked: bool = False


class TaskLedger:
    """Every replica's tasks, as their owners last published them (see the module).

    Its methods never await: each runs whole on the ledger's event loop.
    """

    def __init__(self) -> None:
        #: Changes when Serve restarts the ledger (its tasks lost): owners publish anew.
        self.generation = secrets.token_hex(8)
        self.tasks: dict[str, _Entry] = {}
        #: Answers given to a replica that does not hold the task, per asking shard.
        self.answered: Counter[str] = Counter()
        self._swept = 0.0

    def _sweep(self, now: float) -> None:
        if now - self._swept < SWEEP_PERIOD:
            return
        self._swept = now
        for task_id, entry in list(self.tasks.items()):
            if entry.expires is not None and entry.expires <= now:
                del self.tasks[task_id]
            elif not entry.ended and now - entry.heard > STALE:
                self._lost(task_id, entry, now)

    def _lost(self, task_id: str, entry: _Entry, now: float) -> None:
        """A working task whose owner stopped asking: failed, kept for its ttl."""
        shard = shard_of(task_id) or "?"
        message = (
            f"the replica running this task (shard {shard}) stopped answering for "
            f"{STALE:g}s: it is gone, and the task with it; call {entry.tool} again"
        )
        entry.answer = {
            **entry.answer,
            "status": "failed",
            "statusMessage": message,
            "error": {"code": INTERNAL_ERROR, "message": message},
        }
        entry.ended = True
        entry.expires = now + entry.ttl_ms / 1000

    async def publish(
        self, task_id: str, owner: str, tool: str, answer: dict[str, Any], ttl_ms: int, ended: bool
    ) -> str:
        """Hold a task's answer as its owner publishes it (an ended task is never shown
        working again: publications may arrive out of order)."""
        now = time.monotonic()
        self._sweep(now)
        entry = self.tasks.get(task_id)
        if entry is not None and entry.ended and not ended:
            return self.generation
        self.tasks[task_id] = _Entry(
            owner=owner,
            tool=tool,
            answer=answer,
            ttl_ms=ttl_ms,
            ended=ended,
            heard=now,
            expires=now + ttl_ms / 1000 if ended else None,
            cancel_asked=entry is not None and entry.owner == owner and entry.cancel_asked,
        )
        return self.generation

    def _find(self, task_id: str, owner: str, asker: str | None) -> _Entry | None:
        self._sweep(time.monotonic())
        entry = self.tasks.get(task_id)
        if entry is None or entry.owner != owner:
            return None
        if asker is not None:
            self.answered[asker] += 1
        return entry

    @staticmethod
    def _shown(entry: _Entry) -> tuple[str, dict[str, Any]]:
        answer = entry.answer
        if entry.cancel_asked and not entry.ended:
            answer = {**answer, "statusMessage": "cancelling"}
        return entry.tool, answer

    async def lookup(
        self, task_id: str, owner: str, asker: str | None = None
    ) -> tuple[str, dict[str, Any]] | None:
        """``task_id``'s tool and answer if it is ``owner``'s (``asker``: the shard
        asking, counted for :meth:`answers`)."""
        entry = self._find(task_id, owner, asker)
        return None if entry is None else self._shown(entry)

    async def cancel(
        self, task_id: str, owner: str, asker: str | None = None
    ) -> tuple[str, dict[str, Any]] | None:
        """Record a cancel of ``owner``'s working task (its owner takes it); its tool and
        answer, or ``None`` as :meth:`lookup`."""
        entry = self._find(task_id, owner, asker)
        if entry is None:
            return None
        if not entry.ended:
            entry.cancel_asked = True
        return self._shown(entry)

    async def cancels(self, task_ids: Sequence[str]) -> tuple[str, list[str]]:
        """The generation, and those of an owner's live ``task_ids`` asked to cancel
        (each marked heard: its owner lives)."""
        now = time.monotonic()
        self._sweep(now)
        asked = []
        for task_id in task_ids:
            entry = self.tasks.get(task_id)
            if entry is None or entry.ended:
                continue
            entry.heard = now
            if entry.cancel_asked:
                asked.append(task_id)
        return self.generation, asked

    async def answers(self) -> dict[str, int]:
        """Answers given to replicas that did not hold the task, per asking shard (for
        tests and debugging)."""
        return dict(self.answered)


class LedgerMirror:
    """A replica's :class:`~openenv_mcp.server.jobs.JobMirror`: the task ledger's
    deployment handle, the replica naming itself in its asks."""

    def __init__(self, ledger: Any, shard: str) -> None:
        self.ledger = ledger
        self.shard = shard

    async def publish(
        self, task_id: str, owner: str, tool: str, answer: dict[str, Any], ttl_ms: int, ended: bool
    ) -> str:
        generation: str = await self.ledger.publish.remote(
            task_id, owner, tool, answer, ttl_ms, ended
        )
        return generation

    async def lookup(self, task_id: str, owner: str) -> tuple[str, dict[str, Any]] | None:
        found: tuple[str, dict[str, Any]] | None = await self.ledger.lookup.remote(
            task_id, owner, self.shard
        )
        return found

    async def cancel(self, task_id: str, owner: str) -> tuple[str, dict[str, Any]] | None:
        found: tuple[str, dict[str, Any]] | None = await self.ledger.cancel.remote(
            task_id, owner, self.shard
        )
        return found

    async def cancels(self, task_ids: Sequence[str]) -> tuple[str, list[str]]:
        answered: tuple[str, list[str]] = await self.ledger.cancels.remote(list(task_ids))
        return answered


def attach_task_ledger(store: JobStore, *, ledger: Any, shard: str) -> MirroredJobStore:
    """Make ``store`` (a replica's tasks) name ``shard`` in its task ids, publish its
    tasks to ``ledger`` (a handle to the :class:`TaskLedger` deployment) and answer the
    other replicas' from it."""
    from openenv_mcp.server.jobs import attach_mirror

    return attach_mirror(store, LedgerMirror(ledger, shard), shard)
