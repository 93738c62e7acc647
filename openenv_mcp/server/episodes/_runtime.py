"""Where environments run: inline on the event loop, on worker threads, or in worker processes.

A runtime holds one :class:`~openenv_mcp.pipeline.EpisodePipeline` per live
episode and runs operations on it (:mod:`openenv_mcp.pipeline.ops`: ``Step``,
``Reset``...). Its interface is :class:`Runtime`; this module has the one that
keeps environments in the server process (inline or on threads), :mod:`._workers` the
one that keeps them in worker processes.

Every operation's outcome is its value or its exception, never a raise: the
caller decides what an exception means for its episode (see
:meth:`~openenv_mcp.server.episodes._episodes.EpisodeTable.call`).
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

from openenv_mcp.environment import Environment
from openenv_mcp.pipeline import Close, EpisodePipeline, Op, PipelineOptions, between_steps

__all__ = ["Call", "LocalRef", "LocalRuntime", "Runtime", "run_calls"]

log = logging.getLogger("openenv_mcp.server")

#: One operation on one episode: ``(ref, op)`` runs ``pipeline.run(op)`` where the env lives.
Call = tuple[Any, Op[Any]]


def run_calls(episodes: Sequence[EpisodePipeline], ops: Sequence[Op[Any]]) -> list[Any]:
    """Run each operation on its episode, in turn: each one's value or exception."""
    outcomes: list[Any] = []
    for episode, op in zip(episodes, ops, strict=True):
        try:
            outcomes.append(episode.run(op))
        except Exception as exc:
            outcomes.append(exc)
    return outcomes


class Runtime(ABC):
    """Holds environments and runs operations on them."""

    #: Seconds one operation may take before it fails alone (``TimeoutError``).
    call_timeout: float

    @abstractmethod
    async def create(self, episode_id: str) -> Any:
        """A fresh environment for ``episode_id``; returns its reference.

        Raises:
            OpenEnvError: the environment could not be made (why is in the message).
        """

    @abstractmethod
    async def run(self, calls: Sequence[Call]) -> list[Any]:
        """Run the calls; each one's value, or its exception (``TimeoutError`` past the timeout)."""

    def busy(self, ref: Any) -> bool:
        """Whether a call abandoned at its timeout may still be running in ``ref``'s env."""
        return False

    async def discard(self, ref: Any) -> None:
        """Close ``ref``'s environment (errors are logged, never raised)."""
        if self.busy(ref):
            log.warning("an environment is still busy in an abandoned call; leaving it be")
            return
        (outcome,) = await self.run([(ref, Close())])
        if isinstance(outcome, Exception):
            log.error("error while closing an environment", exc_info=outcome)

    async def aclose(self) -> None:
        """Release the runtime itself (worker processes); environments are discarded first."""
        return None

    def abandoned_calls(self) -> int:
        """How many calls abandoned at their timeout are still running."""
        return 0


def _one_thread() -> anyio.CapacityLimiter:
    return anyio.CapacityLimiter(1)


@dataclass
class LocalRef:
    """An environment in this process, and the abandoned call that may still be in it."""

    pipeline: EpisodePipeline
    #: Set when the call last abandoned at its timeout finally returns.
    abandoned: threading.Event | None = None
    #: Its calls' worker thread: one per episode (its lock serializes them anyway), so
    #: slow calls on some episodes never wait for, nor take, a thread another one needs.
    limiter: anyio.CapacityLimiter = field(default_factory=_one_thread)


class LocalRuntime(Runtime):
    """Environments in the server process: run inline, or each call on a worker thread.

    Inline (``threads=False``) is for environments whose calls are short and
    bounded (Atari: a thread hop costs more than an emulator step). On threads,
    a call runs under ``call_timeout``: one that takes longer fails alone, its
    thread abandoned (a thread cannot be stopped) and its environment left
    alone until it returns.
    """

    def __init__(
        self,
        make_env: Callable[[], Environment[Any]],
        *,
        threads: bool,
        call_timeout: float,
        options: PipelineOptions | None = None,
    ) -> None:
        self._make_env = make_env
        self.threads = threads
        self.call_timeout = call_timeout
        self.options = options or PipelineOptions()
        self._abandoned: list[threading.Event] = []

    async def create(self, episode_id: str) -> LocalRef:
        def make() -> EpisodePipeline:
            return EpisodePipeline(self._make_env(), episode_id, self.options)

        if not self.threads:
            return LocalRef(make())
        return LocalRef(await self._on_thread(make, []))

    async def run(self, calls: Sequence[Call]) -> list[Any]:
        episodes = [ref.pipeline for ref, _ in calls]
        ops = [op for _, op in calls]
        # A call run as an MCP task may hold an action for many steps: on a thread, so the
        # loop stays free for the cancel it takes between them.
        if not self.threads and between_steps.get() is None:
            return run_calls(episodes, ops)
        try:
            outcomes: list[Any] = await self._on_thread(
                lambda: run_calls(episodes, ops), [ref for ref, _ in calls]
            )
            return outcomes
        except TimeoutError as exc:
            return [exc] * len(calls)

    async def _on_thread(self, fn: Callable[[], Any], refs: Sequence[LocalRef]) -> Any:
        """``fn()`` on a worker thread under the timeout, shielded from the caller's cancellation.

        Once started, a call runs to its end or its timeout even if the caller
        gives up meanwhile (the client went away, or shutdown): the episode's
        lock stays held, so no other call reaches the env while it runs.
        """
        returned = threading.Event()

        def run() -> Any:
            try:
                return fn()
            finally:
                returned.set()

        # A call on one episode has a thread of its own; batches and creations share the
        # default pool.
        limiter = refs[0].limiter if len(refs) == 1 else None
        try:
            with anyio.CancelScope(shield=True), anyio.fail_after(self.call_timeout):
                return await anyio.to_thread.run_sync(run, abandon_on_cancel=True, limiter=limiter)
        finally:
            if not returned.is_set():
                self._abandoned.append(returned)
                for ref in refs:
                    ref.abandoned = returned

    def busy(self, ref: Any) -> bool:
        event = ref.abandoned
        return event is not None and not event.is_set()

    def abandoned_calls(self) -> int:
        self._abandoned = [event for event in self._abandoned if not event.is_set()]
        return len(self._abandoned)
