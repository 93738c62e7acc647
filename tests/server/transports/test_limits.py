"""Nobody who reaches the HTTP port stops the server without the token (issue 25, item 3).

Real servers with RLIMIT_NOFILE lowered to 256, attacked over real sockets: slow
connections, oversized headers, descriptor exhaustion, idle connections. Each
test fails against a server without the limits (``_limits.py``): the normal
client times out, the 16 MiB header is answered 200, RSS grows by the headers
sent, connections stay open forever, the log grows megabytes a second.
"""

from __future__ import annotations

import contextlib
import http.client
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_mcp.server.transports._limits import RESERVE
from tests.figures import record_figure
from tests.server.http_attacks import (
    TOKEN,
    Server,
    Slowloris,
    call,
    event_stream,
    get,
    limited_server,
    read_all,
    result_of,
    send_call,
)

pytestmark = pytest.mark.integration

#: A POST to /mcp whose body never arrives in full: without the token, answered 401
#: at once; with it, let through to read the body.
SLOW_BODY = (
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
    b"content-length: 100000\r\n\r\n{"
)
SLOW_BODY_WITH_TOKEN = SLOW_BODY.replace(
    b"\r\n\r\n", f"\r\nauthorization: Bearer {TOKEN}\r\n\r\n".encode()
)

