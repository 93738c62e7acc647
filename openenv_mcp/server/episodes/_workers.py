"""Environments in worker processes (``serve --workers N``), so a batch uses several cores.

ale-py's emulator holds the GIL while it emulates, so threads cannot step two
Atari games at once; N worker processes can. Each new episode's environment
is made in the least loaded worker, and ``step_batch`` sends each worker its
share of a batch in one message, so one batch runs on several cores. Each
worker runs whole operations on the episode's pipeline (:mod:`openenv_mcp.pipeline`:
parse, step, encode), so only the answer crosses the pipe: a few hundred bytes for a
zstd Atari frame.

The server awaits a worker's answer without blocking its event loop: while one
worker emulates, calls on other workers' episodes (and every other request)
go on; calls that queue for a busy worker go to it together, in one message.

A worker is a plain ``python -P -m openenv_mcp.server.episodes._workers`` process that
imports only the environment and the episode pipeline: no MCP server stack.
It imports nothing from its working directory (``-P``), then takes the server's
own ``sys.path``, as multiprocessing's spawn gives its children.
It is started when the server is built; its start-up (interpreter, imports,
the environment's own modules) has its own bound, ``worker_start_timeout``,
apart from the per-call ``call_timeout``. A worker that dies (or hangs past
``call_timeout`` and is killed) takes its environments with it: their episodes
break, ``reset`` gives them a fresh environment in a live worker (a new one is
started in its place), and episodes in other workers never notice. Workers
read stdin from nothing and write stdout to stderr: stdout belongs to the
stdio transport.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import pickle
import select
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import anyio
from pydantic import BaseModel

from openenv_mcp._util.interpreter import python_command
from openenv_mcp.environment import Environment
from openenv_mcp.errors import EnvCallTimeout, EnvCrashed
from openenv_mcp.pipeline import Close, Op, PipelineOptions
from openenv_mcp.server.episodes._runtime import Call, Runtime
from openenv_mcp.server.transports._malloc import tune_malloc

__all__ = ["WorkerDied", "WorkerRef", "WorkerRuntime"]

log = logging.getLogger("openenv_mcp.server")

_PICKLE = pickle.HIGHEST_PROTOCOL
_STOP_GRACE = 5.0


@dataclass(frozen=True)
class _Create(Op[None]):
    """What makes a worker create an environment and its episode's pipeline (the worker
    runs it itself: there is no pipeline yet to apply it to)."""

    episode_id: str
    options: PipelineOptions


class WorkerDied(EnvCrashed):
    """The worker process holding an environment died (or was killed after hanging)."""


# -- the worker process -------------------------------------------------------------------------


def _worker_main(fd: int) -> None:
    """A worker's life: set up, make environments, run operations, until told to stop."""
    started = time.perf_counter()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides when to stop
    tune_malloc()
    conn = Connection(fd)
    try:
        path, main_file = pickle.loads(conn.recv_bytes())
        sys.path[:] = path
        if main_file:
            _load_main(main_file)
        env_cls, config = pickle.loads(conn.recv_bytes())
        from openenv_mcp.pipeline import EpisodePipeline
    except BaseException:
        with contextlib.suppress(Exception):
            conn.send(("failed", traceback.format_exc(limit=8)))
        return
    # When, on the machine's monotonic clock (one for every process): the server judges
    # the start from this, not from when it first needs the worker.
    conn.send(("ready", (time.perf_counter() - started, time.monotonic())))
    episodes: dict[int, EpisodePipeline] = {}

    def run(key: int, op: Op[Any]) -> tuple[str, Any]:
        try:
            if isinstance(op, _Create):
                episodes[key] = EpisodePipeline(env_cls(config), op.episode_id, op.options)
                return ("ok", None)
            value = episodes[key].run(op)
            if isinstance(op, Close):
                del episodes[key]
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
        replies = [run(key, op) for key, op in message]
        try:
            conn.send(replies)
        except (EOFError, OSError):
            break
        except Exception:  # something that does not pickle: send what it was instead
            conn.send([_sendable(reply) for reply in replies])
    for episode in episodes.values():
        with contextlib.suppress(Exception):
            episode.close()
    from openenv_mcp.recording import finish_videos

    finish_videos()  # a recorded episode's video, still being written


def _load_main(path: str) -> None:
    """Make the server's ``__main__`` importable here, as multiprocessing's spawn does,
    so an environment class defined in a script pickles by reference."""
    import runpy
    import types

    module = types.ModuleType("__mp_main__")
    module.__dict__.update(runpy.run_path(path, run_name="__mp_main__"))
    sys.modules["__main__"] = sys.modules["__mp_main__"] = module


def _sendable(reply: tuple[str, Any]) -> tuple[str, Any]:
    try:
        pickle.dumps(reply)
    except Exception as exc:
        kind, value = reply
        what = f"{type(value).__name__}: {value}" if kind == "err" else f"a {type(value).__name__}"
        return ("err", RuntimeError(f"{what} (which could not be sent from the worker: {exc})"))
    return reply


