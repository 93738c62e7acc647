"""The chess env's task set: games to win against opponents of four strengths.

Each split (``train``, ``validation``, ``test``) interleaves four difficulties, each an
opponent set by per-episode options:

* ``random``: a uniformly random legal move;
* ``easy``: the engine (``--engine``: Stockfish where installed, else the built-in
  search) at depth 1, skill 0 (half its moves drawn from its top four);
* ``medium``: depth 2, skill 10;
* ``hard``: depth 3, skill 20 (its best move, always).

Task ``i`` of a split plays difficulty ``i % 4``; its ``k = i // 4``-th game of that
difficulty starts from opening ``k % 12`` of :data:`OPENINGS` (the usual start first),
as White for ``k // 12`` even, else as Black. Its seed is the split's base plus ``i``
(train from 0, validation from 1,000,000, test from 2,000,000), so no two splits share
a game, and it draws every chance of the game (a random mover's moves, a weakened
engine's choices). Ids are ``chess-DIFFICULTY-SPLIT-NNNN`` (``NNNN`` is ``k``).

Success is a win: the game ended ``1-0`` with you as White or ``0-1`` as Black (a draw,
a loss or a truncated game is no success). The score ``points`` is 1 for a win, 0.5
for a draw and 0 for a loss, where the game ended. The engine's strength at the same
depth and skill is not the same for Stockfish and the built-in search: each task's
``group`` says which engine plays (``random`` for the random mover).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import chess

from openenv_mcp.tasks import SPLIT_TYPES, Ending, LazyTasks, Split, Task, TaskSet, UnknownTask

__all__ = ["DIFFICULTIES", "OPENINGS", "SEED_BASES", "SIZES", "ChessTasks", "chess_tasks"]

#: Each difficulty's per-episode options (the opponent it plays against).
DIFFICULTIES: Mapping[str, Mapping[str, Any]] = {
    "random": {"opponent": "random"},
    "easy": {"opponent": "engine", "depth": 1, "skill": 0},
    "medium": {"opponent": "engine", "depth": 2, "skill": 10},
    "hard": {"opponent": "engine", "depth": 3, "skill": 20},
}
#: The positions games start from: a name and the moves (SAN) from the usual start.
OPENINGS: tuple[tuple[str, str], ...] = (
    ("start", ""),
    ("open game", "e4 e5"),
    ("sicilian", "e4 c5"),
    ("french", "e4 e6"),
    ("caro-kann", "e4 c6"),
    ("scandinavian", "e4 d5"),
    ("pirc", "e4 d6 d4 Nf6"),
    ("queen's gambit", "d4 d5 c4"),
    ("king's indian", "d4 Nf6 c4 g6"),
    ("dutch", "d4 f5"),
    ("english", "c4"),
    ("reti", "Nf3 d5"),
)
#: Games of each difficulty in each split.
SIZES: Mapping[str, int] = {"train": 1000, "validation": 50, "test": 50}
#: Where each split's seeds start (as :class:`openenv_mcp.tasks.SeedTasks` does).
SEED_BASES: Mapping[str, int] = {"train": 0, "validation": 1_000_000, "test": 2_000_000}
_ORDER = tuple(DIFFICULTIES)


@functools.cache
def _fen(moves: str) -> str:
    board = chess.Board()
    for san in moves.split():
        board.push_san(san)
    return board.fen()


class ChessTasks(TaskSet):
    """Games against the four opponents of :data:`DIFFICULTIES`, from :data:`OPENINGS`.

    Args:
        engine: which engine the server's ``--engine`` plays (``stockfish`` or
            ``builtin``): the engine difficulties' group.
    """

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self._splits = [Split(kind, kind) for kind in SPLIT_TYPES]

    def splits(self) -> Sequence[Split]:
        return self._splits

    def tasks(self, split: str) -> Sequence[Task]:
        kind = self.split(split).type
        return LazyTasks(SIZES[kind] * len(_ORDER), lambda i: self._make(kind, i))

    def _make(self, split: str, index: int) -> Task:
        difficulty = _ORDER[index % len(_ORDER)]
        game = index // len(_ORDER)
        name, moves = OPENINGS[game % len(OPENINGS)]
        colour = "white" if (game // len(OPENINGS)) % 2 == 0 else "black"
        fen = _fen(moves)
        options = {**DIFFICULTIES[difficulty], "fen": fen, "color": colour}
        engine = options["opponent"] == "engine"
        data: dict[str, Any] = {"opening": name, "moves": moves, "fen": fen, "color": colour}
        if engine:
            data.update(engine=self.engine, depth=options["depth"], skill=options["skill"])
        return Task(
            f"chess-{difficulty}-{split}-{game:04d}",
            seed=SEED_BASES[split] + index,
            options=options,
            difficulty=difficulty,
            group=self.engine if engine else "random",
            data=data,
        )

    def locate(self, task_id: str) -> tuple[str, int, Task]:
        parts = task_id.split("-") if isinstance(task_id, str) else []
        if len(parts) == 4 and parts[0] == "chess" and parts[1] in DIFFICULTIES:
            _, difficulty, split, number = parts
            if split in SIZES and number.isdigit() and len(number) >= 4:
                game = int(number)
                if game < SIZES[split] and number == f"{game:04d}":
                    index = game * len(_ORDER) + _ORDER.index(difficulty)
                    return split, index, self._make(split, index)
        sizes = ", ".join(f"{s}: {n} a difficulty" for s, n in SIZES.items())
        raise UnknownTask(
            f"no task {str(task_id)[:80]!r}: chess task ids are chess-DIFFICULTY-SPLIT-NNNN, "
            f"DIFFICULTY one of {', '.join(_ORDER)} ({sizes})"
        )

    def success(self, task: Task, ending: Ending) -> bool:
        return _points(ending) == 1.0

    def scores(self, task: Task, ending: Ending) -> dict[str, float]:
        points = _points(ending)
        return {} if points is None else {"points": points}


def _points(ending: Ending) -> float | None:
    """1 for a win, 0.5 for a draw, 0 for a loss; ``None`` where the game did not end."""
    result, you = ending.info.get("result"), ending.info.get("you")
    if not ending.terminated or result not in ("1-0", "0-1", "1/2-1/2"):
        return None
    if result == "1/2-1/2":
        return 0.5
    won = (result == "1-0" and you == "white") or (result == "0-1" and you == "black")
    return 1.0 if won else 0.0


@functools.cache
def chess_tasks(engine: str) -> ChessTasks:
    """The task set where ``--engine`` plays as ``engine`` (one per engine, shared)."""
    return ChessTasks(engine)
