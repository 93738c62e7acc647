"""Reasoning: one question of a reasoning-gym dataset per episode, one answer, scored.

The observation is the question (text). ``step(answer)`` scores the answer with the
dataset's own ``score_answer`` (0-1: 1 is right, some datasets give partial credit), the
score is the reward, and the episode ends: one answer per question, as reasoning-gym
scores a completion's final answer (and as OpenEnv's reasoning_gym env serves it).

Which question: ``reset(options={"dataset", "level", "entry"})`` with a seed picks entry
``entry`` of that dataset at that curriculum level, made with that seed (what the task
set's tasks do); what is left out is drawn from the seed (the dataset and level among
the configured ones, entry 0), and without a seed from the env's own stream.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from openenv_mcp.environment import Environment, Resources, Serving, StepResult
from openenv_mcp.errors import ArgumentError, InvalidAction, ResetNeeded, UnsupportedOption
from openenv_mcp.spaces import AnyText
from openenv_mcp.tasks import TaskSet
from openenv_mcp_envs.reasoning._narration import ReasoningNarration
from openenv_mcp_envs.reasoning._problems import (
    DATASET_SIZE,
    DEFAULT_DATASETS,
    check_dataset,
    dataset_names,
    make_problem,
    score,
    top_level,
)
from openenv_mcp_envs.reasoning._tasks import reasoning_tasks

__all__ = [
    "MAX_ANSWER",
    "MAX_QUESTION",
    "ReasoningConfig",
    "ReasoningEnv",
    "ReasoningOptions",
    "ReasoningSnapshot",
]

#: The longest answer read (reasoning-gym's answers are a number, a word list, a grid).
MAX_ANSWER = 10_000
#: The longest question served (the default datasets' are under 2,000 characters).
MAX_QUESTION = 1_000_000
#: Unset options: never passed to reset, which takes only the options the caller set.
_UNSET: Any = None


class ReasoningConfig(BaseModel):
    """Options of the reasoning environment."""

    model_config = ConfigDict(extra="forbid")

    datasets: list[str] = Field(
        default_factory=lambda: list(DEFAULT_DATASETS),
        min_length=1,
        max_length=200,
        description="reasoning-gym datasets to serve (repeat the flag; default: "
        f"{', '.join(DEFAULT_DATASETS)}). Any of its datasets with a curriculum.",
    )
    levels: list[int] = Field(
        default_factory=lambda: [0, 1, 2],
        min_length=1,
        max_length=50,
        description="Curriculum levels to serve, the difficulties of the task set (repeat "
        "the flag). Level L is reasoning-gym's curriculum at global level L, drawing from "
        "its levels 0 to L.",
    )
    train_size: int = Field(
        1000, ge=0, le=DATASET_SIZE, description="Train tasks per dataset and level."
    )
    validation_size: int = Field(
        100, ge=0, le=DATASET_SIZE, description="Validation tasks per dataset and level."
    )
    test_size: int = Field(
        100, ge=0, le=DATASET_SIZE, description="Test tasks per dataset and level."
    )

    @field_validator("datasets")
    @classmethod
    def _distinct_datasets(cls, datasets: list[str]) -> list[str]:
        if len(set(datasets)) != len(datasets):
            raise ValueError(f"each dataset once, got {datasets}")
        return datasets

    @field_validator("levels")
    @classmethod
    def _distinct_levels(cls, levels: list[int]) -> list[int]:
        if len(set(levels)) != len(levels) or min(levels) < 0:
            raise ValueError(f"distinct levels from 0, got {levels}")
        return levels


class ReasoningOptions(BaseModel):
    """Per-episode options of the reasoning environment."""

    model_config = ConfigDict(extra="forbid", strict=True)

    dataset: str = Field(
        _UNSET,
        max_length=64,
        description="The reasoning-gym dataset (default: drawn from the configured ones).",
    )
    level: int = Field(
        _UNSET,
        ge=0,
        le=100,
        description="The curriculum level (default: drawn from the configured ones).",
    )
    # Not "index": reset's "split" and "index" name a task.
    entry: int = Field(
        _UNSET,
        ge=0,
        lt=DATASET_SIZE,
        description="Which entry of the dataset made with the reset's seed (default 0).",
    )


class ReasoningInfo(BaseModel):
    """What ``info`` holds."""

    dataset: str = Field(description="The reasoning-gym dataset of the question.")
    level: int = Field(description="Its curriculum level.")
    seed: int = Field(description="The seed its dataset was made with.")
    entry: int = Field(description="The entry of that dataset.")
    answered: bool = Field(description="The answer was given (the episode is over).")
    score: float | None = Field(
        description="reasoning-gym's score of the answer, 0-1 (None until answered)."
    )


@dataclass(frozen=True)
class ReasoningSnapshot:
    """An episode: which problem, whether and how it was answered, and the env's stream."""

    dataset: str
    level: int
    seed: int
    index: int
    score: float | None
    rng_state: dict[str, Any]


