"""Limits and clean-up: server full, idle eviction, snapshots, and no leak per episode.

* ``max_episodes`` reached: ``ServerFull`` naming the limit and the idle timeout.
* Idle eviction (on the next create, with a clock the test controls): the
  idlest episodes go, their environments closed; one with a call in flight stays.
* ``max_snapshots`` reached: ``ServerFull``; releasing or closing frees them.
* A closed or evicted episode frees its environment: ``close`` runs, and no
  reference to it survives (weak references die).
* Thousands of reset/close cycles on a server subprocess: its RSS stays within
  a stated bound after warm-up (figures in the "openenv-mcp figures" summary).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from fastmcp import Client

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.server import ServerSettings, build_server, get_app
from tests import faulty_env
from tests.figures import record_figure
from tests.servers import child_pids, stdio_command

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

WAIT = 120


@pytest.fixture(autouse=True)
def faulty() -> Iterator[None]:
    faulty_env.register()
    faulty_env.RELEASE.clear()
    yield
    faulty_env.RELEASE.set()


class Clock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def call(client: Client, tool: str, **args: Any) -> mcp_types.CallToolResult:
    return await client.call_tool_mcp(tool, args)


async def ok(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await call(client, tool, **args)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


async def error(client: Client, tool: str, **args: Any) -> str:
    result = await call(client, tool, **args)
    assert result.is_error, f"{tool}({args}) should fail"
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent)
    return block.text


async def test_max_episodes_gives_server_full() -> None:
    server = build_server("echo", settings=ServerSettings(max_episodes=3, idle_timeout=600))
    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            ids = [(await ok(client, "reset", new_episode=True))["episode_id"] for _ in range(3)]
            text = await error(client, "reset", new_episode=True)
            assert text.startswith("ServerFull: server full: 3 live episodes (max_episodes=3)")
            assert "evicted after 600s" in text
            await ok(client, "close", episode_id=ids[0])
            assert (await ok(client, "reset", new_episode=True))["status"] == "running"


async def test_idle_eviction_frees_the_idlest_episodes() -> None:
    server = build_server("faulty", settings=ServerSettings(max_episodes=2, idle_timeout=10))
    app = get_app(server)
    episodes = app.table
    clock = episodes.clock = Clock()
    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            a = (await ok(client, "reset", new_episode=True))["episode_id"]
            b = (await ok(client, "reset", new_episode=True))["episode_id"]
            env_b = app.local_env(b)
            clock.now += 5
            await ok(client, "state", episode_id=a)  # a was used 5 s later than b
            clock.now += 6  # b idle 11 s (past the timeout), a idle 6 s
            c = (await ok(client, "reset", new_episode=True))["episode_id"]
            assert set(episodes.episodes) == {a, c}
            assert env_b.serial in faulty_env.CLOSED  # type: ignore[attr-defined]
            text = await error(client, "step", episode_id=b, action="x")
            assert text.startswith("UnknownEpisode:") and "evicted after 10s idle" in text
            # nothing idle long enough: full, naming the limit and the timeout
            text = await error(client, "reset", new_episode=True)
            assert "max_episodes=2" in text and "after 10s" in text

            # an episode with a call in flight is never evicted, however old its last use
            async with anyio.create_task_group() as tg:
                tg.start_soon(ok_args, client, "step", {"episode_id": a, "action": "hang"})
                while not episodes.episodes[a].lock.locked():
                    await anyio.sleep(0.01)  # bounded by fail_after
                clock.now += 100
                d = (await ok(client, "reset", new_episode=True))["episode_id"]
                assert set(episodes.episodes) == {a, d}  # c went, busy a stayed
                faulty_env.RELEASE.set()


async def ok_args(client: Client, tool: str, args: dict[str, Any]) -> None:
    await ok(client, tool, **args)


async def test_max_snapshots_and_their_release() -> None:
    server = build_server("echo", settings=ServerSettings(max_snapshots=2))
    snapshots = get_app(server).table.snapshots
    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            eid = (await ok(client, "reset"))["episode_id"]
            first = (await ok(client, "snapshot", episode_id=eid))["snapshot_id"]
            await ok(client, "snapshot", episode_id=eid)
            text = await error(client, "snapshot", episode_id=eid)
            assert text.startswith("ServerFull: server full: 2 live snapshots (max_snapshots=2)")
            await ok(client, "release_snapshot", snapshot_id=first)
            await ok(client, "snapshot", episode_id=eid)
            assert len(snapshots) == 2
            await ok(client, "close", episode_id=eid)  # closing frees its snapshots
            assert not snapshots


async def test_closed_and_evicted_episodes_free_their_envs() -> None:
    """``close`` runs on each env, and nothing keeps a closed episode's env alive."""
    server = build_server("faulty", settings=ServerSettings(max_episodes=4, idle_timeout=10))
    app = get_app(server)
    episodes = app.table
    clock = episodes.clock = Clock()
    refs: dict[int, weakref.ref[Any]] = {}  # serial -> the env
    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            for n in range(200):
                eid = (await ok(client, "reset", new_episode=True))["episode_id"]
                env = app.local_env(eid)
                refs[env.serial] = weakref.ref(env)  # type: ignore[attr-defined]
                await ok(client, "step", episode_id=eid, action="x")
                await ok(client, "snapshot", episode_id=eid)
                if n % 2:
                    await ok(client, "close", episode_id=eid)
                else:
                    clock.now += 11  # left idle: evicted by a later create
            live = {app.local_env(e).serial for e in episodes.episodes}  # type: ignore[attr-defined]
            assert len(live) <= 4
            # snapshots go with their episodes
            assert {s.episode_id for s in episodes.snapshots.values()} <= set(episodes.episodes)

            # a close while a call is in flight waits for the call, then frees the env
            eid = (await ok(client, "reset", new_episode=True))["episode_id"]
            env = app.local_env(eid)
            order: list[str] = []

            async def hang() -> None:
                await ok(client, "step", episode_id=eid, action="hang")
                order.append("step answered")

            async with anyio.create_task_group() as tg:
                tg.start_soon(hang)
                while not episodes.episodes[eid].lock.locked():
                    await anyio.sleep(0.01)  # bounded by fail_after
                tg.start_soon(ok_args, client, "close", {"episode_id": eid})
                while eid in episodes.episodes:  # close has begun: it waits for the call
                    await anyio.sleep(0.01)
                assert env.serial not in faulty_env.CLOSED  # type: ignore[attr-defined]
                faulty_env.RELEASE.set()
            assert order == ["step answered"]
            assert env.serial in faulty_env.CLOSED  # type: ignore[attr-defined]
            del env
    gc.collect()
    gone = set(refs) - live
    assert gone <= set(faulty_env.CLOSED)  # each closed or evicted env was closed...
    assert all(refs[serial]() is None for serial in gone)  # ...and nothing holds on to it


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


