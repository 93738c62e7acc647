"""OrderEnforcing alone: nothing before reset, no step after the end."""

from __future__ import annotations

import pytest

from openenv_mcp.errors import ResetNeeded
from openenv_mcp.pipeline import Summary
from openenv_mcp.pipeline.core import EnvCore
from openenv_mcp.pipeline.order import OrderEnforcing
from openenv_mcp_envs.echo import EchoEnv
from tests.pipeline._calls import call_tool, look, reset, snapshot, step


def _order(**config: object) -> OrderEnforcing:
    return OrderEnforcing(EnvCore(EchoEnv(EchoEnv.Config(**config)), "ep_test"))


def test_nothing_before_reset_names_the_call_and_the_episode() -> None:
    layer = _order()
    calls = (
        lambda: step(layer, "hi"),
        lambda: look(layer),
        lambda: snapshot(layer),
        lambda: layer.summary(Summary()),
    )
    for call in calls:
        with pytest.raises(
            ResetNeeded, match=r"before reset: call reset first \(episode ep_test\)"
        ):
            call()
    with pytest.raises(ResetNeeded, match="history before reset"):
        call_tool(layer, "history")


def test_no_step_after_the_end_but_look_and_snapshot_still_work() -> None:
    layer = _order(max_steps=2)
    reset(layer, 0)
    step(layer, "a")
    assert step(layer, "b").truncated
    with pytest.raises(ResetNeeded, match=r"has ended \(truncated at step 2, return 0\)"):
        step(layer, "c")
    assert look(layer).truncated and snapshot(layer).step == 2
    assert layer.summary(Summary())["steps"] == 2
    reset(layer, 1)
    assert step(layer, "again").observation == "again"
