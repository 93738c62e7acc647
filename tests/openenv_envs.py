"""OpenEnv environments written against the real openenv-core package, for the bridge's
tests: served in this process (``serve openenv --env tests.openenv_envs:...``) and by
OpenEnv's own server (``tests/openenv_apps.py``).

* :class:`CountEnvironment`: seeded, a rubric with two named parts, a 4x4 picture as a
  flat pixel list beside its shape (as OpenEnv's Atari env sends its screen), ``done``
  on "bye" and truncation (in its metadata) after :data:`MAX_STEPS`.
* :class:`ToolsEnvironment`: an OpenEnv MCP environment (FastMCP tools, actions are
  ``CallToolAction``): ``add``, ``picture`` (returns an image), ``finish`` (ends it,
  rewarded when the answer is right).
"""

from __future__ import annotations

import random
from typing import Any
from uuid import uuid4

from fastmcp import FastMCP
from fastmcp.utilities.types import Image
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Action, Observation, State
from openenv.core.rubrics import Rubric
from pydantic import Field, field_validator

MAX_STEPS = 5
#: A 1x1 red PNG, the ``picture`` tool's answer.
RED_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408"
    "d763f8cfc00000030101003f1d5f590000000049454e44ae426082"
)


class CountAction(Action):
    """Say something (but not "forbidden": a rule only the model's validator knows)."""

    message: str = Field(..., min_length=1, max_length=64, description="What to say.")

    @field_validator("message")
    @classmethod
    def _allowed(cls, message: str) -> str:
        if message == "forbidden":
            raise ValueError("that word is not allowed")
        return message


class CountObservation(Observation):
    """What was said, how many times, a seeded draw and a tiny picture."""

    echoed: str = Field(default="", description="The last message.")
    count: int = Field(default=0, description="Messages so far.")
    nonce: int = Field(default=0, description="A seeded random draw.")
    screen: list[int] = Field(default_factory=list, description="4x4 RGB pixels, flat.")
    screen_shape: list[int] = Field(default_factory=lambda: [4, 4, 3])


class Polite(Rubric):
    def forward(self, action: Any, observation: Any) -> float:
        return 1.0 if "please" in action.message.lower() else 0.0


class Brief(Rubric):
    def forward(self, action: Any, observation: Any) -> float:
        return 1.0 if len(action.message) <= 10 else 0.0


class CountRubric(Rubric):
    """Half for politeness, half for brevity."""

    def __init__(self) -> None:
        super().__init__()
        self.polite = Polite()
        self.brief = Brief()

    def forward(self, action: Any, observation: Any) -> float:
        return 0.5 * self.polite(action, observation) + 0.5 * self.brief(action, observation)


class CountEnvironment(Environment):  # type: ignore[type-arg]
    """Counts messages; rewards polite, brief ones; 'bye' ends it."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__(rubric=CountRubric())
        self._rng = random.Random()
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def _observe(self, message: str) -> CountObservation:
        shade = (self._state.step_count * 40) % 256
        return CountObservation(
            echoed=message,
            count=self._state.step_count,
            nonce=self._rng.randrange(1 << 30),
            screen=[shade, 255 - shade, 7] * 16,
        )

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        greeting: str = "ready",
        **kwargs: Any,
    ) -> CountObservation:
        self._rng = random.Random(seed)
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        self._reset_rubric()
        return self._observe(greeting)

    def step(  # type: ignore[override]
        self, action: CountAction, timeout_s: float | None = None, **kwargs: Any
    ) -> CountObservation:
        self._state.step_count += 1
        observation = self._observe(action.message)
        observation.reward = self._apply_rubric(action, observation)
        observation.done = action.message == "bye" or self._state.step_count >= MAX_STEPS
        if self._state.step_count >= MAX_STEPS and action.message != "bye":
            observation.metadata = {"truncated": True}
        return observation

    @property
    def state(self) -> State:
        return self._state


class Unannotated(CountEnvironment):
    """The same, its step naming no models (they must be given: --action, --observation)."""

    def step(self, action, timeout_s=None, **kwargs):  # type: ignore[no-untyped-def]
        return super().step(action, timeout_s, **kwargs)


class ToolsEnvironment(MCPEnvironment):
    """An MCP environment: add numbers, look at a picture, finish with an answer."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        mcp = FastMCP("tools")

        @mcp.tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @mcp.tool
        def picture() -> Image:
            """A tiny red picture."""
            return Image(data=RED_PNG, format="png")

        @mcp.tool
        def finish(answer: str) -> str:
            """End the episode with an answer (the right one is 42)."""
            return f"answered {answer}"

        super().__init__(mcp)
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> Observation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return Observation(done=False, reward=0.0)

    def step(  # type: ignore[override]
        self, action: Action, timeout_s: float | None = None, **kwargs: Any
    ) -> Observation:
        self._state.step_count += 1
        observation = super().step(action, timeout_s=timeout_s, **kwargs)
        if isinstance(action, CallToolAction) and action.tool_name == "finish":
            observation.done = True
            observation.reward = 1.0 if action.arguments.get("answer") == "42" else 0.0
        return observation

    async def step_async(  # type: ignore[override]
        self, action: Action, timeout_s: float | None = None, **kwargs: Any
    ) -> Observation:
        self._state.step_count += 1
        observation = await super().step_async(action, timeout_s=timeout_s, **kwargs)
        if isinstance(action, CallToolAction) and action.tool_name == "finish":
            observation.done = True
            observation.reward = 1.0 if action.arguments.get("answer") == "42" else 0.0
        return observation

    def _step_impl(
        self, action: Action, timeout_s: float | None = None, **kwargs: Any
    ) -> Observation:
        return Observation(done=False, reward=0.0, metadata={"error": "call a tool"})

    @property
    def state(self) -> State:
        return self._state


__all__ = [
    "CallToolAction",
    "CallToolObservation",
    "CountAction",
    "CountEnvironment",
    "CountObservation",
    "ToolsEnvironment",
    "Unannotated",
]