#: The most log one attack may add: a few throttled lines, not a line per event.
LOG_BUDGET = 32 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Defaults but for short timeouts (so waiting for them stays short)."""
    log = tmp_path_factory.mktemp("limits") / "server.log"
    with limited_server(log, "--http-read-timeout", "3", "--http-keep-alive", "1") as server:
        yield server


def test_slow_connections_leave_a_normal_client_served(server: Server) -> None:
    """300 slow connections, reopened as fast as the server closes them, against 256
    descriptors: /healthz and a tool call are still answered (each within the client's
    30 s bound; the figure reports how long), and the log stays a few lines."""
    before = server.log_bytes()
    with Slowloris(server.port, 300) as attack:
        attack.wait_for_churn(600)  # the cap (128) is being held: attackers are closed
        waits = []
        for _ in range(3):
            started = time.monotonic()
            assert get(server.port, "/healthz")[0] == 200
            assert call(server.port, "reset", {"new_episode": True})["isError"] is False
            waits.append(time.monotonic() - started)
        churn = attack.closed_by_server
    text = server.log_text(before)
    assert server.log_bytes() - before < LOG_BUDGET, text[-3000:]
    assert "Traceback" not in text
    assert "http_max_connections=128" in text  # the cap's line, naming its flag
    record_figure(
        f"http: 300 slow connections (reopened: {churn} closed by the server) against "
        f"RLIMIT_NOFILE 256: a normal client's /healthz + reset answered in "
        f"{max(waits):.2f} s at most (before: never, 30 s client timeout); log +"
        f"{server.log_bytes() - before} bytes (before: 4.7-11 MB/s of accept tracebacks)"
    )


def test_descriptor_exhaustion_is_one_log_line_not_a_flood(tmp_path: Path) -> None:
    """With a cap above the descriptor limit (the server warns at start), the process
    does run out of descriptors: accepting pauses with one log line per ten seconds
    instead of thousands of tracebacks a second; once the attack ends, serving goes on."""
    options = ("--http-max-connections", "1000", "--http-read-timeout", "10")
    with limited_server(tmp_path / "log", *options) as server:
        start = server.log_bytes()
        assert "close to this process's descriptor limit" in server.log_text()
        with Slowloris(server.port, 600):
            deadline = time.monotonic() + 60
            while "cannot accept connections" not in server.log_text(start):
                assert time.monotonic() < deadline, "the server never ran out of descriptors"
                time.sleep(0.1)
            time.sleep(2)  # accept retried every second meanwhile (before: a flood each time)
        assert get(server.port, "/healthz")[0] == 200
        text = server.log_text(start)
        grown = server.log_bytes() - start
    assert "out of file descriptors ([Errno 24] Too many open files" in text
    assert "Traceback" not in text and grown < LOG_BUDGET, text[-3000:]
    record_figure(
        f"http: descriptors exhausted (cap 1000 over RLIMIT_NOFILE 256, 600 slow clients): "
        f"log +{grown} bytes over the attack (before: 429 MB in 91 s); /healthz served after"
    )


def send_header(port: int, size: int, answers: list[bytes], reads: bool = True) -> None:
    """Send a request whose one header line is ``size`` bytes and never ends; add the
    answer (a client that ``reads`` stops sending when one comes; the other sends it
    all, or until the server closes)."""
    with socket.create_connection(("127.0.0.1", port), 30) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
        chunk, answer = b"a" * (1 << 20), b""
        try:
            for _ in range(size // len(chunk)):
                sock.sendall(chunk)
                if reads and (answer := _ready(sock)):
                    break
        except OSError:
            pass  # closed by the server (after its answer)
        try:
            answers.append(answer + read_all(sock))
        except OSError:
            answers.append(answer or b"reset")


def _ready(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536, socket.MSG_DONTWAIT)
    except BlockingIOError:
        return b""


def test_oversized_headers_get_431_and_memory_stays_bounded(server: Server) -> None:
    rss = server.rss_mib()
    # Whole but over 32 KiB: answered 431 by uvicorn's cycle, naming the limit.
    with socket.create_connection(("127.0.0.1", server.port), 30) as sock:
        sock.sendall(
            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: %s\r\n\r\n" % (b"a" * 40000)
        )
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 431 ") and b"http_max_header_bytes" in answer
    # A 16 MiB header line (before: 200).
    answers: list[bytes] = []
    send_header(server.port, 16 << 20, answers)
    assert answers[0].startswith(b"HTTP/1.1 431 "), answers[0][:200]
    # Three unterminated 128 MiB header lines at once, sent in full by clients that
    # read nothing (before: RSS +400 MiB, for as long as they stay connected).
    peak, attacking = [rss], True

    def sample() -> None:
        while attacking:
            peak.append(server.rss_mib())
            time.sleep(0.05)

    threads = [
        threading.Thread(target=send_header, args=(server.port, 128 << 20, answers, False))
        for _ in range(3)
    ]
    sampler = threading.Thread(target=sample)
    for thread in [sampler, *threads]:
        thread.start()
    for thread in threads:
        thread.join(120)
    attacking = False
    sampler.join(30)
    for answer in answers[1:]:  # answered before it was all sent, or reset meanwhile
        assert answer.startswith(b"HTTP/1.1 431 ") or answer == b"reset", answer[:200]
    grown = max(peak) - rss
    assert grown < 64, f"RSS grew {grown:.0f} MiB"
    assert get(server.port, "/healthz")[0] == 200
    record_figure(
        f"http: a 16 MiB header line: 431; three 128 MiB unterminated headers at once: "
        f"server RSS {rss:.0f} -> {max(peak):.0f} MiB at most (before: 200, and 100 -> 576 MiB)"
    )


def test_idle_and_slow_connections_are_closed(server: Server) -> None:
    """Read timeout 3 s, keep-alive 1 s (the fixture's flags); before, all stayed open."""
    for sent in (b"", b"GET /healthz HTTP/1.1\r\n", SLOW_BODY_WITH_TOKEN):
        with socket.create_connection(("127.0.0.1", server.port), 30) as sock:
            sock.sendall(sent)
            answer = read_all(sock)
        assert answer.startswith(b"HTTP/1.1 408 "), (sent, answer)
    # After a response, idle: closed (keep-alive), no answer.
    with socket.create_connection(("127.0.0.1", server.port), 30) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.count(b"HTTP/1.1") == 1
    # Answered early (401: no token) while the body still trickles in: uvicorn's own
    # keep-alive timer restarts at every byte; the connection is closed all the same.
    with socket.create_connection(("127.0.0.1", server.port), 30) as sock:
        sock.sendall(SLOW_BODY)
        sock.settimeout(0.3)
        answer, deadline = b"", time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                chunk = None
            except OSError:
                break
            if chunk == b"":
                break
            answer += chunk or b""
            try:
                sock.send(b"x")
            except OSError:
                break
        else:
            pytest.fail("a connection trickling a body after its answer stayed open 30 s")
    assert answer.startswith(b"HTTP/1.1 401 ")


def test_idle_connections_leave_room_for_healthz_and_new_clients(tmp_path: Path) -> None:
    """Token holders' idle connections fill a cap of 16 (issue 32): sixteen MCP sessions'
    server-to-client streams (``GET /mcp``, open and silent), from four addresses.
    ``/healthz`` and a new client's call are answered (before: 503 both, until a stream
    closed); room is made by ending the stream silent longest, cleanly (the chunked body's
    end, after which MCP clients and browsers reconnect), the others left open."""
    with limited_server(tmp_path / "log", "--http-max-connections", "16") as server:
        streams = [event_stream(server.port, f"127.0.0.{2 + i % 4}") for i in range(16)]
        try:
            assert get(server.port, "/healthz")[0] == 200
            assert call(server.port, "reset", {}, source="127.0.0.6")["isError"] is False
            # One place was made (the /healthz connection was gone by the call): the
            # oldest stream's, ended (an abrupt close raises IncompleteRead); no other.
            conn, response = streams[0]
            assert conn.sock is not None
            conn.sock.settimeout(10)  # under the stream's keep-alive pings (15 s)
            assert response.read() == b""
            for conn, _ in streams[1:]:
                assert not select.select([conn.sock], [], [], 0)[0], "a stream was closed"
        finally:
            for conn, _ in streams:
                conn.close()
        assert "closing the one waiting longest" in server.log_text()


def test_calls_being_answered_are_never_closed_and_healthz_always_answers(
    tmp_path: Path,
) -> None:
    """Three calls being answered (steps of 5 s) hold a cap of 3: none is closed to make
    room, a new client's call is answered 503 naming the flag, and ``/healthz`` is
    answered 200 (before: 503: a reserve of connections past the cap is kept for it);
    once they end, calls are served again."""
    options = ("--http-max-connections", "3", "--env-threads", "--step-delay", "5")
    with limited_server(tmp_path / "log", *options) as server:
        # Kept alive from the reset to the step: no closed connection of ours is left
        # for the server to drop (and count) while the steps run.
        conns = [http.client.HTTPConnection("127.0.0.1", server.port, timeout=30) for _ in range(3)]
        try:
            handles = []
            for conn in conns:
                send_call(conn, "reset", {"new_episode": True})
                handles.append(result_of(conn)["structuredContent"]["episode_id"])
            for conn, handle in zip(conns, handles, strict=True):
                send_call(conn, "step", {"episode_id": handle, "action": "hi"})
            status, text = get(server.port, "/healthz")
            assert status == 200, text
            with contextlib.closing(
                http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            ) as refused:
                send_call(refused, "state", {"episode_id": handles[0]})
                answer = refused.getresponse()
                assert answer.status == 503 and b"http_max_connections" in answer.read()
            # One more silent connection than the reserve holds: room is made by closing
            # the oldest of them, not a call being answered.
            silent = [
                socket.create_connection(("127.0.0.1", server.port), 30) for _ in range(RESERVE + 1)
            ]
            try:
                assert read_all(silent[0]) == b""
                assert not select.select(silent[1:], [], [], 0)[0]
            finally:
                for sock in silent:
                    sock.close()
            for conn in conns:
                assert result_of(conn)["isError"] is False  # the step, answered in full
        finally:
            for conn in conns:
                conn.close()
        assert call(server.port, "state", {"episode_id": handles[0]})["isError"] is False
        assert "answering new requests 503" in server.log_text()
