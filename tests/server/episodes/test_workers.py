"""Worker processes (``serve --workers N``): the same episodes, several cores, contained faults.

* Episodes in workers play exactly as in the server process: the same seeded
  Pong frames and rewards through ``step_batch``, snapshots forked across
  workers, env tools, text observations, and what is legal (each episode's own
  environment decides, in its worker).
* A worker's start-up has its own bound, apart from ``call_timeout``; one that
  cannot start says why.
* A worker that crashes or hangs breaks only the episodes it holds (EnvCrashed,
  EnvCallTimeout); episodes in the other worker go on, and ``reset`` gives a
  broken episode a fresh environment in a live worker.
* The server awaits workers without blocking: while one worker is hung, the
  other worker's episodes answer (that calls in two workers overlap is shown
  over stdio and HTTP in client/test_session.py); concurrent calls sharing a worker
  each get their own answer, even when callers give up mid-call.
* Over stdio, an env printing to stdout in a worker does not reach the
  transport; at EOF or SIGTERM every env is closed and no worker is left.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from fastmcp import FastMCP

from openenv_mcp.bench._run import _children
from openenv_mcp.client import Episode, MCPEnvClient, step_batch
from openenv_mcp.errors import EnvCallTimeout, EnvCrashed, InvalidAction
from openenv_mcp.pipeline import CallTool, Look, Op, Step
from openenv_mcp.server import ServerSettings, build_server, get_app
from openenv_mcp.server.episodes._workers import WorkerRef
from tests import door_env, faulty_env
from tests.servers import CLI

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

WAIT = 120  # worker processes import numpy, ale-py... on start


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    faulty_env.register()
    door_env.register()
    yield


SETTINGS = ("call_timeout", "worker_start_timeout")


@contextlib.asynccontextmanager
async def served(env: str, workers: int, **options: Any) -> AsyncIterator[FastMCP]:
    settings = {k: options.pop(k) for k in SETTINGS if k in options}
    server = build_server(env, settings=ServerSettings(workers=workers, **settings), **options)
    try:
        yield server
    finally:
        await get_app(server).aclose()
        if workers:
            assert all(w.process.poll() is not None for w in workers_of(server))


def workers_of(server: FastMCP) -> list[Any]:
    return list(get_app(server).runtime.workers)  # type: ignore[attr-defined]


def worker_of(server: FastMCP, client: Episode) -> Any:
    ref = get_app(server).table.episodes[client.episode_id].ref  # type: ignore[index]
    assert isinstance(ref, WorkerRef)
    return ref.worker


async def pong_trace(workers: int) -> list[Any]:
    """A seeded batch of 4 Pong episodes, with a snapshot forked into two of them."""
    async with served("atari", workers, game="pong") as server, MCPEnvClient(server) as root:
        group = [root, *(root.spawn() for _ in range(3))]
        for k, client in enumerate(group):
            await client.reset(seed=k)
        if workers:
            assert sorted(w.environments for w in workers_of(server)) == [2, 2]
        rng = np.random.default_rng(7)
        trace: list[Any] = []
        snapshot = None
        for i in range(60):
            actions = [int(a) for a in rng.integers(6, size=4)]
            for obs, reward, terminated, truncated, info in await step_batch(group, actions):
                digest = hashlib.sha256(obs.tobytes()).hexdigest()[:16]
                trace.append((digest, reward, terminated, truncated, info["frame_number"]))
            if i == 30:
                snapshot = await group[1].snapshot()
        assert snapshot is not None
        # Fork episodes 2 and 3 (in the other worker, with workers) from episode 1's state.
        forks = [await client.reset(from_snapshot=snapshot) for client in group[2:]]
        assert np.array_equal(forks[0][0], forks[1][0])
        for _ in range(10):
            out = await step_batch(group[2:], [3, 3])
            assert np.array_equal(out[0][0], out[1][0])
            trace.append(hashlib.sha256(out[0][0].tobytes()).hexdigest()[:16])
        obs, info = await group[0].state()
        trace.append((hashlib.sha256(obs.tobytes()).hexdigest()[:16], info["step"]))
        trace.append(await root.call("legal_actions"))
        return trace


async def test_episodes_in_workers_play_exactly_as_in_process() -> None:
    with anyio.fail_after(WAIT):
        assert await pong_trace(workers=2) == await pong_trace(workers=0)


async def test_text_observations_and_env_tools_in_workers() -> None:
    with anyio.fail_after(WAIT):
        async with served("echo", 2, max_steps=3) as server, MCPEnvClient(server) as env:
            await env.reset(options={"greeting": "hi"})
            obs, reward, _, _, info = await env.step("hello")
            assert obs == "hello" and reward == pytest.approx(0.5) and info["step"] == 1
            assert (await env.call("history"))["messages"] == ["hi", "hello"]
            assert (await env.call("reward_rule"))["ends_on"] == "bye"
            answer = await env.session.call("step", {"action": "again"})
            assert "Observation: 'again'" in answer.text, answer.text  # made in the worker
            with pytest.raises(InvalidAction):  # parsed in the worker, by the episode's env
                await env.step(7)


async def test_a_crashed_worker_breaks_only_its_own_episodes() -> None:
    with anyio.fail_after(WAIT):
        async with served("faulty", 2) as server, MCPEnvClient(server) as root:
            group = [root, *(root.spawn() for _ in range(3))]
            for client in group:
                await client.reset()
            doomed = worker_of(server, group[0])
            same = [c for c in group[1:] if worker_of(server, c) is doomed]
            other = [c for c in group if worker_of(server, c) is not doomed]
            assert len(same) == 1 and len(other) == 2
            with pytest.raises(EnvCrashed, match="broken, call reset"):
                await group[0].step("exit")
            with pytest.raises(EnvCrashed):  # its neighbour went down with the worker
                await same[0].step("a")
            for client in other:  # the other worker's episodes never noticed
                assert (await client.step("fine"))[0] == "fine"
            for client in (group[0], same[0]):  # reset: a fresh env in a live worker
                await client.reset()
                assert (await client.step("back"))[0] == "back"
            assert all(w.alive for w in workers_of(server))
            # An env that raises breaks its episode, not its worker.
            with pytest.raises(EnvCrashed, match="RuntimeError in step"):
                await other[0].step("raise")
            assert (await other[1].step("still"))[0] == "still"


async def test_a_hung_worker_times_out_alone() -> None:
    with anyio.fail_after(WAIT):
        async with (
            served("faulty", 2, call_timeout=3) as server,
            MCPEnvClient(server) as stuck,
        ):
            await stuck.reset()
            other = stuck.spawn()
            await other.reset()
            assert worker_of(server, stuck) is not worker_of(server, other)
            began = time.monotonic()
            outcome: list[BaseException] = []

            async def freeze() -> None:
                with pytest.raises(EnvCallTimeout, match="timed out after 3s in step") as caught:
                    await stuck.step("freeze")
                outcome.append(caught.value)

            async with anyio.create_task_group() as group:
                group.start_soon(freeze)
                await anyio.sleep(0.5)
                assert (await other.step("answering"))[0] == "answering"
                assert not outcome  # answered while the other worker hung
            assert time.monotonic() - began < 30
            assert (await other.step("still answering"))[0] == "still answering"
            await stuck.reset()
            assert (await stuck.step("recovered"))[0] == "recovered"


@pytest.mark.parametrize("workers", [0, 2])
async def test_info_values_json_cannot_hold_arrive_as_text_with_or_without_workers(
    workers: int,
) -> None:
    """An env's odd info values (a lock, a generator) become their repr where the env
    lives, so they neither break a reply nor fail to cross a worker's pipe."""
    with anyio.fail_after(WAIT):
        async with served("faulty", workers) as server, MCPEnvClient(server) as env:
            await env.reset()
            neighbour = env.spawn()
            await neighbour.reset()
            async with anyio.create_task_group() as group:  # in one worker message, maybe
                group.start_soon(neighbour.step, "fine")
                obs, _, _, _, info = await env.step("odd")
            assert obs == "odd" and info["7"] == [0, 1, 2] and info["steps"] == 1
            assert "lock" in info["lock"] and "iterator" in info["gen"]
            assert (await env.step("next"))[4]["steps"] == 2  # the episode is fine
            assert (await neighbour.step("also"))[4]["steps"] == 2


