"""Episodes that outlive a stdio process (``serve ENV --stdio --episode-host``): a server
per call, as LangChain's and LlamaIndex's MCP adapters start them, plays one game."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp.client import Client as McpClient
from mcp.client.stdio import StdioServerParameters

from openenv_mcp.server.transports._answers import CACHE_ENV, AnswerBook
from openenv_mcp.server.transports._host import HOST_DIR_ENV, front_book_key, host_socket
from openenv_mcp.server.transports._prelude import PRIVATE_ID
from openenv_mcp.server.transports._unready import TOOL
from tests.figures import record_figure
from tests.servers import (
    CLI,
    INITIALIZE,
    ROOT,
    RawStdio,
    call,
    episode_host_dir,
    episode_hosts,
    stop_episode_hosts,
)

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

WAIT = 120
#: The README's harness command, with the episode host (and a short idle time here).
SERVE = ["serve", "atari", "--game", "breakout", "--profile", "agent", "--stdio", "--episode-host"]


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A private directory for this test's hosts; every host started in it is stopped."""
    with episode_host_dir() as path:
        yield path


def front(host_dir: Path, *extra: str) -> StdioTransport:
    """A fresh stdio server process, started by the MCP client the way per-call
    frameworks do (the official SDK's stdio transport, through FastMCP's client)."""
    return StdioTransport(
        command=CLI[0],
        args=[*CLI[1:], *SERVE, *extra],
        env={**os.environ, HOST_DIR_ENV: str(host_dir)},
        cwd=str(ROOT),
        keep_alive=False,
    )


async def call_once(host_dir: Path, tool: str, args: dict[str, Any], *extra: str) -> str:
    """Start a server, call one tool, stop the server: one framework tool call."""
    async with Client(front(host_dir, *extra), timeout=WAIT) as client:
        result = await client.call_tool(tool, args, raise_on_error=False)
        return str(result.content[0].text)  # type: ignore[union-attr]


def handle(text: str) -> str:
    found = re.search(r"episode (ep_[A-Za-z0-9_-]+)", text)
    assert found, text
    return found.group(1)


async def test_a_server_per_call_plays_one_game(host_dir: Path) -> None:
    with anyio.fail_after(WAIT):
        opened = await call_once(host_dir, "reset", {"seed": 0})
        episode = handle(opened)
        assert opened.startswith("New episode of Atari Breakout")
        first = await call_once(host_dir, "step", {"action": "FIRE", "episode_id": episode})
        second = await call_once(host_dir, "right", {"repeat": 3, "episode_id": episode})
        assert first.startswith("Step 1 (FIRE)") and second.startswith("Step 4 (RIGHT x3)")
        looked = await call_once(host_dir, "state", {"episode_id": episode})
        assert looked.startswith(f"Episode {episode} of Atari Breakout at step 4")
    assert len(episode_hosts(host_dir)) == 1  # one host served all four processes


async def test_sessions_never_see_each_others_episodes(host_dir: Path) -> None:
    with anyio.fail_after(WAIT):
        async with (
            Client(front(host_dir), timeout=WAIT) as first,
            Client(front(host_dir), timeout=WAIT) as second,
        ):
            mine = handle((await first.call_tool("reset", {"seed": 1})).content[0].text)  # type: ignore[union-attr]
            await second.call_tool("reset", {"seed": 2})
            for _ in range(2):  # each session's calls without a handle mean its own episode
                await second.call_tool("fire", {})
            step = (await first.call_tool("step", {"action": "NOOP"})).content[0].text  # type: ignore[union-attr]
            assert step.startswith("Step 1 (NOOP)")
        alone = await call_once(host_dir, "step", {"action": "NOOP"})
        # the test's own run has had two connections open at once: no run default
        assert alone.startswith("EpisodeRequired:") and "at once" in alone
        again = await call_once(host_dir, "step", {"action": "NOOP", "episode_id": mine})
        assert again.startswith("Step 2 (NOOP)")  # the handle, given, still works


async def test_the_host_is_private_and_leaves_when_idle(host_dir: Path) -> None:
    with anyio.fail_after(WAIT):
        await call_once(host_dir, "reset", {}, "--episode-host-idle", "1")
        (sock,) = host_dir.glob("*.sock")
        assert stat.S_IMODE(sock.stat().st_mode) == 0o600
        assert stat.S_IMODE(host_dir.stat().st_mode) == 0o700
        while episode_hosts(host_dir):  # no caller for a second: the host exits
            await anyio.sleep(0.1)
        assert not list(host_dir.glob("*.sock"))


def test_a_directory_others_may_enter_is_refused_and_a_bad_start_is_quoted(
    host_dir: Path,
) -> None:
    env = {**os.environ, HOST_DIR_ENV: str(host_dir)}
    host_dir.chmod(0o755)
    done = subprocess.run(
        [*CLI, *SERVE], input=b"", capture_output=True, env=env, cwd=ROOT, timeout=WAIT
    )
    assert done.returncode == 1 and b"chmod 700" in done.stderr, done.stderr
    host_dir.chmod(0o700)
    done = subprocess.run(
        [*CLI, *SERVE, "--gmae", "pong"],
        input=b"",
        capture_output=True,
        env=env,
        cwd=ROOT,
        timeout=WAIT,
    )
    assert done.returncode == 1 and b"the host exited at start" in done.stderr
    assert b"--game" in done.stderr  # the host's own "did you mean"
    started = time.monotonic()
    while episode_hosts(host_dir) and time.monotonic() - started < 10:
        time.sleep(0.1)


