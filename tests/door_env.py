"""A test-only environment whose legal actions depend on its state: a locked door.

``UNLOCK`` then ``OPEN`` (reward 1, the episode ends); ``OPEN`` is illegal while
the door is locked. With ``--legality mask`` (the default) the env says so the
Gymnasium way, ``info["action_mask"]``; with ``--legality parse`` its own
``parse_action`` refuses it, as an env with a rule no mask can hold would
(chess). Either way only this episode's own environment knows what is legal:
a server must ask it, with or without worker processes.

Registered in-process with :func:`register`; a server subprocess finds it by
``module:Class`` (``tests.door_env:DoorEnv``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from gymnasium import spaces
from pydantic import BaseModel, ConfigDict, Field

from openenv_mcp.environment import ActionSet, Environment, Serving, StepResult
from openenv_mcp.errors import InvalidAction
from openenv_mcp.registry import register as register_env

__all__ = ["REFERENCE", "DoorEnv", "register"]

REFERENCE = "tests.door_env:DoorEnv"


def register() -> None:
    """Register the door env in this process under the name ``"door"``."""
    register_env("door", REFERENCE)


class DoorConfig(BaseModel):
    """Options of the door environment."""

    model_config = ConfigDict(extra="forbid")

    legality: Literal["mask", "parse"] = Field(
        "mask", description="How the env says OPEN is illegal: info.action_mask, or parse_action."
    )


class DoorEnv(Environment[DoorConfig]):
    """Unlock the door, then open it."""

    name: ClassVar[str] = "door"
    description: ClassVar[str] = "Test env: OPEN is legal only once the door is unlocked."
    Config: ClassVar[type[BaseModel]] = DoorConfig
    serving = Serving(inline=True)

    def __init__(self, config: DoorConfig) -> None:
        super().__init__(config)
        self.action_set = ActionSet.from_names(["UNLOCK", "OPEN", "WAIT"])
        self.action_space = spaces.Discrete(3)
        self.observation_space = spaces.Discrete(2)  # 0 locked, 1 unlocked
        self.unlocked = False

    def _info(self) -> dict[str, Any]:
        if self.config.legality != "mask":
            return {}
        return {"action_mask": np.array([1, int(self.unlocked), 1], dtype=np.int8)}

    def parse_action(self, action: Any) -> Any:
        value = super().parse_action(action)
        if self.config.legality == "parse" and value == 1 and not self.unlocked:
            raise InvalidAction("OPEN is not legal while the door is locked; UNLOCK it first")
        return value

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        self.unlocked = False
        return 0, self._info()

    def step(self, action: Any) -> StepResult:
        opened = int(action) == 1
        if int(action) == 0:
            self.unlocked = True
        return StepResult(int(self.unlocked), float(opened), opened, False, self._info())

    def snapshot(self) -> Any:
        return self.unlocked

    def restore(self, snapshot: Any) -> None:
        self.unlocked = bool(snapshot)
