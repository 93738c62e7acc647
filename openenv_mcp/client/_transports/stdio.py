"""A server subprocess the client starts, owns, stops and reaps; JSON lines over its
pipes, read in linear time."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from openenv_mcp.client._transports.base import MAX_MESSAGE, STOP_GRACE, LineTransport

__all__ = ["StdioTransport"]


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
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        """The server's process id."""
        return self.proc.pid if self.proc else None

    async def connect(self) -> None:
        if self._stderr_path is not None:
            self.stderr = self._stderr_path.open("a")  # closed in close()
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr if self.stderr is not None else subprocess.DEVNULL,
            env=self.env,
            limit=MAX_MESSAGE,
            start_new_session=True,  # a Ctrl-C in the trainer's terminal is the trainer's
        )
        self._reader = asyncio.ensure_future(self._read())
        await self._discover()

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        try:
            while line := await stdout.readline():
                self._dispatch(orjson.loads(line))
            raise ConnectionError("the server closed its stdout (exited?)")
        except BaseException as exc:
            self._lose(exc)
            if not isinstance(exc, Exception):
                raise

    def _send_line(self, data: bytes) -> None:
        if self.proc is None or self.proc.stdin is None:
            raise ConnectionError("not connected")
        self.proc.stdin.write(data + b"\n")

    async def _flush(self) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        await self.proc.stdin.drain()

    async def close(self) -> None:
        """Close stdin (the server exits at EOF), then terminate and kill if it lingers."""
        proc = self.proc
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
        for stop in (None, proc.terminate, proc.kill):
            if stop is not None:
                with contextlib.suppress(ProcessLookupError):
                    stop()
            try:
                await asyncio.wait_for(proc.wait(), STOP_GRACE)
                break
            except TimeoutError:
                continue
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
        if self._stderr_path is not None and self.stderr is not None:
            self.stderr.close()

    def __repr__(self) -> str:
        return f"<StdioTransport {self.argv!r}>"
