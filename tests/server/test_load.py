"""Load on loopback HTTP: many clients stepping at once lose nothing and tear nothing.

* K clients x M steps, each on its own episode, all at once: zero errors; every
  observation is the client's own (no cross-talk); the server's step count,
  return and history for each episode are exactly what its client saw.
* Clients hammering one shared episode: the server serializes their steps, so
  the step numbers handed out are exactly 1..N with no duplicate or gap, and
  the episode's history (echo) or emulator state (Atari, replayed locally in
  the server's order) matches.

Figures (clients x steps, errors, wall time) go to the "openenv-mcp figures"
summary; no test asserts a time.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import numpy as np
import pytest
from fastmcp.client.transports import StreamableHttpTransport

from openenv_mcp.client import MCPEnvClient
from openenv_mcp_envs.atari import AtariEnv
from openenv_mcp_envs.atari._emulator import AtariConfig
from tests import faulty_env
from tests.faulty_env import serve_command
from tests.figures import record_figure
from tests.servers import http_server

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


@pytest.fixture(autouse=True)
def faulty() -> None:
    faulty_env.register()


WAIT = 240  # seconds per test, server start-up included; a 2-core box under load


def message(client: int, n: int) -> str:
    """A message of varying length, so every episode's return is its own."""
    return f"c{client}s{n % 7}" * (1 + (client + n) % 3)


async def run_clients(
    count: int, play: Callable[[int], Awaitable[None]]
) -> tuple[list[BaseException], float]:
    """Run ``play(i)`` for ``count`` clients at once; return the errors and the wall time."""
    errors: list[BaseException] = []

    async def guarded(i: int) -> None:
        try:
            await play(i)
        except Exception as exc:  # counted and reported, not raised mid-load
            errors.append(exc)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(count):
            tg.start_soon(guarded, i)
    return errors, time.perf_counter() - started


@pytest.mark.parametrize(
    ("clients", "steps", "stack"),
    [
        pytest.param(16, 500, "direct path", id="16x500-direct-path"),
        pytest.param(16, 200, "standard", id="16x200-standard-stack"),
    ],
)
async def test_echo_clients_on_their_own_episodes(clients: int, steps: int, stack: str) -> None:
    """``stack``: the lean client (sessionless requests, the server's direct path), or the
    MCP SDK's client (a session, FastMCP's standard Streamable HTTP stack)."""
    with anyio.fail_after(WAIT), http_server("echo", "--max-steps", "100000") as url:

        async def play(i: int) -> None:
            # The SDK's client (through a FastMCP transport) opens a session: the standard stack.
            target = url if stack == "direct path" else StreamableHttpTransport(url)
            async with MCPEnvClient(target, timeout=120) as env:
                await env.reset(seed=i)
                tally, sent = 0.0, []
                for n in range(steps):
                    text = message(i, n)
                    obs, reward, terminated, truncated, info = await env.step(text)
                    assert obs == text, f"client {i} saw another episode's observation"
                    assert info["step"] == n + 1 and not (terminated or truncated)
                    tally += reward
                    sent.append(text)
                _, state = await env.state()
                assert state["step"] == steps
                assert state["episode_return"] == tally  # same sums, same order: exact
                assert (await env.call("history"))["messages"] == ["", *sent]

        errors, wall = await run_clients(clients, play)
    assert not errors, f"{len(errors)} clients failed; first: {errors[0]!r}"
    total = clients * steps
    record_figure(
        f"load: echo over HTTP ({stack}), {clients} clients x {steps} steps on their own "
        f"episodes: {total} steps, {len(errors)} errors, every count and return exact; "
        f"{wall:.1f} s wall ({total / wall:.0f} steps/s)"
    )


def reference_run(seed: int, actions: list[int]) -> tuple[np.ndarray, float, list[float]]:
    """The same episode stepped in this process: final frame, return, rewards."""
    env = AtariEnv(AtariConfig(game="pong"))
    try:
        obs, _ = env.reset(seed=seed)
        rewards = []
        for action in actions:
            result = env.step(action)
            obs = result.observation
            rewards.append(float(result.reward))
        return np.asarray(obs), float(sum(rewards)), rewards
    finally:
        env.close()


async def test_atari_clients_on_their_own_episodes() -> None:
    clients, steps = 8, 200
    seen: dict[int, tuple[list[int], np.ndarray, float, list[float]]] = {}
    with anyio.fail_after(WAIT), http_server("atari", "--game", "pong") as url:

        async def play(i: int) -> None:
            rng = np.random.default_rng(i)
            async with MCPEnvClient(url, timeout=120) as env:
                obs, _ = await env.reset(seed=i)
                actions, rewards, tally = [], [], 0.0
                for _ in range(steps):
                    action = int(rng.integers(env.action_space.n))  # type: ignore[attr-defined]
                    obs, reward, terminated, truncated, _ = await env.step(action)
                    actions.append(action)
                    rewards.append(reward)
                    tally += reward
                    if terminated or truncated:
                        break
                _, state = await env.state()
                assert state["step"] == len(actions) and state["episode_return"] == tally
                seen[i] = (actions, obs, tally, rewards)

        errors, wall = await run_clients(clients, play)
    assert not errors, f"{len(errors)} clients failed; first: {errors[0]!r}"
    for i, (actions, obs, tally, rewards) in seen.items():
        frame, expected_return, expected_rewards = reference_run(i, actions)
        assert np.array_equal(obs, frame), f"client {i}: the emulator state differs"
        assert (tally, rewards) == (expected_return, expected_rewards)
    total = sum(len(s[0]) for s in seen.values())
    record_figure(
        f"load: Atari Pong over HTTP, {clients} clients x {steps} steps on their own "
        f"episodes: {total} steps, {len(errors)} errors, every final frame and return equal "
        f"to a local replay; {wall:.1f} s wall ({total / wall:.0f} steps/s)"
    )


