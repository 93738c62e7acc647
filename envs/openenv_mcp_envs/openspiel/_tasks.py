"""The OpenSpiel env's task set: games of the served game to win, against opponents of
rising strength.

The set is the served game's (``--game`` and its parameters): each split (``train``,
``validation``, ``test``) interleaves the difficulties, each an opponent set by
per-episode options:

* ``random``: every other seat plays uniformly at random (seeded);
* ``mcts10``, ``mcts100``, ``mcts1000``: Monte Carlo tree search with that many
  simulations a move, where OpenSpiel's MCTS can play the game (rewards only at the end,
  and hidden information it can resample); elsewhere ``random`` alone;
* ``solo``: a one-player game (2048, catch, ...) has no opponent, one difficulty.

Task ``i`` of a split plays difficulty ``i % D`` (``D`` difficulties); its
``k = i // D``-th game of that difficulty seats you at ``k % players``. Its seed is the
split's base plus ``i`` (train from 0, validation from 1,000,000, test from 2,000,000),
so no two splits share a game; the seed draws chance (dice, deals) and the opponents'
choices. Ids are ``GAME-DIFFICULTY-SPLIT-NNNN`` (``NNNN`` is ``k``); ``GAME`` is the
game's short name, followed by ``.`` and 8 hex digits of its parameters where it has any
(``go.1a2b3c4d``), so games of other parameters never share an id.

Success is a win: the game ended and your return is higher than every other player's
(a tie is no success). In a one-player game it is reaching the game's best outcome
(its maximum utility: catching the ball in ``catch``).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from openenv_mcp.tasks import SPLIT_TYPES, Ending, LazyTasks, Split, Task, TaskSet, UnknownTask

__all__ = ["MCTS_LEVELS", "SEED_BASES", "SIZES", "OpenSpielTasks", "openspiel_tasks"]

#: The MCTS difficulties' simulations per move.
MCTS_LEVELS: Mapping[str, int] = {"mcts10": 10, "mcts100": 100, "mcts1000": 1000}
#: Games of each difficulty in each split.
SIZES: Mapping[str, int] = {"train": 1000, "validation": 50, "test": 50}
#: Where each split's seeds start (as :class:`openenv_mcp.tasks.SeedTasks` does).
SEED_BASES: Mapping[str, int] = {"train": 0, "validation": 1_000_000, "test": 2_000_000}


def game_id(game: str, short_name: str) -> str:
    """The game's part of its task ids: its short name, and a hash of its parameters
    where it has any (``game`` is the loaded game's string, ``go(board_size=9)``)."""
    if game in (short_name, f"{short_name}()"):
        return short_name
    return f"{short_name}.{hashlib.sha256(game.encode()).hexdigest()[:8]}"


class OpenSpielTasks(TaskSet):
    """Games of one OpenSpiel game against the opponents of its difficulties.

    Args:
        game: the loaded game's string (``str(pyspiel_game)``).
        short_name: the game's short name.
        players: its number of players.
        mcts: whether an MCTS opponent can play it.
        max_utility: its best outcome (a one-player game's success).
    """

    def __init__(
        self, game: str, short_name: str, players: int, mcts: bool, max_utility: float
    ) -> None:
        self.game = game
        self.prefix = game_id(game, short_name)
        self.players = players
        self.max_utility = max_utility
        if players < 2:
            self.difficulties: tuple[str, ...] = ("solo",)
        else:
            self.difficulties = ("random", *MCTS_LEVELS) if mcts else ("random",)
        self._splits = [Split(kind, kind) for kind in SPLIT_TYPES]

    def splits(self) -> Sequence[Split]:
        return self._splits

    def tasks(self, split: str) -> Sequence[Task]:
        kind = self.split(split).type
        return LazyTasks(SIZES[kind] * len(self.difficulties), lambda i: self._make(kind, i))

    def _make(self, split: str, index: int) -> Task:
        levels = len(self.difficulties)
        difficulty = self.difficulties[index % levels]
        game = index // levels
        seat = game % self.players
        options: dict[str, Any] = {"player": seat}
        if difficulty in MCTS_LEVELS:
            options.update(opponent="mcts", mcts_simulations=MCTS_LEVELS[difficulty])
        elif difficulty == "random":
            options["opponent"] = "random"
        return Task(
            f"{self.prefix}-{difficulty}-{split}-{game:04d}",
            seed=SEED_BASES[split] + index,
            options=options,
            difficulty=difficulty,
            group=self.prefix,
            data={"game": self.game, "player": seat, "players": self.players},
        )

    def locate(self, task_id: str) -> tuple[str, int, Task]:
        parts = task_id.rsplit("-", 3) if isinstance(task_id, str) else []
        if len(parts) == 4 and parts[0] == self.prefix and parts[1] in self.difficulties:
            _, difficulty, split, number = parts
            if split in SIZES and number.isdigit() and len(number) >= 4:
                game = int(number)
                if game < SIZES[split] and number == f"{game:04d}":
                    index = game * len(self.difficulties) + self.difficulties.index(difficulty)
                    return split, index, self._make(split, index)
        sizes = ", ".join(f"{s}: {n} a difficulty" for s, n in SIZES.items())
        raise UnknownTask(
            f"no task {str(task_id)[:80]!r}: this game's task ids are "
            f"{self.prefix}-DIFFICULTY-SPLIT-NNNN, DIFFICULTY one of "
            f"{', '.join(self.difficulties)} ({sizes})"
        )

    def success(self, task: Task, ending: Ending) -> bool:
        returns, seat = ending.info.get("returns"), ending.info.get("player")
        if not ending.terminated or not isinstance(returns, list) or not isinstance(seat, int):
            return False
        if not 0 <= seat < len(returns):
            return False
        mine = float(returns[seat])
        if len(returns) < 2:
            return mine >= self.max_utility - 1e-9
        return all(mine > float(r) for i, r in enumerate(returns) if i != seat)


@functools.cache
def openspiel_tasks(
    game: str, short_name: str, players: int, mcts: bool, max_utility: float
) -> OpenSpielTasks:
    """The task set of one game (one per game and its parameters, shared)."""
    return OpenSpielTasks(game, short_name, players, mcts, max_utility)
