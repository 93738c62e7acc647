"""The atari env's tasks: each game's modes and difficulties, times seeds, and the
human-normalized score of Atari-57.

A game's **variants** are its default mode and difficulty (the first of ALE's
``getAvailableModes()`` and ``getAvailableDifficulties()``, which is what the ROM
starts in), then each other mode at the default difficulty, then each other difficulty
at the default mode: Pong has five (``mode 0 difficulty 0``, ``mode 1 difficulty 0``,
``mode 0 difficulty 1``..``3``), Video Cube 154. Each split holds every variant with its
own seeds (:data:`SEEDS_PER_VARIANT`: 100 train, 20 validation, 20 test), variant by
variant, and the seeds of the splits are disjoint (train from 0, validation from
1,000,000, test from 2,000,000, as :class:`~openenv_mcp.tasks.SeedTasks`). A task's id
names all of it: ``pong-m1-d0-test-0007`` is Pong in mode 1 at difficulty 0, seed
2,000,007; its ``difficulty`` label is ``"mode 1 difficulty 0"``, its group the game.
The mode and difficulty travel as the episode's reset options (the env's ``Options``),
so a task plays the same whatever mode the server was configured with.

**Scores and success.** For the 57 games of the Atari-57 benchmark the score beside the
return is the human-normalized score, ``(return - random) / (human - random)``, from the
random and human baselines of :data:`BASELINES`; an episode succeeds when it reaches at
least human level (human-normalized >= 1.0). The other bundled games have no published
baselines: no score, and an episode succeeds when its return is above zero. The return
is the environment's own (:attr:`~openenv_mcp.tasks.Ending.env_return`). The baselines
were measured in each game's default mode and difficulty; in other variants the score
is still reported but compares less directly. They were measured with up to 30 no-op
starts, where the ``ALE/<Game>-v5`` protocol served here has sticky actions (0.25)
instead: the same scale papers since report v5 results on.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import NamedTuple

from openenv_mcp.errors import UnknownTask
from openenv_mcp.tasks import Ending, LazyTasks, Split, Task, TaskSet
from openenv_mcp.tasks._model import SEED_BASES

__all__ = [
    "BASELINES",
    "SEEDS_PER_VARIANT",
    "AtariTasks",
    "Baseline",
    "atari_tasks",
    "human_normalized",
]


class Baseline(NamedTuple):
    """A game's published baseline scores (mean undiscounted episode returns)."""

    random: float
    """A uniformly random policy's."""
    human: float
    """A professional human games tester's."""


#: Random and human scores of the Atari-57 games, by ALE rom id (the ids this env
#: serves). Source: Badia et al. 2020, "Agent57: Outperforming the Atari Human
#: Benchmark" (ICML 2020, arXiv:2003.13350), the appendix table of human and random
#: scores on the 57 games. Its random and human figures go back to Mnih et al. 2015,
#: "Human-level control through deep reinforcement learning" (Nature 518; 49 games)
#: and the papers that added the other eight (Berzerk, Defender, Phoenix, Pitfall,
#: Skiing, Solaris, Surround, Yars' Revenge). The same numbers are in DeepMind's DQN Zoo
#: (``dqn_zoo/atari_data.py``), which most papers since normalize with. Each is a mean
#: over episodes that began with 1-30 no-op steps and were capped at 108,000 frames.
BASELINES: dict[str, Baseline] = {
    "alien": Baseline(227.8, 7127.7),
    "amidar": Baseline(5.8, 1719.5),
    "assault": Baseline(222.4, 742.0),
    "asterix": Baseline(210.0, 8503.3),
    "asteroids": Baseline(719.1, 47388.7),
    "atlantis": Baseline(12850.0, 29028.1),
    "bank_heist": Baseline(14.2, 753.1),
    "battle_zone": Baseline(2360.0, 37187.5),
    "beam_rider": Baseline(363.9, 16926.5),
    "berzerk": Baseline(123.7, 2630.4),
    "bowling": Baseline(23.1, 160.7),
    "boxing": Baseline(0.1, 12.1),
    "breakout": Baseline(1.7, 30.5),
    "centipede": Baseline(2090.9, 12017.0),
    "chopper_command": Baseline(811.0, 7387.8),
    "crazy_climber": Baseline(10780.5, 35829.4),
    "defender": Baseline(2874.5, 18688.9),
    "demon_attack": Baseline(152.1, 1971.0),
    "double_dunk": Baseline(-18.6, -16.4),
    "enduro": Baseline(0.0, 860.5),
    "fishing_derby": Baseline(-91.7, -38.7),
    "freeway": Baseline(0.0, 29.6),
    "frostbite": Baseline(65.2, 4334.7),
    "gopher": Baseline(257.6, 2412.5),
    "gravitar": Baseline(173.0, 3351.4),
    "hero": Baseline(1027.0, 30826.4),
    "ice_hockey": Baseline(-11.2, 0.9),
    "jamesbond": Baseline(29.0, 302.8),
    "kangaroo": Baseline(52.0, 3035.0),
    "krull": Baseline(1598.0, 2665.5),
    "kung_fu_master": Baseline(258.5, 22736.3),
    "montezuma_revenge": Baseline(0.0, 4753.3),
    "ms_pacman": Baseline(307.3, 6951.6),
    "name_this_game": Baseline(2292.3, 8049.0),
    "phoenix": Baseline(761.4, 7242.6),
    "pitfall": Baseline(-229.4, 6463.7),
    "pong": Baseline(-20.7, 14.6),
    "private_eye": Baseline(24.9, 69571.3),
    "qbert": Baseline(163.9, 13455.0),
    "riverraid": Baseline(1338.5, 17118.0),
    "road_runner": Baseline(11.5, 7845.0),
    "robotank": Baseline(2.2, 11.9),
    "seaquest": Baseline(68.4, 42054.7),
    "skiing": Baseline(-17098.1, -4336.9),
    "solaris": Baseline(1236.3, 12326.7),
    "space_invaders": Baseline(148.0, 1668.7),
    "star_gunner": Baseline(664.0, 10250.0),
    "surround": Baseline(-10.0, 6.5),
    "tennis": Baseline(-23.8, -8.3),
    "time_pilot": Baseline(3568.0, 5229.2),
    "tutankham": Baseline(11.4, 167.6),
    "up_n_down": Baseline(533.4, 11693.2),
    "venture": Baseline(0.0, 1187.5),
    # The random policy scores close to the human here (and above it under some
    # evaluation protocols): a human-normalized Video Pinball score swings widely.
    "video_pinball": Baseline(16256.9, 17667.9),
    "wizard_of_wor": Baseline(563.5, 4756.5),
    "yars_revenge": Baseline(3092.9, 54576.9),
    "zaxxon": Baseline(32.5, 9173.3),
}

