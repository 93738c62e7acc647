"""MCPVectorEnv: Gymnasium's VectorEnv over N episodes, autoreset modes, batching hook."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from openenv_mcp.client import MCPVectorEnv, Session
from openenv_mcp.errors import ArgumentError, InvalidAction
from openenv_mcp.server import get_app
from tests.servers import memory_server, stdio_command


@pytest.fixture
def tool_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every tool the clients call, in order."""
    calls: list[str] = []
    original = Session.call

    async def spy(self: Session, tool: str, args: dict[str, Any]) -> Any:
        calls.append(tool)
        return await original(self, tool, args)

    monkeypatch.setattr(Session, "call", spy)
    return calls


def test_reset_and_step_batch_the_episodes() -> None:
    envs = MCPVectorEnv(memory_server("echo"), num_envs=3)
    try:
        assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
        obs, infos = envs.reset(seed=0, options={"greeting": "g"})
        assert obs == ("g", "g", "g")
        assert infos["step"].tolist() == [0, 0, 0] and infos["_step"].all()
        assert len(set(infos["episode_id"])) == 3
        obs, rewards, terminations, truncations, infos = envs.step(("a", "bb", "ccc"))
        assert obs == ("a", "bb", "ccc")
        assert rewards.dtype == np.float64 and rewards == pytest.approx([0.1, 0.2, 0.3])
        assert not terminations.any() and not truncations.any()
        histories = envs.call("history")
        assert [h["messages"] for h in histories] == [["g", "a"], ["g", "bb"], ["g", "ccc"]]
        assert envs.get_attr("episode_id") == tuple(infos["episode_id"])
    finally:
        envs.close()
    assert envs.closed


def test_next_step_autoreset() -> None:
    envs = MCPVectorEnv(memory_server("echo", "--max-steps", "2"), num_envs=2)
    try:
        envs.reset(seed=1)
        envs.step(("a", "a"))
        _, _, terminations, truncations, _ = envs.step(("bye", "b"))
        assert terminations.tolist() == [True, False] and truncations.tolist() == [False, True]
        # the next step resets both instead of acting: first observation, reward 0
        obs, rewards, terminations, truncations, infos = envs.step(("ignored", "ignored"))
        assert obs == ("", "") and rewards.tolist() == [0.0, 0.0]
        assert not terminations.any() and not truncations.any()
        assert infos["step"].tolist() == [0, 0]
        obs, *_ = envs.step(("x", "y"))
        assert obs == ("x", "y")
    finally:
        envs.close()


def test_same_step_autoreset() -> None:
    envs = MCPVectorEnv(memory_server("echo"), num_envs=2, autoreset_mode="SameStep")
    try:
        envs.reset(seed=1, options={"greeting": "hello"})
        obs, rewards, terminations, _, infos = envs.step(("bye", "stay"))
        assert terminations.tolist() == [True, False]
        assert obs == ("", "stay")  # already reset: its first observation
        assert rewards == pytest.approx([0.3, 0.4])
        assert infos["_final_obs"].tolist() == [True, False]
        assert infos["final_obs"][0] == "bye" and infos["final_info"]["step"][0] == 1
        obs, *_ = envs.step(("again", "more"))
        assert obs == ("again", "more")
    finally:
        envs.close()


def test_disabled_autoreset_needs_a_reset_mask() -> None:
    envs = MCPVectorEnv(memory_server("echo"), num_envs=2, autoreset_mode=AutoresetMode.DISABLED)
    try:
        envs.reset(seed=1)
        envs.step(("bye", "x"))
        with pytest.raises(ArgumentError, match=r"episodes \[0\].*reset_mask"):
            envs.step(("a", "b"))
        obs, infos = envs.reset(options={"reset_mask": np.array([True, False])})
        assert obs[0] == "" and infos["_step"].tolist() == [True, False]
        obs, *_ = envs.step(("a", "b"))
        assert obs == ("a", "b")
    finally:
        envs.close()


def test_seeded_runs_repeat_through_autoresets() -> None:
    def run() -> list[Any]:
        envs = MCPVectorEnv(memory_server("echo", "--max-steps", "2"), num_envs=2)
        try:
            trace = [envs.reset(seed=4)[1]["nonce"].tolist()]
            for _ in range(7):  # three autoresets each
                trace.append(envs.step(("a", "b"))[4]["nonce"].tolist())
            return trace
        finally:
            envs.close()

    assert run() == run()


def test_episodes_spread_over_several_targets() -> None:
    servers = [memory_server("echo"), memory_server("echo")]
    envs = MCPVectorEnv(targets=servers, num_envs=5)
    try:
        envs.reset(seed=0)
        live = [len(get_app(s).table.episodes) for s in servers]
        assert live == [3, 2]  # round-robin
        obs, *_ = envs.step(tuple("abcde"))
        assert obs == tuple("abcde")
    finally:
        envs.close()
    assert [len(get_app(s).table.episodes) for s in servers] == [0, 0]
    with pytest.raises(ArgumentError, match="one server as target"):
        MCPVectorEnv(servers[0], targets=servers)


