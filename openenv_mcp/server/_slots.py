"""Where an episode's environment lives: in this process, or in a worker process.

Every call into environment code goes through one of the ``op_*`` functions
below, run where the environment lives, on a :class:`Slot` (the environment
and its current observation). They return only what the server needs to answer
(rewards, flags, info, the encoded observation, its one-line text), so with
worker processes a 100 KB frame never crosses a pipe: it is compressed where
it was made.

``ServerSettings.workers = N`` (``openenv-mcp serve ... --workers N``) starts N
worker processes; each new episode's environment is created in the least
loaded one, and ``step_batch`` sends each worker its share of a batch at once,
so the emulators of one batch run on several cores (ale-py's ``act`` holds the
GIL, so threads cannot do this). The server awaits a worker's answer without
blocking its event loop: while one worker emulates, calls on other workers'
episodes (and every other request) go on.

A worker that dies (or hangs past ``call_timeout``, and is then killed) takes
its environments with it: their episodes break (``EnvCrashed`` /
``EnvCallTimeout``), ``reset`` gives them a fresh environment in a live worker,
and episodes in other workers never notice. Workers read stdin from nothing
and write stdout to stderr: stdout belongs to the stdio transport.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import multiprocessing
import os
import pickle
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import anyio
from pydantic import BaseModel

from openenv_mcp.codecs import to_jsonable
from openenv_mcp.environment import Environment, ObservationSpec, StepResult
from openenv_mcp.errors import EnvCrashed
from openenv_mcp.server._results import Observed, observe
from openenv_mcp.server._settings import Frames

__all__ = [
    "Op",
    "RemoteSlot",
    "Slot",
    "WorkerDied",
    "WorkerPool",
    "op_close",
    "op_reset",
    "op_restore",
    "op_snapshot",
    "op_state",
    "op_step",
    "op_tool",
    "run_here",
]

log = logging.getLogger("openenv_mcp.server")

#: Seconds a worker may take to close its environments and exit before it is killed.
_STOP_GRACE = 5.0
_PICKLE = pickle.HIGHEST_PROTOCOL


class WorkerDied(RuntimeError):
    """The worker process holding an environment is gone (crashed, or killed after a hang)."""


@dataclass
class Slot:
    """An environment and its current observation, in the process where it runs."""

    env: Environment
    observation: Any = None

    def parse_action(self, action: Any) -> Any:
        """The environment's own action parsing."""
        return self.env.parse_action(action)


# -- operations: the only code that touches an environment -----------------------------------


def _text(slot: Slot, spec: ObservationSpec) -> str | None:
    """The observation's line for the result text (computed where the observation is)."""
    text = slot.env.observation_text(slot.observation)
    if text is None and spec.kind != "array":
        text = repr(slot.observation)
    return text


def _jsonable_dict(data: Any) -> dict[str, Any]:
    """A JSON-able copy of an env's info or tool result, made where the env lives:
    odd values become their repr there, so they cross a worker's pipe as they
    would reach a client."""
    jsonable: dict[str, Any] = to_jsonable(dict(data))
    return jsonable


def op_reset(
    slot: Slot, spec: ObservationSpec, seed: int | None, options: Any, frames: Frames
) -> tuple[dict[str, Any], Observed, str | None]:
    """Reset: the first info, the observation made ready for the wire, its text."""
    obs, info = slot.env.reset(seed=seed, options=options)
    slot.observation = obs
    return _jsonable_dict(info), observe(slot.env, spec, obs, frames), _text(slot, spec)


def op_step(
    slot: Slot, spec: ObservationSpec, action: Any, frames: Frames
) -> tuple[StepResult, Observed, str | None]:
    """One step; the result comes back without its observation (it stays here)."""
    result = slot.env.step(action)
    slot.observation = result.observation
    observed = observe(slot.env, spec, result.observation, frames)
    bare = StepResult(
        None, result.reward, result.terminated, result.truncated, _jsonable_dict(result.info)
    )
    return bare, observed, _text(slot, spec)


def op_state(slot: Slot, spec: ObservationSpec, frames: Frames) -> tuple[dict[str, Any], Observed]:
    """The environment's state fields and its current observation."""
    return _jsonable_dict(slot.env.state()), observe(slot.env, spec, slot.observation, frames)


def op_snapshot(slot: Slot) -> tuple[Any, Any]:
    """The environment's saved state, with the observation to restore alongside it."""
    return slot.env.snapshot(), slot.observation


def op_restore(
    slot: Slot, spec: ObservationSpec, saved: tuple[Any, Any], frames: Frames
) -> tuple[Observed, str | None]:
    """Continue from :func:`op_snapshot`'s output (possibly taken in another process)."""
    data, observation = saved
    slot.env.restore(data)
    slot.observation = observation
    return observe(slot.env, spec, observation, frames), _text(slot, spec)