async def reset_close_cycles(
    env: str, options: list[str], action: Any, warmup: int, cycles: int
) -> tuple[int, list[int]]:
    """Reset, step and close ``cycles`` episodes on a stdio server; its RSS samples (KB)."""
    before = child_pids()
    async with MCPEnvClient(stdio_command(env, *options), timeout=60) as client:
        (pid,) = child_pids() - before
        samples: list[int] = []
        for n in range(warmup + cycles):
            if n >= warmup and (n - warmup) % max(1, cycles // 10) == 0:
                samples.append(rss_kb(pid))
            episode = client.spawn()
            await episode.reset(seed=n)
            await episode.step(action)
            await episode.close()
        samples.append(rss_kb(pid))
        return pid, samples


@pytest.mark.integration
@pytest.mark.parametrize(
    ("env", "options", "action", "warmup", "cycles", "bound_kb"),
    [
        # An episode object kept per cycle (about 2 KB) would add 10 MB here.
        pytest.param("echo", [], "x", 500, 5_000, 4096, id="echo-5000"),
        # An emulator kept per cycle (about 700 KB) would add 42 MB here. Creating an
        # Atari episode costs about 0.1 s (ALE loads the ROM), so 60 cycles, not 1000.
        pytest.param("atari", ["--game", "pong"], 0, 10, 60, 16384, id="atari-60"),
    ],
)
async def test_rss_stays_flat_over_reset_close_cycles(
    env: str, options: list[str], action: Any, warmup: int, cycles: int, bound_kb: int
) -> None:
    with anyio.fail_after(240):
        _, samples = await reset_close_cycles(env, options, action, warmup, cycles)
    growth = samples[-1] - samples[0]
    record_figure(
        f"leaks: {env}, {cycles} reset/step/close cycles after {warmup} warm-up: server RSS "
        f"{samples[0] / 1024:.1f} -> {samples[-1] / 1024:.1f} MB ({growth:+d} KB; "
        f"max {max(samples) / 1024:.1f} MB; bound +{bound_kb // 1024} MB)"
    )
    assert growth <= bound_kb, f"RSS grew {growth} KB over {cycles} cycles: {samples}"
