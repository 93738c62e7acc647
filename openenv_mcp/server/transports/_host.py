"""Episodes that outlive the process that started them: a per-user episode host.

Some agent frameworks (LangChain's ``MultiServerMCPClient`` quickstart, LlamaIndex's
``McpToolSpec``) start a fresh stdio server for every tool call, so an episode
living in that process dies with it and ``step`` after ``reset`` finds nothing.
With ``serve ENV --stdio --episode-host`` the stdio process is a thin front
(:func:`relay`): it connects to this user's episode host for the same
environment and options, starting it on demand, and relays the MCP lines both
ways, importing nothing heavy. While a host starts (seconds: its imports, the
environment) the front answers the handshake and the tool list itself, from what
the host answered an earlier front (:mod:`openenv_mcp.server.transports._prelude`), so a
harness that asks at once (Codex) lists the tools; every call waits for the host.
The host (:func:`serve_host`) is an ordinary server of the environment listening
on a Unix socket in a directory only this user can enter, and each connection to
it is one caller with a default episode of its own. Episodes live in the host,
so ``reset`` in one process and ``step`` with its ``episode_id`` in the next
continue the same game, while two sessions never see each other's episodes unless
handed the handle (128 random bits). The host exits once no caller has been
connected for its idle time.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from openenv_mcp._util.interpreter import python_command
from openenv_mcp.server.transports._answers import AnswerBook
from openenv_mcp.server.transports._harness import harness_run, hello, read_hello
from openenv_mcp.server.transports._prelude import (
    ANSWERABLE,
    Handover,
    Prelude,
    Recorder,
    hold_wire,
    is_private,
)
from openenv_mcp.server.transports._unready import fix_for

if TYPE_CHECKING:
    import asyncio

    from fastmcp import FastMCP


__all__ = ["HOST_DIR_ENV", "front_book_key", "host_dir", "host_socket", "relay", "serve_host"]

log = logging.getLogger("openenv_mcp.server")

#: Where hosts keep their sockets, logs and locks (default: $XDG_RUNTIME_DIR/openenv-mcp,
#: else /tmp/openenv-mcp-<uid>).
HOST_DIR_ENV = "OPENENV_MCP_HOST_DIR"
#: The longest Unix socket path Linux takes (sun_path: 108 bytes, with its NUL).
_MAX_SOCKET_PATH = 107
#: Seconds a front waits for a host it started to listen (its imports, the env's ROMs).
START_TIMEOUT = 120.0
_CHUNK = 1 << 20


class HostError(RuntimeError):
    """The episode host cannot be used (its directory is not private, it failed to start).

    Attributes:
        reason: why, in a sentence for the client (the host's own error, where it printed
            one).
        missing: the host's error is a dependency that did not import.
    """

    def __init__(self, message: str, reason: str | None = None, missing: bool = False) -> None:
        super().__init__(message)
        self.reason = reason or message
        self.missing = missing


def host_dir() -> Path:
    """This user's private directory of episode hosts, made if missing.

    Raises:
        HostError: it exists but another user owns it or others may enter it (a socket
            there could be someone else's).
    """
    configured = os.environ.get(HOST_DIR_ENV)
    if configured:
        path = Path(configured)
    elif os.environ.get("XDG_RUNTIME_DIR"):
        path = Path(os.environ["XDG_RUNTIME_DIR"]) / "openenv-mcp"
    else:
        path = Path("/tmp") / f"openenv-mcp-{os.getuid()}"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise HostError(
            f"{path} is not a directory of this user's (uid {os.getuid()}): refusing to "
            f"look for episode hosts there; set {HOST_DIR_ENV} to a private directory"
        )
    if info.st_mode & 0o077:
        raise HostError(
            f"{path} may be entered by other users (mode {stat.S_IMODE(info.st_mode):o}): "
            f"chmod 700 it, or set {HOST_DIR_ENV} to a private directory"
        )
    return path


def host_socket(argv: Sequence[str]) -> Path:
    """The socket of the host for a server started with ``argv`` (environment, options
    and settings): one host per distinct command line and openenv-mcp version."""
    from openenv_mcp._util.version import __version__

    key = hashlib.sha256(json.dumps([__version__, list(argv)]).encode()).hexdigest()[:16]
    path = host_dir() / f"{key}.sock"
    if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
        raise HostError(
            f"{path} is too long for a Unix socket ({_MAX_SOCKET_PATH} bytes at most): set "
            f"{HOST_DIR_ENV} to a shorter private directory"
        )
    return path


# -- the front: a stdio process that relays to the host -----------------------------------


def relay(argv: Sequence[str]) -> int:
    """Relay this process's stdio to the host serving ``argv``, starting it if needed.

    A host that is listening answers the client itself, as soon as kept answers would
    (its connection is a millisecond): the front only copies bytes both ways. Where
    none is, the front reads the client from the start, as a stdio server's prelude
    does: while it starts a host and waits for it to listen (seconds: its imports, the
    environment) it answers the handshake and the lists from its answer book (the
    host's answers, kept by an earlier front for the same command line), and holds
    everything else. Once connected, the host gets every line in order, each request
    the front answered replayed under a private id (its answer is checked against the
    one the client got, never shown); the host's first answers are kept for the next
    front. A host that cannot start is told to the client
    (:meth:`~openenv_mcp.server.transports._prelude.Prelude.explain`), not only on stderr.

    Returns the exit status: 0 when stdin ends (the client left), 1 when the host
    could not be reached or went away (why is on stderr).
    """
    try:
        conn = _connect(host_socket(argv))
    except (HostError, OSError):
        conn = None  # the same error again below, told to the client
    if conn is not None:
        return _relay_to(conn, hold_wire(), Handover(), None)
    prelude = Prelude(AnswerBook.open(front_book_key(argv), per_directory=False))
    prelude.start()
    try:
        path = host_socket(argv)
        conn = _connect_or_start(path, argv)
    except (HostError, OSError) as exc:  # OSError: the host directory, its lock, its log
        print(f"openenv-mcp: episode host: {exc}", file=sys.stderr, flush=True)
        failed = exc if isinstance(exc, HostError) else HostError(f"episode host: {exc}")
        kind = "missing" if failed.missing else "other"
        prelude.explain(failed.reason, fix_for(argv[0] if argv else "", kind))
        return 1
    watch = _Watch(Recorder(prelude, []), prelude.answered)
    return _relay_to(conn, (prelude.in_fd, prelude.out_fd), prelude.hand_over(), watch)


def _relay_to(
    conn: socket.socket, wire: tuple[int, int], lead: Handover, watch: _Watch | None
) -> int:
    """Relay to the host on ``conn`` (see :func:`_pump`), having told it the harness run
    this front belongs to: a server-per-call harness's calls then share their run's
    default episode in the host (._harness)."""
    with contextlib.suppress(OSError):  # a host gone at once: _pump reports it
        conn.sendall(hello(harness_run()))
    return _pump(conn, wire, lead, watch)


def front_book_key(argv: Sequence[str]) -> list[str]:
    """The command line a front keeps the host's answers under (its answer book's):
    ``argv`` as the host gets it, marked as a front's."""
    return ["--episode-host", *argv]


def _connect(path: Path) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except OSError:
        conn.close()
        return None
    return conn


def _connect_or_start(path: Path, argv: Sequence[str]) -> socket.socket:
    """A connection to the host at ``path``; one process at a time starts a missing host."""
    conn = _connect(path)
    if conn is not None:
        return conn
    lock = path.with_suffix(".lock")
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another front may be starting it right now
        conn = _connect(path)
        if conn is not None:
            return conn
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a socket left by a host that died
        log_path = path.with_suffix(".log")
        with open(log_path, "ab") as log_file:
            process = subprocess.Popen(
                python_command(
                    "-m", "openenv_mcp.cli", "serve", *argv, "--episode-host-socket", str(path)
                ),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log_file,
                start_new_session=True,  # it outlives this front, and the harness's signals
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            conn = _connect(path)
            if conn is not None:
                return conn
            if process.poll() is not None:
                tail = log_path.read_bytes()[-2000:].decode(errors="replace")
                said = _last_error(tail)
                raise HostError(
                    f"the host exited at start (status {process.returncode}):\n{tail}",
                    f"the episode host exited at start: {said}",
                    missing="could not be imported" in said,
                )
            time.sleep(0.05)
        process.kill()
        raise HostError(f"the host did not listen on {path} within {START_TIMEOUT:g}s")


def _last_error(log: str) -> str:
    """The error a host that exited at start printed last (its last line, if none)."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    errors = [line.removeprefix("error:").strip() for line in lines if line.startswith("error:")]
    return errors[-1] if errors else lines[-1] if lines else "it printed nothing"


class _Watch:
    """The relay's first exchanges, read line by line: the recorder sees the client's
    handshake and list requests (until its first other request) and the host's answers
    to them, and the answers to the requests the front answered are kept from the
    client. Once that is over (:attr:`settled`) the relay copies bytes."""

    def __init__(self, recorder: Recorder, replayed: Iterable[str]) -> None:
        self.recorder = recorder
        #: Private ids of the replayed requests the host has not answered yet.
        self.replayed = set(replayed)
        #: The client sent a request past the handshake and the lists (a tool call).
        self.client_done = False
        #: What the recorder tells the client (a list changed), written in order.
        self.notes: list[bytes] = []
        recorder.send = lambda message: self.notes.append(orjson.dumps(message) + b"\n")

    @property
    def settled(self) -> bool:
        return self.client_done and not self.replayed and not self.recorder.pending

    def inbound(self, line: bytes) -> None:
        """A line on its way to the host (called before it is sent)."""
        if self.client_done or not line.strip():
            return
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            return  # the host answers it
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            return  # a notification, an answer
        if message["method"] in ANSWERABLE:
            self.recorder.inbound(message)
        else:
            self.client_done = True

    def outbound(self, line: bytes) -> bytes:
        """What the client gets of a line from the host: the line, or nothing (an answer
        to a replayed request), and anything the recorder had to say."""
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            return line
        if not isinstance(message, dict) or "id" not in message or "method" in message:
            return line
        request_id = message["id"]
        if isinstance(request_id, str):
            self.replayed.discard(request_id)
        try:
            hidden = self.recorder.outbound(request_id, line)
        except Exception:  # a checked answer is a cache's business: the relay goes on
            log.debug("could not check the host's answer to %r", request_id, exc_info=True)
            hidden = is_private(request_id)
        notes, self.notes = b"".join(self.notes), []
        return notes if hidden else notes + line


def _pump(conn: socket.socket, wire: tuple[int, int], lead: Handover, watch: _Watch | None) -> int:
    """Copy the client (``wire``: its in and out descriptors; ``lead``: what the front
    read first) to the host and the host to the client, until the client or the host
    leaves; line by line while ``watch`` is not settled, then (or without one) bytes as
    they come.

    Plain threads and blocking reads: the front stays small (no event loop to import),
    and a read of stdin works the same on a pipe, a file or ``/dev/null``.
    """
    client_left = threading.Event()
    in_fd, out_fd = wire

    def upstream() -> None:
        try:
            if watch is not None:  # a host up gets no lead: nothing read before
                for line in lead.lines:
                    watch.inbound(line)
            conn.sendall(b"".join(lead.lines) + lead.rest)
            held = lead.rest
            while not lead.eof and (chunk := os.read(in_fd, _CHUNK)):
                if watch is not None and not watch.client_done:  # seen before it is answered
                    held += chunk
                    *lines, held = held.split(b"\n")
                    for line in lines:
                        watch.inbound(line)
                conn.sendall(chunk)
            client_left.set()
            conn.shutdown(socket.SHUT_WR)  # the host answers what is in flight, then closes
        except OSError:
            pass  # the host went away: the read below sees it

    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(out_fd, view) :]

    threading.Thread(target=upstream, name="openenv-mcp-front", daemon=True).start()
    try:
        held = b""
        while chunk := conn.recv(_CHUNK):
            if (watch is None or watch.settled) and not held:
                write(chunk)
                continue
            assert watch is not None
            held += chunk
            *lines, held = held.split(b"\n")
            out = b"".join(watch.outbound(line + b"\n") for line in lines)
            if watch.settled:
                out, held = out + held, b""
            write(out)
    except OSError:
        pass
    finally:
        conn.close()
    if client_left.is_set():
        return 0
    print("openenv-mcp: the episode host went away", file=sys.stderr, flush=True)
    return 1


# -- the host: a server on a private Unix socket, one caller per connection -------------------


async def serve_host(server: FastMCP, path: Path) -> None:
    """Serve ``server`` on the Unix socket ``path`` until no caller has been connected for
    ``episode_host_idle`` seconds (or SIGTERM/SIGINT); each connection is one caller.
    Every episode is closed on the way out."""
    import asyncio

    from openenv_mcp.server._build import get_app
    from openenv_mcp.server.transports._malloc import tune_malloc
    from openenv_mcp.server.transports._stdio import MAX_LINE, LineConnection, stream_lines
    from openenv_mcp.wire.sdk import use_transport

    app = get_app(server)
    tune_malloc()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)

    idle = app.settings.episode_host_idle
    connected = 0
    quiet_since = time.monotonic()
    uid = os.getuid()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connected, quiet_since
        peer = writer.get_extra_info("socket")
        if _peer_uid(peer) != uid:  # the directory is private; this is belt and braces
            log.warning("refusing a connection from another user")
            writer.close()
            return
        connected += 1
        try:
            run, lines = await read_hello(stream_lines(reader))
            with app.table.joined(run):
                conn = LineConnection(server, app, writer.write, "stdio")
                await conn.serve(lines)
        except (ConnectionError, OSError) as exc:
            log.info("a caller went away: %r", exc)
        finally:
            connected -= 1
            quiet_since = time.monotonic()
            with contextlib.suppress(Exception):
                writer.close()

    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    listener = await asyncio.start_unix_server(handle, path=str(path), limit=MAX_LINE)
    os.chmod(path, 0o600)
    log.info("episode host for %s listening on %s (idle exit after %gs)", app.spec.name, path, idle)
    try:
        async with use_transport("stdio"), listener:
            while not stop.is_set() and (connected or time.monotonic() - quiet_since < idle):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), min(1.0, idle / 4))
        log.info("episode host stopping (%s)", "signal" if stop.is_set() else f"idle {idle:g}s")
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        await app.aclose()


def _peer_uid(sock: Any) -> int | None:
    """The uid of the process at the other end of a Unix socket (Linux's SO_PEERCRED)."""
    import struct

    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    _pid, peer_uid, _gid = struct.unpack("3i", creds)
    return int(peer_uid)