async def test_two_clients_hammering_one_echo_episode() -> None:
    steps = 500
    with anyio.fail_after(WAIT), http_server("echo", "--max-steps", "100000") as url:
        async with MCPEnvClient(url, timeout=120) as owner:
            await owner.reset(seed=0)
            episode = owner.episode_id
            got: list[tuple[int, str, float]] = []  # (step number, message, reward)

            async def hammer(i: int) -> None:
                async with MCPEnvClient(url, timeout=120) as other:
                    for n in range(steps):
                        text = message(i, n)
                        view = await other.call("step", episode_id=episode, action=text)
                        got.append((view["step"], text, view["reward"]))

            errors, wall = await run_clients(2, hammer)
            assert not errors, f"first error: {errors[0]!r}"
            got.sort()
            # serialized: every step number handed out once, none skipped
            assert [s for s, _, _ in got] == list(range(1, 2 * steps + 1))
            _, state = await owner.state()
            assert state["step"] == 2 * steps
            assert state["episode_return"] == sum_in_order(r for _, _, r in got)
            history = (await owner.call("history"))["messages"]
            assert history == ["", *(text for _, text, _ in got)]
    record_figure(
        f"load: 2 clients x {steps} steps hammering one echo episode over HTTP: step numbers "
        f"exactly 1..{2 * steps}, history in step order, 0 errors; {wall:.1f} s wall"
    )


async def test_two_clients_hammering_one_atari_episode() -> None:
    steps = 200
    with anyio.fail_after(WAIT), http_server("atari", "--game", "pong") as url:
        async with MCPEnvClient(url, timeout=120) as owner:
            await owner.reset(seed=3)
            episode = owner.episode_id
            got: list[tuple[int, int, float]] = []  # (step number, action, reward)

            async def hammer(i: int) -> None:
                rng = np.random.default_rng(100 + i)
                async with MCPEnvClient(url, timeout=120) as other:
                    for _ in range(steps):
                        action = int(rng.integers(6))
                        view = await other.call(
                            "step", episode_id=episode, action=action, frames="none"
                        )
                        got.append((view["step"], action, view["reward"]))
                        if view["status"] == "ended":
                            return

            errors, wall = await run_clients(2, hammer)
            assert not errors, f"first error: {errors[0]!r}"
            got.sort()
            assert [s for s, _, _ in got] == list(range(1, len(got) + 1))
            obs, state = await owner.state()
            assert state["step"] == len(got)
    # replayed here in the order the server stepped them: the same emulator state
    frame, expected_return, rewards = reference_run(3, [a for _, a, _ in got])
    assert np.array_equal(obs, frame), "the shared episode's emulator state was torn"
    assert rewards == [r for _, _, r in got] and state["episode_return"] == expected_return
    record_figure(
        f"load: 2 clients hammering one Atari episode over HTTP: {len(got)} steps serialized "
        f"(numbers 1..{len(got)}), final frame equal to a local replay, 0 errors; "
        f"{wall:.1f} s wall"
    )


async def test_four_clients_hammering_one_threaded_episode() -> None:
    """An env whose calls run on worker threads: without the episode lock two steps
    would run in the env at once. Its own step counter must match the server's."""
    clients, steps = 4, 250
    with anyio.fail_after(WAIT), http_server("faulty", command=serve_command()) as url:
        async with MCPEnvClient(url, timeout=120) as owner:
            await owner.reset()
            episode = owner.episode_id
            got: list[int] = []

            async def hammer(i: int) -> None:
                async with MCPEnvClient(url, timeout=120) as other:
                    for n in range(steps):
                        view = await other.call("step", episode_id=episode, action=f"{i}:{n}")
                        assert view["info"]["steps"] == view["step"]  # env and server agree
                        got.append(view["step"])

            errors, wall = await run_clients(clients, hammer)
            assert not errors, f"first error: {errors[0]!r}"
            assert sorted(got) == list(range(1, clients * steps + 1))
            _, state = await owner.state()
            assert state["step"] == state["steps"] == clients * steps
    record_figure(
        f"load: {clients} clients x {steps} steps hammering one episode of a threaded env "
        f"over HTTP: serialized (env and server counts equal at every step), 0 errors; "
        f"{wall:.1f} s wall"
    )


def sum_in_order(values: Any) -> float:
    total = 0.0
    for value in values:
        total += value
    return total
