"""reasoning-gym's datasets as problems: entry ``index`` of dataset ``name`` at
curriculum level ``level``, generated with seed ``seed``, and its scorer.

Everything that touches reasoning-gym is here. An entry is deterministic given
``(name, level, seed, index)``: it is what reasoning-gym's own instance of the dataset,
made with that configuration and seed, gives at that index. Making an instance costs up
to 40 ms and 10 MB (the word lists of the word datasets); an entry 0.01-3 ms. So one
instance per ``(name, level)`` is made, and a problem of another seed is read from a
shallow copy with the seed changed, where a probe shows that gives exactly what a fresh
instance gives (every dataset of reasoning-gym 0.1.25 that constructs); elsewhere a fresh
instance is made (a few cached).
"""

from __future__ import annotations

import copy
import functools
import importlib.metadata
import logging
import math
from collections.abc import Mapping
from typing import Any

from reasoning_gym.factory import CURRICULA, DATASETS, create_curriculum

from openenv_mcp.errors import ArgumentError, did_you_mean

log = logging.getLogger(__name__)

__all__ = [
    "DATASET_SIZE",
    "DEFAULT_DATASETS",
    "check_dataset",
    "dataset_names",
    "make_problem",
    "score",
    "top_level",
]

#: The datasets served by default: short answers, cheap entries, a spread of skills
#: (arithmetic, counting, sorting words, a grid puzzle).
DEFAULT_DATASETS = (
    "basic_arithmetic",
    "chain_sum",
    "leg_counting",
    "letter_counting",
    "word_sorting",
    "mini_sudoku",
)
#: The size every dataset instance is made with, and so the indices a seed has: no
#: index of reasoning-gym's datasets depends on the size, but some refuse an index past
#: it (word_ladder) and some refuse a size too large for their constraints.
DATASET_SIZE = 1_000_000


def dataset_names() -> list[str]:
    """Every dataset of the installed reasoning-gym that has a curriculum (levels)."""
    return sorted(name for name in DATASETS if name in CURRICULA)


def _known(name: str) -> str:
    names = dataset_names()
    if name in names:
        return name
    if name in DATASETS:
        raise ArgumentError(
            f"reasoning-gym's dataset {name!r} has no curriculum (no difficulty levels), so it "
            f"cannot be served here; {len(names)} datasets have one"
        )
    raise ArgumentError(
        f"no reasoning-gym dataset {name!r}.{did_you_mean(str(name), names)} "
        f"reasoning-gym {_version()} has {len(names)} with levels, e.g. "
        f"{', '.join(names[:8])}, ..."
    )


def _version() -> str:
    # reasoning_gym.__version__ lags the distribution's (0.1.19 in 0.1.25)
    try:
        return importlib.metadata.version("reasoning-gym")
    except importlib.metadata.PackageNotFoundError:
        return "?"


@functools.cache
def top_level(name: str) -> int:
    """The highest curriculum level of dataset ``name`` (its longest attribute's).

    Raises:
        ArgumentError: no such dataset, or it has no curriculum.
    """
    curriculum = create_curriculum(_known(name))
    return max((len(attr.levels) for attr in curriculum.attributes.values()), default=1) - 1


def _fresh(name: str, level: int, seed: int) -> Any:
    """reasoning-gym's dataset ``name`` at curriculum level ``level`` with seed ``seed``:
    the curriculum's own configuration (reasoning-gym's default, inclusive ranges: level
    ``L`` draws from levels 0 to ``L``)."""
    curriculum = create_curriculum(name)
    curriculum.set_global_level(level)
    config = curriculum.generate_configuration({"seed": seed, "size": DATASET_SIZE})
    cls = DATASETS[name][0]
    return cls(config=config)


@functools.cache
def _base(name: str, level: int) -> Any:
    return _fresh(name, level, 0)


def _reseeded(base: Any, seed: int) -> Any:
    clone = copy.copy(base)
    clone.seed = seed
    if hasattr(clone.config, "seed"):
        clone.config = copy.copy(clone.config)
        clone.config.seed = seed
    return clone


@functools.cache
def _reseedable(name: str, level: int) -> bool:
    """Whether a copy of the base instance with another seed gives what a fresh instance
    with that seed gives (a probe of two seeds and indices)."""
    base = _base(name, level)
    for seed, index in ((12_345, 3), (2_000_001, 0)):
        fresh, clone = _fresh(name, level, seed)[index], _reseeded(base, seed)[index]
        if (fresh["question"], fresh["answer"]) != (clone["question"], clone["answer"]):
            log.info("reasoning-gym's %s is not reseedable: fresh instances per seed", name)
            return False
    return True


@functools.lru_cache(maxsize=8)
def _cached_fresh(name: str, level: int, seed: int) -> Any:
    return _fresh(name, level, seed)


def _dataset(name: str, level: int, seed: int) -> Any:
    """The dataset instance of ``(name, level, seed)`` (checked by :func:`check_dataset`)."""
    if _reseedable(name, level):
        return _reseeded(_base(name, level), seed)
    return _cached_fresh(name, level, seed)


def check_dataset(name: str, level: int) -> None:
    """Refuse a dataset and level that cannot be served.

    Raises:
        ArgumentError: no such dataset, no curriculum, a level past its highest, or a
            level whose configuration reasoning-gym itself rejects.
    """
    top = top_level(name)
    if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= top:
        raise ArgumentError(f"dataset {name!r} has curriculum levels 0-{top}, got level {level!r}")
    try:
        _reseedable(name, level)
    except (AssertionError, ValueError, TypeError, IndexError) as exc:
        raise ArgumentError(
            f"reasoning-gym rejects dataset {name!r} at level {level}: {exc or type(exc).__name__}"
        ) from None


def make_problem(name: str, level: int, seed: int, index: int) -> dict[str, Any]:
    """Entry ``index`` of dataset ``name`` at ``level`` made with ``seed``: reasoning-gym's
    ``{"question", "answer", "metadata"}`` (checked first with :func:`check_dataset`)."""
    check_dataset(name, level)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < DATASET_SIZE:
        raise ArgumentError(f"a problem's index is 0-{DATASET_SIZE - 1}, got {index!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ArgumentError(f"a problem's seed is a non-negative integer, got {seed!r}")
    entry: dict[str, Any] = _dataset(name, level, seed)[index]
    return entry


def score(name: str, level: int, seed: int, answer: str, entry: Mapping[str, Any]) -> float:
    """The dataset's own ``score_answer`` of ``answer`` to ``entry``, as a float in [0, 1].

    A scorer that raises on a malformed answer scores it 0 (reasoning-gym's scorers
    mostly return 0 for those themselves; a few parse the answer and may not).
    """
    dataset = _dataset(name, level, seed)
    try:
        value = float(dataset.score_answer(answer, entry))
    except Exception as exc:
        log.warning("reasoning-gym's %s scorer raised %r: the answer scores 0", name, exc)
        return 0.0
    if not math.isfinite(value):
        return 0.0
    return min(1.0, max(0.0, value))