class ReasoningEnv(Environment[ReasoningConfig]):
    """One reasoning-gym question per episode; the answer's score is the reward."""

    name: ClassVar[str] = "reasoning"
    description: ClassVar[str] = (
        "Reasoning problems from reasoning-gym (arithmetic, counting, sorting, puzzles): "
        "one question an episode, one answer, scored 0-1 by the dataset's own checker."
    )
    Config: ClassVar[type[BaseModel]] = ReasoningConfig
    Options = ReasoningOptions
    Info = ReasoningInfo
    # Generating or scoring a question takes 0.01-3 ms (a dataset's first, up to 100 ms):
    # short and bounded, no I/O past reasoning-gym's own data files.
    serving = Serving(
        inline=False,
        action_tools=False,
        reward_range=(0.0, 1.0),
        resources=Resources(cpu=0.5, memory_mib=512, episodes=1024),
    )
    narration = ReasoningNarration

    def __init__(self, config: ReasoningConfig) -> None:
        super().__init__(config)
        for name in config.datasets:
            for level in config.levels:
                check_dataset(name, level)
        self.action_space = AnyText(MAX_ANSWER)
        self.observation_space = AnyText(MAX_QUESTION)
        self._rng = np.random.default_rng()
        self._problem: tuple[str, int, int, int] = ("", 0, 0, 0)
        self._entry: dict[str, Any] = {}
        self._score: float | None = None

    @property
    def dataset(self) -> str:
        """The dataset of the question now (``""`` before the first reset)."""
        return self._problem[0]

    @property
    def level(self) -> int:
        """The curriculum level of the question now."""
        return self._problem[1]

    def metadata(self) -> dict[str, Any]:
        return {
            "config": self.config.model_dump(mode="json"),
            "top_levels": {name: top_level(name) for name in self.config.datasets},
            "datasets_available": dataset_names(),
        }

    def task_set(self) -> TaskSet:
        cfg = self.config
        sizes = (cfg.train_size, cfg.validation_size, cfg.test_size)
        return reasoning_tasks(tuple(cfg.datasets), tuple(cfg.levels), sizes)

    # -- the episode ---------------------------------------------------------------

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        opts = options or {}
        # Unseeded, the env's own stream goes on (Gymnasium's meaning); a copy, so that a
        # refused reset leaves it as it was.
        rng = copy.deepcopy(self._rng) if seed is None else np.random.default_rng(seed)
        cfg = self.config
        name = opts.get("dataset")
        if name is None:
            name = cfg.datasets[int(rng.integers(len(cfg.datasets)))]
        level = opts.get("level")
        if level is None:
            level = cfg.levels[int(rng.integers(len(cfg.levels)))]
        problem_seed = int(rng.integers(2**31)) if seed is None else seed
        index = int(opts.get("entry", 0))
        try:
            entry = make_problem(name, level, problem_seed, index)
        except ArgumentError as exc:
            raise UnsupportedOption(f"reasoning reset: {exc}") from None
        question = str(entry["question"])
        if len(question) > MAX_QUESTION:
            raise UnsupportedOption(
                f"reasoning reset: the question of {name} at level {level} has "
                f"{len(question)} characters, more than the {MAX_QUESTION} served"
            )
        self._rng = rng
        self._problem = (name, level, problem_seed, index)
        self._entry = entry
        self._score = None
        return question, self._info()

    def parse_action(self, action: Any) -> str:
        if not isinstance(action, str):
            raise InvalidAction(
                f"expected the answer as a string, got {type(action).__name__} {action!r:.60}"
            )
        if len(action) > MAX_ANSWER:
            raise InvalidAction(
                f"expected an answer of at most {MAX_ANSWER} characters, got {len(action)}: "
                "answer with the final answer alone"
            )
        return action

    def step(self, action: Any) -> StepResult:
        if not self._entry:
            raise ResetNeeded("reset first: there is no question yet")
        if self._score is not None:
            raise ResetNeeded("this question was answered: reset for the next one")
        name, level, seed, _ = self._problem
        self._score = score(name, level, seed, str(action), self._entry)
        return StepResult(
            observation=str(self._entry["question"]),
            reward=self._score,
            terminated=True,
            truncated=False,
            info=self._info(),
        )

    def _info(self) -> dict[str, Any]:
        name, level, seed, index = self._problem
        return {
            "dataset": name,
            "level": level,
            "seed": seed,
            "entry": index,
            "answered": self._score is not None,
            "score": self._score,
        }

    def state(self) -> dict[str, Any]:
        return self._info()

    # -- snapshots -----------------------------------------------------------------

    def snapshot(self) -> ReasoningSnapshot:
        name, level, seed, index = self._problem
        return ReasoningSnapshot(
            name, level, seed, index, self._score, dict(self._rng.bit_generator.state)
        )

    def restore(self, snapshot: Any) -> None:
        if not isinstance(snapshot, ReasoningSnapshot):
            raise UnsupportedOption(f"expected a reasoning snapshot, got {type(snapshot).__name__}")
        rng = np.random.default_rng()
        rng.bit_generator.state = snapshot.rng_state
        problem = (snapshot.dataset, snapshot.level, snapshot.seed, snapshot.index)
        self._entry = make_problem(*problem) if snapshot.dataset else {}
        self._problem, self._score, self._rng = problem, snapshot.score, rng


if TYPE_CHECKING:  # mypy checks that the env has what its narration reads
    from openenv_mcp_envs.reasoning._narration import ReasoningView

    def _narrated(env: ReasoningEnv) -> ReasoningView:
        return env
