"""Real HTTP servers with a lowered descriptor limit, and the clients that attack them.

Used by ``test_limits.py``. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import resource
import selectors
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openenv_mcp.server.transports._token import TOKEN_ENV
from tests.servers import INITIALIZE, ROOT, free_port, serve_args, sessionless_call, stop

#: The bearer token every server here requires (passed the way a deployment should:
#: in the environment).
TOKEN = "t0ken-0f-the-limits-tests"
#: The protocol version :data:`tests.servers.INITIALIZE` asks for (one with sessions).
SESSION_VERSION = "2025-06-18"
#: A request that never ends: its headers are never terminated.
SLOW_HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


@dataclass
class Server:
    """A server process started here, its port and its log (stderr) file."""

    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    def log_bytes(self) -> int:
        return self.log.stat().st_size

    def log_text(self, since: int = 0) -> str:
        with open(self.log, "rb") as f:
            f.seek(since)
            return f.read().decode(errors="replace")

    def rss_mib(self) -> float:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        kib = next(int(line.split()[1]) for line in status.splitlines() if line[:6] == "VmRSS:")
        return kib / 1024


def _limit_descriptors(count: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))


@contextlib.contextmanager
def limited_server(
    log: Path, *options: str, env: str = "echo", descriptors: int = 256, token_env: bool = True
) -> Iterator[Server]:
    """``openenv-mcp serve ENV --http`` with RLIMIT_NOFILE lowered to ``descriptors``
    and (``token_env``) the token in its environment; stopped and reaped on the way out."""
    port = free_port()
    with open(log, "wb") as stderr:
        proc = subprocess.Popen(
            [*serve_args(env), "--http", "--port", str(port), *options],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            cwd=ROOT,
            env={
                **{k: v for k, v in os.environ.items() if k != TOKEN_ENV},
                **({TOKEN_ENV: TOKEN} if token_env else {}),
            },
            preexec_fn=lambda: _limit_descriptors(descriptors),
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited early: {log.read_text()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline:
                raise TimeoutError("the server did not listen within 60 s")
            time.sleep(0.05)
        yield Server(proc, port, log)
    finally:
        stop(proc)


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """A normal client's GET (30 s bound)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read().decode(errors="replace")
    finally:
        conn.close()


def call(
    port: int,
    tool: str,
    arguments: dict[str, Any],
    source: str = "127.0.0.1",
    token: str = TOKEN,
) -> dict[str, Any]:
    """A sessionless (2026-07-28) ``tools/call`` with ``token``, from address ``source``
    (any 127.x.y.z: loopback is a whole /8); its JSON-RPC result."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    try:
        send_call(conn, tool, arguments, token)
        return result_of(conn)
    finally:
        conn.close()


def send_call(
    conn: http.client.HTTPConnection, tool: str, arguments: dict[str, Any], token: str = TOKEN
) -> None:
    """Send a sessionless ``tools/call`` on ``conn`` (a new connection, or one kept alive);
    its answer is left to read (:func:`result_of`, or ``conn.getresponse()``)."""
    mcp_headers, body = sessionless_call(tool, arguments, client="limits-test")
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {token}",
        **mcp_headers,
    }
    conn.request("POST", "/mcp", json.dumps(body), headers)


def result_of(conn: http.client.HTTPConnection) -> dict[str, Any]:
    """The JSON-RPC result answering the call sent on ``conn`` (answered 200)."""
    response = conn.getresponse()
    text = response.read().decode()
    assert response.status == 200, (response.status, text)
    result: dict[str, Any] = json.loads(text)["result"]
    return result


def event_stream(
    port: int, source: str
) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    """What an MCP session client of the 2025 protocols holds open, from address
    ``source``: its session's server-to-client stream (``GET /mcp``, answered
    ``text/event-stream``), opened on the connection that initialized the session; the
    connection and the stream's response, whose headers have come and its body not."""
    auth = {"authorization": f"Bearer {TOKEN}"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    accept = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    conn.request("POST", "/mcp", json.dumps(INITIALIZE), {**auth, **accept})
    response = conn.getresponse()
    response.read()
    assert response.status == 200, response.status
    session = response.getheader("mcp-session-id") or ""
    conn.request(
        "GET",
        "/mcp",
        headers={
            **auth,
            "accept": "text/event-stream",
            "mcp-session-id": session,
            "mcp-protocol-version": SESSION_VERSION,
        },
    )
    response = conn.getresponse()
    assert response.status == 200, response.status
    assert (response.getheader("content-type") or "").startswith("text/event-stream")
    return conn, response


def read_all(sock: socket.socket, timeout: float = 30) -> bytes:
    """Everything the server sends until it closes the connection (bounded)."""
    sock.settimeout(timeout)
    chunks = []
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


class Slowloris:
    """``count`` connections that send half a request and wait, reopened as soon as the
    server closes one: the server never sees fewer than ``count`` slow clients."""

    def __init__(self, port: int, count: int) -> None:
        self.port = port
        self.count = count
        self.opened = 0
        self.closed_by_server = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slowloris", daemon=True)

    def __enter__(self) -> Slowloris:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def wait_for_churn(self, closed: int, timeout: float = 60) -> None:
        """Until the server has closed ``closed`` of them (it is holding the line)."""
        deadline = time.monotonic() + timeout
        while self.closed_by_server < closed:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise TimeoutError(
                    f"the server closed {self.closed_by_server} slow connections of "
                    f"{self.opened} opened, within {timeout}s"
                )
            time.sleep(0.05)

    def _open(self, selector: selectors.BaseSelector) -> None:
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", self.port))
        selector.register(sock, selectors.EVENT_WRITE)
        self.opened += 1

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        try:
            while not self._stop.is_set():
                while len(selector.get_map()) < self.count:
                    self._open(selector)
                for key, events in selector.select(0.05):
                    sock: socket.socket = key.fileobj  # type: ignore[assignment]
                    try:
                        if events & selectors.EVENT_WRITE:
                            sock.send(SLOW_HEAD)
                            selector.modify(sock, selectors.EVENT_READ)
                            continue
                        if sock.recv(4096):
                            continue  # an answer (408): the close follows
                    except BlockingIOError:
                        continue
                    except OSError:
                        pass
                    selector.unregister(sock)
                    sock.close()
                    self.closed_by_server += 1
        finally:
            for key in list(selector.get_map().values()):
                key.fileobj.close()  # type: ignore[union-attr]
            selector.close()
