"""The ``collect`` and ``run_episode`` tools over MCP: seeded random legal actions played
in the server on echo and Gymnasium's CartPole, the same call the same episodes, every
episode an ordinary one of the table (recorded, replayable, under its limits, closed
after); stopped within one step when its task is cancelled (or its call), the episode
closed and its recording ended; attacked; listed for trainers, not agents."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from fastmcp import Client
from gymnasium import spaces

from openenv_mcp.client import Session
from openenv_mcp.errors import ArgumentError, ServerFull, UnsupportedOption
from openenv_mcp.recording import read_recording, replay
from openenv_mcp.server import ServerSettings, build_server, get_app
from openenv_mcp.server.jobs import JobCancelled, JobControl, running
from openenv_mcp.server.tools._rollouts import (
    CollectArgs,
    RandomActions,
    run_collect,
)

pytestmark = pytest.mark.anyio
WAIT = 120

#: The envs played: echo (text actions, truncated at 100 steps) and CartPole (a Discrete
#: space, terminated by the pole).
ENVS: list[tuple[str, dict[str, Any]]] = [("echo", {}), ("gymnasium", {"id": "CartPole-v1"})]
ENV_IDS = ["echo", "CartPole-v1"]


def live_episodes(server: Any) -> int:
    return len(get_app(server).table.episodes)


@pytest.mark.parametrize(("env", "options"), ENVS, ids=ENV_IDS)
async def test_collect_plays_the_same_episodes_for_the_same_call(
    env: str, options: dict[str, Any]
) -> None:
    server = build_server(env, **options)
    args = {"episodes": 4, "seed": 7, "max_steps": 60}
    with anyio.fail_after(WAIT):
        async with Session(server) as session:
            first = await session.call("collect", args)
            second = await session.call("collect", args)
            # run_episode is one of collect's episodes: episode i is seed + i.
            one = await session.call("run_episode", {"seed": 9, "max_steps": 60})
    assert live_episodes(server) == 0
    data, again = first.structured or {}, second.structured or {}
    played = data["episodes"]
    assert [e["seed"] for e in played] == [7, 8, 9, 10]
    fields = ("seed", "return", "steps", "terminated", "truncated", "end")
    assert [{k: e[k] for k in fields} for e in played] == [
        {k: e[k] for k in fields} for e in again["episodes"]
    ]
    assert {k: (one.structured or {})[k] for k in fields} == {k: played[2][k] for k in fields}
    assert len({e["episode_id"] for e in played + again["episodes"]}) == 8  # each its own
    assert data["mean_return"] == pytest.approx(np.mean([e["return"] for e in played]))
    assert data["steps"] == sum(e["steps"] for e in played)
    assert all(1 <= e["steps"] <= 60 for e in played)
    assert sum(data["ends"].values()) == 4
    assert "collect: 4 episodes" in first.text and "seeds 7-10" in first.text
    assert "run_episode: an episode" in one.text
    json.dumps(data, allow_nan=False)  # JSON as MCP carries it
    if env == "gymnasium":  # random CartPole falls within 60 steps, every time
        assert all(e["end"] == "terminated" and e["terminated"] for e in played)
        assert all(e["return"] == e["steps"] for e in played)  # +1 a step
        assert len({e["return"] for e in played}) > 1  # different seeds, different games
    else:  # echo runs 100 steps: every episode stopped at max_steps
        assert all(e["end"] == "capped" and e["steps"] == 60 for e in played)


async def test_the_random_policy_respects_the_action_mask() -> None:
    space = spaces.Discrete(6)
    legal = [0, 0, 0, 1, 0, 1]
    choose = RandomActions(space, 3)
    actions = [choose({"action_mask": legal}) for _ in range(200)]
    assert set(actions) == {3, 5} and all(isinstance(a, int) for a in actions)
    again = RandomActions(space, 3)
    assert [again({"action_mask": legal}) for _ in range(200)] == actions
    free = RandomActions(space, 3)
    assert set(free({}) for _ in range(200)) == set(range(6))
    assert space.np_random is not choose.space.np_random  # its draws are its own


async def test_every_episode_is_recorded_and_replays(tmp_path: Path) -> None:
    server = build_server(
        "gymnasium", settings=ServerSettings(record=str(tmp_path / "rec")), id="CartPole-v1"
    )
    with anyio.fail_after(WAIT):
        async with Session(server) as session:
            data = (await session.call("collect", {"episodes": 3, "seed": 1})).structured or {}
            capped = (
                await session.call("run_episode", {"seed": 2, "max_steps": 5})
            ).structured or {}
    paths = [Path(e["recording"]) for e in data["episodes"]]
    assert len(set(paths)) == 3 and sorted(tmp_path.joinpath("rec").glob("*.jsonl"))
    for episode, path in zip(data["episodes"], paths, strict=True):
        recording = read_recording(path)
        assert recording.complete and recording.end is not None
        assert recording.end["status"] == "terminated"
        assert recording.start["seed"] == episode["seed"]
        assert len(recording.steps) == episode["steps"]
        assert sum(s.reward for s in recording.steps) == pytest.approx(episode["return"])
        report = replay(path)
        assert report.ok, report.text()
        assert report.steps == episode["steps"]
    # Stopped at max_steps: closed, its end record says so, and it replays as far as it went.
    recording = read_recording(capped["recording"])
    assert capped["end"] == "capped" and len(recording.steps) == 5
    assert recording.end is not None and recording.end["status"] == "closed"
    assert replay(capped["recording"]).ok


async def test_the_callers_own_episode_is_left_alone() -> None:
    server = build_server("echo")
    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            mine = (await client.call_tool("reset", {"seed": 3})).structured_content or {}
            await client.call_tool("collect", {"episodes": 2, "max_steps": 3})
            # No episode_id: the default episode is still the caller's own.
            after = (await client.call_tool("step", {"action": "hi"})).structured_content or {}
    assert after["episode_id"] == mine["episode_id"] and after["step"] == 1


async def test_its_episodes_count_against_the_limits() -> None:
    server = build_server("echo", settings=ServerSettings(max_episodes=1))
    with anyio.fail_after(WAIT):
        async with Session(server) as session:
            held = session.episode()
            await held.reset()
            with pytest.raises(ServerFull, match="max_episodes=1"):
                await session.call("collect", {"episodes": 2, "max_steps": 3})
            await held.close()
            # One episode at a time: a server of one episode plays any number.
            data = (await session.call("collect", {"episodes": 3, "max_steps": 3})).structured or {}
    assert len(data["episodes"]) == 3 and live_episodes(server) == 0


async def stop_a_collect(server: Any, how: str, after_steps: int) -> tuple[int, list[Any]]:
    """Run a long collect under a task's control and stop it once its first episode has
    taken ``after_steps`` steps: ``how`` is ``"task"`` (the task cancelled) or ``"call"``
    (the call's own cancel scope). Returns the steps the first episode had taken when
    it was stopped, and the JobCancelled it raised (if any)."""
    app = get_app(server)
    job = JobControl()
    args = CollectArgs(episodes=50, max_steps=100_000, seed=0)
    raised: list[Any] = []
    scope = anyio.CancelScope()

    async def work() -> None:
        with scope, running(job):
            try:
                await run_collect(app.handlers, app.spec, args)
            except JobCancelled as exc:
                raised.append(exc)

    def steps() -> int:
        match = re.fullmatch(r"episode 1 of 50: step (\d+)", job.message or "")
        return int(match.group(1)) if match else 0

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            group.start_soon(work)
            while steps() < after_steps:
                await anyio.sleep(0)
            taken = steps()
            if how == "task":
                job.cancel()
            else:
                scope.cancel()
    return taken, raised


#: Where the environment runs: inline on the event loop, on a thread, in a worker process.
RUNTIMES = [
    pytest.param({"env_threads": False}, id="inline"),
    pytest.param({"env_threads": True}, id="thread"),
    pytest.param({"workers": 1}, id="worker", marks=pytest.mark.integration),
]


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("how", ["task", "call"])
async def test_a_cancelled_collect_stops_within_a_step_and_closes_its_episode(
    tmp_path: Path, how: str, runtime: dict[str, Any]
) -> None:
    server = build_server("echo", settings=ServerSettings(record=str(tmp_path), **runtime))
    try:
        taken, raised = await stop_a_collect(server, how, after_steps=10)
        assert taken >= 10
        # A cancelled task: JobCancelled goes on up (the task ends as cancelled); a
        # cancelled call: anyio's cancellation, caught by its own scope.
        assert len(raised) == (1 if how == "task" else 0)
        assert live_episodes(server) == 0
        (path,) = tmp_path.glob("*.jsonl")  # one episode begun, none after it
        recording = read_recording(path)
        # Within one step of the cancel, and nothing half-written: its end record closes it.
        assert taken <= len(recording.steps) <= taken + 1
        assert recording.complete and not recording.problem
        assert recording.end is not None and recording.end["status"] == "closed"
        assert recording.end["steps"] == len(recording.steps)
        assert replay(path).ok
        # The server goes on.
        with anyio.fail_after(WAIT):
            async with Session(server) as session:
                answer = await session.call("collect", {"episodes": 1, "max_steps": 2})
        assert (answer.structured or {})["episodes"][0]["steps"] == 2
    finally:
        await get_app(server).aclose()  # its worker process, where it has one


async def test_another_client_steps_while_a_collect_runs() -> None:
    server = build_server("echo")
    with anyio.fail_after(WAIT):
        async with Session(server) as collector, Session(server) as player:
            episode = player.episode()
            await episode.reset(seed=1)
            done = anyio.Event()
            during = 0

            async def run() -> None:
                await collector.call("collect", {"episodes": 20, "max_steps": 100})
                done.set()

            async with anyio.create_task_group() as group:
                group.start_soon(run)
                for _ in range(5):
                    await episode.step("hi")
                    during += not done.is_set()
            assert during >= 1 and done.is_set()
            await episode.step("bye")  # still its own, still live
    assert live_episodes(server) == 1  # the player's own, untouched


@pytest.mark.parametrize(
    ("tool", "args", "error", "says"),
    [
        ("collect", {"episodes": 0}, ArgumentError, "'episodes': Input should be greater"),
        ("collect", {"episodes": 10001}, ArgumentError, "less than or equal to 10000"),
        ("collect", {}, ArgumentError, "episodes"),
        ("collect", {"episodes": "3"}, ArgumentError, "valid integer, got '3'"),
        ("collect", {"episodes": 2.5}, ArgumentError, "episodes"),
        ("collect", {"episodes": 1, "policy": "x"}, ArgumentError, "policy 'x' is not run"),
        ("collect", {"episodes": 1, "policy": "rando"}, ArgumentError, "it runs random"),
        ("run_episode", {"policy": "my.py:greedy"}, ArgumentError, "it runs random"),
        ("run_episode", {"policy": 1}, ArgumentError, "policy"),
        ("run_episode", {"seed": -1}, ArgumentError, "seed"),
        ("run_episode", {"max_steps": 0}, ArgumentError, "max_steps"),
        ("run_episode", {"max_steps": 100_001}, ArgumentError, "max_steps"),
        ("run_episode", {"options": "greeting=hi"}, ArgumentError, "options"),
        ("run_episode", {"options": {"bogus": 1}}, UnsupportedOption, "Per-episode options"),
        ("collect", {"episodes": 2, "options": {"bogus": 1}}, UnsupportedOption, "'bogus'"),
        ("run_episode", {"surprise": 1}, ArgumentError, "surprise"),
    ],
)
async def test_bad_arguments_are_refused_clearly(
    tool: str, args: dict[str, Any], error: type[Exception], says: str
) -> None:
    server = build_server("echo")
    with anyio.fail_after(WAIT):
        async with Session(server) as session:
            with pytest.raises(error) as raised:
                await session.call(tool, args)
            assert says in str(raised.value)
            assert live_episodes(server) == 0  # nothing left behind by a refusal
            # The server goes on.
            assert (await session.call("run_episode", {"max_steps": 1})).structured


async def test_options_and_tasks_reach_each_episode() -> None:
    server = build_server("echo")
    with anyio.fail_after(WAIT):
        async with Session(server) as session:
            task = (
                await session.call(
                    "run_episode", {"options": {"split": "test", "index": 1}, "max_steps": 200}
                )
            ).structured or {}
    assert task["task"]["id"] == "echo-test-1" and "success" in task["task"]


async def test_listed_for_trainers_not_for_agents() -> None:
    for profile, listed in (("full", True), ("agent", False)):
        server = build_server("echo", settings=ServerSettings(profile=profile))
        async with Client(server) as client:
            tools = {t.name: t for t in await client.list_tools()}
        assert ("collect" in tools) is listed and ("run_episode" in tools) is listed, profile
    server = build_server("echo")
    async with Client(server) as client:
        tools = {t.name: t for t in await client.list_tools()}
    collect = tools["collect"].input_schema
    assert collect["required"] == ["episodes"] and collect["additionalProperties"] is False
    assert collect["properties"]["episodes"]["maximum"] == 10000
    options = collect["properties"]["options"]["anyOf"][0]
    assert "greeting" in options["properties"] and options["additionalProperties"] is False
    assert tools["collect"].annotations is not None
    assert tools["collect"].annotations.read_only_hint is False