# -- the front answers the handshake while a host starts ----------------------------------------

#: The host's command line as the front gives it (without the front's own flags).
HOST_ARGV = ["atari", "--game", "breakout", "--profile", "agent"]


def raw_front(host_dir: Path, books: Path, *extra: str) -> tuple[RawStdio, float]:
    """A front spoken to line by line, with its answer book in ``books``; when it started."""
    env = {**os.environ, HOST_DIR_ENV: str(host_dir), CACHE_ENV: str(books)}
    return RawStdio([*CLI, *SERVE, *extra], env=env), time.perf_counter()


def handshake(server: RawStdio) -> tuple[dict[str, Any], dict[str, Any]]:
    """Send initialize and tools/list; their answers."""
    server.send(INITIALIZE)
    initialized = server.receive()
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    server.send({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
    listed = server.receive()
    assert initialized is not None and listed is not None
    return initialized, listed


@contextlib.contextmanager
def host_start_held(path: Path) -> Iterator[None]:
    """Hold the lock a front takes to start the host at ``path``: no host starts until
    the block ends (a cold host, as slow to come as the test needs)."""
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def test_a_cold_host_s_front_answers_the_handshake_before_the_host_listens(
    host_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex asks for tools without waiting for the server: with no host running, the
    front answers initialize and tools/list from what the host answered an earlier front,
    the host's socket not there yet; a tool call waits for the host, and the tools the
    front listed are the host's."""
    books = tmp_path / "books"
    monkeypatch.setenv(HOST_DIR_ENV, str(host_dir))
    path = host_socket(HOST_ARGV)

    first, _ = raw_front(host_dir, books)  # nothing kept, no host: the host answers all
    _, hosts_list = handshake(first)
    first.proc.stdin.close()  # type: ignore[union-attr]
    assert first.proc.wait(WAIT) == 0
    (book,) = books.glob("*.json")  # the front kept the host's answers
    kept = book.read_bytes()
    stop_episode_hosts(host_dir)
    while episode_hosts(host_dir):
        time.sleep(0.05)
    path.unlink()  # a killed host's socket stays; the next front finds no host behind it

    with host_start_held(path):
        front_, began = raw_front(host_dir, books)
        initialized, listed = handshake(front_)
        answered = time.perf_counter() - began
        assert not path.exists()  # answered by the front alone
        assert initialized["result"]["serverInfo"]["name"] == "openenv-atari"
        assert listed["result"] == hosts_list["result"]  # the host's tools
        assert not any(PRIVATE_ID in str(m["id"]) for m in (initialized, listed))
        front_.send(call("reset", "reset", {"seed": 0}))
        front_.send(call("step", "fire", {}))
        with pytest.raises(TimeoutError):  # a call is never answered before the host can
            front_.receive(timeout=1)
    reset = front_.receive(timeout=WAIT)
    assert path.exists()  # the host listened before the call was answered
    record_figure(
        f"--episode-host, cold host: initialize and tools/list answered {answered:.3f} s after "
        "spawn, by the front (the host's socket not there yet)"
    )
    assert reset is not None and reset["id"] == "reset"
    assert reset["result"]["content"][0]["text"].startswith("New episode of Atari Breakout")
    step = front_.receive()
    assert step is not None and step["id"] == "step"  # in order, the front's ids untouched
    front_.send({"jsonrpc": "2.0", "id": "again", "method": "tools/list"})
    again = front_.receive()  # now from the host itself
    assert again is not None and again["id"] == "again" and again["result"] == listed["result"]
    front_.proc.stdin.close()  # type: ignore[union-attr]
    assert front_.receive() is None and front_.proc.wait(WAIT) == 0
    assert book.read_bytes() == kept  # the host agreed with every kept answer


def test_a_listening_host_answers_the_front_s_client_itself(host_dir: Path, tmp_path: Path) -> None:
    """With a host listening, the front answers nothing from its book and replays nothing:
    the host's own answers reach the client (a kept answer, edited here, is never seen),
    and the book is neither read nor rewritten."""
    books = tmp_path / "books"
    first, _ = raw_front(host_dir, books)  # no host: the front starts one, keeps its answers
    _, hosts_list = handshake(first)
    first.proc.stdin.close()  # type: ignore[union-attr]
    assert first.proc.wait(WAIT) == 0
    (book,) = books.glob("*.json")
    kept = json.loads(book.read_bytes())
    for answers in kept["answers"].values():
        if "initialize" in answers:
            answers["initialize"]["instructions"] = "kept, not the host's"
    book.write_bytes(json.dumps(kept).encode())
    assert episode_hosts(host_dir)  # the host stays, idle

    warm, _ = raw_front(host_dir, books)
    initialized, listed = handshake(warm)
    assert initialized["result"]["instructions"].startswith("You are playing Atari Breakout")
    assert listed["result"] == hosts_list["result"]
    warm.proc.stdin.close()  # type: ignore[union-attr]
    assert warm.receive() is None and warm.proc.wait(WAIT) == 0
    assert json.loads(book.read_bytes()) == kept


async def test_a_host_that_cannot_start_is_told_in_the_handshake(host_dir: Path) -> None:
    """Nothing kept: the front waits for the host, which exits at start; the client gets
    the handshake with the host's own error and one tool saying it."""
    params = StdioServerParameters(
        command=CLI[0],
        args=[*CLI[1:], *SERVE, "--gmae", "pong"],
        env={**os.environ, HOST_DIR_ENV: str(host_dir), CACHE_ENV: "off"},
        cwd=str(ROOT),
    )
    with anyio.fail_after(WAIT):
        async with McpClient(params, mode="auto") as client:
            instructions = client.instructions or ""
            (tool,) = (await client.list_tools()).tools
            called = await client.call_tool(tool.name, {})
    text = called.content[0].text  # type: ignore[union-attr]
    assert tool.name == TOOL and called.is_error
    for told in (instructions, tool.description or "", text):
        assert "the episode host exited at start" in told and "Did you mean '--game'?" in told
        assert "--gmae pong" in told  # the command line it ran


def test_a_host_dying_after_the_front_s_kept_handshake_is_told_at_the_first_call(
    host_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The front gave the kept handshake and tools, then its host exited at start: the
    first call gets an error result naming the cause, and the front ends."""
    books = tmp_path / "books"
    first, _ = raw_front(host_dir, books)
    handshake(first)
    first.proc.stdin.close()  # type: ignore[union-attr]
    assert first.proc.wait(WAIT) == 0
    (book,) = books.glob("*.json")
    # The same answers kept for a command line whose host cannot start.
    monkeypatch.setenv(HOST_DIR_ENV, str(host_dir))
    monkeypatch.setenv(CACHE_ENV, str(books))
    monkeypatch.chdir(tmp_path)  # a front's book is the host's: the same from any directory
    bad = AnswerBook.open(front_book_key([*HOST_ARGV, "--gmae", "pong"]), per_directory=False)
    bad.answers = json.loads(book.read_bytes())["answers"]
    bad.save([])

    server, _ = raw_front(host_dir, books, "--gmae", "pong")
    initialized, listed = handshake(server)
    assert initialized["result"]["serverInfo"]["name"] == "openenv-atari"
    assert TOOL not in {t["name"] for t in listed["result"]["tools"]}
    server.send(call("reset", "reset", {"seed": 0}))
    reset = server.receive(timeout=WAIT)
    assert reset is not None and reset["result"]["isError"]
    text = reset["result"]["content"][0]["text"]
    assert "the episode host exited at start" in text and "Did you mean '--game'?" in text
    assert server.receive() is None and server.proc.wait(WAIT) == 1
    assert "the host exited at start" in server.stderr()


async def test_agent_is_the_agent_profile_and_the_episode_host(host_dir: Path) -> None:
    """``--agent`` through the installed console script is the README's long line: the
    same host (both spellings share it), the same game, the agent profile's answers."""
    script = str(Path(CLI[0]).with_name("openenv-mcp"))
    short = StdioTransport(
        command=script,
        args=["serve", "atari", "--agent", "--game", "breakout"],
        env={**os.environ, HOST_DIR_ENV: str(host_dir)},
        cwd=str(ROOT),
        keep_alive=False,
    )
    with anyio.fail_after(WAIT):
        async with Client(short, timeout=WAIT) as client:
            opened = (await client.call_tool("reset", {"seed": 0})).content[0].text  # type: ignore[union-attr]
        assert opened.startswith("New episode of Atari Breakout")
        # the README's long line, in its order
        readme = ["serve", "atari", "--stdio", "--profile", "agent", "--game", "breakout"]
        long = StdioTransport(
            command=CLI[0],
            args=[*CLI[1:], *readme, "--episode-host"],
            env={**os.environ, HOST_DIR_ENV: str(host_dir)},
            cwd=str(ROOT),
            keep_alive=False,
        )
        async with Client(long, timeout=WAIT) as client:
            step = await client.call_tool("step", {"action": "FIRE", "episode_id": handle(opened)})
        assert step.content[0].text.startswith("Step 1 (FIRE)")  # type: ignore[union-attr]
    assert len(episode_hosts(host_dir)) == 1


def test_agent_fronts_relay_to_the_long_line_s_host() -> None:
    from openenv_mcp._launch import relays
    from openenv_mcp.transports import host_argv

    long = ["serve", "atari", "--stdio", "--profile", "agent", "--game", "breakout"]
    assert relays(["serve", "atari", "--agent", "--game", "breakout"])
    assert relays([*long, "--episode-host"])
    assert host_argv(["serve", "atari", "--agent", "--game", "breakout"]) == host_argv(
        [*long, "--episode-host"]
    )
    assert not relays(["serve", "atari", "--agent", "--http"])
    assert not relays(["serve", "atari", "--agent", "--episode-host-socket", "/x"])
