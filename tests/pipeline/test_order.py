"""OrderEnforcing alone: nothing before reset, no step after the end."""

from __future__ import annotations

import pytest

from openenv_mcp.errors import ResetNeeded
from openenv_mcp.pipeline.core import EnvCore
from openenv_mcp.pipeline.order import OrderEnforcing
from openenv_mcp_envs.echo import EchoEnv


def _order(**config: object) -> OrderEnforcing:
    return OrderEnforcing(EnvCore(EchoEnv(EchoEnv.Config(**config)), "ep_test"))


def test_nothing_before_reset_names_the_call_and_the_episode() -> None:
    layer = _order()
    for call in (lambda: layer.step("hi"), layer.look, layer.snapshot):
        with pytest.raises(
            ResetNeeded, match=r"before reset: call reset first \(episode ep_test\)"
        ):
            call()
    with pytest.raises(ResetNeeded, match="history before reset"):
        layer.call_tool("history", None)


def test_no_step_after_the_end_but_look_and_snapshot_still_work() -> None:
    layer = _order(max_steps=2)
    layer.reset(0, None)
    layer.step("a")
    assert layer.step("b").truncated
    with pytest.raises(ResetNeeded, match=r"has ended \(truncated at step 2, return 0\)"):
        layer.step("c")
    assert layer.look().truncated and layer.snapshot().step == 2
    layer.reset(1, None)
    assert layer.step("again").observation == "again"