def op_tool(slot: Slot, name: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """Run the environment's own episode tool ``name``."""
    tool = next(t for t in slot.env.tools() if t.name == name)
    args = tool.params.model_validate(params) if tool.params is not None else None
    return _jsonable_dict(tool.handler(slot.env, args))


def op_close(slot: Slot) -> None:
    """Free the environment."""
    slot.env.close()


#: One operation to run: ``op(slot, *args)`` where the slot's environment lives.
Op = tuple["Slot | RemoteSlot", Callable[..., Any], tuple[Any, ...]]


#: What a worker is sent: (environment key, op, args) for each operation of its share.
Message = list[tuple[int, Callable[..., Any], tuple[Any, ...]]]


def run_here(items: Sequence[Op]) -> list[Any]:
    """Run operations on slots of this process, in turn: each one's value or exception."""
    outcomes: list[Any] = []
    for slot, op, args in items:
        try:
            outcomes.append(op(slot, *args))
        except Exception as exc:
            outcomes.append(exc)
    return outcomes


# -- worker processes -------------------------------------------------------------------------


def _create(slot: Slot) -> None:
    """A marker op: the worker loop creates the slot's environment itself."""
    raise AssertionError("run by the worker loop itself")


def _worker_main(conn: Connection, env_cls: type[Environment], config: BaseModel) -> None:
    """A worker's loop: environments by key, operations in, results out, until told to stop."""
    os.dup2(2, 1)  # stdout is the stdio transport's, in the parent
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    slots: dict[int, Slot] = {}

    def run(key: int, op: Callable[..., Any], args: tuple[Any, ...]) -> tuple[str, Any]:
        try:
            if op is _create:
                slots[key] = Slot(env_cls(config))
                return ("ok", None)
            value = op(slots[key], *args)
            if op is op_close:
                del slots[key]
            return ("ok", value)
        except Exception as exc:
            return ("err", exc)

    while True:
        try:
            message = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            break  # the server is gone
        if message is None:
            break
        replies = [run(key, op, args) for key, op, args in message]
        try:
            conn.send(replies)
        except (EOFError, OSError):
            break
        except Exception:  # something that does not pickle: send what it was instead
            conn.send([_sendable(reply) for reply in replies])
    for slot in slots.values():
        with contextlib.suppress(Exception):
            slot.env.close()


def _sendable(reply: tuple[str, Any]) -> tuple[str, Any]:
    try:
        pickle.dumps(reply)
    except Exception as exc:
        kind, value = reply
        what = f"{type(value).__name__}: {value}" if kind == "err" else f"a {type(value).__name__}"
        return ("err", RuntimeError(f"{what} (which could not be sent from the worker: {exc})"))
    return reply


@dataclass
class _Share:
    """Operations one caller sent to a worker, and what came back for them."""

    message: Message
    replies: list[tuple[str, Any]] | None = None
    error: Exception | None = None


class _Worker:
    """One worker process and its pipe; one message in flight at a time."""

    def __init__(self, index: int, env_cls: type[Environment], config: BaseModel) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_worker_main,
            args=(child, env_cls, config),
            name=f"openenv-mcp-worker-{index}",
            daemon=True,
        )
        self.process.start()
        child.close()
        self.alive = True
        self.slots = 0
        #: Shares waiting for the worker; the next exchange takes them all.
        self.queue: list[_Share] = []
        #: Held from sending a message to reading its replies, so they pair up.
        self.lock = anyio.Lock()

    async def round_trip(self, message: Message, timeout: float) -> list[tuple[str, Any]]:
        """Run a share of operations in the worker; its replies, one per operation.

        The event loop runs other tasks meanwhile. Shares that arrive while the
        worker is busy go to it together, in one message, when it is next free:
        concurrent calls on one worker's episodes batch themselves. Once queued,
        a share runs to its end even if its caller is cancelled, so the pipe
        never falls out of step and the episode never misses a step it took.

        Raises:
            WorkerDied: the worker is gone (or went while this ran).
            TimeoutError: no answer within ``timeout`` seconds; the worker is killed.
            Exception: what pickling the arguments raised; nothing was sent.
        """
        share = _Share(message)
        self.queue.append(share)
        with anyio.CancelScope(shield=True):
            async with self.lock:
                if share.replies is None and share.error is None:  # not taken by another caller
                    taken, self.queue = self.queue, []
                    await self._exchange(taken, timeout)
        if share.error is not None:
            raise share.error
        assert share.replies is not None
        return share.replies

    async def _exchange(self, shares: list[_Share], timeout: float) -> None:
        """Send the shares as one message; give each its replies, or the error."""
        try:
            if not self.alive:
                raise WorkerDied(f"worker process {self.process.pid} is gone")
            try:
                data = pickle.dumps([op for s in shares for op in s.message], _PICKLE)
            except Exception:  # the shares that do not pickle fail alone
                for share in shares:
                    try:
                        pickle.dumps(share.message, _PICKLE)
                    except Exception as exc:
                        share.error = exc
                shares = [s for s in shares if s.error is None]
                data = pickle.dumps([op for s in shares for op in s.message], _PICKLE)
            try:
                self.conn.send_bytes(data)
            except (OSError, ValueError) as exc:
                self.kill()
                raise WorkerDied(f"worker process {self.process.pid} is gone ({exc})") from exc
            answered = False
            with anyio.move_on_after(timeout):
                await anyio.wait_readable(self.conn.fileno())
                answered = True
            if not answered:
                self.kill()
                raise TimeoutError(f"worker process {self.process.pid} did not answer in time")
            replies = self._receive()
        except Exception as exc:  # WorkerDied, TimeoutError
            for share in shares:
                share.error = exc
            return
        start = 0
        for share in shares:
            share.replies = replies[start : start + len(share.message)]
            start += len(share.message)

    def _receive(self) -> list[tuple[str, Any]]:
        try:
            replies: list[tuple[str, Any]] = self.conn.recv()
        except (EOFError, OSError, ValueError) as exc:
            self.kill()
            code = self.process.exitcode
            raise WorkerDied(f"worker process {self.process.pid} died (exit code {code})") from exc
        return replies

    def kill(self) -> None:
        self.alive = False
        with contextlib.suppress(Exception):
            self.process.kill()
            self.process.join(_STOP_GRACE)
        with contextlib.suppress(Exception):
            self.conn.close()

    def stop(self) -> None:
        """Ask the worker to close its environments and exit; kill it if it does not."""
        if self.alive:
            with contextlib.suppress(Exception):
                self.conn.send_bytes(pickle.dumps(None))
            self.process.join(_STOP_GRACE)
        self.kill()


