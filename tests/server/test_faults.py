"""Faults: an env that raises or hangs, signals during load, stdin closed.

* An env raising inside ``step`` gives the tool error ``EnvCrashed``; the
  episode reports itself broken until ``reset`` gives it a fresh environment;
  other episodes and the server carry on.
* An env call past ``call_timeout`` gives ``EnvCallTimeout`` and fails alone:
  other episodes answer while it hangs.
* SIGTERM or SIGINT during load, over stdio and HTTP: the server closes every
  episode (each env's ``close`` runs), exits with status 0 and leaves no
  process behind; clients get ``ServerDied``, never a hang.
* stdin closed with requests in flight: every reply is written, then the
  stdio server exits with status 0.

A server killed outright mid-episode (SIGKILL) is covered by
``test_client_failures.py``: the client raises ``ServerDied`` at once, within
its timeout, and reaps a stdio server.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from fastmcp import Client, FastMCP

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.errors import EnvCallTimeout, ServerDied
from openenv_mcp.server import ServerSettings, build_server, get_app
from tests import faulty_env
from tests.faulty_env import serve_command
from tests.figures import record_figure
from tests.servers import INITIALIZE, LEAKS, RawStdio, call, start_http, stop

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

WAIT = 90  # seconds any one test may take, server start-up included


@pytest.fixture(autouse=True)
def faulty() -> Iterator[None]:
    faulty_env.register()
    faulty_env.RELEASE.clear()
    yield
    faulty_env.RELEASE.set()  # no hung call outlives its test


def faulty_server(**settings: Any) -> FastMCP:
    return build_server("faulty", settings=ServerSettings(**settings))


async def ok(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool_mcp(tool, args)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return dict(result.structured_content)


async def error(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool_mcp(tool, args)
    assert result.is_error, f"{tool}({args}) should fail"
    text = text_of(result)
    for leak in LEAKS:
        assert leak not in text, f"{leak!r} leaked to the client: {text}"
    return text


def text_of(result: mcp_types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, mcp_types.TextContent))


# -- an env that raises -------------------------------------------------------------------


async def test_env_raising_in_step_breaks_only_its_episode() -> None:
    server = faulty_server()
    app = get_app(server)
    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            bad = (await ok(client, "reset", new_episode=True))["episode_id"]
            good = (await ok(client, "reset", new_episode=True))["episode_id"]
            await ok(client, "step", episode_id=bad, action="one")
            old_env = app.local_env(bad)

            text = await error(client, "step", episode_id=bad, action="raise")
            assert text.startswith("EnvCrashed: the environment raised RuntimeError in step")
            assert bad in text and "call reset" in text
            # the episode says it is broken, and why
            state = await ok(client, "state", episode_id=bad)
            assert state["status"] == "broken" and state["step"] == 1
            text = await error(client, "step", episode_id=bad, action="again")
            assert text.startswith("ResetNeeded:") and "broken (RuntimeError in step)" in text
            # other episodes and the server carry on
            assert (await ok(client, "step", episode_id=good, action="fine"))["step"] == 1
            # reset recovers it, with a fresh environment; the broken one is closed
            again = await ok(client, "reset", episode_id=bad)
            assert again["episode_id"] == bad and again["status"] == "running"
            assert app.local_env(bad) is not old_env
            assert old_env.serial in faulty_env.CLOSED  # type: ignore[attr-defined]
            assert (await ok(client, "step", episode_id=bad, action="two"))["step"] == 1

            # in a batch the crash is that item's error; the other items step
            out = await ok(
                client,
                "step_batch",
                steps=[
                    {"episode_id": bad, "action": "raise"},
                    {"episode_id": good, "action": "ok"},
                ],
            )
            crashed, stepped = out["results"]
            assert crashed["error"].startswith("EnvCrashed:") and stepped["step"] == 2
            assert (await ok(client, "state", episode_id=bad))["status"] == "broken"


async def test_env_raising_in_reset_leaves_nothing_behind() -> None:
    server = faulty_server()
    app = get_app(server)
    episodes = app.table
    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            live = len(episodes.episodes)
            text = await error(client, "reset", new_episode=True, options={"crash": True})
            assert text.startswith("EnvCrashed: the environment raised OSError in reset")
            # the episode minted for that reset is gone, its environment closed
            assert len(episodes.episodes) == live
            assert faulty_env.CREATED[-1] in faulty_env.CLOSED
            assert (await ok(client, "reset", new_episode=True))["status"] == "running"


# -- an env call that hangs ---------------------------------------------------------------


async def test_env_call_past_the_timeout_fails_alone() -> None:
    server = faulty_server(call_timeout=2)
    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            hung = (await ok(client, "reset", new_episode=True))["episode_id"]
            other = (await ok(client, "reset", new_episode=True))["episode_id"]
            order: list[str] = []

            async def hang() -> None:
                text = await error(client, "step", episode_id=hung, action="hang")
                assert text.startswith("EnvCallTimeout: the environment timed out after 2s")
                order.append("timeout")

            async with anyio.create_task_group() as tg:
                tg.start_soon(hang)
                for i in range(20):  # answered while the hung call waits
                    assert (await ok(client, "step", episode_id=other, action="x"))["step"] == i + 1
                order.append("others done")
            assert order == ["others done", "timeout"]
            text = await error(client, "step", episode_id=hung, action="x")
            assert "broken (timed out after 2s in step)" in text
            faulty_env.RELEASE.set()  # the abandoned call ends; reset gives a fresh env
            assert (await ok(client, "reset", episode_id=hung))["status"] == "running"
            assert (await ok(client, "step", episode_id=hung, action="x"))["step"] == 1


async def test_a_cancelled_env_call_still_holds_its_episode() -> None:
    """A client that gives up on a call (MCP cancellation) does not free the episode while
    the env call runs on in its thread: the next call waits for it; counts stay exact."""
    server = faulty_server()
    app = get_app(server)
    episodes = app.table
    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            eid = (await ok(client, "reset", new_episode=True))["episode_id"]
            with anyio.move_on_after(0.5):  # the client stops waiting
                await client.call_tool_mcp("step", {"episode_id": eid, "action": "hang"})
            assert episodes.episodes[eid].lock.locked()  # the env call runs on, and holds it
            answers: list[dict[str, Any]] = []

            async def step() -> None:
                answers.append(await ok(client, "step", episode_id=eid, action="next"))

            async with anyio.create_task_group() as tg:
                tg.start_soon(step)
                await anyio.sleep(0.1)
                assert not answers  # waiting for the cancelled call, not inside the env
                faulty_env.RELEASE.set()
            # the env never saw two calls at once, and its count is the server's
            (answer,) = answers
            assert answer["step"] == answer["info"]["steps"] == 2


@pytest.mark.integration
async def test_call_timeout_over_stdio() -> None:
    """``--call-timeout`` on the command line: a slow call fails alone, others answer."""
    command = serve_command("--stdio", "--log-level", "CRITICAL", "--call-timeout", "1")
    with anyio.fail_after(WAIT):
        async with MCPEnvClient(command, timeout=30) as slow:
            fast = slow.spawn()
            await slow.reset()
            await fast.reset()
            order: list[str] = []

            async def sleep_past_timeout() -> None:
                with pytest.raises(EnvCallTimeout, match="timed out after 1s in step"):
                    await slow.step("sleep:5")
                order.append("timeout")

            async with anyio.create_task_group() as tg:
                tg.start_soon(sleep_past_timeout)
                for _ in range(20):
                    await fast.step("quick")
                order.append("others done")
            assert order == ["others done", "timeout"]
            _, info = await fast.state()
            assert info["step"] == 20
            await slow.reset()  # recovers
            assert (await slow.step("ok"))[4]["step"] == 1


@pytest.mark.integration
@pytest.mark.parametrize("ending", ["stdin closed", "SIGTERM"])
def test_a_frozen_env_call_does_not_keep_the_server_alive(ending: str) -> None:
    """An env call that never returns times out alone; the server still exits when asked.

    Python waits for every worker thread at exit, and a thread cannot be stopped,
    so without care one frozen env call would keep the process alive forever.
    """
    argv = serve_command("--stdio", "--log-level", "CRITICAL", "--call-timeout", "1")
    server = RawStdio(argv)
    try:
        episodes = []
        for i in range(2):
            server.send(call(f"reset{i}", "reset", {"new_episode": True}))
            (reply,) = server.until(lambda seen: bool(seen))
            episodes.append(reply["result"]["structuredContent"]["episode_id"])
        server.send(call("frozen", "step", {"episode_id": episodes[0], "action": "freeze"}))
        server.send(call("fine", "step", {"episode_id": episodes[1], "action": "x"}))
        replies = {m["id"]: m for m in server.until(lambda seen: len(seen) == 2)}
        assert replies["fine"]["result"]["structuredContent"]["step"] == 1
        text = replies["frozen"]["result"]["content"][0]["text"]
        assert text.startswith("EnvCallTimeout: the environment timed out after 1s in step")
        assert server.proc.stdin is not None
        if ending == "SIGTERM":
            server.proc.send_signal(signal.SIGTERM)
        else:
            server.proc.stdin.close()
        assert server.proc.wait(30) == 0
    finally:
        stop(server.proc)


# -- signals during load, stdin closed ----------------------------------------------------


def descendants(pid: int) -> set[int]:
    """Live processes below ``pid``, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                fields = stat[stat.rindex(")") + 2 :].split()
                if fields[0] != "Z":
                    children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def closed_count(log: Path) -> int:
    """Environments closed, not counting the server's prototype (closed last of all)."""
    return max(len(log.read_text().splitlines()) - 1, 0) if log.exists() else 0