#: Seeds each variant of a game has in each split.
SEEDS_PER_VARIANT: dict[str, int] = {"train": 100, "validation": 20, "test": 20}

_SPLITS = (Split("train", "train"), Split("validation", "validation"), Split("test", "test"))
_ID = re.compile(
    r"(?P<game>[a-z0-9_]+)-m(?P<mode>\d+)-d(?P<difficulty>\d+)-(?P<split>[a-z]+)-(?P<n>\d{4,})"
)


def human_normalized(game: str, score: float) -> float | None:
    """``(score - random) / (human - random)`` for an Atari-57 game, else ``None``."""
    baseline = BASELINES.get(game)
    if baseline is None:
        return None
    return (score - baseline.random) / (baseline.human - baseline.random)


class AtariTasks(TaskSet):
    """One game's variants (mode, difficulty) times seeds, in three splits.

    Args:
        game: the ALE rom id (``"pong"``).
        modes: the game's modes (``getAvailableModes()``), the default first.
        difficulties: its difficulties (``getAvailableDifficulties()``), the default first.

    Success: human level (human-normalized >= 1.0) for the Atari-57 games, a return above
    zero for the rest (the module's docstring says why).
    """

    def __init__(self, game: str, modes: Sequence[int], difficulties: Sequence[int]) -> None:
        if not modes or not difficulties:
            raise ValueError(f"{game}: a game has at least one mode and one difficulty")
        self.game = game
        mode, difficulty = modes[0], difficulties[0]
        #: (mode, difficulty) of each variant, the default first.
        self.variants: tuple[tuple[int, int], ...] = (
            (mode, difficulty),
            *((m, difficulty) for m in modes[1:]),
            *((mode, d) for d in difficulties[1:]),
        )
        self.baseline = BASELINES.get(game)

    def splits(self) -> Sequence[Split]:
        return _SPLITS

    def tasks(self, split: str) -> Sequence[Task]:
        kind = self.split(split).type
        per = SEEDS_PER_VARIANT[kind]

        def make(i: int) -> Task:
            return self._task(split, *self.variants[i // per], i % per)

        return LazyTasks(len(self.variants) * per, make)

    def _task(self, split: str, mode: int, difficulty: int, n: int) -> Task:
        kind = self.split(split).type
        return Task(
            f"{self.game}-m{mode}-d{difficulty}-{split}-{n:04d}",
            seed=SEED_BASES[kind] + n,
            options={"mode": mode, "difficulty": difficulty},
            difficulty=f"mode {mode} difficulty {difficulty}",
            group=self.game,
        )

    def locate(self, task_id: str) -> tuple[str, int, Task]:
        """Where task ``task_id`` is, read from the id itself (``pong-m1-d0-test-0007``).

        Raises:
            UnknownTask: the id is not this game's, or names a variant, split or seed it
                does not have (the message says the form and the sizes).
        """
        found = _ID.fullmatch(task_id) if isinstance(task_id, str) else None
        if found is not None and found["game"] == self.game:
            variant = (int(found["mode"]), int(found["difficulty"]))
            split, n = found["split"], int(found["n"])
            per = SEEDS_PER_VARIANT.get(split)
            if variant in self.variants and per is not None and n < per:
                task = self._task(split, *variant, n)
                if task.id == task_id:  # not a spelling with extra zeros
                    return split, self.variants.index(variant) * per + n, task
        raise UnknownTask(
            f"no task {task_id!r}: this set's ids are {self.game}-mMODE-dDIFFICULTY-SPLIT-NNNN "
            f"for its {len(self.variants)} variants ({self._variant_words()}), with "
            f"{', '.join(f'{k} seeds 0000-{v - 1:04d}' for k, v in SEEDS_PER_VARIANT.items())}"
        )

    def _variant_words(self) -> str:
        shown = [f"m{m}-d{d}" for m, d in self.variants[:8]]
        more = len(self.variants) - len(shown)
        return ", ".join(shown) + (f" and {more} more" if more else "")

    def success(self, task: Task, ending: Ending) -> bool:
        score = human_normalized(self.game, ending.env_return)
        return ending.env_return > 0 if score is None else score >= 1.0

    def scores(self, task: Task, ending: Ending) -> dict[str, float]:
        score = human_normalized(self.game, ending.env_return)
        return {} if score is None else {"human_normalized": score}


@functools.lru_cache(maxsize=128)
def atari_tasks(game: str, modes: tuple[int, ...], difficulties: tuple[int, ...]) -> AtariTasks:
    """The task set of ``game`` (one per game, built once)."""
    return AtariTasks(game, modes, difficulties)