@dataclass
class RemoteSlot:
    """An environment held by a worker process (run operations on it with the pool)."""

    pool: WorkerPool
    worker: _Worker
    key: int

    def parse_action(self, action: Any) -> Any:
        """Parsed in the server by its prototype (the action set is the config's)."""
        return self.pool.prototype.parse_action(action)


class WorkerPool:
    """N worker processes holding environments, used by ``ServerSettings.workers``."""

    def __init__(
        self,
        env_cls: type[Environment],
        config: BaseModel,
        size: int,
        prototype: Environment,
        timeout: float,
    ) -> None:
        self.env_cls = env_cls
        self.config = config
        self.prototype = prototype
        self.timeout = timeout
        self._keys = itertools.count()
        self.workers = [_Worker(i, env_cls, config) for i in range(size)]
        self._started = len(self.workers)

    async def new_slot(self) -> RemoteSlot:
        """A new environment in the least loaded live worker (dead workers are replaced)."""
        for attempt in range(2):  # a worker found dead now is replaced once
            for i, old in enumerate(self.workers):
                if not old.alive:
                    log.warning("replacing worker process %s", old.process.pid)
                    self.workers[i] = _Worker(self._started, self.env_cls, self.config)
                    self._started += 1
            worker = min(self.workers, key=lambda w: w.slots)
            slot = RemoteSlot(self, worker, next(self._keys))
            worker.slots += 1  # counted at once, so creations meanwhile go elsewhere
            (outcome,) = await self.run_many([(slot, _create, ())])
            if outcome is None:
                return slot
            worker.slots -= 1
            if not isinstance(outcome, WorkerDied):
                raise outcome
            if attempt:
                raise EnvCrashed(
                    f"could not start an environment in a worker process ({outcome}); "
                    "the server log says why"
                ) from outcome
        raise AssertionError("unreachable")

    async def run_many(self, items: Sequence[Op]) -> list[Any]:
        """Run ``op(slot, *args)`` for each item (all :class:`RemoteSlot` of this pool).

        Each worker gets its share in one message, and the workers run their
        shares in parallel. Returns each item's value, or its exception (the
        environment's, :class:`WorkerDied`, or ``TimeoutError``).
        """
        outcomes: list[Any] = [None] * len(items)
        #: Per worker: the items' indices and the message that runs them there.
        shares: dict[int, tuple[_Worker, list[int], Message]] = {}
        for index, (slot, op, args) in enumerate(items):
            assert isinstance(slot, RemoteSlot)
            if not slot.worker.alive:  # closing an env that went with its worker: done
                outcomes[index] = (
                    None
                    if op is op_close
                    else WorkerDied(
                        "the worker process holding this environment died; reset to get a new one"
                    )
                )
                continue
            _, indices, message = shares.setdefault(id(slot.worker), (slot.worker, [], []))
            indices.append(index)
            message.append((slot.key, op, args))

        async def run_share(worker: _Worker, indices: list[int], message: Message) -> None:
            try:
                replies = await worker.round_trip(message, self.timeout)
            except Exception as exc:  # WorkerDied, TimeoutError, arguments that do not pickle
                for i in indices:
                    outcomes[i] = exc
                return
            for i, (kind, value) in zip(indices, replies, strict=True):
                outcomes[i] = value
                if kind == "ok" and items[i][1] is op_close:
                    worker.slots -= 1

        if len(shares) == 1:
            await run_share(*next(iter(shares.values())))
        else:
            async with anyio.create_task_group() as group:
                for share in shares.values():
                    group.start_soon(run_share, *share)
        return outcomes

    def close(self) -> None:
        """Stop every worker (their environments are closed as they exit)."""
        for worker in self.workers:
            worker.stop()
