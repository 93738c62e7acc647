"""Real servers for tests: in memory, stdio subprocesses and HTTP on loopback.

Every wait is bounded; every process started here is stopped and reaped.
``TRANSPORTS`` parametrizes a test body over all three; the stdio and HTTP
cases are in the integration tier (see ``conftest.py``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport

from openenv_mcp.options import parse_cli_options
from openenv_mcp.registry import get_env_class
from openenv_mcp.server import build_server
from openenv_mcp.wire.sdk import (
    CLIENT_CAPABILITIES_META,
    CLIENT_INFO_META,
    LATEST_VERSION,
    VERSION_META,
)

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "openenv_mcp"]
#: What must never reach a client: tracebacks and the server's file paths.
LEAKS = ("Traceback", 'File "', "site-packages", "/secret/", str(ROOT))
#: Every transport, for ``@pytest.mark.parametrize("transport", TRANSPORTS)``.
TRANSPORTS = [
    "memory",
    pytest.param("stdio", marks=pytest.mark.integration),
    pytest.param("http", marks=pytest.mark.integration),
]


def episode_hosts(directory: Path) -> list[int]:
    """Episode host processes serving a socket in ``directory`` (their command line names
    it): a test that starts hosts in a directory of its own stops exactly these."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if str(directory).encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
    return found


def stop_episode_hosts(directory: Path) -> None:
    """Kill every episode host serving in ``directory``."""
    for pid in episode_hosts(directory):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)


@contextlib.contextmanager
def episode_host_dir() -> Iterator[Path]:
    """A private directory for the episode hosts a test starts, short enough for a Unix
    socket's path (pytest's own temporary paths can pass 108 bytes); every host started
    in it is stopped, and it is removed."""
    path = Path(tempfile.mkdtemp(prefix="oeh-"))
    try:
        yield path
    finally:
        stop_episode_hosts(path)
        shutil.rmtree(path, ignore_errors=True)


def with_pythonpath(target: Path) -> dict[str, str]:
    """This process's environment with ``target`` first on ``PYTHONPATH`` (for a
    subprocess that imports packages installed there, as :func:`openenv_packages` does)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(target), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


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
        server = memory_server(env, *options)
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


def memory_server(env: str, *options: str) -> FastMCP:
    cls = get_env_class(env)
    (parsed,) = parse_cli_options([cls.Config], list(options), where=env)
    return build_server(cls, **parsed)


def stdio_command(env: str, *options: str) -> list[str]:
    return [*CLI, "serve", env, "--stdio", "--log-level", "WARNING", *options]


@contextlib.contextmanager
def serve_target(transport: str, env: str = "echo", *options: str) -> Iterator[Any]:
    """A fresh server over ``transport``, as a target for MCPEnvClient."""
    if transport == "memory":
        yield memory_server(env, *options)
    elif transport == "stdio":
        yield stdio_command(env, *options)
    else:
        with http_server(env, *options) as url:
            yield url


def child_pids() -> set[int]:
    """Live (not zombie) children of this process, from /proc."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                found.add(int(entry.name))
    return found


# -- raw JSON-RPC over stdio ------------------------------------------------------------


class RawStdio:
    """A stdio server spoken to line by line; every read is bounded."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )
        self.lines: Queue[bytes] = Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, line: bytes | dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        data = line if isinstance(line, bytes) else json.dumps(line).encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 60) -> dict[str, Any] | None:
        """The next message, or None at EOF."""
        try:
            line = self.lines.get(timeout=timeout)
        except Empty:
            raise TimeoutError(f"no message from the server within {timeout}s") from None
        return dict(json.loads(line)) if line else None

    def until(self, done: Callable[[list[dict[str, Any]]], bool]) -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []
        while not done(seen):
            message = self.receive()
            assert message is not None, f"EOF; received {seen}"
            seen.append(message)
        return seen

    def stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")


def call(request_id: Any, tool: str, arguments: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def request(method: str, params: Any = None, request_id: Any = 1) -> dict[str, Any]:
    """A JSON-RPC request (``params`` left out when ``None``)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize(version: str = "2025-06-18") -> dict[str, Any]:
    """An ``initialize`` request of protocol ``version`` (a handshake-era one by default)."""
    client = {"name": "t", "version": "0"}
    return request(
        "initialize", {"protocolVersion": version, "capabilities": {}, "clientInfo": client}
    )


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "fuzz", "version": "0"},
    },
}


def sessionless_meta(client: str = "probe") -> dict[str, Any]:
    """The ``_meta`` a sessionless (2026-07-28) request carries in place of a session."""
    return {
        VERSION_META: LATEST_VERSION,
        CLIENT_INFO_META: {"name": client, "version": "0"},
        CLIENT_CAPABILITIES_META: {},
    }


def sessionless_call(
    tool: str, arguments: dict[str, Any] | None = None, client: str = "probe"
) -> tuple[dict[str, str], dict[str, Any]]:
    """A sessionless ``tools/call`` of ``tool``: the MCP headers the spec asks beside it,
    and its JSON-RPC body."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments or {}, "_meta": sessionless_meta(client)},
    }
    headers = {"mcp-protocol-version": LATEST_VERSION, "mcp-method": "tools/call", "mcp-name": tool}
    return headers, body


def ensure_installed(script: str, what: str, *args: str) -> str:
    """Run one of the project's set-up scripts (``scripts/SCRIPT ARGS``) and return its
    stdout, or skip the test, saying why, where the install cannot happen here."""
    try:
        proc = subprocess.run(
            ["bash", str(ROOT / "scripts" / script), *args],
            capture_output=True,
            text=True,
            timeout=900,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"{what} could not be installed: {exc}")
    if proc.returncode != 0:
        pytest.skip(
            f"{what} could not be installed (exit {proc.returncode}): {proc.stderr.strip()[-800:]}"
        )
    return proc.stdout


@functools.cache
def ensure_sandbox() -> str:
    """Debian's bubblewrap, installed where missing (once a process; skips, saying why,
    where it cannot be): ``BWRAP=<path>``."""
    return ensure_installed("ensure_debian.sh", "bubblewrap", "bubblewrap", "bwrap")


#: Options a registered env needs to be built at all (no default would do): the openenv
#: bridge serves an OpenEnv environment, so it must be told which.
REQUIRED_OPTIONS: dict[str, dict[str, Any]] = {
    "openenv": {"env": "tests.openenv_envs:CountEnvironment"},
}

#: Registered envs whose every run is a process of its own (a sandbox): their
#: parametrized cases belong in the integration tier.
PROCESS_ENVS = frozenset({"coding"})


def registered_envs() -> list[Any]:
    """Every registered env name, as parameters (process envs marked integration)."""
    from openenv_mcp.registry import env_names

    return [
        pytest.param(name, marks=pytest.mark.integration) if name in PROCESS_ENVS else name
        for name in env_names()
    ]
