"""A server subprocess the client starts, owns, stops and reaps; JSON lines over its
pipes, read in linear time.

The pipes are read and written by the event loop's own readiness callbacks, not
through asyncio's subprocess streams: a reply is split into lines and dispatched in
the callback that read it. Through the streams each reply took a protocol, a
stream reader and a reader task's wake-up (two turns of the loop); a CartPole step
through ``MCPGymEnv`` spends about as long in that as in everything else the client
does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from openenv_mcp.client._transports.base import MAX_MESSAGE, STOP_GRACE, LineTransport

__all__ = ["StdioTransport"]

_READ = 1 << 20
#: How often a stopping server is checked for having exited (seconds).
_EXIT_POLL = 0.01


class StdioTransport(LineTransport):
    """A server subprocess this transport starts, owns, stops and reaps."""

    def __init__(
        self, argv: Sequence[str], env: dict[str, str], stderr: Path | IO[Any] | None
    ) -> None:
        super().__init__()
        self.argv = list(argv)
        self.env = env
        self._stderr_path = stderr if isinstance(stderr, Path) else None
        self.stderr: IO[Any] | None = None if isinstance(stderr, Path) else stderr
        self.proc: subprocess.Popen[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._in = self._out = -1
        #: Bytes read and not yet split into lines; ``_scanned``: how far no newline is.
        self._buffer = bytearray()
        self._scanned = 0
        self._chunk = memoryview(bytearray(_READ))
        #: Bytes the server's stdin has not taken yet, and who waits for them to go.
        self._unsent = bytearray()
        self._sent: asyncio.Future[None] | None = None

    @property
    def pid(self) -> int | None:
        """The server's process id."""
        return self.proc.pid if self.proc else None

    async def connect(self) -> None:
        if self._stderr_path is not None:
            self.stderr = self._stderr_path.open("a")  # closed in close()
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr if self.stderr is not None else subprocess.DEVNULL,
            env=self.env,
            bufsize=0,
            start_new_session=True,  # a Ctrl-C in the trainer's terminal is the trainer's
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in, self._out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._out, self._readable)
        await self._discover()

    # -- reading -----------------------------------------------------------------------

    def _readable(self) -> None:
        chunk = self._chunk
        try:
            # Into one buffer kept for it: os.read(fd, n) allocates n bytes every call.
            size = os.readv(self._out, [chunk])
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._gone(exc)
            return
        if not size:
            self._gone(ConnectionError("the server closed its stdout (exited?)"))
            return
        buffer = self._buffer
        buffer += chunk[:size]
        start = 0
        # Only the bytes not searched before: a long message costs linear time.
        while (end := buffer.find(b"\n", max(start, self._scanned))) >= 0:
            line = bytes(buffer[start:end])
            start = end + 1
            self._scanned = start
            if line.strip():
                try:
                    self._dispatch(orjson.loads(line))
                except orjson.JSONDecodeError as exc:
                    self._gone(ConnectionError(f"the server wrote a line that is not JSON: {exc}"))
                    return
        if start:
            del buffer[:start]
            self._scanned = 0
        self._scanned = len(buffer)
        if len(buffer) > MAX_MESSAGE:
            self._gone(ConnectionError(f"the server sent a message over {MAX_MESSAGE} bytes"))

    def _gone(self, exc: BaseException) -> None:
        """The link is gone: stop reading, and fail what waits on it."""
        if self._loop is not None and self._out >= 0:
            self._loop.remove_reader(self._out)
        self._lose(exc)
        if self._sent is not None and not self._sent.done():
            self._sent.set_exception(ConnectionError(f"lost the server: {exc}"))

    # -- writing -----------------------------------------------------------------------

    def _send_line(self, data: bytes) -> None:
        if self.proc is None or self._in < 0:
            raise ConnectionError("not connected")
        payload = data + b"\n"
        if not self._unsent:
            try:
                written = os.write(self._in, payload)
            except (BlockingIOError, InterruptedError):
                written = 0
            except OSError as exc:  # BrokenPipeError: the server is gone
                raise ConnectionError(f"cannot write to the server: {exc}") from exc
            if written == len(payload):
                return
            payload = payload[written:]
            assert self._loop is not None
            self._loop.add_writer(self._in, self._writable)
        self._unsent += payload

    def _writable(self) -> None:
        try:
            written = os.write(self._in, self._unsent)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            assert self._loop is not None
            self._loop.remove_writer(self._in)
            self._gone(exc)
            return
        del self._unsent[:written]
        if not self._unsent:
            assert self._loop is not None
            self._loop.remove_writer(self._in)
            if self._sent is not None and not self._sent.done():
                self._sent.set_result(None)

    async def _flush(self) -> None:
        if not self._unsent:
            return
        if self._sent is None or self._sent.done():
            assert self._loop is not None
            self._sent = self._loop.create_future()
        await asyncio.shield(self._sent)

    # -- stopping ------------------------------------------------------------------------

    async def close(self) -> None:
        """Close stdin (the server exits at EOF), then terminate and kill if it lingers."""
        proc = self.proc
        if proc is None:
            return
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(Exception):
                loop.remove_writer(self._in)
            with contextlib.suppress(Exception):
                loop.remove_reader(self._out)
        if proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
        for stop in (None, proc.terminate, proc.kill):
            if stop is not None:
                with contextlib.suppress(ProcessLookupError):
                    stop()
            if await _exited(proc, STOP_GRACE):
                break
        if proc.stdout is not None:
            with contextlib.suppress(Exception):
                proc.stdout.close()
        self._lose(ConnectionError("the connection is closed"))
        if self._stderr_path is not None and self.stderr is not None:
            self.stderr.close()

    def __repr__(self) -> str:
        return f"<StdioTransport {self.argv!r}>"


async def _exited(proc: subprocess.Popen[bytes], within: float) -> bool:
    """Whether ``proc`` exits (and is reaped) within ``within`` seconds."""
    waited = 0.0
    while proc.poll() is None:
        if waited >= within:
            return False
        await asyncio.sleep(_EXIT_POLL)
        waited += _EXIT_POLL
    return True
