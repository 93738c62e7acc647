"""Echo: the action is a message, the observation echoes it, the reward is its length.

Small, fast and complete: seeds (a seeded random ``nonce`` in ``info``),
per-episode options, truncation, termination, snapshots, an optional frame and
one tool of its own, so framework tests exercise every path without an emulator.
"""

from __future__ import annotations

import functools
import time
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from openenv_mcp.environment import Environment, EnvTool, Resources, Serving, StepResult
from openenv_mcp.errors import InvalidAction
from openenv_mcp.narration import Narration
from openenv_mcp.spaces import AnyText
from openenv_mcp.tasks import Ending, Split, Task, TaskSet
from openenv_mcp_envs.echo._openenv import EchoModels

MAX_MESSAGE = 4096
FRAME_SHAPE = (16, 16, 3)


class EchoConfig(BaseModel):
    """Options of the echo environment."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(100, ge=1, description="Steps before the episode is truncated.")
    reward_per_char: float = Field(0.1, description="Reward per character of the message.")
    frame: bool = Field(False, description="Render a 16x16 frame coloured by the message.")
    step_delay: float = Field(
        0.0,
        ge=0.0,
        le=10.0,
        description="Seconds each step blocks its server (a stand-in for an env whose step "
        "costs a fixed time, to measure scaling over replicas on a machine with few cores).",
    )


class EchoOptions(BaseModel):
    """Per-episode options of the echo environment."""

    model_config = ConfigDict(extra="forbid", strict=True)

    greeting: str = Field("", max_length=MAX_MESSAGE, description="The first observation.")


class EchoInfo(BaseModel):
    """What ``info`` holds."""

    length: int = Field(description="Characters in the last message.")
    nonce: int = Field(description="A seeded random draw per step.")


class EchoNarration(Narration["EchoEnv"]):
    def action_description(self) -> str:
        return "The message to echo ('bye' ends the episode)."


class EchoEnv(Environment[EchoConfig]):
    """Echoes each message; reward is ``reward_per_char * len(message)``; "bye" ends it."""

    name: ClassVar[str] = "echo"
    description: ClassVar[str] = (
        "Echo: step with a message, observe it back, reward from its length ('bye' ends)."
    )
    Config: ClassVar[type[BaseModel]] = EchoConfig
    Options = EchoOptions
    Info = EchoInfo
    # Microseconds of CPU per call, never blocks: no thread needed.
    serving = Serving(inline=True, resources=Resources(cpu=0.25, memory_mib=256, episodes=1024))
    narration = EchoNarration
    openenv_models = EchoModels

    def __init__(self, config: EchoConfig) -> None:
        super().__init__(config)
        self.action_space = AnyText(MAX_MESSAGE)
        self.observation_space = AnyText(MAX_MESSAGE)  # the last message, or the greeting
        self.render_mode = "rgb_array" if config.frame else None
        self._rng = np.random.default_rng()
        self._messages: list[str] = []
        self._steps = 0

    def parse_action(self, action: Any) -> str:
        if not isinstance(action, str):
            raise InvalidAction(
                f"expected a message string, got {type(action).__name__} {action!r}"
            )
        if len(action) > MAX_MESSAGE:
            raise InvalidAction(
                f"expected a message of at most {MAX_MESSAGE} characters, got {len(action)}"
            )
        return action

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        greeting = (options or {}).get("greeting", "")
        if seed is not None:  # unseeded, the stream goes on (Gymnasium's meaning)
            self._rng = np.random.default_rng(seed)
        self._messages = [greeting]
        self._steps = 0
        return greeting, {"length": len(greeting), "nonce": self._nonce()}

    def _nonce(self) -> int:
        return int(self._rng.integers(1 << 30))

    def step(self, action: Any) -> StepResult:
        if self.config.step_delay:
            time.sleep(self.config.step_delay)
        message = str(action)
        self._messages.append(message)
        self._steps += 1
        return StepResult(
            observation=message,
            reward=self.config.reward_per_char * len(message),
            terminated=message == "bye",
            truncated=self._steps >= self.config.max_steps and message != "bye",
            info={"length": len(message), "nonce": self._nonce()},
        )

    def task_set(self) -> TaskSet:
        return _echo_tasks(self.config.reward_per_char)

    def render(self) -> np.ndarray | None:
        if not self.config.frame:
            return None
        seed = sum(map(ord, self._messages[-1])) if self._messages else 0
        colour = np.array([seed % 256, (seed * 7) % 256, (seed * 13) % 256], dtype=np.uint8)
        return np.broadcast_to(colour, FRAME_SHAPE).copy()

    def snapshot(self) -> Any:
        return (list(self._messages), self._steps, self._rng.bit_generator.state)

    def restore(self, snapshot: Any) -> None:
        messages, steps, rng_state = snapshot
        self._messages, self._steps = list(messages), steps
        self._rng = np.random.default_rng()
        self._rng.bit_generator.state = rng_state

    def tools(self) -> list[EnvTool]:
        return [
            EnvTool(
                name="history",
                description="The messages of this episode so far, oldest first.",
                kind="episode",
                handler=lambda env, _args: {"messages": list(env._messages)},
            ),
            EnvTool(
                name="reward_rule",
                description="How the echo environment computes rewards.",
                kind="static",
                handler=lambda env, _args: {
                    "reward_per_char": env.config.reward_per_char,
                    "ends_on": "bye",
                    "max_steps": env.config.max_steps,
                },
            ),
        ]


#: The echo tasks' greetings: a split's task ``i`` greets with ``i``'s word.
_WORDS = {
    "train": ("hi", "hello", "good morning", "ahoy", "greetings, traveller", "hey", "salut", "yo"),
    "test": ("bonjour", "howdy", "good evening, friend", "hallo"),
}


class EchoTasks(TaskSet):
    """Echo the greeting, then say "bye": success is an episode that ended with "bye"
    and earned at least the reward of the greeting and "bye" (a framework test set:
    a policy that echoes succeeds, one that only says "bye" does not)."""

    def __init__(self, reward_per_char: float) -> None:
        self.reward_per_char = reward_per_char
        self._tasks = {
            split: [
                Task(
                    f"echo-{split}-{i}",
                    seed=i,
                    options={"greeting": word},
                    difficulty="short" if len(word) <= 5 else "long",
                    data={"greeting": word},
                )
                for i, word in enumerate(words)
            ]
            for split, words in _WORDS.items()
        }

    def splits(self) -> list[Split]:
        return [Split("train", "train"), Split("test", "test")]

    def tasks(self, split: str) -> list[Task]:
        return self._tasks[split]

    def success(self, task: Task, ending: Ending) -> bool:
        greeting = str(task.options["greeting"])
        needed = self.reward_per_char * (len(greeting) + len("bye"))
        return ending.terminated and ending.env_return >= needed - 1e-9


@functools.cache
def _echo_tasks(reward_per_char: float) -> EchoTasks:
    return EchoTasks(reward_per_char)
