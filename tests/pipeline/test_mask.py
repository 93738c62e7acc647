"""ActionMask alone: actions parsed by the episode's own env and held to its mask."""

from __future__ import annotations

import pytest

from openenv_mcp.errors import InvalidAction
from openenv_mcp.pipeline.core import EnvCore
from openenv_mcp.pipeline.mask import ActionMask
from tests.door_env import DoorConfig, DoorEnv


def _mask(legality: str = "mask") -> ActionMask:
    return ActionMask(EnvCore(DoorEnv(DoorConfig(legality=legality)), "ep_door"))


def test_the_mask_refuses_what_it_marks_and_names_what_is_legal() -> None:
    layer = _mask()
    layer.reset(None, None)
    assert layer.legal_now() == [0, 2]
    with pytest.raises(InvalidAction, match=r"action 1 is not legal now .* 0=UNLOCK, 2=WAIT"):
        layer.step("OPEN")
    assert layer.episode.step == 0  # refused before the env stepped
    layer.step("unlock")
    assert layer.legal_now() == [0, 1, 2]
    assert layer.step(1).terminated


def test_without_a_mask_the_envs_own_parse_decides() -> None:
    layer = _mask("parse")
    layer.reset(None, None)
    assert layer.legal_now() is None
    with pytest.raises(InvalidAction, match="UNLOCK it first"):
        layer.step("OPEN")
    with pytest.raises(InvalidAction, match="not legal"):
        layer.step(7)
