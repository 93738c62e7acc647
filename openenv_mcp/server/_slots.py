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
GIL, so threads cannot do this).

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
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from pydantic import BaseModel

from openenv_mcp.environment import Environment, ObservationSpec, StepResult
from openenv_mcp.errors import EnvCrashed
from openenv_mcp.server._results import Observed, observe
from openenv_mcp.server._settings import Frames

__all__ = [
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
    "run_many",
]

log = logging.getLogger("openenv_mcp.server")

#: Seconds a worker may take to close its environments and exit before it is killed.
_STOP_GRACE = 5.0


class WorkerDied(RuntimeError):
    """The worker process holding an environment is gone (crashed, or killed after a hang)."""


@dataclass
class Slot:
    """An environment and its current observation, in the process where it runs."""

    env: Environment
    observation: Any = None

    def run(self, op: Callable[..., Any], *args: Any) -> Any:
        """Run ``op(self, *args)`` here."""
        return op(self, *args)

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


def op_reset(
    slot: Slot, spec: ObservationSpec, seed: int | None, options: Any, frames: Frames
) -> tuple[dict[str, Any], Observed, str | None]:
    """Reset: the first info, the observation made ready for the wire, its text."""
    obs, info = slot.env.reset(seed=seed, options=options)
    slot.observation = obs
    return dict(info), observe(slot.env, spec, obs, frames), _text(slot, spec)


def op_step(
    slot: Slot, spec: ObservationSpec, action: Any, frames: Frames
) -> tuple[StepResult, Observed, str | None]:
    """One step; the result comes back without its observation (it stays here)."""
    result = slot.env.step(action)
    slot.observation = result.observation
    observed = observe(slot.env, spec, result.observation, frames)
    bare = StepResult(None, result.reward, result.terminated, result.truncated, result.info)
    return bare, observed, _text(slot, spec)


def op_state(slot: Slot, spec: ObservationSpec, frames: Frames) -> tuple[dict[str, Any], Observed]:
    """The environment's state fields and its current observation."""
    return slot.env.state(), observe(slot.env, spec, slot.observation, frames)


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
    return tool.handler(slot.env, args)


def op_close(slot: Slot) -> None:
    """Free the environment."""
    slot.env.close()


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


class _Worker:
    """One worker process and its pipe."""

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

    def send(self, items: list[tuple[int, Callable[..., Any], tuple[Any, ...]]]) -> None:
        """Send a share of operations.

        Raises:
            WorkerDied: the pipe is broken (the worker is killed).
            Exception: what pickling the arguments raised; nothing was sent.
        """
        data = pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL)  # may raise: nothing sent
        try:
            self.conn.send_bytes(data)
        except (OSError, ValueError) as exc:
            self.kill()
            raise WorkerDied(f"worker process {self.process.pid} is gone ({exc})") from exc

    def receive(self, deadline: float) -> list[tuple[str, Any]]:
        try:
            ready = self.conn.poll(max(0.0, deadline - time.monotonic()))
        except (OSError, ValueError):
            ready = True  # a closed pipe: recv says how
        if not ready:
            self.kill()
            raise TimeoutError(f"worker process {self.process.pid} did not answer in time")
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
    """An environment held by a worker process."""

    pool: WorkerPool
    worker: _Worker
    key: int

    def run(self, op: Callable[..., Any], *args: Any) -> Any:
        """Run ``op`` on the environment in its worker; its exception is raised here."""
        (outcome,) = self.pool.run_many([(self, op, args)])
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

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
        self._lock = threading.Lock()  # slot creation may come from threads
        self.workers = [_Worker(i, env_cls, config) for i in range(size)]
        self._started = len(self.workers)

    def new_slot(self) -> RemoteSlot:
        """A new environment in the least loaded live worker (dead workers are replaced)."""
        for attempt in range(2):  # a worker found dead now is replaced once
            with self._lock:
                for i, old in enumerate(self.workers):
                    if not old.alive:
                        log.warning("replacing worker process %s", old.process.pid)
                        self.workers[i] = _Worker(self._started, self.env_cls, self.config)
                        self._started += 1
                worker = min(self.workers, key=lambda w: w.slots)
                slot = RemoteSlot(self, worker, next(self._keys))
            try:
                slot.run(_create)
            except WorkerDied as exc:
                if attempt:
                    raise EnvCrashed(
                        f"could not start an environment in a worker process ({exc}); "
                        "the server log says why"
                    ) from exc
                continue
            worker.slots += 1
            return slot
        raise AssertionError("unreachable")

    def run_many(
        self, items: Sequence[tuple[RemoteSlot, Callable[..., Any], tuple[Any, ...]]]
    ) -> list[Any]:
        """Run ``op(slot, *args)`` for each item; each worker gets its share in one message.

        The workers run their shares in parallel. Returns each item's value, or
        its exception (the environment's, :class:`WorkerDied`, or ``TimeoutError``).
        """
        deadline = time.monotonic() + self.timeout
        shares: dict[int, tuple[_Worker, list[int]]] = {}
        outcomes: list[Any] = [None] * len(items)
        for index, (slot, op, _) in enumerate(items):
            if not slot.worker.alive:  # closing an env that went with its worker: done
                outcomes[index] = (
                    None
                    if op is op_close
                    else WorkerDied(
                        "the worker process holding this environment died; reset to get a new one"
                    )
                )
                continue
            shares.setdefault(id(slot.worker), (slot.worker, []))[1].append(index)
        sent: list[tuple[_Worker, list[int]]] = []
        for worker, indices in shares.values():
            message = [(items[i][0].key, items[i][1], items[i][2]) for i in indices]
            try:
                worker.send(message)
                sent.append((worker, indices))
            except Exception as exc:  # WorkerDied, or arguments that do not pickle
                for i in indices:
                    outcomes[i] = exc
        for worker, indices in sent:
            try:
                replies = worker.receive(deadline)
            except (WorkerDied, TimeoutError) as exc:
                for i in indices:
                    outcomes[i] = exc
                continue
            for i, (kind, value) in zip(indices, replies, strict=True):
                outcomes[i] = value
                if kind == "ok" and items[i][1] is op_close:
                    worker.slots -= 1
        return outcomes

    def close(self) -> None:
        """Stop every worker (their environments are closed as they exit)."""
        for worker in self.workers:
            worker.stop()


def run_many(
    items: Sequence[tuple[Slot | RemoteSlot, Callable[..., Any], tuple[Any, ...]]],
) -> list[Any]:
    """Run operations on several slots: local ones in turn, remote ones in their workers at once.

    Returns each item's value or exception, in order.
    """
    remote = [i for i, (slot, _, _) in enumerate(items) if isinstance(slot, RemoteSlot)]
    outcomes: list[Any] = [None] * len(items)
    if remote:
        pool = items[remote[0]][0].pool  # type: ignore[union-attr]
        done = pool.run_many([items[i] for i in remote])  # type: ignore[misc]
        for i, outcome in zip(remote, done, strict=True):
            outcomes[i] = outcome
    for i, (slot, op, args) in enumerate(items):
        if isinstance(slot, Slot):
            try:
                outcomes[i] = op(slot, *args)
            except Exception as exc:
                outcomes[i] = exc
    return outcomes