SIGNALS = [pytest.param(signal.SIGTERM, id="SIGTERM"), pytest.param(signal.SIGINT, id="SIGINT")]


@pytest.mark.integration
@pytest.mark.parametrize("signum", SIGNALS)
def test_signal_during_load_stdio(tmp_path: Path, signum: int) -> None:
    """Requests pipelined on four episodes; a signal mid-stream: exit 0, episodes closed."""
    log = tmp_path / "closed.log"
    server = RawStdio(serve_command("--stdio", "--log-level", "WARNING", "--close-log", str(log)))
    try:
        episodes = []
        for i in range(4):
            server.send(call(f"reset{i}", "reset", {"new_episode": True}))
            (reply,) = server.until(lambda seen: bool(seen))
            episodes.append(reply["result"]["structuredContent"]["episode_id"])
        before = descendants(server.proc.pid)

        def load() -> None:  # far more requests than get answered before the signal
            with contextlib.suppress(OSError, ValueError):
                for n in range(20_000):
                    server.send(call(n, "step", {"episode_id": episodes[n % 4], "action": "x"}))

        writer = threading.Thread(target=load, daemon=True)
        writer.start()
        answered = 0
        while answered < 200:
            message = server.receive()
            assert message is not None and not message["result"]["isError"], message
            answered += 1
        server.proc.send_signal(signum)
        status = server.proc.wait(30)
        while (message := server.receive()) is not None:  # replies written before the exit
            assert message["result"]["isError"] is False
            answered += 1
        writer.join(30)
        assert status == 0, server.stderr()[-3000:]
        assert closed_count(log) == 4  # every episode's env closed on the way out
        assert not any(alive(pid) for pid in before)  # nothing left behind
        record_figure(
            f"faults: {signal.Signals(signum).name} during load on stdio after {answered} "
            "replies: exit 0, 4 of 4 episodes closed, no process left"
        )
    finally:
        stop(server.proc)


