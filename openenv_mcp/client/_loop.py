"""``EventLoopThread``: the event loop a sync client runs on, and how it ends.

Sync clients (``.sync()``, ``MCPGymEnv``, ``MCPVectorEnv``) drive an async
client on an asyncio loop in a daemon thread. Scripts routinely end without
closing them (Gym and SB3 examples skip ``close()``; an uncaught exception
skips it too), so the loop must never be what keeps a process alive:

* at interpreter exit (``atexit``, which runs before Python stops daemon threads),
  every loop still running runs its closers (the episodes are closed, a stdio
  server is stopped and reaped) within a bound, then stops;
* when the object owning a loop is garbage-collected, the same happens;
* after ``fork`` the child holds no loop (the thread did not follow it): its
  copies are marked stopped, so nothing in the child waits on them.

The loop is a plain asyncio loop, not anyio's ``start_blocking_portal``: that
portal's context manager, finalised while the interpreter shuts down (daemon
threads already gone), waits forever for its own thread.
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
    """An asyncio event loop on a daemon thread, for driving async clients from sync code.

    Its owner registers what to close with :meth:`adopt`; :meth:`stop` (called by the
    owner's ``close()``, at exit, or when the owner is collected) runs that and ends the
    thread.
    """

    def __init__(self, name: str = "openenv-mcp-client") -> None:
        self._loop = asyncio.new_event_loop()
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        with _live_lock:
            _live[self] = None
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            # What asyncio.run does on its way out: nothing is left pending or unclosed.
            tasks = asyncio.all_tasks(self._loop)
            for task in tasks:
                task.cancel()
            with contextlib.suppress(BaseException):
                self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
                self._loop.run_until_complete(self._loop.shutdown_default_executor())
            self._loop.close()

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` has run (the loop takes no more calls)."""
        return self._stopped

    def run(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``await func(*args)`` on the loop and return (or raise) its outcome.

        An interruption of the waiting thread (Ctrl-C) cancels the call.

        Raises:
            ResetNeeded: the loop was stopped (its client closed).
        """
        if self._stopped:
            raise ResetNeeded("this client is closed")
        if threading.get_ident() == self._thread.ident:
            raise RuntimeError("a sync client was called from its own event loop thread")
        return self._wait(asyncio.run_coroutine_threadsafe(_call(func, *args), self._loop))

    @staticmethod
    def _wait(future: concurrent.futures.Future[T], timeout: float | None = None) -> T:
        try:
            return future.result(timeout)
        except BaseException:
            future.cancel()
            raise

    def adopt(self, owner: object, closer: Callable[[], Awaitable[None]]) -> None:
        """Run ``closer`` on this loop when it stops, and stop it when ``owner`` is
        garbage-collected.

        ``closer`` must not hold ``owner`` (that would keep it alive): pass the
        episodes and sessions to close, not a bound method of the owner.
        """
        self._closers.append(closer)
        weakref.finalize(owner, self.stop)

    def stop(self) -> None:
        """Run the closers (each within :data:`CLOSE_BOUND` seconds), stop the loop and
        join its thread. Idempotent; safe from any thread, the loop's own included."""
        if threading.get_ident() == self._thread.ident:
            # Collected on the loop's own thread: it cannot wait on itself.
            threading.Thread(target=self.stop, name="openenv-mcp-client-stop").start()
            return
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        try:
            for closer in reversed(self._closers):
                future = asyncio.run_coroutine_threadsafe(_call(closer), self._loop)
                try:
                    self._wait(future, CLOSE_BOUND)
                except Exception as exc:  # the server may be gone already: nothing to save
                    log.debug("closing on stop: %r", exc)
        finally:
            self._closers.clear()
            if not self._loop.is_closed():
                with contextlib.suppress(RuntimeError):  # closed in between
                    self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(CLOSE_BOUND)
            with _live_lock:
                _live.pop(self, None)

    def _forget(self) -> None:
        """In a forked child: the thread did not follow, so nothing may wait on it."""
        self._stopped = True
        self._closers.clear()


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