async def test_concurrent_calls_on_shared_workers_each_get_their_own_answer() -> None:
    """Many episodes, two workers, every call in flight at once (and some given up by
    their callers mid-call): each answer is the one for its own call."""
    with anyio.fail_after(WAIT):
        async with served("faulty", 2) as server, MCPEnvClient(server) as root:
            group = [root, *(root.spawn() for _ in range(7))]
            for client in group:
                await client.reset()

            async def play(k: int, client: MCPEnvClient) -> None:
                for i in range(15):
                    obs, _, _, _, info = await client.step(f"{k}-{i}")
                    assert (obs, info["steps"]) == (f"{k}-{i}", i + 1)
                with anyio.move_on_after(0.05):  # give up on a slow call...
                    await client.step("sleep:0.3")
                await anyio.sleep(0.5)
                obs, _, _, _, info = await client.step(f"{k}-last")  # ...the pipe is in step
                assert obs == f"{k}-last" and info["steps"] in (16, 17)

            async with anyio.create_task_group() as tasks:
                for k, client in enumerate(group):
                    tasks.start_soon(play, k, client)
            assert all(w.alive for w in workers_of(server))


async def test_of_calls_queued_together_one_that_cannot_be_sent_fails_alone() -> None:
    with anyio.fail_after(WAIT):
        async with served("faulty", 1) as server, MCPEnvClient(server) as env:
            await env.reset()
            app = get_app(server)
            ref = app.table.episodes[env.episode_id].ref  # type: ignore[index]
            outcomes: dict[str, Any] = {}

            async def run(name: str, op: Op[Any]) -> None:
                (outcomes[name],) = await app.runtime.run([(ref, op)])

            async with anyio.create_task_group() as group:
                group.start_soon(run, "busy", Step("sleep:1", "none"))
                await anyio.sleep(0.1)  # the worker is busy: the next two queue together
                group.start_soon(run, "unsendable", CallTool("x", {"f": lambda: None}))
                group.start_soon(run, "fine", Look("none"))
            busy = outcomes["busy"]
            assert busy.view["observation"] == "sleep:1" and busy.view["reward"] == 1.0
            assert isinstance(outcomes["unsendable"], Exception)
            assert "pickle" in str(outcomes["unsendable"])
            assert not isinstance(outcomes["fine"], Exception)
            assert all(w.alive for w in workers_of(server))


