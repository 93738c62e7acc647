"""The trading env's tasks: date-range splits of fixed data, seeds of generated markets,
and one rule for success: beat buy-and-hold.

**Fixed data** (``--data sample``, the default, or ``--csv PATH``): the days an episode
can start on (after the indicators' warm-up) are cut in time into three periods, the
earliest 60% for ``train``, the next 20% for ``validation`` and the last 20% for
``test`` (:data:`PERIODS`). A task is an episode that starts on one trading day of its
period and whose whole window (``--window`` steps and the close after the last) stays
inside the period, so no day's price is in two splits' episodes; every such day is a
task, in date order. Its reset options are ``{"start": "YYYY-MM-DD"}`` (the env's own
option) and its seed is disjoint from the other splits' (train from 0, validation from
1,000,000, test from 2,000,000; with a start given the seed draws nothing). Ids name the
data, the window, the split and the start: ``trading-sample-w60-test-2023-06-01``. The
observation's indicators on a period's first days read prices from before it: the past,
never the future. A split whose period is shorter than a window has no tasks and is left
out.

**Generated markets** (``--data synthetic``): each seed is a market of its own, so the
splits are of seeds (train from 0, validation from 1,000,000, test from 2,000,000; ids
``trading-synthetic-a5-w60-test-0007``).

**Success** is beating buy-and-hold: the portfolio's return when the episode ends
(``info["return"]``) is above that of holding every asset in equal weights over the
same days, bought at the first day's close for the same proportional cost the env
charges (``mean(close_end / close_start) / (1 + cost) - 1``), by more than :data:`TIE`.
A tie fails (holding the equal weights bought on the first day is one); so does ruin.
The scores beside the return say by how much: ``return``, ``buy_and_hold_return`` and
``excess_return`` (their difference).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from openenv_mcp.tasks import Ending, LazyTasks, SeedTasks, Split, SplitType, Task, TaskSet
from openenv_mcp.tasks._model import SEED_BASES
from openenv_mcp_envs.trading._data import WARMUP, Market, prices_frame

__all__ = [
    "PERIODS",
    "TIE",
    "FixedDataTasks",
    "SyntheticTasks",
    "buy_and_hold_return",
    "fixed_data_tasks",
    "synthetic_tasks",
]

#: How far above buy-and-hold a return must be to beat it: replaying buy-and-hold
#: through the env lands within float rounding of it (a few 1e-16), which is a tie.
TIE = 1e-9
#: Each split's share of the days an episode may start on, in time order.
PERIODS: tuple[tuple[SplitType, float], ...] = (
    ("train", 0.6),
    ("validation", 0.2),
    ("test", 0.2),
)


def buy_and_hold_return(start: np.ndarray, end: np.ndarray, cost: float) -> float:
    """The return of equal weights bought at closes ``start`` and held to closes ``end``,
    paying ``cost`` per unit traded on the purchase as the env does (``value / (1 + cost)``
    is invested)."""
    return float(np.mean(np.asarray(end) / np.asarray(start))) / (1.0 + cost) - 1.0


def _judge(ending: Ending, benchmark: float) -> tuple[bool, dict[str, float]]:
    """Success and scores of an ending against the buy-and-hold return ``benchmark``."""
    value = ending.info.get("return")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False, {"buy_and_hold_return": benchmark}
    ret = float(value)
    scores = {"return": ret, "buy_and_hold_return": benchmark, "excess_return": ret - benchmark}
    return ret > benchmark + TIE, scores


def _days(ending: Ending, window: int) -> int:
    """Steps the ended episode took (its last info's ``day``; the window if it has none)."""
    day = ending.info.get("day")
    if isinstance(day, int) and not isinstance(day, bool) and 0 <= day <= window:
        return day
    return window


class FixedDataTasks(TaskSet):
    """Date-range splits of one fixed panel of prices (see the module's docstring).

    Args:
        market: the data.
        name: what the ids call it (``"sample"``, ``"csv"``).
        window: steps per episode.
        cost: the env's proportional trading cost (for buy-and-hold).
    """

    def __init__(self, market: Market, name: str, window: int, cost: float) -> None:
        self.market, self.name, self.window, self.cost = market, name, window, cost
        first, days = WARMUP, market.days
        usable = days - first
        #: Each split's first and last start day (indices into the data's days).
        self.starts: dict[str, tuple[int, int]] = {}
        begin, share = first, 0.0
        for kind, part in PERIODS:
            share += part
            end = first + round(usable * share)  # the period's days: begin..end-1
            last = end - 1 - window  # the episode's last close stays inside
            if last >= begin:
                self.starts[kind] = (begin, last)
            begin = end
        self._splits = [Split(kind, kind) for kind, _ in PERIODS if kind in self.starts]

    def splits(self) -> Sequence[Split]:
        return self._splits

    def tasks(self, split: str) -> Sequence[Task]:
        kind = self.split(split).type
        begin, last = self.starts[kind]
        return LazyTasks(last - begin + 1, lambda i: self._task(kind, i))

    def _task(self, kind: SplitType, i: int) -> Task:
        day = self.starts[kind][0] + i
        dates = self.market.dates
        start = dates[day]
        return Task(
            f"trading-{self.name}-w{self.window}-{kind}-{start}",
            seed=SEED_BASES[kind] + i,
            options={"start": start},
            data={"start": start, "end": dates[day + self.window], "window": self.window},
        )

    def locate(self, task_id: str) -> tuple[str, int, Task]:
        # Ids end with the start date: find it among the split's days in one search.
        for split in self._splits:
            head = f"trading-{self.name}-w{self.window}-{split.name}-"
            if isinstance(task_id, str) and task_id.startswith(head):
                begin, last = self.starts[split.type]
                date = task_id[len(head) :]
                dates = self.market.dates
                day = int(np.searchsorted(dates, date)) if dates else 0
                if begin <= day <= last and dates[day] == date:
                    return split.name, day - begin, self._task(split.type, day - begin)
        return super().locate(task_id)

    def _closes(self, task: Task, ending: Ending) -> tuple[np.ndarray, np.ndarray]:
        day = self.market.dates.index(str(task.options["start"]))
        close = self.market.close
        return close[day], close[day + _days(ending, self.window)]

    def success(self, task: Task, ending: Ending) -> bool:
        return self._judged(task, ending)[0]

    def scores(self, task: Task, ending: Ending) -> dict[str, float]:
        return self._judged(task, ending)[1]

    def _judged(self, task: Task, ending: Ending) -> tuple[bool, dict[str, float]]:
        start, end = self._closes(task, ending)
        return _judge(ending, buy_and_hold_return(start, end, self.cost))


@dataclass(frozen=True)
class _Data:
    """A market as a cache key: equal when its contents are."""

    key: tuple[Any, ...]
    market: Market = field(compare=False, hash=False)


def fixed_data_tasks(market: Market, name: str, window: int, cost: float) -> FixedDataTasks:
    """The task set of fixed data (built once per data, window and cost)."""
    key = (market.source, market.tickers, market.dates, market.close.tobytes())
    return _fixed(_Data(key, market), name, window, cost)


@functools.lru_cache(maxsize=16)
def _fixed(data: _Data, name: str, window: int, cost: float) -> FixedDataTasks:
    return FixedDataTasks(data.market, name, window, cost)


class SyntheticTasks(SeedTasks):
    """Seeds of generated markets (``--data synthetic``), judged against buy-and-hold of
    each seed's own market.

    Args:
        assets: assets per market.
        window: steps per episode.
        cost: the env's proportional trading cost.
    """

    def __init__(self, assets: int, window: int, cost: float) -> None:
        self.assets, self.window, self.cost = assets, window, cost
        super().__init__(f"trading-synthetic-a{assets}-w{window}", lambda _e: False)

    def _judged(self, task: Task, ending: Ending) -> tuple[bool, dict[str, float]]:
        # The env generates the episode's market from the seed; so does this, identically.
        days = WARMUP + self.window + 1
        market = prices_frame(np.random.default_rng(task.seed), self.assets, days)
        start, end = market.close[WARMUP], market.close[WARMUP + _days(ending, self.window)]
        return _judge(ending, buy_and_hold_return(start, end, self.cost))

    def success(self, task: Task, ending: Ending) -> bool:
        return self._judged(task, ending)[0]

    def scores(self, task: Task, ending: Ending) -> dict[str, float]:
        return self._judged(task, ending)[1]


@functools.lru_cache(maxsize=16)
def synthetic_tasks(assets: int, window: int, cost: float) -> SyntheticTasks:
    """The task set of generated markets (built once per assets, window and cost)."""
    return SyntheticTasks(assets, window, cost)
