"""Holding a :class:`~openenv_mcp.seats.SeatedGame` to its contract (``openenv-mcp
check`` runs it on an env that publishes one): seeded games of random legal moves,
every seat's view checked at every move, and the same seed and moves replayed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces

from openenv_mcp.codecs import to_jsonable
from openenv_mcp.seats._game import SeatedGame

__all__ = ["check_game"]

#: Moves after which a game that has not ended counts as endless.
MOST_MOVES = 10_000


def _views(game: SeatedGame) -> list[Any]:
    """Every seat's observation and info, as JSON (to compare two games)."""
    return [to_jsonable(game.observe(agent)) for agent in game.possible_agents]


def _problems_now(game: SeatedGame, move: int) -> list[str]:
    """What is wrong with every seat's view after ``move`` moves."""
    problems: list[str] = []
    movers = [] if game.over else game.to_move()
    ends, cuts = game.terminations(), game.truncations()
    for agent in game.possible_agents:
        if agent not in ends or agent not in cuts:
            problems.append(f"terminations()/truncations() leave out {agent}")
        observation, info = game.observe(agent)
        if not game.observation_space(agent).contains(observation):
            problems.append(
                f"move {move}: {agent}'s observation is not in its observation_space "
                f"{game.observation_space(agent)}"
            )
        if not isinstance(info.get("text"), str):
            problems.append(f"move {move}: {agent}'s info has no text (the game in words)")
        legal = {a for a, _ in game.legal(agent)}
        if bool(legal) != (agent in movers):
            problems.append(
                f"move {move}: {agent} has {len(legal)} legal actions but is "
                f"{'' if agent in movers else 'not '}to move"
            )
        space = game.action_space(agent)
        mask = info.get("action_mask")
        if isinstance(space, spaces.Discrete):
            shown = {i + int(space.start) for i in np.flatnonzero(np.asarray(mask or []))}
            if mask is None or len(mask) != int(space.n) or shown != legal:
                problems.append(
                    f"move {move}: {agent}'s info['action_mask'] must mark exactly its legal "
                    f"actions over all {int(space.n)} ids"
                )
    return problems


def _play(
    game: SeatedGame, seed: int, rng: np.random.Generator, problems: list[str] | None
) -> tuple[list[dict[str, int]], list[Any]]:
    """One seeded game of random legal moves: the moves and every seat's views after each."""
    game.reset(seed, None)
    moves: list[dict[str, int]] = []
    views = [_views(game)]
    while not game.over and len(moves) < MOST_MOVES:
        if problems is not None:
            problems += _problems_now(game, len(moves))
            if problems:
                break
        movers = game.to_move()
        if not movers:
            if problems is not None:
                problems.append(f"move {len(moves)}: the game is not over, yet nobody is to move")
            break
        actions = {}
        for agent in movers:
            legal = game.legal(agent)
            actions[agent] = game.parse_action(agent, legal[int(rng.integers(len(legal)))][0])
        rewards = game.apply(actions)
        missing = set(game.possible_agents) - set(rewards)
        if problems is not None and missing:
            problems.append(f"apply() left out the rewards of {sorted(missing)}")
            break
        moves.append(actions)
        views.append(_views(game))
    if problems is not None and not game.over and not problems:
        problems.append(f"a game of random legal moves did not end in {MOST_MOVES} moves")
    return moves, views


def check_game(make: Callable[[], SeatedGame], games: int = 3, seed: int = 0) -> list[str]:
    """What is wrong with the games ``make`` makes (an empty list: nothing found).

    ``games`` seeded games of random legal moves: seats named, every seat's
    observation in its space with ``info["text"]`` and an ``action_mask`` marking
    exactly its legal actions, legal actions only for the seats to move, every seat's
    reward from every move, an end; then the first game replayed from its seed and
    moves gives the same views on a new game.
    """
    game = make()
    problems: list[str] = []
    try:
        agents = list(game.possible_agents)
        if not agents or len(set(agents)) != len(agents):
            return [f"possible_agents must name each seat once, got {agents!r}"]
        first: tuple[list[dict[str, int]], list[Any]] | None = None
        for index in range(games):
            played = _play(game, seed + index, np.random.default_rng(seed + index), problems)
            if problems:
                return problems
            first = first or played
    finally:
        game.close()
    assert first is not None
    again = make()
    try:
        again.reset(seed, None)
        views = [_views(again)]
        for actions in first[0]:
            again.apply(actions)
            views.append(_views(again))
        if views != first[1]:
            at = next(i for i, (a, b) in enumerate(zip(views, first[1], strict=True)) if a != b)
            problems.append(
                f"the same seed and moves gave other views at move {at} on a new game: the "
                "game's chance must come from its seed"
            )
    finally:
        again.close()
    return problems