# -- the server's side --------------------------------------------------------------------------

#: What a worker is sent: ``(environment key, operation)`` per operation of its share.
Message = list[tuple[int, Op[Any]]]


def _main_file(env_cls: type[Environment[Any]]) -> str | None:
    """The script to load in a worker when the environment class lives in ``__main__``."""
    if env_cls.__module__ != "__main__":
        return None
    path = getattr(sys.modules["__main__"], "__file__", None)
    if path is None:
        raise EnvCrashed(
            f"{env_cls.__name__} is defined in an interactive session (__main__ has no file), "
            "so worker processes cannot import it: define it in a module, or serve without "
            "workers"
        )
    return str(path)


def _setup_message(env_cls: type[Environment[Any]], config: BaseModel) -> bytes:
    try:
        return pickle.dumps((env_cls, config), _PICKLE)
    except Exception as exc:
        raise EnvCrashed(
            f"{env_cls.__qualname__} cannot be sent to worker processes (it must be importable "
            f"by module and name): {exc}"
        ) from None


@dataclass
class _Share:
    """Operations one caller sent to a worker, and what came back for them."""

    message: Message
    replies: list[tuple[str, Any]] | None = None
    error: Exception | None = None


def _readable(fd: int) -> bool:
    """Whether ``fd`` has something to read now (without waiting)."""
    return bool(select.select([fd], [], [], 0)[0])


