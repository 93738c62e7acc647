"""ActionMask alone: actions parsed by the episode's own env, held to its mask, and the
actions legal now."""

from __future__ import annotations

import pytest

from openenv_mcp.errors import InvalidAction
from openenv_mcp.pipeline import LegalActions
from openenv_mcp.pipeline.core import EnvCore
from openenv_mcp.pipeline.mask import ActionMask
from tests.door_env import DoorConfig, DoorEnv
from tests.pipeline._calls import reset, step


def _mask(legality: str = "mask") -> ActionMask:
    return ActionMask(EnvCore(DoorEnv(DoorConfig(legality=legality)), "ep_door"))


def _legal(layer: ActionMask) -> list[int]:
    return [a["id"] for a in layer.legal_actions(LegalActions())["actions"]]


def test_the_mask_refuses_what_it_marks_and_names_what_is_legal() -> None:
    layer = _mask()
    assert _legal(layer) == [0, 1, 2]  # before the first reset: every action
    reset(layer)
    assert layer.legal_now() == [0, 2] and _legal(layer) == [0, 2]
    with pytest.raises(InvalidAction, match=r"action 1 is not legal now .* 0=UNLOCK, 2=WAIT"):
        step(layer, "OPEN")
    assert layer.episode.step == 0  # refused before the env stepped
    step(layer, "unlock")
    assert layer.legal_now() == [0, 1, 2]
    assert step(layer, 1).terminated


def test_without_a_mask_the_envs_own_parse_decides() -> None:
    layer = _mask("parse")
    reset(layer)
    assert layer.legal_now() is None and _legal(layer) == [0, 1, 2]
    with pytest.raises(InvalidAction, match="UNLOCK it first"):
        step(layer, "OPEN")
    with pytest.raises(InvalidAction, match="not legal"):
        step(layer, 7)
