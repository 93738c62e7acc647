"""Operations are typed values that pickle and say what they run."""

from __future__ import annotations

import pickle

from openenv_mcp.pipeline import (
    CallTool,
    Close,
    EpisodePipeline,
    LegalActions,
    Look,
    Reset,
    Restore,
    Snapshot,
    Step,
    Summary,
)
from openenv_mcp.server.episodes._runtime import run_calls
from openenv_mcp_envs.echo import EchoEnv


def test_ops_pickle_and_run_the_same_on_any_pipeline() -> None:
    episode = EpisodePipeline(EchoEnv(EchoEnv.Config()), "ep_ops")
    ops = [Reset(1, None, "none"), Step("hi", "none", 2), Look("none"), Snapshot()]
    ops = [pickle.loads(pickle.dumps(op)) for op in ops]  # as a worker receives them
    reset, stepped, looked, saved = run_calls([episode] * len(ops), ops)
    assert reset.view["step"] == 0 and stepped.view["repeated"] == 2
    assert looked.view["step"] == 2 and saved.step == 2
    restored, summary, history, legal, closed = run_calls(
        [episode] * 5,
        [Restore(saved, "none"), Summary(), CallTool("history", None), LegalActions(), Close()],
    )
    assert restored.view["step"] == 2 and summary["steps"] == 2
    assert history == {"messages": ["", "hi", "hi"]} and closed is None
    assert legal == {"actions": []}  # free text: no actions to list


def test_what_an_op_raises_is_its_outcome_not_the_batchs() -> None:
    episode = EpisodePipeline(EchoEnv(EchoEnv.Config()), "ep_err")
    first, second = run_calls(
        [episode, episode], [Step("too soon", "none"), Reset(0, None, "none")]
    )
    assert type(first).__name__ == "ResetNeeded" and second.view["status"] == "running"
    assert [op.tool for op in (Step("x", "none"), CallTool("history", None))] == ["step", "history"]


def test_a_step_carries_the_call_a_recording_names() -> None:
    assert Step("FIRE", "none").call == {"tool": "step", "arguments": {"action": "FIRE"}}
    repeated = Step("FIRE", "none", repeat=3)
    assert repeated.call == {"tool": "step", "arguments": {"action": "FIRE", "repeat": 3}}
    assert Step("FIRE", "none", repeat=3, held=True).call is None  # a repeat's later steps