def test_a_snapshot_forks_a_group() -> None:
    envs = MCPVectorEnv(memory_server("echo"), num_envs=4)
    try:
        envs.reset(seed=3, options={"greeting": "prompt"})
        envs.step(tuple("wxyz"))
        snapshot = envs.snapshot(2)
        obs, infos = envs.reset(options={"from_snapshot": snapshot})
        assert obs == ("y",) * 4 and infos["step"].tolist() == [1] * 4
        _, _, _, _, infos = envs.step(("same",) * 4)
        assert len(set(infos["nonce"].tolist())) == 1  # identical starts, identical steps
    finally:
        envs.close()


def test_one_step_batch_call_per_server_per_step(tool_calls: list[str]) -> None:
    def run(batch: bool) -> list[Any]:
        envs = MCPVectorEnv(memory_server("echo", "--max-steps", "2"), num_envs=3, batch=batch)
        try:
            trace = [envs.reset(seed=8)[1]["nonce"].tolist()]
            for _ in range(4):
                obs, rewards, _, truncations, infos = envs.step(("a", "bb", "ccc"))
                trace.append([obs, rewards.tolist(), truncations.tolist(), infos["nonce"].tolist()])
            return trace
        finally:
            envs.close()

    batched = run(batch=True)
    assert tool_calls.count("step_batch") == 3 and "step" not in tool_calls
    tool_calls.clear()
    assert run(batch=False) == batched  # the same episodes, call for call
    assert tool_calls.count("step") == 9 and "step_batch" not in tool_calls


@pytest.mark.parametrize("batch", [True, False])
def test_one_bad_action_fails_the_step_not_the_others(batch: bool) -> None:
    envs = MCPVectorEnv(memory_server("echo"), num_envs=3, batch=batch)
    try:
        envs.reset(options={"greeting": "g"})
        with pytest.raises(InvalidAction, match="got int 5"):
            envs.step(("a", 5, "c"))
        # the others stepped, and the vector knows it
        assert [h["messages"] for h in envs.call("history")] == [["g", "a"], ["g"], ["g", "c"]]
    finally:
        envs.close()


def test_batched_png_frames() -> None:
    pytest.importorskip("ale_py")
    envs = MCPVectorEnv(memory_server("atari", "--game", "pong"), num_envs=2, frames="png")
    try:
        raw = MCPVectorEnv(memory_server("atari", "--game", "pong"), num_envs=2)
        try:
            assert np.array_equal(envs.reset(seed=3)[0], raw.reset(seed=3)[0])
            for action in ([1, 2], [3, 0]):
                assert np.array_equal(envs.step(np.array(action))[0], raw.step(np.array(action))[0])
        finally:
            raw.close()
    finally:
        envs.close()


def test_render_gives_each_frame() -> None:
    envs = MCPVectorEnv(memory_server("echo", "--frame"), num_envs=2, render_mode="rgb_array")
    try:
        envs.reset(options={"greeting": "a"})
        frames = envs.render()
        assert frames is not None and len(frames) == 2
        assert all(f.shape == (16, 16, 3) for f in frames)
    finally:
        envs.close()


@pytest.mark.integration
def test_vector_over_stdio() -> None:
    envs = MCPVectorEnv(stdio_command("echo"), num_envs=3)
    try:
        obs, _ = envs.reset(seed=0)
        obs, rewards, *_ = envs.step(("a", "b", "c"))
        assert obs == ("a", "b", "c") and rewards == pytest.approx([0.1] * 3)
    finally:
        envs.close()


@pytest.mark.parametrize("recover", ["reset", "replay"])
def test_an_episode_the_server_lost_is_recovered(recover: str) -> None:
    """The server forgets episode 0 (as a dead replica or a restarted server does): with
    recover="reset" it ends truncated and autoreset starts a new one; with "replay" it is
    rebuilt from its seed and actions and the step happens, as if nothing was lost."""
    envs = MCPVectorEnv(memory_server("echo"), num_envs=2, recover=recover)  # type: ignore[arg-type]
    reference = MCPVectorEnv(memory_server("echo"), num_envs=2)
    try:
        envs.reset(seed=3)
        reference.reset(seed=3)
        for word in ("a", "bb"):
            envs.step([word, word])
            reference.step([word, word])
        lost = envs.get_attr("episode_id")[0]
        session = envs.episodes[0].session
        envs._loop.run(session.call, "close", {"episode_id": lost})  # the server forgets it
        obs, rewards, _, truncated, infos = envs.step(["ccc", "ccc"])
        ref_obs, ref_rewards, *_, ref_infos = reference.step(["ccc", "ccc"])
        if recover == "replay":
            assert list(obs) == list(ref_obs) and np.allclose(rewards, ref_rewards)
            assert not truncated.any() and infos["episode_recovered"][0]
            assert (infos["nonce"] == ref_infos["nonce"]).all()  # the seeded draws replayed
            assert infos["step"][0] == 3
        else:
            assert truncated.tolist() == [True, False] and infos["episode_lost"][0]
            assert obs[0] == "bb" and rewards[0] == 0.0  # its last observation, no reward
            obs, _, _, truncated, infos = envs.step(["d", "d"])  # NEXT_STEP: reset
            assert infos["step"][0] == 0 and infos["step"][1] == 4
        assert envs.get_attr("episode_id")[0] != lost
    finally:
        envs.close()
        reference.close()
