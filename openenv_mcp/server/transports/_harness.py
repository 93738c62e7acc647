"""Which harness run an episode host's connection comes from.

A harness that starts a stdio server per tool call (Inspect AI's ``basic_agent()``,
LangChain's ``MultiServerMCPClient`` quickstart) makes every call a new process, so
a new connection to the episode host and a new caller with no default episode:
``step`` after ``reset`` found nothing to step. The front (the per-call process, see
:mod:`._host`) therefore names the run it belongs to in the first line it sends the
host, :func:`hello`: the process that started it, by pid and start time (so a pid the
kernel reuses names another run), or ``OPENENV_MCP_HARNESS_RUN`` where set. The host
reads it with :func:`read_hello` and serves the connection within that run
(:meth:`openenv_mcp.server.episodes._episodes.EpisodeTable.joined`): calls without a
handle then mean the run's last reset episode, across its processes.

Imported by the front, so only the standard library: the front imports nothing heavy.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator
from typing import TypeVar

__all__ = ["HARNESS_RUN_ENV", "harness_run", "hello", "read_hello"]

#: Names the harness run a front belongs to, in place of the process that started it
#: (a launcher such as ``uv run`` between the harness and each front would make every
#: call a run of its own).
HARNESS_RUN_ENV = "OPENENV_MCP_HARNESS_RUN"
#: The method of the hello: a JSON-RPC notification no MCP client sends, which a host
#: that does not know it (an older one) passes to its MCP stack, which ignores it.
_HELLO = "notifications/openenv_mcp/front"
#: Longest run key kept (a longer ``OPENENV_MCP_HARNESS_RUN`` is cut).
_MAX_KEY = 200

T = TypeVar("T")


def _started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, from ``/proc/PID/stat``), or
    ``None`` where that cannot be read (no ``/proc``, the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces or parentheses:
    # the fields after its last ")" are state, ppid, ...; the start time is field 22.
    fields = stat[stat.rindex(b")") + 2 :].split()
    try:
        return fields[19].decode()
    except IndexError:
        return None


def harness_run() -> str | None:
    """This front's harness run: ``OPENENV_MCP_HARNESS_RUN`` where set, else the process
    that started it (its pid and start time); ``None`` where neither can be told (no
    ``/proc``), and the connection is a caller alone."""
    named = os.environ.get(HARNESS_RUN_ENV, "").strip()
    if named:
        return f"named:{named[:_MAX_KEY]}"
    parent = os.getppid()  # 1 too: a harness that is a container's first process
    started = _started(parent)
    return None if started is None else f"pid:{parent}:{started}"


def hello(run: str | None) -> bytes:
    """The line a front sends its host first, naming its harness run."""
    message = {"jsonrpc": "2.0", "method": _HELLO, "params": {"run": run}}
    return json.dumps(message).encode() + b"\n"


async def read_hello(
    lines: AsyncIterator[T],
) -> tuple[str | None, AsyncIterator[T]]:
    """The harness run a connection's first line names, and the lines to serve: all of
    them but that hello, or all of them where the first is no hello (a client that
    connected to the host's socket itself)."""
    first: T | None = None
    run: str | None = None
    with contextlib.suppress(StopAsyncIteration):
        first = await anext(lines)
    if isinstance(first, bytes | bytearray):
        try:
            message = json.loads(first)
        except ValueError:
            message = None
        if (
            isinstance(message, dict)
            and message.get("method") == _HELLO
            and "id" not in message
            and isinstance(message.get("params"), dict)
        ):
            named = message["params"].get("run")
            run = named[:_MAX_KEY] if isinstance(named, str) and named else None
            first = None

    async def rest() -> AsyncIterator[T]:
        if first is not None:
            yield first
        async for line in lines:
            yield line

    return run, rest()