@pytest.mark.integration
@pytest.mark.parametrize("signum", SIGNALS)
async def test_signal_during_load_http(tmp_path: Path, signum: int) -> None:
    """Eight clients stepping over HTTP; a signal mid-load: exit 0, episodes closed, and
    every client gets ServerDied (or its last reply), never a hang."""
    log = tmp_path / "closed.log"
    proc, url = start_http("faulty", "--close-log", str(log), command=serve_command())
    try:
        before = descendants(proc.pid)
        steps = [0] * 8
        outcomes: list[str] = []
        with anyio.fail_after(WAIT):
            clients = [MCPEnvClient(url, timeout=30) for _ in steps]
            for env in clients:
                await env.connect()
                await env.reset()
            loaded = anyio.Event()

            async def play(i: int, env: MCPEnvClient) -> None:
                try:
                    while True:
                        await env.step(f"c{i}")
                        steps[i] += 1
                        if sum(steps) >= 400:
                            loaded.set()
                except ServerDied:
                    outcomes.append("ServerDied")

            async with anyio.create_task_group() as tg:
                for i, env in enumerate(clients):
                    tg.start_soon(play, i, env)
                await loaded.wait()
                proc.send_signal(signum)
                status = await anyio.to_thread.run_sync(proc.wait, 30)
            for env in clients:
                await env.close()
        assert outcomes == ["ServerDied"] * 8
        assert (status, closed_count(log)) == (0, 8)
        assert not any(alive(pid) for pid in before)
        record_figure(
            f"faults: {signal.Signals(signum).name} during load on HTTP (8 clients, "
            f"{sum(steps)} steps): exit 0, 8 of 8 episodes closed, every client ServerDied"
        )
    finally:
        stop(proc)