class _Worker:
    """One worker process and its socket; one message in flight at a time."""

    def __init__(
        self, index: int, env_cls: type[Environment[Any]], config: BaseModel, start_timeout: float
    ) -> None:
        # Both made before the process starts: either may refuse the class.
        hello = pickle.dumps((list(sys.path), _main_file(env_cls)), _PICKLE)
        setup = _setup_message(env_cls, config)
        self.start_timeout = start_timeout
        #: Seconds from spawning the process to its "ready" (once it has said so).
        self.start_seconds: float | None = None
        self._spawned = time.monotonic()
        parent, child = socket.socketpair()
        self.process = subprocess.Popen(
            python_command("-m", "openenv_mcp.server.episodes._workers", str(child.fileno())),
            stdin=subprocess.DEVNULL,
            stdout=2,  # stdout belongs to the stdio transport
            pass_fds=(child.fileno(),),
        )
        child.close()
        self.conn = Connection(parent.detach())
        self.name = f"worker {index} (pid {self.process.pid})"
        self.alive = True
        self.ready = False
        self.environments = 0
        #: Shares waiting for the worker; the next exchange takes them all.
        self.queue: list[_Share] = []
        #: Held from sending a message to reading its replies, so they pair up.
        self.lock = anyio.Lock()
        # A worker that dies at once says so when it is first awaited (_await_ready).
        with contextlib.suppress(OSError):
            self.conn.send_bytes(hello)
            self.conn.send_bytes(setup)

    async def _await_ready(self) -> None:
        """Wait for the worker to say it is set up, within ``start_timeout`` of its spawn
        (however long before its first call that was)."""
        too_slow = WorkerDied(
            f"{self.name} did not start within {self.start_timeout:g}s (worker_start_timeout)"
        )
        answered = False
        with anyio.move_on_after(self._spawned + self.start_timeout - time.monotonic()):
            await anyio.wait_readable(self.conn.fileno())
            answered = True
        if not answered and not _readable(self.conn.fileno()):
            self.kill()
            raise too_slow
        kind, detail = self._receive()
        if kind != "ready":
            self.kill()
            raise WorkerDied(f"{self.name} failed to start:\n{detail}")
        setting_up, ready_at = detail
        self.start_seconds = ready_at - self._spawned
        if self.start_seconds > self.start_timeout:
            self.kill()
            raise too_slow
        self.ready = True
        log.info(
            "%s ready in %.2f s (%.2f s of it setting up)",
            self.name,
            self.start_seconds,
            setting_up,
        )

    async def round_trip(self, message: Message, timeout: float) -> list[tuple[str, Any]]:
        """Run a share of operations in the worker; its replies, one per operation.

        The event loop runs other tasks meanwhile. Shares that arrive while the
        worker is busy go to it together, in one message, when it is next free:
        concurrent calls on one worker's episodes batch themselves. Once queued,
        a share runs to its end even if its caller is cancelled, so the pipe
        never falls out of step and the episode never misses a step it took.

        Raises:
            WorkerDied: the worker is gone, went while this ran, or never started.
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
                raise WorkerDied(f"{self.name} is gone")
            if not self.ready:
                await self._await_ready()
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
                raise WorkerDied(f"{self.name} is gone ({exc})") from exc
            answered = False
            with anyio.move_on_after(timeout):
                await anyio.wait_readable(self.conn.fileno())
                answered = True
            if not answered:
                self.kill()
                raise TimeoutError(f"{self.name} did not answer in time")
            replies = self._receive()
        except Exception as exc:  # WorkerDied, TimeoutError
            for share in shares:
                share.error = exc
            return
        start = 0
        for share in shares:
            share.replies = replies[start : start + len(share.message)]
            start += len(share.message)

    def _receive(self) -> Any:
        try:
            return self.conn.recv()
        except (EOFError, OSError, ValueError) as exc:
            self.kill()
            code = self.process.returncode
            raise WorkerDied(f"{self.name} died (exit code {code})") from exc

    def kill(self) -> None:
        self.alive = False
        with contextlib.suppress(Exception):
            self.process.kill()
        with contextlib.suppress(Exception):
            self.process.wait(_STOP_GRACE)
        with contextlib.suppress(Exception):
            self.conn.close()

    def stop(self) -> None:
        """Ask the worker to close its environments and exit; kill it if it does not."""
        if self.alive:
            with contextlib.suppress(Exception):
                self.conn.send_bytes(pickle.dumps(None))
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(_STOP_GRACE)
        self.kill()


@dataclass(frozen=True)
class WorkerRef:
    """An environment held by a worker process."""

    worker: _Worker
    key: int


class WorkerRuntime(Runtime):
    """N worker processes holding the environments (``ServerSettings.workers``)."""

    def __init__(
        self,
        env_cls: type[Environment[Any]],
        config: BaseModel,
        size: int,
        *,
        call_timeout: float,
        start_timeout: float,
        options: PipelineOptions | None = None,
    ) -> None:
        self.env_cls = env_cls
        self.config = config
        self.call_timeout = call_timeout
        self.options = options or PipelineOptions()
        self.start_timeout = start_timeout
        self._keys = itertools.count()
        self._started = itertools.count()
        self.workers = [self._start() for _ in range(size)]

    def _start(self) -> _Worker:
        return _Worker(next(self._started), self.env_cls, self.config, self.start_timeout)

    async def create(self, episode_id: str) -> WorkerRef:
        """A new environment in the least loaded live worker (dead workers are replaced)."""
        for attempt in range(2):  # a worker found dead now is replaced once
            for i, old in enumerate(self.workers):
                if not old.alive:
                    log.warning("replacing %s", old.name)
                    self.workers[i] = self._start()
            worker = min(self.workers, key=lambda w: w.environments)
            ref = WorkerRef(worker, next(self._keys))
            worker.environments += 1  # counted at once, so creations meanwhile go elsewhere
            (outcome,) = await self.run([(ref, _Create(episode_id, self.options))])
            if outcome is None:
                return ref
            worker.environments -= 1
            if isinstance(outcome, TimeoutError):
                raise EnvCallTimeout(
                    f"creating an environment in {worker.name} took over "
                    f"{self.call_timeout:g}s (call_timeout)"
                ) from outcome
            if not isinstance(outcome, WorkerDied):
                raise outcome
            if attempt:
                raise EnvCrashed(f"could not start an environment in a worker process: {outcome}")
        raise AssertionError("unreachable")

    async def run(self, calls: Sequence[Call]) -> list[Any]:
        """Each worker gets its share in one message, and the workers run their shares in
        parallel; each call's value or exception (the env's, ``WorkerDied``, ``TimeoutError``)."""
        outcomes: list[Any] = [None] * len(calls)
        #: Per worker: the calls' indices and the message that runs them there.
        shares: dict[int, tuple[_Worker, list[int], Message]] = {}
        for index, (ref, op) in enumerate(calls):
            worker = ref.worker
            if not worker.alive:  # closing an env that went with its worker: done
                outcomes[index] = (
                    None
                    if isinstance(op, Close)
                    else WorkerDied(
                        "the worker process holding this environment died; reset to get a new one"
                    )
                )
                continue
            _, indices, message = shares.setdefault(id(worker), (worker, [], []))
            indices.append(index)
            message.append((ref.key, op))

        async def run_share(worker: _Worker, indices: list[int], message: Message) -> None:
            try:
                replies = await worker.round_trip(message, self.call_timeout)
            except Exception as exc:  # WorkerDied, TimeoutError, arguments that do not pickle
                for i in indices:
                    outcomes[i] = exc
                return
            for i, (kind, value) in zip(indices, replies, strict=True):
                outcomes[i] = value
                if kind == "ok" and isinstance(calls[i][1], Close):
                    worker.environments -= 1

        if len(shares) == 1:
            await run_share(*next(iter(shares.values())))
        else:
            async with anyio.create_task_group() as group:
                for share in shares.values():
                    group.start_soon(run_share, *share)
        return outcomes

    async def aclose(self) -> None:
        """Stop every worker (their environments are closed as they exit)."""
        for worker in self.workers:
            worker.stop()


if __name__ == "__main__":
    # Run as the module proper, not as __main__: the operations the server pickles name
    # this module's classes (_Create), and isinstance must find the same ones.
    from openenv_mcp.server.episodes._workers import _worker_main as main

    main(int(sys.argv[1]))
