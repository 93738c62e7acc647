"""``check_game`` holds a game of seats to its contract: a sound game passes, and each
way a game can break it is named (the games here are small fakes: the framework's own
unit tests; the bundled envs' games are checked by ``openenv-mcp check``)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces

from openenv_mcp.seats import SeatedGame, check_game

pytestmark = pytest.mark.unit

#: Every reset of a game that breaks seeding, counted (check_game replays the first of
#: its three games on a new one: the fourth reset, of the other parity).
_RESETS = itertools.count()


class Nim(SeatedGame):
    """Take 1 or 2 from a pile of 7, two players in turn; who takes the last wins."""

    possible_agents = ["first", "second"]  # noqa: RUF012
    title = "nim"

    def __init__(self, **breaks: bool) -> None:
        self.breaks = breaks
        self.pile, self.turn = 7, 0

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return spaces.Box(0, 7, (1,), np.int64)

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return spaces.Discrete(2)

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> None:
        self.pile, self.turn = 7, 0
        if self.breaks.get("unseeded"):  # a pile of its own (reset by reset), not the seed's
            self.pile = 6 + next(_RESETS) % 2

    def to_move(self) -> list[str]:
        return [] if self.pile <= 0 else [self.possible_agents[self.turn]]

    def legal(self, agent: str) -> list[tuple[int, str]]:
        if agent not in self.to_move():
            return []
        return [(a, f"take {a + 1}") for a in range(min(2, self.pile))]

    def observe(self, agent: str) -> tuple[Any, dict[str, Any]]:
        mask = [0, 0]
        for a, _ in self.legal(agent):
            mask[a] = 1
        if self.breaks.get("mask"):
            mask = [1, 1]
        pile = 9 if self.breaks.get("space") else max(self.pile, 0)
        return np.array([pile], np.int64), {"text": f"pile {self.pile}", "action_mask": mask}

    def apply(self, actions: Mapping[str, int]) -> dict[str, float]:
        ((agent, action),) = actions.items()
        self.pile -= action + 1
        self.turn = 1 - self.turn
        if self.breaks.get("rewards"):
            return {agent: 0.0}
        if self.pile > 0:
            return dict.fromkeys(self.possible_agents, 0.0)
        other = next(a for a in self.possible_agents if a != agent)
        return {agent: 1.0, other: -1.0}

    def terminations(self) -> dict[str, bool]:
        return dict.fromkeys(self.possible_agents, self.pile <= 0)


def test_a_sound_game_passes() -> None:
    assert check_game(Nim) == []


@pytest.mark.parametrize(
    ("broken", "named"),
    [
        ("space", "observation is not in its observation_space"),
        ("mask", "action_mask'] must mark exactly its legal actions"),
        ("rewards", "apply() left out the rewards of ['second']"),
        ("unseeded", "the same seed and moves gave other views"),
    ],
)
def test_each_break_is_named(broken: str, named: str) -> None:
    problems = check_game(lambda: Nim(**{broken: True}))
    assert problems and named in problems[0], problems


def test_unnamed_seats_are_refused() -> None:
    class Nameless(Nim):
        possible_agents = ["a", "a"]  # noqa: RUF012

    assert "name each seat once" in check_game(Nameless)[0]