@pytest.mark.parametrize("legality", ["mask", "parse"])
@pytest.mark.parametrize("workers", [0, 1])
async def test_what_is_legal_is_the_episodes_own_with_and_without_workers(
    legality: str, workers: int
) -> None:
    """OPEN is legal once this episode's door is unlocked: its own environment decides,
    in whichever process holds it (once, workers asked a never-played prototype)."""
    with anyio.fail_after(WAIT):
        async with (
            served("door", workers, legality=legality) as server,
            MCPEnvClient(server) as env,
        ):
            _, info = await env.reset()
            other = env.spawn()
            await other.reset()
            with pytest.raises(InvalidAction, match="not legal"):
                await env.step("OPEN")
            _, _, _, _, info = await env.step("UNLOCK")
            if legality == "mask":
                assert info["action_mask"].tolist() == [1, 1, 1]
                assert info["action_mask"].dtype == np.int8
                assert env.action_space.sample(mask=info["action_mask"]) in (0, 1, 2)
            obs, reward, terminated, _, _ = await env.step("OPEN")
            assert (obs, reward, terminated) == (1, 1.0, True)
            with pytest.raises(InvalidAction, match="not legal"):  # its door is still locked
                await other.step("OPEN")
            # a snapshot carries the state that makes OPEN legal
            await other.step("UNLOCK")
            snapshot = await other.snapshot()
            fork = env.spawn()
            await fork.reset(from_snapshot=snapshot)
            assert (await fork.step("OPEN"))[1] == 1.0


