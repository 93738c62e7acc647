"""Real servers for tests: stdio subprocesses and HTTP on loopback.

Every wait is bounded; every process started here is stopped and reaped.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from openenv_mcp.server import build_server

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "openenv_mcp.cli"]
TRANSPORTS = ["memory", "stdio", "http"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_args(env: str, *options: str) -> list[str]:
    return [*CLI, "serve", env, *options]


def start_http(
    env: str, *options: str, command: Sequence[str] | None = None, timeout: float = 60.0
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``openenv-mcp serve ENV --http`` on a free loopback port; return it and its URL.

    ``command`` replaces the ``openenv-mcp serve ENV`` part (e.g. a launcher that
    registers a test-only env first). The caller stops it (:func:`stop`).
    """
    port = free_port()
    argv = [*(command or serve_args(env)), "--http", "--port", str(port)]
    # A file, not a pipe: a server logging under load must never block on a full pipe.
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [*argv, "--log-level", "WARNING", *options],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd=ROOT,
        )
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"server exited early: {log.read().decode()[-2000:]}")
                with (
                    contextlib.suppress(OSError),
                    socket.create_connection(("127.0.0.1", port), 0.2),
                ):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"HTTP server did not listen within {timeout}s")
                time.sleep(0.05)
        except BaseException:
            stop(proc)
            raise
    return proc, f"http://127.0.0.1:{port}/mcp"


@contextlib.contextmanager
def http_server(
    env: str, *options: str, command: Sequence[str] | None = None, timeout: float = 60.0
) -> Iterator[str]:
    """Run ``openenv-mcp serve ENV --http`` on a free loopback port; yield its URL."""
    proc, url = start_http(env, *options, command=command, timeout=timeout)
    try:
        yield url
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> int:
    """SIGTERM, then SIGKILL after ``timeout``; always reap."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return proc.returncode


def stdio_transport(env: str, *options: str) -> StdioTransport:
    return StdioTransport(
        command=CLI[0],
        args=[*CLI[1:], "serve", env, "--stdio", "--log-level", "WARNING", *options],
        env={**os.environ},
        cwd=str(ROOT),
    )


@contextlib.asynccontextmanager
async def open_client(
    transport: str, env: str = "echo", *options: str, **kwargs: object
) -> AsyncIterator[Client]:
    """A fastmcp Client connected to a fresh server over ``transport``.

    ``options`` are CLI flags (``--frame``); for memory they map to keyword arguments.
    """
    if transport == "memory":
        from openenv_mcp.cli import parse_env_options
        from openenv_mcp.registry import get_env_class

        cls = get_env_class(env)
        server = build_server(cls, **parse_env_options(cls, list(options)))
        async with Client(server, timeout=60, **kwargs) as client:  # type: ignore[arg-type]
            yield client
    elif transport == "stdio":
        async with Client(stdio_transport(env, *options), timeout=60, **kwargs) as client:  # type: ignore[arg-type]
            yield client
    elif transport == "http":
        with http_server(env, *options) as url:
            async with Client(url, timeout=60, **kwargs) as client:  # type: ignore[arg-type]
                yield client
    else:
        raise ValueError(transport)
