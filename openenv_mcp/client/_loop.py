"""``EventLoopThread``: the event loop a sync client runs on, and how it ends.

Sync clients (``.sync()``, ``MCPGymEnv``, ``MCPVectorEnv``) drive an async client on
an asyncio loop of their own. Each call runs that loop *in the calling thread*
(``run_until_complete``), and nothing runs between calls: replies wait in the pipe
until the next call reads them. A loop on a background thread cost every call two
thread wake-ups (hand the call over, hand the answer back): a CartPole step through
``MCPGymEnv`` took 2.0 ms that way and 1.0 ms on the caller's thread, with three times
the client's CPU. Where the calling thread already runs a loop (a notebook cell, an
async trainer), ``run_until_complete`` is not allowed there, and the call runs on a
helper thread while the caller waits. Calls from several threads take turns.

Scripts routinely end without closing their clients (Gym and SB3 examples skip
``close()``; an uncaught exception skips it too), so a loop must never be what keeps
a process alive:

* at interpreter exit (``atexit``), every loop not stopped runs its closers (the
  episodes are closed, a stdio server is stopped and reaped) within a bound;
* when the object owning a loop is garbage-collected, the same happens;
* after ``fork`` the child's copies are marked stopped, so nothing in the child
  drives a loop (or a server) that is its parent's.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from openenv_mcp.errors import ResetNeeded

__all__ = ["CLOSE_BOUND", "EventLoopThread"]

T = TypeVar("T")
log = logging.getLogger("openenv_mcp.client")

#: Seconds one closer may take when a loop stops (a stdio server's own stop is
#: bounded well under this: EOF, then terminate, then kill).
CLOSE_BOUND = 30.0

#: Every loop not yet stopped, oldest first (a dict: ordered, unlike a set).
_live: dict[EventLoopThread, None] = {}
_live_lock = threading.Lock()


class EventLoopThread:
    """An asyncio event loop for one sync client, run by the thread that calls it.

    Its owner registers what to close with :meth:`adopt`; :meth:`stop` (called by the
    owner's ``close()``, at exit, or when the owner is collected) runs that and closes
    the loop. (The name is older than the design: the loop has no thread of its own.)
    """

    def __init__(self, name: str = "openenv-mcp-client") -> None:
        self.name = name
        self._loop = asyncio.new_event_loop()
        self._closers: list[Callable[[], Awaitable[None]]] = []
        #: Held by the thread running the loop: calls take turns.
        self._turn = threading.Lock()
        #: The thread running the loop now (a collection there cannot wait for it).
        self._driver: int | None = None
        self._lock = threading.Lock()
        self._stopped = False
        #: For callers whose own thread runs a loop (made on first need).
        self._helper: concurrent.futures.ThreadPoolExecutor | None = None
        with _live_lock:
            _live[self] = None

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` has run (the loop takes no more calls)."""
        return self._stopped

    def run(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``await func(*args)`` on the loop and return (or raise) its outcome.

        An interruption of the calling thread (Ctrl-C) cancels the call.

        Raises:
            ResetNeeded: the loop was stopped (its client closed).
        """
        if self._stopped:
            raise ResetNeeded("this client is closed")
        if self._driver == threading.get_ident():
            raise RuntimeError("a sync client was called from inside one of its own calls")
        if asyncio._get_running_loop() is not None:
            answer: T = self._on_helper(self._drive, func, *args)
            return answer
        return self._drive(func, *args)

    def _drive(self, func: Callable[..., Awaitable[T]], *args: Any, closing: bool = False) -> T:
        with self._turn:
            if self._stopped and not closing:
                raise ResetNeeded("this client is closed")
            loop = self._loop
            task: asyncio.Task[T] = loop.create_task(_call(func, *args))
            self._driver = threading.get_ident()
            try:
                result: T = loop.run_until_complete(task)
                return result
            except BaseException:
                if not task.done():  # interrupted: cancel the call, so none of it runs later
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        loop.run_until_complete(task)
                raise
            finally:
                self._driver = None

    def _on_helper(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with self._lock:
            if self._helper is None:
                self._helper = concurrent.futures.ThreadPoolExecutor(
                    1, thread_name_prefix=self.name
                )
            helper = self._helper
        return helper.submit(fn, *args, **kwargs).result()

    def adopt(self, owner: object, closer: Callable[[], Awaitable[None]]) -> None:
        """Run ``closer`` on this loop when it stops, and stop it when ``owner`` is
        garbage-collected.

        ``closer`` must not hold ``owner`` (that would keep it alive): pass the
        episodes and sessions to close, not a bound method of the owner.
        """
        self._closers.append(closer)
        weakref.finalize(owner, self.stop)

    def stop(self) -> None:
        """Run the closers (each within :data:`CLOSE_BOUND` seconds) and close the loop.
        Idempotent; safe from any thread, and from a collection in the middle of a call."""
        if self._driver == threading.get_ident() or asyncio._get_running_loop() is not None:
            # Collected mid-call on the driving thread, or called where a loop runs: the
            # loop cannot be driven from here, so a thread of its own stops it.
            stopper = threading.Thread(target=self.stop, name=f"{self.name}-stop")
            stopper.start()
            if self._driver != threading.get_ident():
                stopper.join()
            return
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            helper, self._helper = self._helper, None
        try:
            for closer in reversed(self._closers):
                try:
                    self._drive(_bounded, closer, closing=True)
                except Exception as exc:  # the server may be gone already: nothing to save
                    log.debug("closing on stop: %r", exc)
        finally:
            self._closers.clear()
            with self._turn:
                _finish(self._loop)
            if helper is not None:
                helper.shutdown(wait=False)
            with _live_lock:
                _live.pop(self, None)

    def _forget(self) -> None:
        """In a forked child: the loop and its server are the parent's; drive neither."""
        self._stopped = True
        self._closers.clear()
        self._helper = None


async def _bounded(closer: Callable[[], Awaitable[None]]) -> None:
    async with asyncio.timeout(CLOSE_BOUND):
        await closer()


def _finish(loop: asyncio.AbstractEventLoop) -> None:
    """What ``asyncio.run`` does on its way out: nothing is left pending or unclosed."""
    if loop.is_closed():
        return
    tasks = asyncio.all_tasks(loop)
    for task in tasks:
        task.cancel()
    with contextlib.suppress(BaseException):
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    loop.close()


async def _call(func: Callable[..., Awaitable[T]], *args: Any) -> T:
    return await func(*args)


def _stop_all() -> None:
    """At exit: close what every running sync client holds, newest first."""
    with _live_lock:
        loops = list(_live)
    for loop in reversed(loops):
        try:
            loop.stop()
        except BaseException as exc:  # exiting anyway; one client must not stop the rest
            log.debug("stopping a client's loop at exit: %r", exc)


def _after_fork_in_child() -> None:
    global _live_lock
    _live_lock = threading.Lock()  # it may have been held by a thread that did not follow
    for loop in _live:
        loop._forget()
    _live.clear()


atexit.register(_stop_all)
os.register_at_fork(after_in_child=_after_fork_in_child)