async def test_a_worker_start_is_not_held_to_the_call_timeout() -> None:
    """A worker takes about a second to start (an interpreter, numpy, ale-py); a call
    timeout shorter than that bounds calls, not the start (once: "internal error")."""
    with anyio.fail_after(WAIT):
        async with (
            served("atari", 1, game="pong", call_timeout=1.0) as server,
            MCPEnvClient(server) as env,
        ):
            obs, info = await env.reset(seed=0)
            assert obs.shape == (210, 160, 3) and info["step"] == 0
            assert (await env.step(0))[4]["step"] == 1
            (worker,) = workers_of(server)
            assert worker.start_seconds is not None and worker.start_seconds > 0


async def test_a_worker_that_does_not_start_in_time_fails_clearly() -> None:
    with anyio.fail_after(WAIT):
        async with (
            served("echo", 1, worker_start_timeout=0.01) as server,
            MCPEnvClient(server) as env,
        ):
            # The worker is most likely up by now: its start is judged from its spawn,
            # not from when the first call needs it (which made this pass or fail by the
            # machine's load).
            await anyio.sleep(2.0)
            with pytest.raises(EnvCrashed, match=r"did not start within 0\.01s"):
                await env.reset()


async def test_a_worker_that_cannot_import_the_env_says_why(tmp_path: Path) -> None:
    module = tmp_path / "vanishing_env.py"
    module.write_text(
        "from openenv_mcp_envs.echo import EchoEnv\n\n"
        "class VanishingEnv(EchoEnv):\n    name = 'vanishing'\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        from vanishing_env import VanishingEnv  # type: ignore[import-not-found]

        module.unlink()  # imported here; a worker will not find it
        with anyio.fail_after(WAIT):
            server = build_server(VanishingEnv, settings=ServerSettings(workers=1))
            try:
                async with MCPEnvClient(server) as env:
                    with pytest.raises(EnvCrashed, match=r"(?s)failed to start.*vanishing_env"):
                        await env.reset()
            finally:
                await get_app(server).aclose()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("vanishing_env", None)


def wait_gone(pids: set[int], timeout: float = 20.0) -> set[int]:
    """The pids still alive (not zombies) after waiting up to ``timeout``."""
    deadline = time.monotonic() + timeout
    alive = set(pids)
    while alive and time.monotonic() < deadline:
        for pid in list(alive):
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                state = "Z"
            if state == "Z":
                alive.discard(pid)
        time.sleep(0.1)
    return alive


@pytest.mark.parametrize("workers", ["0", "2"])
async def test_stdout_of_an_env_never_reaches_the_stdio_transport(workers: str) -> None:
    with anyio.fail_after(WAIT):
        command = faulty_env.serve_command(
            "--stdio", "--log-level", "WARNING", "--workers", workers
        )
        async with MCPEnvClient(command) as env:
            await env.reset()
            for _ in range(3):
                await env.step('print:{"jsonrpc": "2.0", "id": 1, "result": {}}')
            assert (await env.step("after"))[0] == "after"


@pytest.mark.parametrize("ending", ["eof", "sigterm"])
async def test_stdio_shutdown_closes_every_env_and_leaves_no_worker(
    ending: str, tmp_path: Path
) -> None:
    close_log = tmp_path / "closed.log"
    before = _children()
    with anyio.fail_after(WAIT):
        command = faulty_env.serve_command(
            "--stdio", "--workers", "2", "--log-level", "WARNING", "--close-log", str(close_log)
        )
        async with MCPEnvClient(command) as root:
            group = [root, *(root.spawn() for _ in range(3))]
            for client in group:
                await client.reset()
            await step_batch(group, ["a", "b", "c", "d"])
            (server,) = _children() - before
            workers = _children(server)
            assert len(workers) >= 2
            if ending == "sigterm":
                os.kill(server, signal.SIGTERM)
                assert not await anyio.to_thread.run_sync(wait_gone, {server})
    assert not wait_gone({server, *workers}), "a server or worker process outlived the server"
    assert close_log.read_text().count("closed") == 4 + 1  # and the server's prototype


def test_serve_refuses_a_negative_worker_count() -> None:
    result = subprocess.run(
        [*CLI, "serve", "echo", "--workers", "-1"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0 and "workers" in result.stderr
    assert result.stdout == ""
