"""MCPEnvClient: one test body over every transport (memory, stdio, HTTP)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
import numpy as np
import pytest
from fastmcp import FastMCP

from openenv_mcp.client import MCPEnvClient, Session, step_batch
from openenv_mcp.client._session import Target, transport_for
from openenv_mcp.errors import (
    ArgumentError,
    InvalidAction,
    OpenEnvError,
    ResetNeeded,
    UnknownEpisode,
    UnknownSnapshot,
    UnsupportedOption,
)
from tests import faulty_env
from tests.servers import (
    CLI,
    TRANSPORTS,
    child_pids,
    http_server,
    memory_server,
    serve_target,
    stdio_command,
)

pytestmark = pytest.mark.anyio

WAIT = 90  # seconds any one test may take: a subprocess start is seconds on a busy box


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_spec_and_spaces_before_reset(transport: str) -> None:
    with anyio.fail_after(WAIT), serve_target(transport) as target:
        async with MCPEnvClient(target) as env:
            assert env.env_name == "echo" and env.episode_id is None
            assert env.actions is None and env.server_spec.supports_snapshots
            assert env.action_space.contains("any message, with spaces & ünïcode")
            assert not env.action_space.contains(3)
            assert env.observation_space.contains("")
            assert {"reset", "step", "state", "history", "reward_rule"} <= set(env.tool_names)
            with pytest.raises(UnsupportedOption, match="no names"):
                env.get_action_meanings()


async def test_episode_flow(transport: str) -> None:
    with anyio.fail_after(WAIT), serve_target(transport, "echo", "--max-steps", "3") as target:
        async with MCPEnvClient(target) as env:
            obs, info = await env.reset(seed=7, options={"greeting": "hi"})
            assert obs == "hi" and info["step"] == 0 and info["status"] == "running"
            eid = info["episode_id"]
            assert eid == env.episode_id and eid.startswith("ep_")
            assert isinstance(info["nonce"], int) and info["length"] == 2
            obs, reward, terminated, truncated, info = await env.step("hello")
            assert (obs, reward, terminated, truncated) == (
                "hello",
                pytest.approx(0.5),
                False,
                False,
            )
            assert type(reward) is float and info["episode_return"] == pytest.approx(0.5)
            obs, info = await env.state()
            assert obs == "hello" and info["step"] == 1
            await env.step("abc")
            *_, terminated, truncated, info = await env.step("xyz")
            assert truncated and not terminated and info["status"] == "ended"
            with pytest.raises(ResetNeeded, match="ended"):
                await env.step("again")
            obs, info = await env.reset()  # the same episode handle, a new episode
            assert info["episode_id"] == eid and info["step"] == 0 and obs == ""
            *_, terminated, truncated, _ = await env.step("bye")
            assert terminated and not truncated


async def test_typed_errors_with_the_servers_message(transport: str) -> None:
    with anyio.fail_after(WAIT), serve_target(transport) as target:
        async with MCPEnvClient(target) as env:
            # order is enforced on the client, alike over every transport
            with pytest.raises(ResetNeeded, match="reset"):
                await env.step("x")
            with pytest.raises(ResetNeeded):
                await env.call("history")
            await env.reset()
            with pytest.raises(InvalidAction, match="got int 42"):
                await env.step(42)
            with pytest.raises(UnsupportedOption, match="Did you mean 'greeting'"):
                await env.reset(options={"greting": "x"})
            with pytest.raises(UnknownSnapshot):
                await env.reset(from_snapshot="snap_nope")
            with pytest.raises(ArgumentError, match="Did you mean 'history'"):
                await env.call("histroy")
            with pytest.raises(UnknownEpisode, match="ep_nope"):
                await env.call("state", episode_id="ep_nope")
            # nothing above broke the episode or the connection
            _, _, _, _, info = await env.step("ok")
            assert info["step"] == 1


async def test_seeds_reproduce(transport: str) -> None:
    with anyio.fail_after(WAIT), serve_target(transport) as target:
        async with MCPEnvClient(target) as env:
            runs = []
            for seed in (3, 3, 4):
                _, info = await env.reset(seed=seed)
                nonces = [info["nonce"]]
                for _ in range(3):
                    nonces.append((await env.step("a"))[4]["nonce"])
                runs.append(nonces)
            assert runs[0] == runs[1] != runs[2]


async def test_spawned_episodes_run_concurrently_and_fork_identically(transport: str) -> None:
    with anyio.fail_after(WAIT), serve_target(transport) as target:
        async with MCPEnvClient(target) as env:
            await env.reset(seed=11, options={"greeting": "start"})
            await env.step("one")
            snapshot = await env.snapshot()
            group = [env.spawn() for _ in range(4)]
            returns: list[tuple[float, int]] = [(0.0, 0)] * len(group)

            async def rollout(k: int) -> None:
                obs, info = await group[k].reset(from_snapshot=snapshot)
                assert obs == "one" and info["step"] == 1
                _, _, _, _, info = await group[k].step("two")
                returns[k] = (info["episode_return"], info["nonce"])

            async with anyio.create_task_group() as tg:
                for k in range(len(group)):
                    tg.start_soon(rollout, k)
            assert len(set(returns)) == 1 and returns[0][0] == pytest.approx(0.6)
            assert len({c.episode_id for c in group} | {env.episode_id}) == 5
            await env.release_snapshot(snapshot)
            with pytest.raises(UnknownSnapshot):
                await group[0].reset(from_snapshot=snapshot)
            # closing a spawned client frees its episode, not the connection
            gone = group[1].episode_id
            await group[1].close()
            with pytest.raises(UnknownEpisode):
                await env.call("state", episode_id=gone)
            assert (await env.step("still here"))[4]["step"] == 2


async def test_step_batch_steps_siblings_in_one_call(transport: str) -> None:
    with anyio.fail_after(WAIT), serve_target(transport, "echo", "--max-steps", "2") as target:
        async with MCPEnvClient(target) as env:
            group = [env, env.spawn(), env.spawn()]
            for k, client in enumerate(group):
                await client.reset(seed=k)
            for use_tool in (True, False):  # the step_batch tool, or one step call each
                for client in group:
                    await client.reset()
                first = await step_batch(group, ["a", "bb", "ccc"], use_tool=use_tool)
                assert [t[0] for t in first] == ["a", "bb", "ccc"]
                assert [t[4]["step"] for t in first] == [1, 1, 1]
                assert [t[4]["episode_id"] for t in first] == [c.episode_id for c in group]
                # one illegal action: its error in place, the others stepped and recorded
                mixed = await step_batch(
                    group, ["x", 7, "y"], return_exceptions=True, use_tool=use_tool
                )
                assert isinstance(mixed[1], InvalidAction) and "got int" in str(mixed[1])
                assert mixed[0][3] and mixed[2][3]  # truncated at --max-steps 2
                with pytest.raises(ResetNeeded):  # raised by default: the first error
                    await step_batch(group, ["p", "q", "r"], use_tool=use_tool)
                assert (await group[1].state())[1]["step"] == 2  # its ended step, counted once
            assert await step_batch([], []) == []
            with pytest.raises(ArgumentError, match="one action per episode, got 2 actions for 3"):
                await step_batch(group, ["a", "b"])
        async with MCPEnvClient(target) as other:
            await other.reset()
            with pytest.raises(ArgumentError, match="must be of this session"):
                await step_batch([group[0], other], ["a", "b"])


async def test_env_tools(transport: str) -> None:
    with anyio.fail_after(WAIT), serve_target(transport) as target:
        async with MCPEnvClient(target) as env:
            assert (await env.call("reward_rule"))["ends_on"] == "bye"  # static: no episode
            await env.reset(options={"greeting": "g"})
            await env.step("m")
            assert (await env.call("history")) == {"messages": ["g", "m"]}


async def test_render_returns_a_writable_frame(transport: str) -> None:
    with anyio.fail_after(WAIT), serve_target(transport, "echo", "--frame") as target:
        async with MCPEnvClient(target) as env:
            assert env.server_spec.has_frame
            await env.reset(options={"greeting": "abc"})
            frame = await env.render()
            assert isinstance(frame, np.ndarray)
            assert frame.shape == (16, 16, 3) and frame.dtype == np.uint8
            frame += 1  # callers may scale frames in place
    async with MCPEnvClient(memory_server("echo")) as env:
        await env.reset()
        assert await env.render() is None  # no frame, no call


@pytest.mark.integration
async def test_closing_the_owner_stops_its_stdio_server() -> None:
    before = child_pids()
    with anyio.fail_after(WAIT):
        env = MCPEnvClient(stdio_command("echo"))
        await env.connect()
        started = child_pids() - before
        assert len(started) == 1
        await env.reset()
        await env.close()
        await env.close()  # idempotent
    assert not (child_pids() & started)
    with pytest.raises(ResetNeeded, match="closed"):
        await env.step("x")


@pytest.mark.integration
async def test_a_command_string_is_split_like_a_shell() -> None:
    command = " ".join([*CLI, "serve", "echo", "--max-steps", "'2'"])
    with anyio.fail_after(WAIT):
        async with MCPEnvClient(command) as env:
            assert env.server_spec.config["max_steps"] == 2


@pytest.mark.integration
@pytest.mark.parametrize("workers", ["0", "2"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_calls_on_sibling_episodes_are_in_flight_together(
    transport: str, workers: str, tmp_path: Path
) -> None:
    """A call that waits for its sibling's call to happen first can only return if
    the client sends both at once (HTTP: on two connections) and the server runs both."""
    faulty_env.register()
    flag = tmp_path / "flag"
    options = ["--workers", workers, "--log-level", "WARNING"]
    with contextlib.ExitStack() as stack:
        if transport == "http":
            target: Target = stack.enter_context(
                http_server("faulty", *options, command=faulty_env.serve_command())
            )
        else:
            target = faulty_env.serve_command("--stdio", *options)
        with anyio.fail_after(WAIT):
            async with MCPEnvClient(target) as waiting:
                other = waiting.spawn()
                await waiting.reset()
                await other.reset()
                got: list[str] = []

                async def wait_for_flag() -> None:
                    got.append((await waiting.step(f"await:{flag}"))[0])

                async with anyio.create_task_group() as group:
                    group.start_soon(wait_for_flag)
                    while not flag.with_suffix(".started").exists():
                        await anyio.sleep(0.01)
                    assert (await other.step(f"touch:{flag}"))[0] == f"touch:{flag}"
                assert got == [f"await:{flag}"]


def test_the_target_decides_the_transport() -> None:
    from fastmcp import FastMCP

    from openenv_mcp.client._transports import (
        HttpTransport,
        MemoryTransport,
        SdkTransport,
        StdioTransport,
    )

    assert isinstance(transport_for(memory_server("echo")), MemoryTransport)
    assert isinstance(transport_for(FastMCP("plain")), SdkTransport)  # not one of ours
    assert isinstance(transport_for("https://example.org/mcp"), HttpTransport)
    stdio = transport_for("openenv-mcp serve atari --game 'space invaders'")
    assert isinstance(stdio, StdioTransport) and stdio.argv[-1] == "space invaders"
    assert isinstance(transport_for(["python", "-m", "x"]), StdioTransport)
    assert transport_for(stdio) is stdio  # a ready transport, as it is
    with pytest.raises(ArgumentError, match="expected a FastMCP server"):
        transport_for(42)
    with pytest.raises(ArgumentError, match="empty"):
        transport_for("  ")


async def test_results_are_checked_against_the_output_schema_where_asked() -> None:
    server = memory_server("echo")
    async with MCPEnvClient(server) as fast, MCPEnvClient(server, check_results=True) as checked:
        assert not fast.session.check_results and checked.session.check_results
        for env in (fast, checked):
            await env.reset(seed=1)
            assert (await env.step("hi"))[1] == pytest.approx(0.2)
        # an answer outside the schema is refused with what broke it
        checked.session.tools["state"]["outputSchema"]["properties"]["step"] = {"type": "string"}
        with pytest.raises(OpenEnvError, match=r"outside its outputSchema.*at step"):
            await checked.state()


async def test_a_session_hands_out_episodes_and_steps_them_together() -> None:
    async with Session(memory_server("echo")) as session:
        group = [session.episode() for _ in range(3)]
        for k, episode in enumerate(group):
            await episode.reset(options={"greeting": str(k)})
        out = await session.step_batch(group, ["a", "b", "c"])
        assert [t[0] for t in out] == ["a", "b", "c"]
        assert len({e.episode_id for e in group}) == 3
        assert session.options["frames"] == "zstd" and session.connected
    assert not session.connected
    with pytest.raises(OpenEnvError, match="connected session"):
        session.episode()


async def test_png_frames_need_frame_observations() -> None:
    with pytest.raises(ArgumentError, match="frames"):
        MCPEnvClient(memory_server("echo"), frames="jpeg")  # type: ignore[typeddict-item]
    with pytest.raises(ArgumentError, match=r"unknown option 'frame'\. Did you mean 'frames'"):
        MCPEnvClient(memory_server("echo"), frame="png")  # type: ignore[call-arg]
    async with MCPEnvClient(memory_server("echo"), frames="png") as env:
        # text observations travel inline whatever the frames setting
        assert (await env.reset(options={"greeting": "x"}))[0] == "x"


async def test_a_server_that_is_not_an_environment_is_refused() -> None:
    plain = FastMCP("plain")

    @plain.tool
    def hello() -> str:
        return "hi"

    with anyio.fail_after(WAIT), pytest.raises(ArgumentError, match="not an openenv-mcp"):
        await MCPEnvClient(plain).connect()
