"""Trading: a portfolio of several assets rebalanced once a day, in the manner of FinRL.

The action is a vector of target weights in [-1, 1], one per asset. They are
normalised (by their L1 norm, when it exceeds 1), the rest of the value is cash,
and the portfolio is rebalanced to them at the day's close, paying a
proportional cost on every trade; then the next day's close values it, and the
reward is the change (``--reward pnl``), its log (``log_return``, the default)
or Moody and Saffell's differential Sharpe ratio (``differential_sharpe``).

The data is daily OHLCV: the shipped synthetic sample (``--data sample``, the
default), a fresh synthetic market per episode from the seed (``--data
synthetic``), or the user's own CSV (``--csv PATH``). An episode covers
``--window`` trading days; its first day is drawn from the seed.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from gymnasium import spaces
from pydantic import BaseModel, ConfigDict, Field, create_model

from openenv_mcp.codecs import decode_raw, is_raw
from openenv_mcp.environment import Environment, EnvTool, Resources, Serving, StepResult
from openenv_mcp.errors import ArgumentError, InvalidAction, ResetNeeded, UnsupportedOption
from openenv_mcp.narration import narration_of
from openenv_mcp.tasks import TaskSet
from openenv_mcp_envs.trading._chart import draw_chart
from openenv_mcp_envs.trading._data import (
    FEATURES,
    SYNTHETIC_TICKERS,
    WARMUP,
    Market,
    load_csv,
    load_sample,
    prices_frame,
)
from openenv_mcp_envs.trading._narration import TradingNarration
from openenv_mcp_envs.trading._tasks import fixed_data_tasks, synthetic_tasks

__all__ = ["TradingConfig", "TradingEnv"]

RewardKind = Literal["pnl", "log_return", "differential_sharpe"]
#: Trades smaller than this fraction of the portfolio's value are not made: an action
#: that repeats the current weights (even rounded to float32) holds, at no cost.
NO_TRADE = 1e-6
#: The differential Sharpe ratio's prior second moment of daily returns (1% volatility),
#: so its first steps are defined, and the bound it is clipped to.
SHARPE_PRIOR = 1e-4
SHARPE_CLIP = 10.0
#: A value at or below zero ends the episode (``terminated``); ``log_return`` then
#: takes the log of this fraction of the initial cash instead.
RUIN_FLOOR = 1e-9


class TradingConfig(BaseModel):
    """Options of the trading env (``openenv-mcp serve trading --window 60``)."""

    model_config = ConfigDict(extra="forbid")

    data: Literal["sample", "synthetic", "csv"] = Field(
        "sample",
        description=(
            "Prices: 'sample' (the shipped synthetic 5 assets x 756 days), 'synthetic' (a "
            "fresh market generated per episode from the seed) or 'csv' (--csv PATH)."
        ),
    )
    csv: str | None = Field(
        None,
        description=(
            "Your own daily bars: a CSV with columns date (YYYY-MM-DD), ticker (or tic), "
            "close, and optionally open, high, low, volume; one row per date and ticker."
        ),
    )
    window: int = Field(60, ge=2, le=5000, description="Trading days (steps) per episode.")
    reward: RewardKind = Field(
        "log_return",
        description=(
            "Reward per step: 'pnl' (change in value, in cash units), 'log_return' "
            "(log of the value's ratio) or 'differential_sharpe' (Moody & Saffell's "
            "differential Sharpe ratio, clipped to [-10, 10])."
        ),
    )
    sharpe_eta: float = Field(
        0.05, gt=0, lt=1, description="Adaptation rate of the differential Sharpe ratio."
    )
    initial_cash: float = Field(100_000.0, gt=0, le=1e15, description="Starting cash.")
    cost: float = Field(
        0.001, ge=0, le=0.1, description="Proportional cost of every trade (0.001 = 10 bps)."
    )
    long_only: bool = Field(
        False, description="Clip negative target weights to 0 (no short positions)."
    )
    assets: int = Field(
        5,
        ge=1,
        le=len(SYNTHETIC_TICKERS),
        description="Assets of a generated market (--data synthetic only).",
    )


class TradingInfo(BaseModel):
    """What ``info`` holds."""

    date: str = Field(description="Today's date (YYYY-MM-DD).")
    day: int = Field(description="Steps taken this episode.")
    value: float = Field(description="The portfolio's value at today's close.")
    cash: float = Field(description="Cash held (negative: borrowed).")
    return_: float = Field(alias="return", description="value / starting cash - 1.")
    weights: dict[str, float] = Field(description="Current weight of each ticker and of 'cash'.")
    prices: dict[str, float] = Field(description="Today's close of each ticker.")
    cost: float = Field(description="Costs paid in the last rebalance.")
    turnover: float = Field(description="Amount traded / value, last rebalance.")
    costs_total: float = Field(description="Costs paid this episode.")


def _options(market: Market, window: int) -> type[BaseModel]:
    """The per-episode options over fixed data: the first day, within what the data holds."""
    last = market.days - window - 1
    return create_model(
        "TradingOptions",
        __config__=ConfigDict(extra="forbid", strict=True),
        # Typed str with no default value: an option left out is not passed to reset.
        start=(
            str,
            Field(
                None,
                description=(
                    "The episode's first day instead of a seeded draw: a date YYYY-MM-DD "
                    f"(the first trading day on or after it) from {market.dates[WARMUP]} to "
                    f"{market.dates[last]}, or a day index {WARMUP}..{last} as digits."
                ),
            ),
        ),
    )


class TradingEnv(Environment[TradingConfig]):
    """A multi-asset portfolio, rebalanced daily to target weights, with costs."""

    name: ClassVar[str] = "trading"
    description: ClassVar[str] = (
        "Trading: rebalance a portfolio of several assets once a day to target weights in "
        "[-1, 1] (costs per trade); reward from the change in value. Synthetic sample data, "
        "a seeded generator or your own CSV."
    )
    Config: ClassVar[type[BaseModel]] = TradingConfig
    Info = TradingInfo
    # Inline: tens of microseconds a step; the data is read once, cached.
    serving = Serving(
        inline=True,
        action_tools=False,
        resources=Resources(cpu=0.25, memory_mib=256, episodes=1024),
    )
    narration = TradingNarration
    render_mode = "rgb_array"

    def __init__(self, config: TradingConfig) -> None:
        super().__init__(config)
        self.source = self._source(config)
        if self.source == "synthetic":
            self._base: Market | None = None
            self.tickers: tuple[str, ...] = SYNTHETIC_TICKERS[: config.assets]
        else:
            self._base = load_csv(config.csv or "") if self.source == "csv" else load_sample()
            self.tickers = self._base.tickers
            need = WARMUP + config.window + 1
            if self._base.days < need:
                raise ArgumentError(
                    f"--window {config.window} needs at least {need} trading days of data "
                    f"({WARMUP} of indicator history, then {config.window} steps and the "
                    f"day after), but {self._base.source} has {self._base.days}"
                )
        n = len(self.tickers)
        self.action_space = spaces.Box(-1.0, 1.0, (n,), np.float32)
        self.observation_space = spaces.Dict(
            {
                "features": spaces.Box(-np.inf, np.inf, (n, len(FEATURES)), np.float32),
                "weights": spaces.Box(-np.inf, np.inf, (n + 1,), np.float32),
                "value": spaces.Box(-np.inf, np.inf, (1,), np.float32),
                "time_left": spaces.Box(0.0, 1.0, (1,), np.float32),
            }
        )
        if self._base is not None:  # a synthetic market always starts on its first day
            self.Options = _options(self._base, config.window)
        self._rng = np.random.default_rng()
        self.market: Market | None = self._base
        self._start = self._t = 0
        self._shares = np.zeros(n)
        self._cash = config.initial_cash
        self._values: list[float] = []
        self._sharpe = (0.0, SHARPE_PRIOR)
        self._costs = self._last_cost = self._last_turnover = 0.0
        self._ended = False

    @staticmethod
    def _source(config: TradingConfig) -> str:
        # Options arrive all set (the server passes every field), so defaults are compared
        # by value: 'sample' and 5 assets are the defaults.
        if config.csv is not None:
            if config.data == "synthetic":
                raise ArgumentError(
                    f"--csv reads your own data, but --data {config.data} asks for other "
                    "data: give --csv PATH alone (or with --data csv)"
                )
            if not config.csv.strip():
                raise ArgumentError("--csv needs the path of a CSV file, got an empty string")
            source = "csv"
        elif config.data == "csv":
            raise ArgumentError("--data csv needs --csv PATH (the file to read)")
        else:
            source = config.data
        default_assets = TradingConfig.model_fields["assets"].default
        if config.assets != default_assets and source != "synthetic":
            raise ArgumentError(
                f"--assets sets the size of a generated market (--data synthetic); the "
                f"{source} data has its own assets"
            )
        return source

    def metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "config": self.config.model_dump(mode="json"),
            "source": self.source,
            "tickers": list(self.tickers),
            "features": list(FEATURES),
            "warmup_days": WARMUP,
        }
        if self._base is not None:
            meta["dates"] = {"first": self._base.dates[0], "last": self._base.dates[-1]}
            meta["days"] = self._base.days
        return meta

    def tools(self) -> list[EnvTool]:
        return [
            EnvTool(
                name="portfolio",
                description=(
                    "The portfolio today: each asset's shares, price, position value and "
                    "weight; cash; total value; return so far; costs paid."
                ),
                kind="episode",
                handler=lambda env, _args: env.portfolio(),
            ),
            EnvTool(
                name="price_history",
                description=(
                    "Closing prices of every asset over the last `days` trading days up to "
                    "today (no future prices), oldest first."
                ),
                kind="episode",
                handler=lambda env, args: env.price_history(args.days),
                params=PriceHistoryParams,
            ),
        ]

    def task_set(self) -> TaskSet:
        """Date-range splits of fixed data (train earliest, then validation, test last),
        or seeds of generated markets; success is beating buy-and-hold over the same days
        (``_tasks.py`` says the rules)."""
        config = self.config
        if self._base is None:
            return synthetic_tasks(config.assets, config.window, config.cost)
        # Ids name the data: 'sample', or the CSV file's name as an id may spell it.
        name = "sample" if self.source == "sample" else f"csv-{Path(config.csv or '').stem}"
        name = re.sub(r"[^A-Za-z0-9_.=+@-]", "_", name)[:60]
        return fixed_data_tasks(self._base, name, config.window, config.cost)

    # -- the episode ---------------------------------------------------------------

    def _need_market(self) -> Market:
        if self.market is None or not self._values:
            raise ResetNeeded("no episode yet: call reset first")
        return self.market

    def _start_day(
        self, options: dict[str, Any] | None, market: Market, rng: np.random.Generator
    ) -> int:
        """The episode's first day: option ``start`` (checked against the data here: a
        date or an index in range), or a draw from ``rng``."""
        first, last = WARMUP, market.days - self.config.window - 1
        start = (options or {}).get("start")
        if start is None:
            return int(rng.integers(first, last + 1))
        if isinstance(start, str) and start.strip().isascii() and start.strip().isdigit():
            start = int(start.strip()[:12])
        if isinstance(start, int) and not isinstance(start, bool):
            if not first <= start <= last:
                raise UnsupportedOption(
                    f"option 'start' must be a day index {first}..{last} (or a date), got {start}"
                )
            return start
        if isinstance(start, str) and len(start) <= 40:
            text = start.strip()
            later = [i for i, d in enumerate(market.dates) if d >= text]
            valid = len(text) == 10 and text[4] == "-" and text[7] == "-"
            if valid and later and first <= later[0] <= last:
                return later[0]
            raise UnsupportedOption(
                f"option 'start' must be a date YYYY-MM-DD from {market.dates[first]} to "
                f"{market.dates[last]} (or a day index {first}..{last}), got {start!r}"
            )
        raise UnsupportedOption(
            f"option 'start' must be a date string or a day index, got {type(start).__name__}"
        )

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        # Unseeded, the env's own stream goes on (Gymnasium's meaning). Options are refused
        # before any draw, so a refused reset leaves the stream as it was.
        rng = self._rng if seed is None else np.random.default_rng(seed)
        market: Market | None
        if self.source == "synthetic":
            if options and "start" in options:  # Options is None: only direct callers
                raise UnsupportedOption(
                    "option 'start' needs fixed data (--data sample or --csv); a synthetic "
                    "market is generated for each episode and always starts on its first day"
                )
            market = prices_frame(rng, self.config.assets, WARMUP + self.config.window + 1)
            start = WARMUP
        else:
            market = self._base
            assert market is not None
            start = self._start_day(options, market, rng)
        assert market is not None
        self._rng = rng
        self.market, self._start, self._t = market, start, start
        self._shares = np.zeros(len(self.tickers))
        self._cash = float(self.config.initial_cash)
        self._values = [self._cash]
        self._sharpe = (0.0, SHARPE_PRIOR)
        self._costs = self._last_cost = self._last_turnover = 0.0
        self._ended = False
        return self._observation(), self._info()

    def parse_action(self, action: Any) -> np.ndarray:
        n = len(self.tickers)
        expected = (
            f"expected {n} target weight(s) in [-1, 1], one per asset in order "
            f"({', '.join(self.tickers)}), e.g. [{', '.join(['0.2'] * n)}]"
        )
        if is_raw(action):
            try:
                values = np.asarray(decode_raw(action), dtype=np.float64)
            except (ValueError, TypeError, KeyError) as exc:
                raise InvalidAction(f"action: {expected}; got a bad raw array: {exc}") from None
        elif isinstance(action, (bool, np.bool_)) or not isinstance(
            action, (int, float, list, tuple, np.ndarray, np.number)
        ):
            raise InvalidAction(f"action: {expected}; got {_what(action)}")
        else:
            try:
                values = np.asarray(action, dtype=np.float64)
            except (TypeError, ValueError, OverflowError):
                raise InvalidAction(f"action: {expected}; got {_brief(action)}") from None
            booleans = isinstance(action, np.ndarray) and action.dtype == np.bool_
            if booleans or any(isinstance(v, bool) for v in _flat(action)):
                raise InvalidAction(f"action: {expected}; got booleans in {_brief(action)}")
        if values.ndim == 0 and n == 1:
            values = values.reshape(1)
        if values.shape != (n,):
            raise InvalidAction(f"action: {expected}; got shape {list(values.shape)}")
        bad = [i for i in range(n) if not math.isfinite(float(values[i]))]
        if bad:
            i = bad[0]
            raise InvalidAction(
                f"action: {expected}; got {float(values[i])} for {self.tickers[i]} "
                f"(position {i}): weights must be finite numbers"
            )
        outside = [i for i in range(n) if not -1.0 <= float(values[i]) <= 1.0]
        if outside:
            i = outside[0]
            raise InvalidAction(
                f"action: {expected}; got {float(values[i]):g} for {self.tickers[i]} "
                f"(position {i}), outside [-1, 1]"
            )
        return values.astype(np.float32)

    def target_weights(self, action: np.ndarray) -> np.ndarray:
        """The weights an action asks for, after clipping (long-only) and L1 normalisation."""
        w = np.asarray(action, dtype=np.float64).reshape(-1)
        if self.config.long_only:
            w = np.maximum(w, 0.0)
        gross = float(np.sum(np.abs(w)))
        return w / gross if gross > 1.0 else w

    def step(self, action: Any) -> StepResult:
        market = self._need_market()
        if self._ended:
            raise ResetNeeded("the episode is over: call reset")
        prices = market.close[self._t]
        value = self._cash + float(self._shares @ prices)
        w = self.target_weights(action)
        positions = self._shares * prices
        rate, tolerance = self.config.cost, NO_TRADE * max(abs(value), 1.0)

        def trades_at(after: float) -> np.ndarray:
            trades: np.ndarray = w * after - positions
            trades[np.abs(trades) <= tolerance] = 0.0
            return trades

        # The value after costs solves after = value - rate * sum|w * after - positions|:
        # a contraction (rate * sum|w| < 1), so a few iterations reach float precision.
        after = value
        for _ in range(200):
            nxt = value - rate * float(np.sum(np.abs(trades_at(after))))
            if abs(nxt - after) <= 1e-13 * max(abs(value), 1.0):
                after = nxt
                break
            after = nxt
        trades = trades_at(after)
        cost = rate * float(np.sum(np.abs(trades)))
        # A zero target closes the position exactly (no float residue of shares).
        self._shares = np.where(w == 0.0, 0.0, self._shares + trades / prices)
        self._cash = self._cash - float(np.sum(trades)) - cost
        self._costs += cost
        self._last_cost = cost
        self._last_turnover = float(np.sum(np.abs(trades))) / value if value > 0 else 0.0

        self._t += 1
        new_value = self._cash + float(self._shares @ market.close[self._t])
        self._values.append(new_value)
        terminated = new_value <= 0.0
        truncated = not terminated and self._t >= self._start + self.config.window
        self._ended = terminated or truncated
        return StepResult(
            observation=self._observation(),
            reward=self._reward(value, new_value),
            terminated=terminated,
            truncated=truncated,
            info=self._info(),
        )

    def _reward(self, before: float, after: float) -> float:
        kind = self.config.reward
        if kind == "pnl":
            return after - before
        floor = RUIN_FLOOR * self.config.initial_cash
        if kind == "log_return":
            return math.log(max(after, floor) / before)
        ret = max(after, 0.0) / before - 1.0
        mean, second = self._sharpe
        eta = self.config.sharpe_eta
        d_mean, d_second = ret - mean, ret * ret - second
        variance = second - mean * mean
        dsr = (second * d_mean - 0.5 * mean * d_second) / variance**1.5 if variance > 1e-18 else 0.0
        self._sharpe = (mean + eta * d_mean, second + eta * d_second)
        return float(np.clip(dsr, -SHARPE_CLIP, SHARPE_CLIP))

    def _value(self) -> float:
        market = self._need_market()
        return self._cash + float(self._shares @ market.close[self._t])

    def _weights(self) -> np.ndarray:
        """Current weights: assets, then cash (zeros when the value is not positive)."""
        market = self._need_market()
        value = self._value()
        holdings = np.append(self._shares * market.close[self._t], self._cash)
        return holdings / value if value > 0 else np.zeros(len(holdings))

    def _observation(self) -> dict[str, np.ndarray]:
        market = self._need_market()
        left = (self._start + self.config.window - self._t) / self.config.window
        return {
            "features": market.features[self._t].copy(),
            "weights": self._weights().astype(np.float32),
            "value": np.array([self._value() / self.config.initial_cash], dtype=np.float32),
            "time_left": np.array([left], dtype=np.float32),
        }

    def _info(self) -> dict[str, Any]:
        market = self._need_market()
        value = self._value()
        weights = self._weights()
        return {
            "date": market.dates[self._t],
            "day": self._t - self._start,
            "value": value,
            "cash": self._cash,
            "return": value / self.config.initial_cash - 1.0,
            "weights": {
                **{t: float(weights[i]) for i, t in enumerate(self.tickers)},
                "cash": float(weights[-1]),
            },
            "prices": {t: float(market.close[self._t, i]) for i, t in enumerate(self.tickers)},
            "cost": self._last_cost,
            "turnover": self._last_turnover,
            "costs_total": self._costs,
        }

    def state(self) -> dict[str, Any]:
        if self.market is None or not self._values:
            return {}
        held = self.portfolio()  # what info lacks: the days left and the holdings in full
        return {"days_left": held["days_left"], "holdings": held["holdings"]}

    def portfolio(self) -> dict[str, Any]:
        """Holdings, cash, value and weights today (the ``portfolio`` tool)."""
        market = self._need_market()
        value, weights = self._value(), self._weights()
        prices = market.close[self._t]
        return {
            "date": market.dates[self._t],
            "day": self._t - self._start,
            "days_left": self._start + self.config.window - self._t,
            "value": value,
            "cash": self._cash,
            "cash_weight": float(weights[-1]),
            "return": value / self.config.initial_cash - 1.0,
            "costs_total": self._costs,
            "holdings": [
                {
                    "ticker": t,
                    "shares": float(self._shares[i]),
                    "price": float(prices[i]),
                    "position": float(self._shares[i] * prices[i]),
                    "weight": float(weights[i]),
                }
                for i, t in enumerate(self.tickers)
            ],
        }

    def price_history(self, days: int) -> dict[str, Any]:
        """Closes of the last ``days`` trading days up to today (the ``price_history`` tool)."""
        market = self._need_market()
        first = max(0, self._t - days + 1)
        return {
            "dates": list(market.dates[first : self._t + 1]),
            "closes": {
                t: [float(v) for v in market.close[first : self._t + 1, i]]
                for i, t in enumerate(self.tickers)
            },
        }

    def render(self) -> np.ndarray | None:
        if self.market is None or not self._values:
            return None
        market = self.market
        span = slice(self._start, self._t + 1)
        return draw_chart(
            self.tickers,
            market.dates[span],
            market.close[span],
            np.asarray(self._values),
            self.config.window,
            self._weights(),
            f"{narration_of(self).title}: {market.dates[self._t]}, day {self._t - self._start}/"
            f"{self.config.window}, value {self._value():,.2f}",
        )

    # -- snapshots -----------------------------------------------------------------

    def snapshot(self) -> Any:
        return {
            "market": self.market if self.source == "synthetic" else None,
            "start": self._start,
            "t": self._t,
            "shares": self._shares.copy(),
            "cash": self._cash,
            "values": list(self._values),
            "sharpe": self._sharpe,
            "costs": (self._costs, self._last_cost, self._last_turnover),
            "ended": self._ended,
            "rng": self._rng.bit_generator.state,
        }

    def restore(self, snapshot: Any) -> None:
        self.market = snapshot["market"] if snapshot["market"] is not None else self._base
        self._start, self._t = snapshot["start"], snapshot["t"]
        self._shares = np.array(snapshot["shares"], dtype=np.float64)
        self._cash = snapshot["cash"]
        self._values = list(snapshot["values"])
        self._sharpe = snapshot["sharpe"]
        self._costs, self._last_cost, self._last_turnover = snapshot["costs"]
        self._ended = snapshot["ended"]
        self._rng = np.random.default_rng()
        self._rng.bit_generator.state = snapshot["rng"]


class PriceHistoryParams(BaseModel):
    """Arguments of the ``price_history`` tool."""

    model_config = ConfigDict(extra="forbid")

    days: int = Field(20, ge=1, le=250, description="Trading days to return, up to today.")


def _flat(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _brief(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}... ({len(text)} chars)"


def _what(value: Any) -> str:
    return f"{type(value).__name__} {_brief(value)}"


if TYPE_CHECKING:  # mypy checks that the env has what its narration reads (TradingView)
    from openenv_mcp_envs.trading._narration import TradingView

    def _narrated(env: TradingEnv) -> TradingView:
        return env