def standard(request_id: str, method: str, **params: Any) -> dict[str, Any]:
    """A request that FastMCP's standard stack answers (not the tool fast lane)."""
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    return {**message, "params": params} if params else message


@pytest.mark.integration
@pytest.mark.parametrize("last", ["env calls", "standard requests"])
def test_stdin_closed_with_requests_in_flight(tmp_path: Path, last: str) -> None:
    """EOF right after a burst: every request is answered, episodes closed, exit 0.

    Either slow env calls or requests for the standard stack (listing, resources)
    are the last ones still running at EOF.
    """
    log = tmp_path / "closed.log"
    server = RawStdio(serve_command("--stdio", "--log-level", "WARNING", "--close-log", str(log)))
    try:
        server.send(INITIALIZE)
        assert server.until(lambda seen: bool(seen))[0]["id"] == "init"
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        episodes = []
        for i in range(3):
            server.send(call(f"reset{i}", "reset", {"new_episode": True}))
            (reply,) = server.until(lambda seen: bool(seen))
            episodes.append(reply["result"]["structuredContent"]["episode_id"])
        quick = [
            call(f"q{n}", "step", {"episode_id": episodes[1], "action": "q"}) for n in range(50)
        ]
        listing = [
            request
            for n in range(40)
            for request in (
                standard(f"list{n}", "tools/list"),
                standard(f"spec{n}", "resources/read", uri="openenv://faulty/spec"),
                standard(f"resources{n}", "resources/list"),
            )
        ]
        if last == "env calls":
            burst = [
                call("slow", "step", {"episode_id": episodes[0], "action": "sleep:0.5"}),
                *quick,
                *listing,
                call("after-slow", "step", {"episode_id": episodes[0], "action": "sleep:0.2"}),
            ]
        else:  # nothing of the fast lane left running to hold the exit back
            burst = listing
        assert server.proc.stdin is not None
        server.proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in burst))
        server.proc.stdin.close()  # EOF at once, everything still in flight
        replies: dict[Any, dict[str, Any]] = {}
        while (message := server.receive()) is not None:
            assert message["id"] not in replies, f"answered twice: {message['id']}"
            replies[message["id"]] = message
        assert set(replies) == {m["id"] for m in burst}
        failed = [m for m in replies.values() if "error" in m or m["result"].get("isError")]
        assert not failed
        if last == "env calls":
            assert replies["q49"]["result"]["structuredContent"]["step"] == 50
            assert replies["after-slow"]["result"]["structuredContent"]["step"] == 2
        assert server.proc.wait(30) == 0
        assert closed_count(log) == 3
    finally:
        stop(server.proc)
